"""The store's write transactions: append, pop, clear, delete, metadata and events.

Each is a plain function over one SQLAlchemy `Connection`, run by the backend's `Database`
as one transaction; `SessionStore` only says which, with what.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._history._branches import has_branches_error, tx_branches
from .._history._time_travel import (
    Segment,
    inherited_segments,
)
from .._rows import (
    Batch,
    decode_payload,
)
from .._schema import (
    KIND_CLEAR,
    KIND_ITEM,
    KIND_TOMBSTONE,
    archives,
    events,
    messages,
    sessions,
)
from .._security._archive_codec import encode_archive
from .._security._archive_sealing import archive_columns
from .._security._crypto import Keyring
from .._security._payload_sealing import SessionKeys
from .._storage._append_only import maintenance
from .._storage._append_rows import APPEND_UPSERT
from .._storage._known_totals import keeps_totals
from .._storage._off_loop import off_loop
from .._storage._row_sql import (
    lock_session,
    marker_row,
    seq_range,
    write_rows,
)
from ._reads import newest_rows, opened, start_seq

_sid: Final = sa.bindparam("sid", type_=sa.Text)

_INSERT_MESSAGES: Final = messages.insert()


_INSERT_EVENTS: Final = events.insert()


# Columns to set are passed as parameters; updated_at always moves.
_UPDATE_SESSION: Final = (
    sessions.update()
    .where(sessions.c.session_id == _sid)
    .values(updated_at=sa.func.current_timestamp())
)


# Calls answered by a later batch are recent: look in the active context only (a
# range of the primary key), which keeps the lookup bounded without another index.
_KNOWN_CALL_NAMES: Final = sa.select(messages.c.call_id, messages.c.tool_name).where(
    messages.c.session_id == _sid,
    messages.c.seq >= start_seq,
    messages.c.call_id.in_(sa.bindparam("call_ids", expanding=True)),
    messages.c.tool_name.is_not(None),
)


_SHARED_CALL_NAMES: Final = seq_range(messages.c.call_id, messages.c.tool_name).where(
    messages.c.call_id.in_(sa.bindparam("call_ids", expanding=True)),
    messages.c.tool_name.is_not(None),
)


def read_call_names(conn: Connection, session_id: str, call_ids: list[str]) -> dict[str, str]:
    rows = conn.execute(_KNOWN_CALL_NAMES, {"sid": session_id, "call_ids": call_ids})
    known = {call_id: name for call_id, name in rows}
    if len(known) < len(call_ids):  # a branch's calls may lie in the rows it shares
        for owner, first, last in inherited_segments(conn, session_id):
            params = {"sid": owner, "first": first, "last": last, "call_ids": call_ids}
            for call_id, name in conn.execute(_SHARED_CALL_NAMES, params):
                known.setdefault(call_id, name)
    return known


@keeps_totals  # the store moves the known total by the batch's tokens once it commits
def tx_append_general(
    conn: Connection,
    batch: Batch,
    originals: Mapping[int, Mapping[str, Any]],
    keys: SessionKeys,
) -> list[int]:
    """Append where some items are truncated copies (their originals go to `archives`,
    the rows point at them) or payloads are sealed; both backends, one transaction."""
    last = conn.execute(APPEND_UPSERT[conn.dialect.name], batch.upsert_params).scalar_one()
    first = last - len(batch.payloads) + 1
    session = lock_session(conn, batch.session_id)  # already locked: the upsert took it
    assert session is not None
    archive_ids: dict[int, int] = {}
    for index, original in originals.items():
        # Encoding, compressing and sealing a huge original is the heavy part of this
        # transaction: off the event loop's thread on PostgreSQL (issue #34).
        columns = off_loop(
            truncation_archive, batch.session_id, first + index, original, keys.keyring
        )
        archive_ids[index] = conn.execute(
            archives.insert().values(reason="truncation", **columns).returning(archives.c.id)
        ).scalar_one()
    rows = batch.rows(first)
    for offset, row in enumerate(rows):
        row["archive_id"] = archive_ids.get(offset)
    updates = write_rows(conn, keys, dict(session._mapping), rows)
    conn.execute(_INSERT_MESSAGES, rows)
    conn.execute(_UPDATE_SESSION, {"sid": batch.session_id, **updates})
    return list(range(first, last + 1))


def truncation_archive(
    session_id: str, seq: int, original: Mapping[str, Any], keyring: Keyring | None
) -> dict[str, Any]:
    """The `archives` columns of a truncated item's original (stored at `seq`)."""
    body = encode_archive([{"seq": seq, "kind": KIND_ITEM, "item": original}])
    return archive_columns(body, session_id=session_id, compaction_id=None, keyring=keyring)


