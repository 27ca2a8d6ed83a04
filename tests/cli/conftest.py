"""A seeded database for the command tests: one compacted session with a secret in it."""

from __future__ import annotations

import asyncio

import pytest

from sessionstore import SessionStore
from sessionstore.compaction import CompactConfig, CompactManager, CompactPolicy
from tests.support.histories import coding_session

SECRET = "api_key=sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"


@pytest.fixture
def seeded(db_url: str) -> str:
    """`db_url` holding session 'work' (compacted, with a secret) and session 'other'."""

    async def seed() -> None:
        async with SessionStore(db_url, create_tables=True) as store:
            manager = CompactManager(
                CompactConfig(storage=store, policy=CompactPolicy(keep_recent_turns=2))
            )
            await manager.append("work", coding_session(8))
            await manager.compact("work")
            await store.append("work", [{"role": "user", "content": f"deploy with {SECRET}"}])
            await store.append("other", [{"role": "user", "content": "hello"}])

    asyncio.run(seed())
    return db_url
