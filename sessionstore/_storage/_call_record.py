"""Recording a model call: the pre-flight's one write, as a driver-level hot path per backend.

The SDK adapter records every model call before it goes out, so this write sits on the
critical path of every call (issue 16: the whole pre-flight under 1 ms). Like the append,
it skips SQLAlchemy's per-statement work: its SQL is built once at import from the Core
tables, event values are bound by the dialect's own type processors (stored exactly as Core
stored them), and each backend's `Database` runs it on its driver connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.engine import Dialect

from .._errors import StoreError
from .._schema import events, model_calls, sessions
from ._append_rows import sqlite_sql

# The pre-flight's decision, taken from the stored total read under the session's lock: the
# event rows (`Event.row()`) to store with the call, or None to record nothing (it compacts).
Decide = Callable[[int], Sequence[dict[str, Any]] | None]
_ATTEMPTS: Final = 1000  # each failed attempt means another writer moved the session

# The session's next call number (constants inline: `sid` is its only parameter).
_ZERO, _ONE = sa.literal_column("0", sa.Integer), sa.literal_column("1", sa.Integer)
NEXT_CALL: Final = sa.select(sa.func.coalesce(sa.func.max(model_calls.c.call), _ZERO) + _ONE).where(
    model_calls.c.session_id == sa.bindparam("sid", type_=sa.Text)
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A model call about to go out (usage is attached later)."""

    session_id: str
    model: str | None
    input_items: int
    unsaved_items: int
    unsaved_tokens: int
    digest: str  # input_sha256 of the input
    decide: Decide
    masked_tokens: int = 0  # what masking took out of the stored context sent

    @property
    def added_tokens(self) -> int:
        """The estimate's part beyond the stored total (negative when masking frees more)."""
        return self.unsaved_tokens - self.masked_tokens


_EVENT_COLUMNS: Final = tuple(column for column in events.c if column.name != "id")
_EVENT_NAMES: Final = tuple(column.name for column in _EVENT_COLUMNS)
_Binders = tuple[Callable[[Any], Any] | None, ...]


def _binders(dialect: Dialect) -> _Binders:
    """How `dialect` binds each event column: what Core would have sent for it."""
    return tuple(
        column.type.dialect_impl(dialect).bind_processor(dialect) for column in _EVENT_COLUMNS
    )


def _event_values(rows: Sequence[dict[str, Any]], binders: _Binders) -> list[tuple[Any, ...]]:
    return [
        tuple(
            value if bind is None else bind(value)
            for bind, value in zip(binders, (row[name] for name in _EVENT_NAMES), strict=True)
        )
        for row in rows
    ]


# ------------------------------------------------------------------------------ SQLite

_SQLITE_BINDERS: Final = _binders(sqlite.dialect())
_SQLITE_STORED_SQL: Final = sqlite_sql(
    sa.select(sessions.c.context_tokens, sessions.c.context_start_seq, sessions.c.last_seq).where(
        sessions.c.session_id == sa.bindparam("sid")
    ),
    ("sid",),
)
_SQLITE_INSERT_EVENTS_SQL: Final = sqlite_sql(
    events.insert(), _EVENT_NAMES, column_keys=list(_EVENT_NAMES)
)
_CALL_VALUES: Final = ("model", "first", "last", "unsaved", "inputs", "estimate", "digest")
_SQLITE_INSERT_CALL_SQL: Final = sqlite_sql(
    model_calls.insert()
    .values(
        session_id=sa.bindparam("sid"),
        call=NEXT_CALL.scalar_subquery(),  # under the write lock: no other call takes it
        model=sa.bindparam("model"),
        context_from_seq=sa.bindparam("first"),
        context_to_seq=sa.bindparam("last"),
        unsaved_items=sa.bindparam("unsaved"),
        input_items=sa.bindparam("inputs"),
        input_tokens_est=sa.bindparam("estimate"),
        input_sha256=sa.bindparam("digest"),
    )
    .returning(model_calls.c.id),
    ("sid", "sid", *_CALL_VALUES),
)


def sqlite_record_call(conn: sqlite3.Connection, record: CallRecord) -> tuple[int | None, int]:
    """In a BEGIN IMMEDIATE on the writer's connection (the database's write lock): decide
    from the stored total, then insert the events and the call; its id (None: nothing
    written) and the total it was decided from."""
    cursor = conn.cursor()
    try:
        sid = record.session_id
        state = cursor.execute(_SQLITE_STORED_SQL, (sid,)).fetchone()
        stored, first, last = (0, None, None) if state is None else state
        rows = record.decide(stored)
        if rows is None:
            return None, stored
        if rows:
            cursor.executemany(_SQLITE_INSERT_EVENTS_SQL, _event_values(rows, _SQLITE_BINDERS))
        values = (record.unsaved_items, record.input_items, record.added_tokens + stored)
        params = (sid, sid, record.model, first, last, *values, record.digest)
        (row_id,) = cursor.execute(_SQLITE_INSERT_CALL_SQL, params).fetchone()
        return int(row_id), stored
    finally:
        cursor.close()


