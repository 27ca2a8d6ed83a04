"""Reading archives back: decrypted, decompressed and verified, or a clear error."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..archive_sealing import OpenedArchive, open_archive
from ..schema import archives
from ..store import SessionStore


def _rows(conn: Connection, session_id: str, compaction_id: int | None) -> list[dict[str, Any]]:
    query = sa.select(archives).where(archives.c.session_id == session_id).order_by(archives.c.id)
    if compaction_id is not None:
        query = query.where(archives.c.compaction_id == compaction_id)
    return [dict(row._mapping) for row in conn.execute(query)]


async def read_archives(
    store: SessionStore, session_id: str, *, compaction_id: int | None = None
) -> list[OpenedArchive]:
    """Every archive of a session (or of one compaction), oldest first."""
    rows = await store.read_snapshot(_rows, session_id, compaction_id)
    return [open_archive(row, store.keyring) for row in rows]
