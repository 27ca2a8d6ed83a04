"""`sessionstore verify [SESSION]`: reads only, exit 1 on any tampering, never prints content."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from sessionstore import SessionStore
from sessionstore._schema import messages
from tests.support.cli import SECRET, assert_refused, db_state, run, seed_work_session
from tests.support.database import edit_rows


def _tamper(url: str) -> None:
    async def go() -> None:
        async with SessionStore(url) as store:
            info = await store.session_info("work")
            assert info is not None
            await edit_rows(
                store,
                messages.update()
                .where(messages.c.session_id == "work", messages.c.seq == info.last_seq)
                .values(role="system"),
            )

    asyncio.run(go())


def test_verify_reports_intact_sessions_and_exits_0(db_url: str) -> None:
    seed_work_session(db_url)
    before = db_state(db_url)
    result = run("verify", "--url", db_url)
    assert result.exit_code == 0, result.output
    assert "2 session(s) checked, 0 with problems" in result.output
    assert "ok" in result.output and "TAMPERED" not in result.output
    assert db_state(db_url) == before  # reads only
    one = json.loads(run("verify", "work", "--url", db_url, "--json").stdout)
    assert [report["session_id"] for report in one] == ["work"]
    assert one[0]["ok"] and one[0]["problems"] == [] and one[0]["chain_start_seq"] == 1


def test_verify_names_the_edited_row_and_exits_1(db_url: str) -> None:
    seed_work_session(db_url)
    _tamper(db_url)
    result = run("verify", "--url", db_url)
    assert result.exit_code == 1, result.output
    assert "TAMPERED" in result.output and "do not match its digest" in result.output
    assert "1 with problems" in result.output
    assert SECRET not in result.output and "sk-proj" not in result.output
    reports = {
        r["session_id"]: r for r in json.loads(run("verify", "--url", db_url, "--json").stdout)
    }
    assert not reports["work"]["ok"] and reports["other"]["ok"]


def test_sessions_show_of_a_tampered_session_under_a_checked_config_exits_1(
    db_url: str, tmp_path: Path
) -> None:
    seed_work_session(db_url)
    _tamper(db_url)
    config = tmp_path / "sessionstore.json"
    config.write_text(json.dumps({"store": {"url": db_url, "verify_on_load": True}}))
    result = run("sessions", "show", "work", "--config", str(config))
    assert result.exit_code == 1, result.output
    assert "tampered history" in result.output and "does not verify" in result.output


def test_verify_of_an_unknown_session_says_so(db_url: str) -> None:
    seed_work_session(db_url)
    assert_refused(run("verify", "nope", "--url", db_url), 1, "no session 'nope'")


def test_verify_of_a_mistyped_url_is_one_line_exit_2() -> None:
    result = run("verify", "--url", "sqlit:///x.db")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
