"""Where a provider's opaque marker came from, and what it stands for in readable form.

A provider compaction item is bound to the provider and model that made it (its
compaction row says which). To replace it with a summary anyone can read, the originals
it replaced are taken back from the archives: the archive of the compaction that wrote
it holds the rows it covered and the marker before it; when that one was opaque too, its
own compaction's archive is read, until a readable summary (or the start) is reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..._items import text_of
from ..._opaque import Bindings, is_opaque, tx_bindings
from ..._rows import StoredRow
from ..._schema import KIND_SUMMARY, SUMMARY_LINE, compactions, sessions
from ..._store import SessionStore
from ...archive import read_archives

__all__ = ["Binding", "Bindings", "ReadableState", "bindings_of", "readable_state", "tx_binding"]


@dataclass(frozen=True, slots=True)
class Binding:
    """The provider and model the session's current marker is bound to."""

    compaction_id: int
    provider: str
    model: str | None

    def readable_by(self, provider: str, model: str) -> bool:
        """Whether a call to `provider`'s `model` can read the marker (provider names are
        compared in lower case, as configs store them)."""
        return self.provider.lower() == provider.lower() and self.model == model


@dataclass(frozen=True, slots=True)
class ReadableState:
    """The originals an opaque marker replaced (oldest first) and the readable summary
    before them, if any."""

    items: list[dict[str, Any]]
    prior_summary: str | None


def tx_binding(conn: Connection, session_id: str) -> Binding | None:
    """The binding of the session's marker: the compaction that started the active context,
    when its marker is a provider's item (one indexed read)."""
    row = conn.execute(
        sa.select(compactions.c.id, compactions.c.provider, compactions.c.model)
        .join(sessions, sessions.c.session_id == compactions.c.session_id)
        .where(
            compactions.c.session_id == session_id,
            compactions.c.context_start_seq == sessions.c.context_start_seq,
        )
        .order_by(compactions.c.version.desc())
        .limit(1)
    ).first()
    if row is None or row.provider is None:
        return None
    return Binding(compaction_id=row.id, provider=row.provider, model=row.model)


async def bindings_of(store: SessionStore, rows: Sequence[StoredRow]) -> Bindings:
    """(provider, model) of the opaque markers among `rows`, by their compaction id: what a
    display shows of an item it must not print."""
    ids = sorted({row.compaction_id for row in rows if row.compaction_id and is_opaque(row.item)})
    return await store.read_snapshot(tx_bindings, ids) if ids else {}


def _tx_writer_of(conn: Connection, session_id: str, summary_seq: int) -> int | None:
    """The compaction that wrote the marker row `summary_seq` (new, or carried by a
    prune-only compaction)."""
    found: int | None = conn.execute(
        sa.select(compactions.c.id).where(
            compactions.c.session_id == session_id, compactions.c.summary_seq == summary_seq
        )
    ).scalar()
    return found


def _strip_marker(text: str) -> str:
    return SUMMARY_LINE.sub("", text, count=1)


async def readable_state(store: SessionStore, session_id: str, compaction_id: int) -> ReadableState:
    """What the marker of `compaction_id` stands for, decrypted from the archives."""
    items: list[dict[str, Any]] = []
    prior: str | None = None
    current: int | None = compaction_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        records = [
            record
            for archive in await read_archives(store, session_id, compaction_id=current)
            for record in archive.records
        ]
        marker = next((r for r in records if r.get("kind") == KIND_SUMMARY), None)
        items = [r["item"] for r in records if r is not marker and r.get("item")] + items
        current = None
        if marker is None or not marker.get("item"):
            break
        if is_opaque(marker["item"]):
            current = await store.read_snapshot(_tx_writer_of, session_id, int(marker["seq"]))
        else:
            prior = _strip_marker(text_of(marker["item"]))
    return ReadableState(items=items, prior_summary=prior)
