"""Import an Agents SDK session the first time the store is asked for it (issue #33).

Swapping `SQLiteSession("u5", "conversations.db")` for `SQLSession("u5",
"conversations.db")` must not empty the agent's memory. When the store's own
database holds the SDK's tables (`agent_sessions`/`agent_messages`, or the names
SQLAlchemySession was given), a session id the SDK has and the store does not
is imported on its first access:

- once: one write transaction checks that the store has no such session, appends
  every item (in the SDK's order, unchanged), stores the import record that
  `sessionstore import` reads (so a later bulk import sees it up to date) and an
  `import.sdk_session` event. A second importer, in this process or another,
  finds the session there and stores nothing; on PostgreSQL, where two
  transactions can both find it missing, the batch's idempotency token and the
  first seq (which must be 1) refuse the second one, which rolls back whole.
- read-only on the SDK's side: its tables are only ever SELECTed from.
- cheap afterwards: the tables are looked for once per store (and table names),
  each session id is checked once per store; both answers are kept in memory.

It reads plain tables: no agent framework is imported here (adapters pass the
table names and call `ensure`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._errors import DuplicateAppendError
from .._events import Event
from .._rows import Batch
from .._schema import sessions
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import lock_session
from .._store import SessionStore
from .._store._writes import tx_append_general, tx_events, tx_merge_metadata
from ._sdk_source import (
    DEFAULT_MESSAGES_TABLE,
    DEFAULT_SESSIONS_TABLE,
    IMPORT_KEY,
    MESSAGE_COLUMNS,
    STRUCTURE_TABLE,
    ImportMarker,
    SourceOrder,
    SourceRow,
    location_of,
    messages_table_clause,
    parse_message,
    sdk_table_pairs,
    session_scope,
    structure_table,
)

IMPORT_EVENT: Final = "import.sdk_session"
KNOWN_IDS: Final = 100_000  # session ids a store remembers as checked (then forgets all)

log = logging.getLogger("sessionstore.import")


@dataclass(frozen=True, slots=True)
class SdkTables:
    """The table names an SDK store was given (SQLAlchemySession's sessions_table= and
    messages_table=; SQLiteSession's defaults)."""

    sessions_table: str = DEFAULT_SESSIONS_TABLE
    messages_table: str = DEFAULT_MESSAGES_TABLE


@dataclass(frozen=True, slots=True)
class _Found:
    """The SDK's tables as found in the store's database."""

    messages: sa.TableClause
    structure: sa.TableClause | None
    order: SourceOrder
    identity: str  # what the import record names (as `sessionstore import` would)


class _Raced(Exception):
    """Another writer created the session inside this transaction's window: roll back."""


def _has_sdk_tables(conn: Connection, tables: SdkTables) -> tuple[bool, bool]:
    """(the SDK's two tables are there with a messages table's columns, AdvancedSQLiteSession's
    branch map is there)."""
    inspector = sa.inspect(conn)
    names = set(inspector.get_table_names())
    if not {tables.sessions_table, tables.messages_table} <= names:
        return False, False
    columns = {column["name"] for column in inspector.get_columns(tables.messages_table)}
    return set(MESSAGE_COLUMNS) <= columns, STRUCTURE_TABLE in names


def _read_session(conn: Connection, found: _Found, session_id: str) -> list[Any] | None:
    """The SDK's (id, message_data) rows of `session_id` in its order; None when the store
    already has the session (nothing to import, whatever the SDK holds)."""
    ours = sa.select(sessions.c.session_id).where(sessions.c.session_id == session_id)
    if conn.execute(ours).first() is not None:
        return None
    scope = session_scope(conn, found.messages, found.structure, session_id)
    m = found.messages
    return list(conn.execute(scope.ordered(m.c.id, m.c.message_data, order=found.order)))


def _tx_first_import(
    conn: Connection,
    batch: Batch,
    keys: SessionKeys,
    metadata: dict[str, Any],
    event_rows: list[dict[str, Any]],
) -> bool:
    """Append the whole SDK history as seqs 1..n with its record and event, or nothing."""
    if lock_session(conn, batch.session_id) is not None:
        return False  # imported (or written) by someone else since we looked
    seqs = tx_append_general(conn, batch, {}, keys)
    if seqs[0] != 1:  # PostgreSQL: another transaction created it meanwhile
        raise _Raced
    tx_merge_metadata(conn, batch.session_id, metadata)
    tx_events(conn, event_rows)
    return True


def _token(identity: str, session_id: str) -> str:
    """The import batch's idempotency token: the same for every importer of this session."""
    digest = hashlib.sha256(f"{identity}\0{session_id}".encode()).hexdigest()
    return f"sdk-import-{digest[:48]}"


@dataclass(slots=True)
class SdkHistory:
    """First-access import of the SDK's sessions for one store and one pair of table names.

    Get it with `SdkHistory.of(store, tables)` (one per store and names, shared by every
    session object on the store) and `await ensure(session_id)` before a session's first
    read or write.
    """

    _store: weakref.ref[SessionStore]
    tables: SdkTables
    _found: _Found | None = None
    _looked: bool = False  # the tables were looked for (found or not)
    _checked: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, store: SessionStore, tables: SdkTables | None = None) -> SdkHistory:
        """The store's importer for `tables` (the SDK's default names when None)."""
        tables = tables or SdkTables()
        with _REGISTRY_LOCK:
            per_store = _REGISTRY.setdefault(store, {})
            history = per_store.get(tables)
            if history is None:
                history = per_store[tables] = cls(weakref.ref(store), tables)
            return history

    async def ensure(self, session_id: str, logger: logging.Logger | None = None) -> None:
        """Import `session_id` from the SDK's tables if the store lacks it and they have it,
        saying so on `logger` (AdvancedSQLiteSession's argument; "sessionstore.import" else).

        After the first call for an id (or when the database has no SDK tables) this costs
        a set lookup. Errors reaching the database propagate (nothing is remembered: the
        next access tries again); SDK rows that cannot be stored are skipped and counted.
        """
        if session_id in self._checked or (self._looked and self._found is None):
            return
        store = self._store()
        if store is None or store.read_only:  # a read-only store cannot import: show ours
            return
        found = await self._tables(store)
        if found is not None:
            await self._import(store, found, session_id, logger or log)
        if len(self._checked) >= KNOWN_IDS:
            self._checked.clear()
        self._checked.add(session_id)

    async def _tables(self, store: SessionStore) -> _Found | None:
        if not self._looked:
            present, branched = await store.read_snapshot(_has_sdk_tables, self.tables)
            if present:
                self._found = _Found(
                    messages=messages_table_clause(self.tables.messages_table),
                    structure=structure_table() if branched else None,
                    order="id" if store.dialect == "sqlite" else "created_at",
                    identity=f"{location_of(store.url)}#{self.tables.messages_table}",
                )
            self._looked = True
        return self._found

    async def _import(
        self, store: SessionStore, found: _Found, session_id: str, logger: logging.Logger
    ) -> None:
        data = await store.read_snapshot(_read_session, found, session_id)
        if not data:
            return  # ours already, or the SDK has no messages for it
        rows = [parse_message(int(mid), value, store.max_item_bytes) for mid, value in data]
        items = [row.item for row in rows if row.item is not None]
        skipped = [row for row in rows if row.item is None]
        if not items:
            logger.warning(
                "Agents SDK session %r in %s: none of its %d message(s) can be stored (%s); "
                "nothing imported",
                session_id,
                found.identity,
                len(rows),
                skipped[0].problem,
            )
            return
        batch, _ = await store.prepare_batch(
            session_id, items, token=_token(found.identity, session_id)
        )
        marker = ImportMarker.complete(found.identity, rows, len(items))
        event = _event(found, session_id, rows, items, sum(batch.counts))
        redacted = store.redacted([event])
        try:
            imported = await store.write_transaction(
                _tx_first_import,
                batch,
                store.session_keys,
                {IMPORT_KEY: marker.as_json()},
                [stored.row() for stored in redacted],
            )
        except (_Raced, DuplicateAppendError):
            imported = False
        if not imported:
            return
        store.publish(redacted)
        logger.info(
            "imported Agents SDK session %r: %d item(s) from table %r of %s%s",
            session_id,
            len(items),
            self.tables.messages_table,
            location_of(store.url),
            f"; {len(skipped)} message(s) skipped (cannot be stored)" if skipped else "",
        )


