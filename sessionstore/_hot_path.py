"""The two hot paths, per backend: append a batch and read the active context.

Each is one driver-level statement (or two on SQLite, inside one transaction) built
once at import from the Core tables, because SQLAlchemy's per-statement work would
double an append. The `Database` of each backend runs them; the store only says what.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ._rows import ITEM_COLUMNS, Batch
from ._schema import messages, sessions

_sid: Final = sa.bindparam("sid", type_=sa.Text)


def _append_upsert(insert: Any) -> Any:
    """Create-or-advance the session row for an append; returns the new last_seq.

    On PostgreSQL the upsert also takes the session's row lock for the transaction.
    """
    upsert = insert(sessions).values(
        session_id=_sid,
        last_seq=sa.bindparam("count"),
        context_items=sa.bindparam("count"),
        context_tokens=sa.bindparam("tokens"),
        token_encoding=sa.bindparam("encoding"),
    )
    return upsert.on_conflict_do_update(
        index_elements=[sessions.c.session_id],
        set_={
            "last_seq": sessions.c.last_seq + upsert.excluded.last_seq,
            "context_items": sessions.c.context_items + upsert.excluded.context_items,
            "context_tokens": sessions.c.context_tokens + upsert.excluded.context_tokens,
            "updated_at": sa.func.current_timestamp(),
        },
    ).returning(sessions.c.last_seq)


APPEND_UPSERT: Final = {
    "sqlite": _append_upsert(sqlite.insert),
    "postgresql": _append_upsert(postgresql.insert),
}


def _sqlite_sql(statement: Any, expected_params: Sequence[str], **compile_kw: Any) -> str:
    """Compile a Core statement once for SQLite, checking its positional parameter order."""
    compiled = statement.compile(dialect=sqlite.dialect(), **compile_kw)
    assert tuple(compiled.positiontup) == tuple(expected_params), compiled.positiontup
    return str(compiled)


_SQLITE_UPSERT_SQL: Final = _sqlite_sql(
    APPEND_UPSERT["sqlite"], ("sid", "count", "tokens", "count", "encoding")
)
_SQLITE_INSERT_ITEM_SQL: Final = _sqlite_sql(
    messages.insert(), ITEM_COLUMNS, column_keys=list(ITEM_COLUMNS)
)

# PostgreSQL appends in ONE statement (one round trip, atomic on its own): the
# CTE advances the session row (taking its row lock) and the outer INSERT
# numbers the batch from the new last_seq.
# Placeholders, in order: session id, item count, token sum, encoding, then one
# array per column (roles, item types, tool names, call ids, tokens, protected, payloads),
# then the batch's idempotency token (stored on its first row).
PG_APPEND_SQL: Final = """
    WITH advanced AS (
        INSERT INTO sessions (session_id, last_seq, context_items, context_tokens, token_encoding)
        VALUES ($1, $2::bigint, $2::int, $3, $4)
        ON CONFLICT (session_id) DO UPDATE SET
            last_seq = sessions.last_seq + EXCLUDED.last_seq,
            context_items = sessions.context_items + EXCLUDED.context_items,
            context_tokens = sessions.context_tokens + EXCLUDED.context_tokens,
            updated_at = CURRENT_TIMESTAMP
        RETURNING last_seq
    )
    INSERT INTO messages
        (session_id, seq, kind, role, item_type, tool_name, call_id, tokens, protected, payload,
         append_token)
    SELECT $1, advanced.last_seq - $2::bigint + batch.ord, 'item', batch.role, batch.item_type,
           batch.tool_name, batch.call_id, batch.tokens, batch.protected, batch.payload::json,
           CASE WHEN batch.ord = 1 THEN $12::text END
    FROM advanced,
         unnest(CAST($5 AS TEXT[]), CAST($6 AS TEXT[]),
                CAST($7 AS TEXT[]), CAST($8 AS TEXT[]),
                CAST($9 AS INTEGER[]), CAST($10 AS BOOLEAN[]),
                CAST($11 AS TEXT[]))
         WITH ORDINALITY
         AS batch(role, item_type, tool_name, call_id, tokens, protected, payload, ord)
    RETURNING seq
"""
# The active context in one driver-level statement, rows shaped (seq, kind, ref_seq, payload,
# payload_sealed): payloads come back as JSON text and are parsed in one call, with no per-row
# work in between.
_ACTIVE_SQL: Final = """
    SELECT m.seq, m.kind, m.ref_seq, m.payload{cast}, m.payload_sealed
    FROM messages m
    WHERE m.session_id = {sid}
      AND m.seq >= (SELECT s.context_start_seq FROM sessions s WHERE s.session_id = {sid})
    ORDER BY m.seq
"""
PG_ACTIVE_SQL: Final = _ACTIVE_SQL.format(cast="::text", sid="$1")
_SQLITE_ACTIVE_SQL: Final = _ACTIVE_SQL.format(cast="", sid=":sid")


def pg_append_args(batch: Batch) -> tuple[Any, ...]:
    """The positional arguments of PG_APPEND_SQL: the counters, then one array per column."""
    infos = batch.infos
    return (
        batch.session_id,
        len(batch.payloads),
        sum(batch.counts),
        batch.encoding,
        [info.role for info in infos],
        [info.item_type for info in infos],
        [info.tool_name for info in infos],
        [info.call_id for info in infos],
        batch.counts,
        [batch.protected or info.protected for info in infos],
        batch.payloads,
        batch.token,
    )


def sqlite_append(conn: sqlite3.Connection, batch: Batch) -> list[int]:
    """SQLite append: SQL compiled once from the Core statements, run on the driver
    connection (SQLAlchemy's per-statement work would double an append)."""
    cursor = conn.cursor()
    try:
        size = len(batch.payloads)
        params = (batch.session_id, size, sum(batch.counts), size, batch.encoding)
        (last,) = cursor.execute(_SQLITE_UPSERT_SQL, params).fetchone()
        first = last - size + 1
        cursor.executemany(_SQLITE_INSERT_ITEM_SQL, batch.rows(first))
    finally:
        cursor.close()
    return list(range(first, last + 1))


def sqlite_active_rows(conn: sqlite3.Connection, session_id: str) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = conn.execute(_SQLITE_ACTIVE_SQL, {"sid": session_id}).fetchall()
    return rows
