"""Compactions of one session by two processes (two stores on one database: the compaction
lock is per process): the one that loses the compare-and-swap looks again, and does not
compact a context the winner already brought under the trigger."""

from __future__ import annotations

import asyncio

from sessionstore import SessionStore
from sessionstore._schema import compactions
from tests.support.background import SlowSummarizer, background_manager
from tests.support.histories import turns


async def _compactions(store: SessionStore, session_id: str) -> int:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            compactions.select().where(compactions.c.session_id == session_id)
        )
        return len(rows.fetchall())


async def test_a_compaction_that_lost_to_another_process_does_not_compact_again(
    db_url: str,
) -> None:
    async with SessionStore(db_url, create_tables=True) as one, SessionStore(db_url) as two:
        slow = SlowSummarizer(one.estimator)
        slow.gate = asyncio.Event()
        loser = background_manager(one, slow, enabled=False)
        winner = background_manager(two, enabled=False)
        window = loser.config.max_context_tokens
        seed = 0
        while await one.context_tokens("s") < loser.policy.threshold(window):
            await loser.append("s", turns(1, seed=seed, size=30))
            seed += 1
        racing = asyncio.create_task(loser.maybe_compact("s"))
        await slow.started.wait()  # the loser is summarizing, its snapshot taken
        assert (await winner.compact("s", trigger="threshold")).compacted
        await winner.append("s", turns(3, seed=50, size=5))  # more to summarize, still under
        assert await one.context_tokens("s") < loser.policy.threshold(window)
        slow.gate.set()
        outcome = await racing
        assert outcome is not None and not outcome.compacted
        assert outcome.skipped_reason is not None and "another writer" in outcome.skipped_reason
        assert slow.calls == 1  # it looked again instead of summarizing a second time
        assert await _compactions(one, "s") == 1
        assert (await one.verify_history("s")).ok
