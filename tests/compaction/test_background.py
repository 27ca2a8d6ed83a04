"""Background compaction on real databases: a summary prepared before the trigger is
committed when the prefix it summarized is unchanged, and discarded (then redone in the
foreground) when the session moved under it; the lease keeps one summarizer per session."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import Keyring, LocalKey, SessionStore
from sessionstore._store._compaction_leases import tx_take_lease
from sessionstore.compaction import (
    BackgroundPolicy,
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
)
from sessionstore.exporters._bus import EventBus
from sessionstore.exporters._callback import CallbackExporter
from tests.support.background import (
    SlowSummarizer,
    background_manager,
    fill_between,
    prepare,
    prepared_session,
)
from tests.support.histories import turns


async def _events(store: SessionStore, session_id: str, name: str) -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT payload FROM events WHERE session_id = :s AND event = :e ORDER BY id"),
            {"s": session_id, "e": name},
        )
        return [_json(row[0]) for row in rows]


def _json(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else json.loads(value)


async def _leases(store: SessionStore, session_id: str) -> list[Any]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT holder, prepared FROM compaction_leases WHERE session_id = :s"),
            {"s": session_id},
        )
        return list(rows)


async def _compaction(store: SessionStore, session_id: str) -> dict[str, Any]:
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT covered_from_seq, covered_to_seq, context_start_seq, summary_seq, "
                    "kept, tokens_before, tokens_after, summary_tokens, strategy, status "
                    "FROM compactions WHERE session_id = :s ORDER BY id DESC"
                ),
                {"s": session_id},
            )
        ).first()
        assert row is not None, f"no compaction of {session_id}"
        found = dict(row._mapping)
        found["kept"] = _json(found["kept"])
        return found


async def test_a_prepared_summary_commits_what_a_foreground_compaction_would(
    db_url: str,
) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        background = background_manager(store, slow)
        foreground = background_manager(store, enabled=False)
        await fill_between(background, "bg")
        await fill_between(foreground, "fg")
        assert await background.maybe_compact("bg") is None  # under the trigger: prepares
        assert background.background is not None
        await background.background.settle()
        assert slow.calls == 1
        [prepared] = await _events(store, "bg", "compact.prepared")
        [(holder, stored)] = await _leases(store, "bg")
        assert holder == background.background.holder and stored is not None

        committed = await background.compact("bg", trigger="threshold")
        assert slow.calls == 1, "the trigger called the summarizer again"
        await foreground.compact("fg", trigger="threshold")

        assert committed.compacted
        assert await store.load_context("bg") == await store.load_context("fg")
        assert await _compaction(store, "bg") == await _compaction(store, "fg")
        assert await store.context_tokens("bg") == await store.context_tokens("fg")
        assert await _leases(store, "bg") == []
        [used] = await _events(store, "bg", "compact.prepared_committed")
        assert used["compaction_id"] == committed.result.compaction_id  # type: ignore[union-attr]
        assert (
            used["carried_units"] == 0 and used["summarized_items"] == prepared["summarized_items"]
        )
        assert (await store.verify_history("bg")).ok


async def test_items_appended_after_the_preparation_are_carried_verbatim(db_url: str) -> None:
    """The agent loop: turns keep coming between `prepare_at` and the trigger; the prepared
    summary still covers its prefix and every later item stays, in order."""
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        manager = background_manager(store, slow, window=6_000)
        count = await fill_between(manager, "s")
        await prepare(manager, "s")
        later = turns(3, seed=count, size=30)
        await manager.append("s", later)
        outcome = await manager.compact("s", trigger="threshold")
        assert slow.calls == 1
        [used] = await _events(store, "s", "compact.prepared_committed")
        assert used["carried_units"] > 0  # what the policy would now summarize stays whole
        context = await store.load_context("s")
        assert context[-len(later) :] == later
        assert outcome.tokens_after < manager.policy.threshold(6_000)
        assert (await store.verify_history("s")).ok


async def _prepare(store: SessionStore, session_id: str) -> Any:
    manager, slow = await prepared_session(store, session_id)
    assert slow.calls == 1 and await _leases(store, session_id) != []
    return manager, slow


@pytest.mark.parametrize("change", ["clear", "rewind", "pop"])
async def test_a_prepared_summary_is_discarded_when_the_session_moved(
    db_url: str, change: str
) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        manager, slow = await _prepare(store, "s")
        if change == "clear":
            await store.clear("s")
            await manager.append("s", turns(8, seed=100))
        elif change == "rewind":
            await store.rewind("s", 20)
            await manager.append("s", turns(2, seed=100))
        else:  # pop the recent turns: what was summarized is now partly what stays
            for _ in range(4):
                await store.pop("s")
        outcome = await manager.compact("s", trigger="threshold")
        assert outcome.compacted
        assert slow.calls == 2, "the stale summary was used instead of summarizing again"
        [discarded] = await _events(store, "s", "compact.prepared_discarded")
        expected = "prefix_changed" if change == "pop" else "context_restarted"
        assert discarded["reason"] == expected
        assert await _events(store, "s", "compact.prepared_committed") == []
        assert await _leases(store, "s") == []
        assert (await store.verify_history("s")).ok


async def test_another_compaction_supersedes_a_prepared_summary(db_url: str) -> None:
    exported: list[dict[str, Any]] = []
    with EventBus([CallbackExporter(exported.append)]) as bus:
        async with SessionStore(db_url, create_tables=True, publisher=bus) as store:
            manager, slow = await _prepare(store, "s")
            other = background_manager(store, enabled=False)  # another process's manager
            done = await other.compact("s", trigger="manual")
            [discarded] = await _events(store, "s", "compact.prepared_discarded")
            assert discarded["reason"] == "superseded"
            assert discarded["compaction_id"] == done.result.compaction_id  # type: ignore[union-attr]
            assert await _leases(store, "s") == []
            await manager.append("s", turns(2, seed=100))
            await manager.compact("s", trigger="threshold")
            assert slow.calls == 2  # nothing prepared is left: summarized in the foreground
        assert bus.flush(5.0)
    # Exporters see it too, not only the events table.
    assert [e["reason"] for e in exported if e["event"] == "compact.prepared_discarded"] == [
        "superseded"
    ]


async def test_a_preparation_overtaken_by_a_compaction_discards_its_result(
    db_url: str,
) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        slow.gate = asyncio.Event()
        manager = background_manager(store, slow)
        await fill_between(manager, "s")
        await manager.maybe_compact("s")
        await slow.started.wait()  # summarizing, holding the lease
        await background_manager(store, enabled=False).compact("s", trigger="manual")
        slow.gate.set()
        assert manager.background is not None
        await manager.background.settle()
        [discarded] = await _events(store, "s", "compact.prepared_discarded")
        assert discarded["reason"] == "lease_lost"
        assert await _events(store, "s", "compact.prepared") == []
        assert await _leases(store, "s") == []


async def test_two_stores_never_prepare_one_session_at_once(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as one, SessionStore(db_url) as two:
        first, second = SlowSummarizer(one.estimator), SlowSummarizer(two.estimator)
        first.gate = asyncio.Event()
        holder = background_manager(one, first)
        waiter = background_manager(two, second)
        assert holder.background is not None and waiter.background is not None
        await fill_between(holder, "s")
        await holder.maybe_compact("s")
        await first.started.wait()
        await waiter.maybe_compact("s")
        await waiter.background.settle()
        assert second.calls == 0, "a second summarizer ran while the lease was held"
        first.gate.set()
        await holder.background.settle()
        # The other store commits the result at the trigger, without a summarizer call.
        await waiter.compact("s", trigger="threshold")
        assert (first.calls, second.calls) == (1, 0)
        [used] = await _events(one, "s", "compact.prepared_committed")
        assert used["holder"] == holder.background.holder


async def test_an_expired_lease_is_taken_over(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        manager = background_manager(store, slow)
        await fill_between(manager, "s")
        long_ago = datetime.now(UTC) - timedelta(hours=1)
        grant = await store.write_transaction(tx_take_lease, "s", "crashed", long_ago, 60.0)
        assert grant.outcome == "granted"
        await prepare(manager, "s")
        assert slow.calls == 1
        [taken] = await _events(store, "s", "compact.lease_taken_over")
        assert (taken["reason"], taken["previous_holder"]) == ("expired", "crashed")
        [(holder, prepared)] = await _leases(store, "s")
        assert manager.background is not None
        assert holder == manager.background.holder and prepared is not None


async def test_a_live_lease_of_another_holder_is_respected(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        manager = background_manager(store, slow)
        await fill_between(manager, "s")
        grant = await store.write_transaction(
            tx_take_lease, "s", "elsewhere", datetime.now(UTC), 300.0
        )
        assert grant.outcome == "granted"
        await prepare(manager, "s")
        assert slow.calls == 0
        assert [row.holder for row in await _leases(store, "s")] == ["elsewhere"]
        # At the trigger nothing prepared can be used: the model call summarizes itself.
        await manager.compact("s", trigger="threshold")
        assert slow.calls == 1


async def test_deleting_a_session_removes_its_lease(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        await _prepare(store, "s")
        assert await store.delete_session("s")
        assert await _leases(store, "s") == []


async def test_background_compaction_is_off_by_default(db_url: str) -> None:
    assert CompactionPolicy().background == BackgroundPolicy(
        enabled=False, prepare_at=0.7, lease_s=300.0
    )
    async with SessionStore(db_url, create_tables=True) as store:
        slow = SlowSummarizer(store.estimator)
        policy = CompactionPolicy(hard_cap_buffer=200, keep_recent_turns=2)
        manager = CompactionManager(
            CompactionConfig(max_context_tokens=4_000, policy=policy, store=store, summarizer=slow)
        )
        await fill_between(manager, "s")  # past prepare_at, under the trigger
        await manager.maybe_compact("s")
        await manager.before_model_call("s")
        assert manager.background is None and slow.calls == 0
        assert await _leases(store, "s") == []


async def test_an_encrypted_session_s_prepared_summary_is_sealed(db_url: str) -> None:
    """Not at rest in plain text when the rows are not; bound to its session, so one moved
    to another session's lease row is discarded, never used."""
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(
        db_url, create_tables=True, keyring=keyring, encrypt_payloads=True
    ) as store:
        manager, slow = await prepared_session(store, "a")
        await prepared_session(store, "b")
        async with store.engine.connect() as conn:
            raw = (
                await conn.execute(
                    sa.text("SELECT prepared FROM compaction_leases ORDER BY session_id")
                )
            ).all()
        stored = [_json(row[0]) for row in raw]
        assert all(list(found) == ["sealed"] for found in stored)
        assert "turn" not in json.dumps(stored)  # the conversation's words are not there
        await manager.compact("a", trigger="threshold")
        assert slow.calls == 1
        assert len(await _events(store, "a", "compact.prepared_committed")) == 1
        # b's sealed result under another session's id does not open.
        async with store.engine.begin() as conn:
            await conn.execute(
                sa.text("UPDATE compaction_leases SET session_id = 'a' WHERE session_id = 'b'")
            )
        await manager.append("a", turns(6, seed=200))
        await manager.compact("a", trigger="threshold")
        [discarded] = await _events(store, "a", "compact.prepared_discarded")
        assert discarded["reason"] == "unreadable"
        assert slow.calls == 2


def test_a_preparation_cut_short_by_its_loop_ending_hands_the_lease_back(db_url: str) -> None:
    """`asyncio.run` per request: the loop that started a preparation ends before the
    summarizer returns; the next request's loop prepares again at once (no lease left)."""
    store = SessionStore(db_url, create_tables=True)
    slow = SlowSummarizer(store.estimator, delay_s=60.0)
    manager = background_manager(store, slow)

    async def first_request() -> None:
        await fill_between(manager, "s")
        await manager.maybe_compact("s")  # starts the preparation on this loop
        await slow.started.wait()

    asyncio.run(first_request())  # the loop ends mid-summary
    assert asyncio.run(_leases(store, "s")) == []
    [cut] = asyncio.run(_events(store, "s", "compact.prepared_discarded"))
    assert cut["reason"] == "cancelled"
    slow.delay_s = 0.0
    asyncio.run(prepare(manager, "s"))
    assert slow.calls == 2
    [(holder, prepared)] = asyncio.run(_leases(store, "s"))
    assert manager.background is not None
    assert holder == manager.background.holder and prepared is not None
    asyncio.run(store.close())
