"""Plain SQL over a store's tables, as an analyst or a test would run it."""

from __future__ import annotations

import sqlalchemy as sa

from sessionstore import SessionStore

# Every table, children before parents (the order deletes must take).
TABLES = (
    "events",
    "archive_members",
    "archives",
    "compactions",
    "messages",
    "sessions",
    "retention_policies",
)


async def scalar(store: SessionStore, sql: str, **params: object) -> object:
    """Run plain SQL through the store's public AsyncEngine (what an analyst would do)."""
    async with store.engine.connect() as conn:
        return (await conn.execute(sa.text(sql), params)).scalar()
