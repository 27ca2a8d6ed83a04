"""The two hot paths, per backend: append a batch and read the active context.

Each is one driver-level statement (an append is three on SQLite, inside one transaction)
built once at import, from the Core tables where they can say it, because SQLAlchemy's
per-statement work would double an append. The `Database` of each backend runs them; the
store only says what.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from .._rows import Batch
from .._schema import KIND_ITEM, messages, sessions
from .._security._chain import extend_plain
from .._security._payload_sealing import SessionKeys
from ._row_sql import seal_row

_sid: Final = sa.bindparam("sid", type_=sa.Text)


class ActiveRow(Protocol):
    """A row of the active-context statements: `seq`, `kind`, `ref_seq`, `payload` (JSON
    text), `payload_sealed`, read by name or (seq, kind, ref_seq first) by position. A
    sqlite3.Row or an asyncpg Record: no copy of 10,000 rows into another shape."""

    def __getitem__(self, key: Any, /) -> Any: ...


# What an append needs to know of its session besides last_seq: how to seal and chain rows.
SESSION_STATE: Final = (
    sessions.c.last_seq,
    sessions.c.chain_head,
    sessions.c.chain_kek_id,
    sessions.c.chain_wrapped_key,
    sessions.c.payload_kek_id,
    sessions.c.payload_wrapped_key,
    sessions.c.sealed_from_seq,
)
STATE_NAMES: Final = tuple(column.name for column in SESSION_STATE)
# What an append writes: every column of `messages` in table order, but those only markers
# and compactions set (ref_seq, compaction_id, archive_id) and the database's default.
HOT_COLUMNS: Final = tuple(
    column.name
    for column in messages.c
    if column.name not in {"ref_seq", "compaction_id", "archive_id", "created_at"}
)
assert HOT_COLUMNS == (  # the order _row_values binds (SQLite takes values by position)
    "session_id", "seq", "kind", "role", "item_type", "tool_name", "call_id", "tokens",
    "protected", "payload", "payload_sealed", "append_token", "payload_digest", "digest", "agent",
), HOT_COLUMNS  # fmt: skip


def _append_upsert(insert: Any) -> Any:
    """Create-or-advance the session row for an append; returns the new last_seq.

    On PostgreSQL the upsert also takes the session's row lock for the transaction, and
    stamps `updated_at` with the proposed row's default (the same CURRENT_TIMESTAMP): Citus
    refuses a function call in DO UPDATE SET.
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
            "updated_at": upsert.excluded.updated_at
            if insert is postgresql.insert
            else sa.func.current_timestamp(),
        },
    ).returning(*SESSION_STATE)


APPEND_UPSERT: Final = {
    "sqlite": _append_upsert(sqlite.insert),
    "postgresql": _append_upsert(postgresql.insert),
}


def sqlite_sql(statement: Any, expected_params: Sequence[str], **compile_kw: Any) -> str:
    """Compile a Core statement once for SQLite, checking its positional parameter order."""
    compiled = statement.compile(dialect=sqlite.dialect(), **compile_kw)
    assert tuple(compiled.positiontup) == tuple(expected_params), compiled.positiontup
    return str(compiled)


_SQLITE_UPSERT_SQL: Final = sqlite_sql(
    APPEND_UPSERT["sqlite"], ("sid", "count", "tokens", "count", "encoding")
)
# The sqlite3 driver binds an int, a str or a bytearray as it is, but looks any other value
# (None, bytes, a bool) up in its adapter registry first: about 1 us a value, and a plain
# row had seven of them, half its insert. So the append binds none: a missing value is
# passed as the integer 0 and NULLIF turns it back into NULL (no column it is used for holds
# the integer 0: a text or blob is never equal to it), bytes go as bytearrays, `protected`
# as an int, and the kind is a literal. A batch that names no agent is inserted without the
# agent column: the statement (and its cost) is the one from before migration 0015, and it
# still runs on a database rolled back below it.
_NULLABLE: Final = frozenset(
    {
        "role",
        "item_type",
        "tool_name",
        "call_id",
        "payload",
        "payload_sealed",
        "append_token",
        "payload_digest",
    }
)


