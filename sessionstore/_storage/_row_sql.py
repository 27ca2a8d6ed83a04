"""The row-level SQL every write transaction shares.

The store's appends and pops, and compaction's commit (which runs through
`SessionStore.write_transaction`), lock a session, read what was appended after a
snapshot and seal new rows the same way; this module is where that is spelled once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeAlias

import sqlalchemy as sa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy.engine import Connection, Result, Row

from .._items import encode_payload
from .._rows import StoredRow, decode_payloads
from .._schema import KIND_CARRY, messages, sessions
from .._security._payload_sealing import SessionKeys, seal_payload
from ._off_loop import let_loop_run, off_loop_past

AnyRow: TypeAlias = Row[*tuple[Any, ...]]

_sid: Final = sa.bindparam("sid", type_=sa.Text)
# A StoredRow's columns in its field order (the item last), then the payload and its sealed
# form, then the agent. The payload is read as JSON text on both backends, so a compaction's
# 10,000 payloads are parsed in one call instead of one by one in PostgreSQL's driver.
ROW_COLUMNS: Final = (
    messages.c.session_id,
    messages.c.seq,
    messages.c.kind,
    messages.c.role,
    messages.c.item_type,
    messages.c.tool_name,
    messages.c.call_id,
    messages.c.tokens,
    messages.c.protected,
    messages.c.ref_seq,
    messages.c.compaction_id,
    messages.c.archive_id,
    messages.c.created_at,
    sa.cast(messages.c.payload, sa.Text).label("payload"),
    messages.c.payload_sealed,
    messages.c.agent,
)
_CHUNK: Final = 500  # rows fetched (as SQLAlchemy Rows) at a time by stored_rows
SESSION_ROW: Final = sa.select(*sessions.c).where(sessions.c.session_id == _sid)
_SESSION_FOR_UPDATE: Final = SESSION_ROW.with_for_update()
_ROWS_AFTER: Final = (
    sa.select(*ROW_COLUMNS)
    .where(messages.c.session_id == _sid, messages.c.seq > sa.bindparam("after"))
    .order_by(messages.c.seq)
)


def seq_range(*columns: Any, first: str = "first", last: str = "last") -> sa.Select[Any]:
    """`columns` of one session's rows (bound as `sid`) from seq `first` to `last`, in order."""
    return (
        sa.select(*columns)
        .where(
            messages.c.session_id == _sid,
            messages.c.seq >= sa.bindparam(first),
            messages.c.seq <= sa.bindparam(last),
        )
        .order_by(messages.c.seq)
    )


def stored_rows(
    conn: Connection, keys: SessionKeys, session_id: str, rows: Iterable[AnyRow]
) -> list[StoredRow]:
    """Stored rows from rows of ROW_COLUMNS, their payloads unsealed as needed and parsed in
    one call (a compaction reads 10,000 rows).

    Fetched a chunk at a time, and of each Row only the plain tuple of its columns is kept
    until the payloads are parsed: the collector stops tracking a tuple of plain values, while
    10,000 Rows alive at once were half of what a compaction's read moved into the oldest
    generation, the count that starts a full collection (PostgreSQL's driver still holds all
    its records from execute on).
    """
    plain = keys.opener(conn, session_id)
    chunks = rows.partitions(_CHUNK) if isinstance(rows, Result) else (rows,)
    fetched: list[tuple[Any, ...]] = []
    payloads: list[Any] = []
    agents: list[str | None] = []
    for chunk in chunks:
        if fetched:  # past the first chunk: PostgreSQL walks the driver's rows on the loop
            let_loop_run()
        for row in chunk:
            fetched.append(row[:13])
            payloads.append(plain(row[1], row[13], row[14]))
            agents.append(row[15])
    return off_loop_past(len(fetched), _assembled, fetched, payloads, agents)


