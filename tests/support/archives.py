"""Archive builders shared by the archive tests: a compacted session, its raw archive row."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._schema import archives
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.histories import coding_session


async def compacted(store: SessionStore, session_id: str, seed: int = 0) -> list[dict[str, Any]]:
    """Compact a session; return the replaced items (what the archive must hold)."""
    manager = CompactionManager(
        CompactionConfig(
            max_context_tokens=100_000, store=store, policy=CompactionPolicy(keep_recent_turns=2)
        )
    )
    await manager.append(session_id, coding_session(10, seed=seed))
    outcome = await manager.compact(session_id)
    assert outcome.plan is not None
    return [row.item for row in outcome.plan.replaced_rows if row.item is not None]


async def update_archive(store: SessionStore, archive_id: int, **values: Any) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(archives.update().where(archives.c.id == archive_id).values(**values))


async def raw_archive(store: SessionStore, session_id: str) -> dict[str, Any]:
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(sa.select(archives).where(archives.c.session_id == session_id))
        ).one()
    return dict(row._mapping)
