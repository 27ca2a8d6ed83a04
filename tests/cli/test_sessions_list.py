"""`sessionstore sessions list`: every session, in every format, the same whether the
standard library reads the SQLite file or the store does."""

from __future__ import annotations

import asyncio
import json

import pytest

from sessionstore import SessionStore
from tests.support.cli import SECRET, assert_refused, run


def test_list_reports_every_session(seeded: str) -> None:
    listed = json.loads(run("sessions", "list", "--url", seeded, "--json").stdout)
    by_id = {row["session_id"]: row for row in listed}
    assert set(by_id) == {"work", "other"}
    assert by_id["work"]["compactions"] == 1 and by_id["other"]["items"] == 1
    table = run("sessions", "list", "--url", seeded, env={"SESSIONSTORE_TERMINAL": "1"})
    assert table.exit_code == 0 and "Sessions (2)" in table.output  # drawn on a terminal
    piped = run("sessions", "list", "--url", seeded)  # into a pipe: a header, a line each
    assert piped.stdout.splitlines()[0].split("\t")[0] == "session_id"
    assert sorted(line.split("\t")[0] for line in piped.stdout.splitlines()[1:]) == [
        "other",
        "work",
    ]


@pytest.mark.parametrize("limit", ["0", "-1", "1000001", "ten"])
def test_list_refuses_a_bad_limit(seeded: str, limit: str) -> None:
    assert_refused(run("sessions", "list", "--url", seeded, "--limit", limit), 2, "'--limit'")


@pytest.mark.parametrize("output", [[], ["--json"], ["--nl"], ["--csv"], ["--tsv"]])
@pytest.mark.parametrize("limit", ["100", "1"])
def test_the_quick_read_prints_what_the_store_prints(
    sqlite_seeded: str, output: list[str], limit: str
) -> None:
    """A URL with a query is read through the store; the plain one by the quick reader."""
    quick = run("sessions", "list", "--url", sqlite_seeded, "--limit", limit, *output)
    through_store = run(
        "sessions", "list", "--url", f"{sqlite_seeded}?timeout=5", "--limit", limit, *output
    )
    assert quick.exit_code == through_store.exit_code == 0, quick.output
    assert quick.stdout == through_store.stdout and quick.stdout.strip()
    assert quick.stderr == through_store.stderr
    assert ("1 of 2 sessions" in quick.stderr) == (limit == "1"), quick.stderr


@pytest.mark.parametrize("query", ["", "?timeout=5"])  # the quick read, then the store's
def test_ids_are_redacted_unless_asked_and_asking_is_audited(sqlite_url: str, query: str) -> None:
    async def seed() -> None:
        async with SessionStore(sqlite_url, create_tables=True) as store:
            await store.append(f"note {SECRET}", [{"role": "user", "content": "hi"}])

    asyncio.run(seed())
    url = f"{sqlite_url}{query}"
    listed = run("sessions", "list", "--url", url)
    assert listed.exit_code == 0 and "<REDACTED>" in listed.stdout
    assert "sk-proj" not in listed.output
    raw = run("sessions", "list", "--url", url, "--no-redact")
    assert raw.exit_code == 0 and SECRET in raw.stdout and "redaction is off" in raw.stderr
    events = run("events", "--all", "--json", "--url", sqlite_url)
    assert "redaction_disabled" in events.stdout