def _insert_sql(columns: Sequence[str]) -> str:
    """The INSERT of an append's rows into `columns` (see above): bound values, NULLIF for
    those that may be missing, the kind a literal."""
    values = [
        f"'{KIND_ITEM}'" if name == "kind" else "NULLIF(?, 0)" if name in _NULLABLE else "?"
        for name in columns
    ]
    return f"INSERT INTO messages ({', '.join(columns)}) VALUES ({', '.join(values)})"


_SQLITE_INSERT_ITEM_SQL: Final = _insert_sql(HOT_COLUMNS[:-1])
_SQLITE_INSERT_NAMED_SQL: Final = _insert_sql(HOT_COLUMNS)
# A session whose chain exists moves its head only (bytearray: see above); a new chain also
# stores where it starts and its wrapped key.
_SQLITE_MOVE_HEAD_SQL: Final = "UPDATE sessions SET chain_head = ? WHERE session_id = ?"
_SQLITE_ADVANCE_CHAIN_SQL: Final = """
    UPDATE sessions SET chain_head = ?, chain_start_seq = coalesce(chain_start_seq, ?),
        chain_kek_id = coalesce(chain_kek_id, ?), chain_wrapped_key = coalesce(chain_wrapped_key, ?)
    WHERE session_id = ?
"""

# PostgreSQL appends in ONE statement (one round trip, atomic on its own), optimistically:
# the rows were sealed and chained in Python against the session state the caller last
# saw (last_seq and chain head); the CTE advances the session row only if that state still
# holds (taking its row lock), and the outer INSERT writes the batch from it. A session
# that moved meanwhile returns no rows: read its state again and retry.
# Placeholders, in order: session id, item count, token sum, encoding, then one array per
# column (roles, item types, tool names, call ids, tokens, protected, payloads), the batch's
# idempotency token (stored on its first row), the expected last_seq and chain head, the
# new chain head, start and wrapped key, then sealed payloads, payload digests and digests,
# and the agent that produced the batch (one value for all its rows).
# Each column's value in the INSERT below, by name: the batch's arrays come back from
# `unnest` as `batch`, one value per row; the session id, token and agent are one value.
_PG_VALUES: Final = {
    "session_id": "$1",
    "seq": "advanced.last_seq - $2::bigint + batch.ord",
    "kind": f"'{KIND_ITEM}'",
    "role": "batch.role",
    "item_type": "batch.item_type",
    "tool_name": "batch.tool_name",
    "call_id": "batch.call_id",
    "tokens": "batch.tokens",
    "protected": "batch.protected",
    "payload": "batch.payload::json",
    "payload_sealed": "batch.sealed",
    "append_token": "CASE WHEN batch.ord = 1 THEN $12::text END",
    "payload_digest": "batch.body",
    "digest": "batch.digest",
    "agent": "$22::text",
}
PG_APPEND_SQL: Final = f"""
    WITH updated AS (
        UPDATE sessions SET
            last_seq = last_seq + $2::bigint,
            context_items = context_items + $2::int,
            context_tokens = context_tokens + $3,
            updated_at = CURRENT_TIMESTAMP,
            chain_head = $15,
            chain_start_seq = coalesce(chain_start_seq, $16),
            chain_kek_id = coalesce(chain_kek_id, $17),
            chain_wrapped_key = coalesce(chain_wrapped_key, $18)
        WHERE session_id = $1 AND last_seq = $13::bigint
          AND chain_head IS NOT DISTINCT FROM $14::bytea
        RETURNING last_seq
    ), created AS (
        INSERT INTO sessions (session_id, last_seq, context_items, context_tokens, token_encoding,
                              chain_head, chain_start_seq, chain_kek_id, chain_wrapped_key)
        SELECT $1, $2::bigint, $2::int, $3, $4, $15, $16, $17, $18
        WHERE $13::bigint = 0 AND NOT EXISTS (SELECT 1 FROM updated)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING last_seq
    ), advanced AS (
        SELECT last_seq FROM updated UNION ALL SELECT last_seq FROM created
    )
    INSERT INTO messages ({", ".join(HOT_COLUMNS)})
    SELECT {", ".join(_PG_VALUES[name] for name in HOT_COLUMNS)}
    FROM advanced,
         unnest(CAST($5 AS TEXT[]), CAST($6 AS TEXT[]),
                CAST($7 AS TEXT[]), CAST($8 AS TEXT[]),
                CAST($9 AS INTEGER[]), CAST($10 AS BOOLEAN[]),
                CAST($11 AS TEXT[]), CAST($19 AS BYTEA[]),
                CAST($20 AS BYTEA[]), CAST($21 AS BYTEA[]))
         WITH ORDINALITY
         AS batch(role, item_type, tool_name, call_id, tokens, protected, payload, sealed, body,
                  digest, ord)
    RETURNING seq
"""
PG_SESSION_STATE_SQL: Final = f"SELECT {', '.join(STATE_NAMES)} FROM sessions WHERE session_id = $1"
# The active context in one driver-level statement, rows shaped (seq, kind, ref_seq, payload,
# payload_sealed): payloads come back as JSON text and are parsed in one call, with no per-row
# work in between. A branch whose context still begins with its parent's returns no rows here
# (the store then reads its lineage).
_ACTIVE_SQL: Final = """
    SELECT m.seq, m.kind, m.ref_seq, m.payload{cast}, m.payload_sealed
    FROM messages m
    WHERE m.session_id = {sid}
      AND m.seq >= (SELECT s.context_start_seq FROM sessions s WHERE s.session_id = {sid}
                    AND (s.fork_seq IS NULL OR s.context_start_seq > s.fork_seq + 1))
    ORDER BY m.seq
"""
# The same for a branch whose context begins with its ancestors': the session rows give each
# level's shared range (the parent's context start at the fork, up to the fork), one level
# further while that range itself began where the level's own fork left off.
_LINEAGE_SQL: Final = """
    WITH RECURSIVE shared(sid, first, last, parent, parent_start, fork) AS (
        SELECT session_id, context_start_seq, last_seq, parent_session_id,
               parent_context_start_seq, fork_seq
        FROM sessions WHERE session_id = {sid}
        UNION ALL
        SELECT p.session_id, s.parent_start, s.fork, p.parent_session_id,
               p.parent_context_start_seq, p.fork_seq
        FROM shared s JOIN sessions p ON p.session_id = s.parent
        WHERE s.first = s.fork + 1
    )
    SELECT m.seq, m.kind, m.ref_seq, m.payload{cast}, m.payload_sealed
    FROM shared JOIN messages m
      ON m.session_id = shared.sid AND m.seq >= shared.first AND m.seq <= shared.last
    ORDER BY m.seq
"""
PG_ACTIVE_SQL: Final = _ACTIVE_SQL.format(cast="::text", sid="$1")
PG_LINEAGE_SQL: Final = _LINEAGE_SQL.format(cast="::text", sid="$1")
_SQLITE_ACTIVE_SQL: Final = _ACTIVE_SQL.format(cast="", sid=":sid")
_SQLITE_LINEAGE_SQL: Final = _LINEAGE_SQL.format(cast="", sid=":sid")


