"""`sessionstore search`: hits as data, redacted by default, clear refusals."""

from __future__ import annotations

import asyncio
import json

from sessionstore import SessionStore
from tests.support.cli import SECRET, assert_refused, db_state, run


def test_search_prints_redacted_hits_and_json(seeded: str) -> None:
    found = run("search", "deploy", "--url", seeded)
    assert found.exit_code == 0, found.output
    assert "work" in found.stdout and SECRET not in found.output
    hits = json.loads(run("search", "deploy", "--json", "--url", seeded).stdout)
    assert hits and all(hit["session_id"] == "work" for hit in hits)
    assert SECRET not in json.dumps(hits)
    [raw] = json.loads(
        run(
            "search", "deploy with", "--json", "--no-redact", "--session", "work", "--url", seeded
        ).stdout
    )
    assert SECRET in raw["snippet"]


def test_search_refusals_change_nothing(seeded: str) -> None:
    before = db_state(seeded)
    assert_refused(run("search", "?!", "--url", seeded), 2, "at least one word")
    assert_refused(run("search", "deploy", "--limit", "0", "--url", seeded), 2, "--limit")
    assert_refused(run("search", "zzyzx", "--url", seeded), 1, "no row holds every word")
    assert db_state(seeded) == before


def test_a_pipe_gets_each_hits_whole_text_a_terminal_its_snippet(sqlite_url: str) -> None:
    """`search ... | grep` sees every word of the matching row, as `sessions show` gives it;
    only a terminal gets the text around the match."""
    words = [f"word{n}" for n in range(200)]

    async def seed() -> None:
        async with SessionStore(sqlite_url, create_tables=True) as store:
            await store.append("long", [{"role": "user", "content": " ".join(["needle", *words])}])

    asyncio.run(seed())
    piped = run("search", "needle", "--url", sqlite_url)
    assert piped.exit_code == 0 and "word199" in piped.stdout and "..." not in piped.stdout
    terminal = run("search", "needle", "--url", sqlite_url, env={"SESSIONSTORE_TERMINAL": "1"})
    assert terminal.exit_code == 0 and "word199" not in terminal.stdout
