"""Turns: the `turns` view (migration 0011) read as objects, and tool calls per turn.

A turn starts at each user message the application appended; see docs/SCHEMA.md. A sealed
session's user text is not readable in SQL, so it is opened here from the turn's first row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._rows import decode_payload
from .._schema import KIND_CLEAR, KIND_ITEM, messages
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import ROW_COLUMNS, stored_rows
from ._time_travel import lineage, user_messages

_sid: Final = sa.bindparam("sid", type_=sa.Text)
_turns: Final = sa.table(
    "turns",
    sa.column("session_id", sa.Text),
    sa.column("turn", sa.Integer),
    sa.column("first_seq", sa.BigInteger),
    sa.column("last_seq", sa.BigInteger),
    sa.column("items", sa.Integer),
    sa.column("tokens", sa.Integer),
    sa.column("tools", sa.Text),
    sa.column("user_text", sa.Text),
    sa.column("started_at", sa.DateTime(timezone=True)),
    sa.column("ended_at", sa.DateTime(timezone=True)),
)
_TURNS: Final = sa.select(_turns).where(_turns.c.session_id == _sid).order_by(_turns.c.turn)
_FIRST_ROWS: Final = (
    sa.select(*ROW_COLUMNS)
    .where(messages.c.session_id == _sid, messages.c.seq.in_(sa.bindparam("seqs", expanding=True)))
    .order_by(messages.c.seq)
)
_USER_ROWS: Final = (
    sa.select(messages.c.seq, messages.c.payload, messages.c.payload_sealed, messages.c.created_at)
    .where(
        messages.c.session_id == _sid,
        messages.c.kind == KIND_ITEM,
        messages.c.role == "user",
        messages.c.seq <= sa.bindparam("upto"),
    )
    .order_by(messages.c.seq)
)
_LAST_CLEAR: Final = sa.select(sa.func.max(messages.c.seq)).where(
    messages.c.session_id == _sid,
    messages.c.kind == KIND_CLEAR,
    messages.c.ref_seq.is_(None),  # a rewind is a clear naming its target: not a clear
    messages.c.seq <= sa.bindparam("upto"),
)
# Tool calls (not their outputs) per tool and turn, numbered as the view numbers turns.
_TOOL_USAGE: Final = sa.text(
    """
    WITH numbered AS (
        SELECT tool_name, item_type,
               SUM(CASE WHEN role = 'user' THEN 1 ELSE 0 END)
                   OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS turn
        FROM messages WHERE session_id = :sid AND kind = 'item' AND seq <= :upto
    )
    SELECT tool_name, COUNT(*) AS calls, turn FROM numbered AS used
    WHERE tool_name IS NOT NULL AND (
        item_type NOT LIKE '%output'
        -- a tool search the host ran shows only its output: that output is the use
        OR (item_type = 'tool_search_output' AND NOT EXISTS (
            SELECT 1 FROM numbered AS call
            WHERE call.turn = used.turn AND call.item_type = 'tool_search_call'))
    )
    GROUP BY tool_name, turn ORDER BY turn, tool_name
    """
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a session: its rows, size, tools and the user's words that opened it."""

    session_id: str
    turn: int
    first_seq: int
    last_seq: int
    items: int
    tokens: int
    tools: tuple[str, ...]
    user_text: str | None  # the content as stored: a string, or the JSON of its parts
    started_at: datetime
    ended_at: datetime


def tx_turns(conn: Connection, session_id: str, keys: SessionKeys) -> list[Turn]:
    """The session's turns in order (turn 0: what came before the first user message). A
    branch's first turns are its parent's up to the fork; its own are numbered on from
    them, and what it stored before its own first user message belongs to the last."""
    own = _own_turns(conn, session_id, keys)
    line = lineage(conn, session_id)
    if line.parent is None:
        return own
    before = [turn for turn in tx_turns(conn, line.parent, keys) if turn.first_seq <= line.fork_seq]
    inherited = max((turn.turn for turn in before), default=0)
    mine = [replace(turn, turn=turn.turn + inherited) for turn in own if turn.turn or not before]
    return before + mine


