"""`sessionstore usage` and `sessions show --call N`: what model calls used and were sent."""

from __future__ import annotations

import asyncio
import json

from typer.testing import Result

from sessionstore import CallUsage, SessionStore
from tests.support.cli import SECRET, assert_refused, db_state, run
from tests.support.histories import assistant, user


def _two_calls(url: str) -> None:
    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            await store.append("u", [user(f"deploy with {SECRET}")])
            sent = await store.load_context("u")
            first = await store.record_model_call("u", sent, model="gpt-4o")
            await store.append("u", [assistant("deployed"), user("thanks")])
            second = await store.record_model_call(
                "u", [*sent, assistant("deployed"), user("thanks")], model="gpt-4o-mini"
            )
            usage = [CallUsage(1_000, 0, 10, 0), CallUsage(2_000, 1_000, 20, 0)]
            await store.record_usage("u", usage, calls=[(first, "gpt-4o"), (second, "gpt-4o-mini")])
            await store.record_usage("u", [CallUsage(5, 0, 5, 0)])  # usage alone

    asyncio.run(seed())


def test_usage_by_session_model_and_day(seeded: str) -> None:
    _two_calls(seeded)
    rows = json.loads(run("usage", "--json", "--url", seeded).stdout)
    assert rows == [
        {
            "session": "u",
            "calls": 3,
            "input_tokens": 3_005,
            "cached_tokens": 1_000,
            "output_tokens": 35,
            "reasoning_tokens": 0,
            "cost_usd": rows[0]["cost_usd"],
        }
    ]
    assert rows[0]["cost_usd"] > 0
    by_model = json.loads(run("usage", "--by", "model", "--json", "--url", seeded).stdout)
    assert [row["model"] for row in by_model] == ["gpt-4o", "gpt-4o-mini", "(unknown)"]
    table = run("usage", "--by", "day", "--url", seeded)
    assert table.exit_code == 0 and "3300" not in table.stdout and "3005" in table.stdout
    before = db_state(seeded)
    assert_refused(run("usage", "--by", "week", "--url", seeded), 2, "session, model, day")
    assert_refused(run("usage", "--since", "last week", "--url", seeded), 2, "ISO 8601")
    assert db_state(seeded) == before


def _show_call(url: str, number: str) -> Result:
    return run("sessions", "show", "u", "--call", number, "--json", "--url", url)


def test_show_call_prints_what_it_was_sent_redacted(seeded: str) -> None:
    _two_calls(seeded)
    shown = json.loads(_show_call(seeded, "2").stdout)
    assert [row["seq"] for row in shown] == [1, 2, 3]
    assert SECRET not in json.dumps(shown)
    first = json.loads(_show_call(seeded, "1").stdout)
    assert [row["seq"] for row in first] == [1]
    assert_refused(_show_call(seeded, "3"), 1, "usage alone")
    assert_refused(_show_call(seeded, "9"), 1, "no model call 9")
