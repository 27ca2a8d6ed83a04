"""Model calls in the store: recorded before they go out, usage attached in order, priced by
the longest matching model name, summed per session, model and day, on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from sessionstore import CallUsage, Event, Price, SessionStore, SessionStoreConfig, build_store
from sessionstore._history._prices import DEFAULT_PRICES, cost_usd, price_of
from tests.support.cli import SECRET
from tests.support.histories import assistant, user


def test_prices_match_the_longest_model_name() -> None:
    assert price_of(DEFAULT_PRICES, "gpt-4o-2024-08-06") == DEFAULT_PRICES["gpt-4o"]
    assert price_of(DEFAULT_PRICES, "gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_of(DEFAULT_PRICES, "gpt-4oo") is None and price_of(DEFAULT_PRICES, None) is None
    assert cost_usd(Price(2.0, 0.5, 10.0), 1_000, 400, 100) == pytest.approx(
        (600 * 2.0 + 400 * 0.5 + 100 * 10.0) / 1e6
    )
    assert cost_usd(None, 1, 0, 1) is None


async def test_calls_record_their_input_and_take_usage_in_order(db_url: str) -> None:
    prices = {"house-model": Price(1.0, 0.1, 4.0)}
    async with SessionStore(db_url, create_tables=True, prices=prices) as store:
        await store.append("s", [user("hi")])
        first = await store.record_model_call(
            "s", [user("hi"), user("unsaved")], model="house-model", unsaved_items=1
        )
        second = await store.record_model_call("s", [user("hi")], model="gpt-4o")
        reported = [CallUsage(100, 0, 10, 0), CallUsage(200, 100, 20, 5), CallUsage(5, 0, 1, 0)]
        await store.record_usage(
            "s", reported, calls=[(first, "house-model"), (second, "gpt-4o")], model=None
        )
        calls = await store.model_calls("s")
        assert [(c.call, c.model, c.input_items, c.unsaved_items) for c in calls] == [
            (1, "house-model", 2, 1),
            (2, "gpt-4o", 1, 0),
            (3, None, None, None),  # usage no recorded call was waiting for
        ]
        assert (calls[0].context_from_seq, calls[0].context_to_seq) == (1, 1)
        assert calls[0].input_tokens_est == (await store.context_tokens("s")) + 0
        assert calls[0].cost_usd == pytest.approx((100 * 1.0 + 10 * 4.0) / 1e6)
        assert calls[1].reasoning_tokens == 5 and calls[2].cost_usd is None
        [by_session] = await store.usage()
        assert (by_session["session"], by_session["calls"], by_session["input_tokens"]) == (
            "s",
            3,
            305,
        )
        models = {row["model"]: row["calls"] for row in await store.usage(by="model")}
        assert models == {"house-model": 1, "gpt-4o": 1, "(unknown)": 1}
        later = datetime.now(UTC) + timedelta(days=1)
        assert await store.usage(since=later) == []
        assert len(await store.usage(by="day", session_id="s")) == 1


async def test_bad_arguments_are_refused(store: SessionStore) -> None:
    await store.append("s", [user("hi"), assistant("hello")])
    with pytest.raises(ValueError, match="by must be one of session, model, day"):
        await store.usage(by="week")
    with pytest.raises(ValueError, match="timezone-aware"):
        await store.usage(since=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="unsaved_items must be >= 0"):
        await store.record_model_call("s", [user("hi")], unsaved_items=-1)
    assert await store.model_calls("s") == []


def test_the_config_files_prices_reach_the_store() -> None:
    config = SessionStoreConfig.model_validate(
        {
            "store": {
                "url": "sqlite://",
                "prices": {"house": {"input": 1, "cached_input": 0, "output": 3}},
            }
        }
    )
    store = build_store(config)
    assert store.prices["house"] == Price(1.0, 0.0, 3.0)
    assert store.prices["gpt-4o"] == DEFAULT_PRICES["gpt-4o"]  # the defaults stay
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        SessionStoreConfig.model_validate(
            {"store": {"prices": {"x": {"input": -1, "cached_input": 0, "output": 0}}}}
        )


async def test_the_preflight_decision_is_stored_with_the_call_redacted(store: SessionStore) -> None:
    await store.append("s", [user("hi")])
    decision = Event("compact.trigger_decision", "s", fields={"note": f"key {SECRET}"})
    await store.record_model_call("s", [user("hi")], model="gpt-4o", events=[decision])
    [stored] = [row for row in await _events(store) if row["event"] == decision.event]
    assert SECRET not in json.dumps(stored, default=str)
    assert [call.model for call in await store.model_calls("s")] == ["gpt-4o"]
    with pytest.raises(ValueError, match="unsaved_items"):
        await store.record_model_call("s", [user("hi")], unsaved_items=-1, events=[decision])
    assert len([row for row in await _events(store) if row["event"] == decision.event]) == 1


async def _events(store: SessionStore) -> list[dict[str, object]]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT event, payload FROM events ORDER BY id"))
        return [dict(row._mapping) for row in rows]


async def test_the_decision_is_taken_in_the_record_from_the_total_it_reads(db_url: str) -> None:
    async with (
        SessionStore(db_url, create_tables=True) as store,
        SessionStore(db_url) as other_process,
    ):
        await store.append("s", [user("hi")])
        seen: list[int] = []

        def idle_below(limit: int) -> Callable[[int], list[Event] | None]:
            def decide(stored: int) -> list[Event] | None:
                seen.append(stored)
                return None if stored >= limit else [Event("compact.token_estimate", "s")]

            return decide

        first = await store.record_model_call("s", [user("hi")], decide=idle_below(10**6))
        assert first is not None and seen == [await store.context_tokens("s")]
        await other_process.append("s", [assistant("a reply stored by someone else")])
        total = await store.context_tokens("s")
        assert await store.record_model_call("s", [user("hi")], decide=idle_below(total)) is None
        assert seen[-1] == total  # the other process's row was counted
        [call] = await store.model_calls("s")  # the triggered call recorded nothing
        assert call.input_tokens_est == seen[0]
        decided = [row for row in await _events(store) if str(row["event"]).startswith("compact.")]
        assert len(decided) == 1  # the idle call's event only
