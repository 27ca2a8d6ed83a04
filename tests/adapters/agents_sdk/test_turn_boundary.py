"""The turn boundary of `SQLSession.add_items`: once the items are stored, a compaction that
keeps losing to other writers is recorded, not raised into the run (a caller retrying the
turn would store it twice)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore, SQLSession
from sessionstore.compaction._summarizers._summarizer import SummaryRequest, SummaryResult
from tests.support.background import SlowSummarizer, background_manager
from tests.support.histories import turns


class ClearingSummarizer(SlowSummarizer):
    """Every summary it makes, another store clears the session and refills it past the
    trigger meanwhile: each compare-and-swap fails, and every retry is still needed."""

    def __init__(self, store: SessionStore, other: SessionStore, refill: list[Any]) -> None:
        super().__init__(store.estimator)
        self.other = other
        self.refill = refill

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        await self.other.clear("s")
        await self.other.append("s", self.refill)
        return await super().summarize(request)


async def test_a_turn_boundary_compaction_that_keeps_losing_does_not_fail_the_turn(
    db_url: str,
) -> None:
    async with SessionStore(db_url, create_tables=True) as one, SessionStore(db_url) as two:
        refill: list[Any] = turns(50, seed=7, size=30)
        summarizer = ClearingSummarizer(one, two, refill)
        manager = background_manager(one, summarizer, enabled=False)
        window = manager.config.max_context_tokens
        assert sum(map(one.estimator.count_item, refill)) > manager.policy.threshold(window)
        session = SQLSession("s", one, manager=manager)
        last: list[Any] = turns(1, seed=99, size=30)
        await session.add_items(refill)  # over the trigger: the boundary compacts, and loses
        await session.add_items(last)
        assert summarizer.calls >= 3
        stored = await one.history("s")
        assert [row.item for row in stored if row.item == last[0]] == [last[0]]  # once
        async with one.engine.connect() as conn:
            errors = await conn.execute(
                sa.text(
                    "SELECT count(*) FROM events WHERE event = 'compact.error' AND session_id = 's'"
                )
            )
            assert errors.scalar_one() >= 1