@dataclass(frozen=True, slots=True)
class PreparedRows:
    """A batch's rows as the database stores them, column by column, and the session
    columns to store with them (the new chain head, a new chain's start and key)."""

    payloads: list[str | None]
    sealed: list[bytes | None]
    bodies: list[bytes | None]  # payload digests
    digests: list[bytes]
    session: dict[str, Any]


def prepared_rows(
    batch: Batch, first: int, session: Mapping[str, Any], keys: SessionKeys
) -> PreparedRows:
    """The batch's rows numbered from `first`, sealed if the session is encrypted and chained
    onto its history."""
    start = keys.chains.start(session, first)
    if session["payload_wrapped_key"] is None:  # plain payloads: no dict per row
        plain = zip(
            *(
                [info.role for info in batch.infos],
                [info.item_type for info in batch.infos],
                [info.tool_name for info in batch.infos],
                [info.call_id for info in batch.infos],
                batch.counts,
                [batch.protected or info.protected for info in batch.infos],
                batch.payloads,
            ),
            strict=True,
        )
        bodies, digests, head = extend_plain(
            start.key,
            start.head,
            batch.session_id,
            first,
            KIND_ITEM,
            plain,
            batch.token,
            batch.agent,
        )
        columns = {**start.updates, "chain_head": head}
        payloads: list[str | None] = list(batch.payloads)
        return PreparedRows(payloads, [None] * len(payloads), list(bodies), digests, columns)
    rows = batch.rows(first)
    cipher = keys.cipher(session)
    for row in rows:
        seal_row(row, cipher)
    columns = start.after(rows)
    return PreparedRows(
        [row["payload"] for row in rows],
        [row["payload_sealed"] for row in rows],
        [row["payload_digest"] for row in rows],
        [row["digest"] for row in rows],
        columns,
    )