def _assembled(
    fetched: list[tuple[Any, ...]], payloads: list[Any], agents: list[str | None]
) -> list[StoredRow]:
    """StoredRows from the columns stored_rows kept, the payloads parsed in one call."""
    parsed = iter(decode_payloads([payload for payload in payloads if payload is not None]))
    return [
        StoredRow(
            sid,
            seq,
            kind,
            role,
            item_type,
            tool_name,
            call_id,
            tokens,
            bool(protected),
            ref_seq,
            compaction_id,
            archive_id,
            None if payload is None else next(parsed),
            created_at,
            payload,
            agent,
        )
        for (
            sid,
            seq,
            kind,
            role,
            item_type,
            tool_name,
            call_id,
            tokens,
            protected,
            ref_seq,
            compaction_id,
            archive_id,
            created_at,
        ), payload, agent in zip(fetched, payloads, agents, strict=True)
    ]


def lock_session(conn: Connection, session_id: str) -> AnyRow | None:
    """The session row, locked for this transaction on PostgreSQL.

    On SQLite the transaction already holds the database write lock (BEGIN IMMEDIATE).
    """
    stmt = _SESSION_FOR_UPDATE if conn.dialect.name == "postgresql" else SESSION_ROW
    return conn.execute(stmt, {"sid": session_id}).first()


def rows_after(conn: Connection, session_id: str, seq: int, keys: SessionKeys) -> list[StoredRow]:
    """Rows appended after `seq` (inside a transaction: what changed since a snapshot)."""
    rows = conn.execute(_ROWS_AFTER, {"sid": session_id, "after": seq})
    return stored_rows(conn, keys, session_id, rows)


def write_rows(
    conn: Connection,
    keys: SessionKeys,
    session: Mapping[str, Any],
    rows: list[dict[str, Any]],
) -> dict[str, Any]:
    """Seal new rows as their session requires and chain them onto its history (the caller
    holds the session's lock and inserts them); returns the session columns to store."""
    first = rows[0]["seq"]
    cipher = keys.for_rows(conn, session, first)
    for row in rows:
        seal_row(row, cipher)
    return keys.chains.start(session, first).after(rows)


def seal_row(row: dict[str, Any], cipher: AESGCM | None) -> None:
    """Move a new row's payload into `payload_sealed` when its session is encrypted."""
    if cipher is None or row["payload"] is None:
        row["payload_sealed"] = None
        return
    row["payload_sealed"] = seal_payload(cipher, row["session_id"], row["seq"], row["payload"])
    row["payload"] = None


def marker_row(session_id: str, seq: int, kind: str, ref_seq: int | None) -> dict[str, Any]:
    """A row with no payload: a tombstone, a clear or a rewind (a clear naming its target)."""
    return {
        "session_id": session_id,
        "seq": seq,
        "kind": kind,
        "ref_seq": ref_seq,
        "tokens": 0,
        "protected": False,
        "payload": None,
    }


def carried_copy(
    row: StoredRow,
    *,
    session_id: str,
    seq: int,
    kind: str,
    item: dict[str, Any] | None = None,
    tokens: int | None = None,
) -> dict[str, Any]:
    """A copy of a visible row written anew at `seq` of `session_id` (a compaction's kept
    items, a rewind's restored context; a branch copies rows of its parent), pointing at the
    original it copies and naming the agent that produced it; `item` replaces its payload."""
    payload = item if item is not None else row.item
    assert payload is not None, f"row {row.seq} has no payload to carry"
    origin = row.ref_seq if row.kind == KIND_CARRY and row.ref_seq is not None else row.seq
    return {
        "session_id": session_id,
        "seq": seq,
        "kind": kind,
        "role": row.role,
        "item_type": row.item_type,
        "tool_name": row.tool_name,
        "call_id": row.call_id,
        "tokens": row.tokens if tokens is None else tokens,
        "protected": row.protected,
        "ref_seq": origin,
        "archive_id": row.archive_id,
        "payload": encode_payload(payload, 0),
        "agent": row.agent,
    }