def _own_turns(conn: Connection, session_id: str, keys: SessionKeys) -> list[Turn]:
    turns = [
        Turn(
            session_id=row.session_id,
            turn=int(row.turn),
            first_seq=int(row.first_seq),
            last_seq=int(row.last_seq),
            items=int(row.items),
            tokens=int(row.tokens),
            tools=tuple(sorted(set(row.tools.split(",")))) if row.tools else (),
            user_text=row.user_text,
            started_at=row.started_at,
            ended_at=row.ended_at,
        )
        for row in conn.execute(_TURNS, {"sid": session_id})
    ]
    unread = [turn.first_seq for turn in turns if turn.turn and turn.user_text is None]
    if not unread:
        return turns
    found = conn.execute(_FIRST_ROWS, {"sid": session_id, "seqs": unread})
    opened = {row.seq: row.item for row in stored_rows(conn, keys, session_id, found)}
    return [
        replace(turn, user_text=_content(opened.get(turn.first_seq)))
        if turn.first_seq in opened
        else turn
        for turn in turns
    ]


@dataclass(frozen=True, slots=True)
class UserTurn:
    """The user message that starts a turn: what `get_conversation_turns` lists."""

    turn: int
    seq: int
    user_text: str | None  # as in Turn
    started_at: datetime


def tx_user_turns(
    conn: Connection, session_id: str, keys: SessionKeys, upto: int | None = None
) -> list[UserTurn]:
    """The user messages that start the session's turns (a branch's parent's first, up to the
    fork), numbered as the `turns` view numbers them: only those rows are read and opened."""
    line = lineage(conn, session_id)
    if line.parent is not None and upto is not None and upto <= line.fork_seq:
        return tx_user_turns(conn, line.parent, keys, upto)
    inherited = tx_user_turns(conn, line.parent, keys, line.fork_seq) if line.parent else []
    params = {"sid": session_id, "upto": line.last_seq if upto is None else upto}
    plain = keys.opener(conn, session_id)
    return inherited + [
        UserTurn(
            len(inherited) + number,
            row.seq,
            _content(_item(plain(row.seq, row.payload, row.payload_sealed))),
            row.created_at,
        )
        for number, row in enumerate(conn.execute(_USER_ROWS, params), start=1)
    ]


def _item(payload: object) -> dict[str, object] | None:
    return None if payload is None else decode_payload(payload)


def _content(item: dict[str, object] | None) -> str | None:
    content = None if item is None else item.get("content")
    if content is None or isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"))


def tx_tool_usage(
    conn: Connection, session_id: str, upto: int | None = None
) -> list[tuple[str, int, int]]:
    """(tool, calls, turn) for every tool called in every turn (up to row `upto`), in turn
    order; a branch counts its parent's calls up to the fork, numbered as `tx_turns` does."""
    line = lineage(conn, session_id)
    if line.parent is not None and upto is not None and upto <= line.fork_seq:
        return tx_tool_usage(conn, line.parent, upto)
    params = {"sid": session_id, "upto": line.last_seq if upto is None else upto}
    own = [
        (str(tool), int(calls), int(turn))
        for tool, calls, turn in conn.execute(_TOOL_USAGE, params)
    ]
    if line.parent is None:
        return own
    calls: dict[tuple[int, str], int] = {}
    for tool, count, turn in tx_tool_usage(conn, line.parent, line.fork_seq):
        calls[(turn, tool)] = count
    inherited = user_messages(conn, line.parent, line.fork_seq)
    for tool, count, turn in own:
        key = (turn + inherited, tool)
        calls[key] = calls.get(key, 0) + count
    return [(tool, count, turn) for (turn, tool), count in sorted(calls.items())]


def tx_turns_before_clear(conn: Connection, session_id: str) -> int:
    """How many user turns came before the session's newest `clear` (a branch's lineage
    included; 0 if it was never cleared): the Agents SDK numbers turns from 1 after it."""
    cleared = tx_last_clear(conn, session_id)
    return 0 if cleared is None else user_messages(conn, session_id, cleared)


def tx_last_clear(conn: Connection, session_id: str, upto: int | None = None) -> int | None:
    """The seq of the session's newest `clear` (not a rewind; up to row `upto`; a branch's
    parent's before the fork count too), or None."""
    line = lineage(conn, session_id)
    if line.parent is not None and upto is not None and upto <= line.fork_seq:
        return tx_last_clear(conn, line.parent, upto)
    params = {"sid": session_id, "upto": line.last_seq if upto is None else upto}
    seq = conn.execute(_LAST_CLEAR, params).scalar()
    if seq is not None:
        return int(seq)
    return tx_last_clear(conn, line.parent, line.fork_seq) if line.parent else None