def pg_append_args(
    batch: Batch, state: Mapping[str, Any], keys: SessionKeys
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional arguments of PG_APPEND_SQL against the session's known `state` (its
    row, or an empty one for a new session), and the session columns the append leaves."""
    session = {"session_id": batch.session_id, **state}
    prepared = prepared_rows(batch, int(state["last_seq"]) + 1, session, keys)
    chained = prepared.session
    infos = batch.infos
    args = (
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
        prepared.payloads,
        batch.token,
        state["last_seq"],
        state["chain_head"],
        chained["chain_head"],
        chained.get("chain_start_seq"),
        chained.get("chain_kek_id"),
        chained.get("chain_wrapped_key"),
        prepared.sealed,
        prepared.bodies,
        prepared.digests,
        batch.agent,
    )
    return args, chained


def sqlite_append(conn: sqlite3.Connection, batch: Batch, keys: SessionKeys) -> list[int]:
    """SQLite append: SQL compiled once from the Core statements, run on the driver
    connection (SQLAlchemy's per-statement work would double an append)."""
    cursor = conn.cursor()
    try:
        size = len(batch.payloads)
        params = (batch.session_id, size, sum(batch.counts), size, batch.encoding)
        state = cursor.execute(_SQLITE_UPSERT_SQL, params).fetchone()
        session = {"session_id": batch.session_id, **dict(zip(STATE_NAMES, state, strict=True))}
        last = session["last_seq"]
        first = last - size + 1
        prepared = prepared_rows(batch, first, session, keys)
        insert = _SQLITE_INSERT_ITEM_SQL if batch.agent is None else _SQLITE_INSERT_NAMED_SQL
        cursor.executemany(insert, _row_values(batch, first, prepared))
        chained = prepared.session
        if len(chained) == 1:  # the head only: the chain existed
            cursor.execute(
                _SQLITE_MOVE_HEAD_SQL, (bytearray(chained["chain_head"]), batch.session_id)
            )
        else:
            cursor.execute(
                _SQLITE_ADVANCE_CHAIN_SQL,
                (
                    chained["chain_head"],
                    chained.get("chain_start_seq"),
                    chained.get("chain_kek_id"),
                    chained.get("chain_wrapped_key"),
                    batch.session_id,
                ),
            )
    finally:
        cursor.close()
    return list(range(first, last + 1))


def _row_values(batch: Batch, first: int, prepared: PreparedRows) -> Iterator[tuple[Any, ...]]:
    """The rows in HOT_COLUMNS order (the agent only when the batch names one), as the
    insert binds them: 0 for a missing value, bytearrays for bytes, an int for `protected`."""
    session_id, protected, token = batch.session_id, batch.protected, batch.token
    named = () if batch.agent is None else (batch.agent,)
    for offset, (info, count, payload, sealed, body, digest) in enumerate(
        zip(
            batch.infos,
            batch.counts,
            prepared.payloads,
            prepared.sealed,
            prepared.bodies,
            prepared.digests,
            strict=True,
        )
    ):
        yield (
            session_id,
            first + offset,
            0 if info.role is None else info.role,
            0 if info.item_type is None else info.item_type,
            0 if info.tool_name is None else info.tool_name,
            0 if info.call_id is None else info.call_id,
            count,
            1 if protected or info.protected else 0,
            0 if payload is None else payload,
            0 if sealed is None else bytearray(sealed),
            0 if offset else token,
            0 if body is None else bytearray(body),
            bytearray(digest),
            *named,
        )


def sqlite_active_rows(conn: sqlite3.Connection, session_id: str) -> list[sqlite3.Row]:
    """The active context's rows by name (seq, kind, ref_seq, payload, payload_sealed): the
    plain statement, then, when it finds none (an empty session, or a branch that still
    shares its parent's rows), the lineage statement, on the same connection."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    try:
        rows = cursor.execute(_SQLITE_ACTIVE_SQL, {"sid": session_id}).fetchall()
        if not rows:
            rows = cursor.execute(_SQLITE_LINEAGE_SQL, {"sid": session_id}).fetchall()
    finally:
        cursor.close()
    return rows
