"""Reading archives back: decrypted, decompressed and verified (by the store), or a clear error.

Archives are found by their own `session_id` column, not through the session's row, so
those that outlive their session (retention can keep them) stay readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._schema import archives
from .._store import SessionStore
from .._store._archive_reads import OpenedArchive, read_archives

__all__ = ["ArchiveInfo", "OpenedArchive", "list_archives", "read_archives"]


@dataclass(frozen=True, slots=True)
class ArchiveInfo:
    """What an archive holds, without opening it."""

    archive_id: int
    session_id: str
    compaction_id: int | None
    reason: str
    from_seq: int
    to_seq: int
    items: int
    encrypted: bool
    kek_id: str | None
    created_at: datetime


_INFO_COLUMNS = (
    archives.c.id,
    archives.c.session_id,
    archives.c.compaction_id,
    archives.c.reason,
    archives.c.from_seq,
    archives.c.to_seq,
    archives.c.item_count,
    archives.c.format_version,
    archives.c.kek_id,
    archives.c.created_at,
)


def _infos(conn: Connection, session_id: str | None, limit: int) -> list[ArchiveInfo]:
    query = sa.select(*_INFO_COLUMNS).order_by(archives.c.id.desc()).limit(limit)
    if session_id is not None:
        query = query.where(archives.c.session_id == session_id)
    return [
        ArchiveInfo(
            archive_id=row.id,
            session_id=row.session_id,
            compaction_id=row.compaction_id,
            reason=row.reason,
            from_seq=row.from_seq,
            to_seq=row.to_seq,
            items=row.item_count,
            encrypted=row.format_version > 0,
            kek_id=row.kek_id,
            created_at=row.created_at,
        )
        for row in conn.execute(query)
    ][::-1]


async def list_archives(
    store: SessionStore, session_id: str | None = None, *, limit: int = 100
) -> list[ArchiveInfo]:
    """The newest `limit` archives (of one session, or of all), oldest first, unopened."""
    return await store.read_snapshot(_infos, session_id, limit)
