"""Archives read back through the store: a session's archive rows (or one compaction's, or one
archive's), opened with the store's keyring. The public `sessionstore.archive` reader hands
these out; it never touches the sealing, the keys or the codec itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._schema import archives
from .._security._archive_sealing import OpenedArchive, open_archive

if TYPE_CHECKING:
    from ._session_store import SessionStore

__all__ = ["OpenedArchive", "read_archives"]


def _tx_rows(
    conn: Connection, session_id: str, compaction_id: int | None, archive_id: int | None
) -> list[dict[str, Any]]:
    query = sa.select(archives).where(archives.c.session_id == session_id).order_by(archives.c.id)
    if compaction_id is not None:
        query = query.where(archives.c.compaction_id == compaction_id)
    if archive_id is not None:
        query = query.where(archives.c.id == archive_id)
    return [dict(row._mapping) for row in conn.execute(query)]


async def read_archives(
    store: SessionStore,
    session_id: str,
    *,
    compaction_id: int | None = None,
    archive_id: int | None = None,
) -> list[OpenedArchive]:
    """Every archive of a session (or of one compaction, or one archive), oldest first."""
    rows = await store.read_snapshot(_tx_rows, session_id, compaction_id, archive_id)
    return [open_archive(row, store.keyring) for row in rows]