def tx_pop(conn: Connection, session_id: str, keys: SessionKeys) -> dict[str, Any] | None:
    session = lock_session(conn, session_id)
    if session is None:
        return None
    own: Segment = (session_id, int(session.context_start_seq), int(session.last_seq))
    segments = [*inherited_segments(conn, session_id), own]
    newest = newest_rows(conn, segments, 1, set())
    if not newest:
        return None
    [(_, target)] = newest
    seq = session.last_seq + 1
    row = marker_row(session_id, seq, KIND_TOMBSTONE, target.seq)
    chained = keys.chains.start(dict(session._mapping), seq).after([row])
    conn.execute(_INSERT_MESSAGES, row)
    conn.execute(
        _UPDATE_SESSION,
        {
            **chained,
            "sid": session_id,
            "last_seq": seq,
            "context_items": max(session.context_items - 1, 0),
            "context_tokens": max(session.context_tokens - target.tokens, 0),
        },
    )
    return decode_payload(opened(conn, keys, newest)[0])


def tx_clear(conn: Connection, session_id: str, keys: SessionKeys) -> None:
    session = lock_session(conn, session_id)
    if session is None:
        return
    seq = session.last_seq + 1
    row = marker_row(session_id, seq, KIND_CLEAR, None)
    chained = keys.chains.start(dict(session._mapping), seq).after([row])
    conn.execute(_INSERT_MESSAGES, row)
    conn.execute(
        _UPDATE_SESSION,
        {
            **chained,
            "sid": session_id,
            "last_seq": seq,
            "context_start_seq": seq + 1,
            "context_items": 0,
            "context_tokens": 0,
        },
    )


@keeps_totals
def tx_merge_metadata(conn: Connection, session_id: str, values: dict[str, Any]) -> bool:
    session = lock_session(conn, session_id)
    if session is None:
        return False
    merged = {**(session._mapping["metadata"] or {}), **values}
    conn.execute(sessions.update().where(sessions.c.session_id == session_id), {"metadata": merged})
    return True


def tx_delete(conn: Connection, session_id: str) -> bool:
    children = tx_branches(conn, session_id)
    if children:
        raise has_branches_error(session_id, [child.session_id for child in children])
    conn.execute(events.delete().where(events.c.session_id == session_id))
    with maintenance(conn):  # the session's messages go with it
        result = conn.execute(sessions.delete().where(sessions.c.session_id == session_id))
    return bool(result.rowcount)


_TOKEN_SEQ: Final = sa.select(messages.c.seq).where(
    messages.c.session_id == _sid, messages.c.append_token == sa.bindparam("token")
)


MAX_TOKEN_LENGTH: Final = 128


def read_token_seq(conn: Connection, session_id: str, token: str) -> int:
    """The first seq of the stored batch with this token."""
    return int(conn.execute(_TOKEN_SEQ, {"sid": session_id, "token": token}).scalar_one())


def append_token(token: object) -> str:
    """The caller's idempotency token, checked, or a fresh one (96 random bits)."""
    if token is None:
        return secrets.token_hex(12)
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
        raise TypeError(f"token must be a str of 1 to {MAX_TOKEN_LENGTH} characters")
    return token


@keeps_totals
def tx_events(conn: Connection, rows: list[dict[str, Any]]) -> None:
    conn.execute(_INSERT_EVENTS, rows)