# -------------------------------------------------------------------------- PostgreSQL

_PG_DIALECT: Final = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
_PG_BINDERS: Final = _binders(_PG_DIALECT)
_PG_EVENTS_FIRST: Final = 8  # the first event column's placeholder
_PG_EVENT_ARRAYS: Final = ", ".join(
    f"CAST(${number} AS {column.type.compile(dialect=_PG_DIALECT)}[])"
    for number, column in enumerate(_EVENT_COLUMNS, start=_PG_EVENTS_FIRST)
)
PG_STORED_TOTAL_SQL: Final = "SELECT context_tokens FROM sessions WHERE session_id = $1"
# ONE statement, optimistic: the events were decided from the stored total the caller
# expects ($7); the CTE locks the session row and records the call (with its events) only
# if that total still holds. Either way it returns the call's id (NULL: nothing written) and
# the total it found. The call number comes from the statement's snapshot, which can predate
# a concurrent record of the same session that held the lock: ON CONFLICT turns that into
# NULL too, and the caller tries again. Placeholders: session id, model, unsaved items,
# input items, unsaved tokens, digest, expected total, then one array per event column.
PG_RECORD_CALL_SQL: Final = f"""
    WITH locked AS (
        SELECT context_tokens, context_start_seq, last_seq
        FROM sessions WHERE session_id = $1 FOR UPDATE
    ), stored AS (
        SELECT coalesce(locked.context_tokens, 0) AS tokens, locked.context_start_seq,
               locked.last_seq
        FROM (SELECT 1) AS one LEFT JOIN locked ON true
    ), recorded AS (
        INSERT INTO model_calls (session_id, call, model, context_from_seq, context_to_seq,
                                 unsaved_items, input_items, input_tokens_est, input_sha256)
        SELECT $1, (SELECT coalesce(max(call), 0) + 1 FROM model_calls WHERE session_id = $1),
               $2, stored.context_start_seq, stored.last_seq, $3, $4, $5 + stored.tokens, $6
        FROM stored WHERE stored.tokens = $7
        ON CONFLICT (session_id, call) DO NOTHING
        RETURNING id
    ), logged AS (
        INSERT INTO events ({", ".join(_EVENT_NAMES)})
        SELECT batch.* FROM recorded, unnest({_PG_EVENT_ARRAYS}) AS batch
    ), relaxed AS (  -- telemetry: this statement's commit does not wait for the WAL flush
        SELECT set_config('synchronous_commit', 'off', true)
    )
    SELECT (SELECT id FROM recorded), stored.tokens FROM stored, relaxed
"""


class Fetch(Protocol):
    """`PostgresDatabase.fetch_statement`: one statement on the asyncpg pool, its rows."""

    async def __call__(self, sql: str, *args: Any, writing: bool = False) -> list[Any]: ...


async def pg_record_call(
    fetch: Fetch, record: CallRecord, known: int | None
) -> tuple[int | None, int]:
    """Record against the stored total the caller last saw (`known`): one round trip while it
    holds; otherwise (or to confirm a decision against recording) decide again from the total
    read. The call's id (None: decided against) and the stored total it was decided from."""
    sid = record.session_id
    fresh = known is None
    if known is None:
        known = await _stored_total(fetch, sid)
    for _attempt in range(_ATTEMPTS):
        rows = record.decide(known)
        if rows is None:
            if fresh:
                return None, known
            known, fresh = await _stored_total(fetch, sid), True
            continue
        values = _event_values(rows, _PG_BINDERS)
        arrays = [[row[column] for row in values] for column in range(len(_EVENT_NAMES))]
        args = (record.model, record.unsaved_items, record.input_items, record.added_tokens)
        [(row_id, stored)] = await fetch(
            PG_RECORD_CALL_SQL, sid, *args, record.digest, known, *arrays, writing=True
        )
        if row_id is not None:
            return int(row_id), known
        known, fresh = int(stored), True
    raise StoreError(
        f"session {sid!r} kept moving under {_ATTEMPTS} attempts to record a model call "
        "(other writers changed it each time); nothing was written, try again"
    )


async def _stored_total(fetch: Fetch, session_id: str) -> int:
    rows = await fetch(PG_STORED_TOTAL_SQL, session_id)
    return int(rows[0][0]) if rows else 0