def _event(
    found: _Found,
    session_id: str,
    rows: Sequence[SourceRow],
    items: Sequence[Any],
    tokens: int,
) -> Event:
    severity = "warning" if len(items) < len(rows) else "info"
    fields = {
        "source": found.identity,
        "source_table": found.messages.name,
        "items": len(items),
        "tokens": tokens,
        "skipped": [
            {"message_id": r.message_id, "reason": r.problem} for r in rows if r.item is None
        ],
        "trigger": "first_access",
    }
    return Event(IMPORT_EVENT, session_id=session_id, severity=severity, fields=fields)


_REGISTRY_LOCK: Final = threading.Lock()
_REGISTRY: weakref.WeakKeyDictionary[SessionStore, dict[SdkTables, SdkHistory]] = (
    weakref.WeakKeyDictionary()
)


# ------------------------------------------------------------------- doctor


@dataclass(frozen=True, slots=True)
class SdkTablesStatus:
    """One pair of SDK tables in a database, and how much of it the store still lacks."""

    tables: SdkTables
    sessions: int  # SDK sessions with messages
    messages: int
    only_there: int  # of those, sessions the store has no session for
    messages_only_there: int


def sdk_tables_status(conn: Connection) -> list[SdkTablesStatus]:
    """Every SDK messages table in the database (any name: a table with the SDK's message
    columns; its sessions table is the one its session_id refers to), with counts."""
    names = set(sa.inspect(conn).get_table_names())
    found = []
    for sessions_table, name in sdk_table_pairs(conn):
        tables = SdkTables(sessions_table, name)
        m = messages_table_clause(name)
        per_session = (
            sa.select(m.c.session_id, sa.func.count().label("n")).group_by(m.c.session_id)
        ).subquery()
        ours = sa.select(sessions.c.session_id) if "sessions" in names else None
        missing = sa.true() if ours is None else per_session.c.session_id.not_in(ours)
        total = conn.execute(
            sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(per_session.c.n), 0))
        ).one()
        left = conn.execute(
            sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(per_session.c.n), 0)).where(
                missing
            )
        ).one()
        found.append(
            SdkTablesStatus(tables, int(total[0]), int(total[1]), int(left[0]), int(left[1]))
        )
    return found
