"""Reading back the events a store recorded, as the analyst's SQL would."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore


async def events_of(store: SessionStore, session_id: str, name: str) -> list[dict[str, Any]]:
    """The stored payloads of the session's events called `name`, oldest first."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT payload FROM events WHERE session_id = :s AND event = :e ORDER BY id"),
            {"s": session_id, "e": name},
        )
        return [p if isinstance(p, dict) else json.loads(p) for (p,) in rows]
