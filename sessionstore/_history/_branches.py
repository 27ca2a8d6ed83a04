"""Branches: a session forked from another at a point of its history, sharing its rows.

A fork writes one `sessions` row and nothing else, whatever the parent's length: the branch
names its parent and the parent's seq it forked at (`fork_seq`), and numbers its own rows on
from `fork_seq + 1`, so seqs along a lineage never collide and a branch's tombstone can hide
an inherited row. Until the branch's first clear, compaction or rewind its context is the
parent's context as it stood at `fork_seq` (read through time travel, each row opened with
its own session's key) followed by its own rows. Parents with live branches cannot be
deleted, and retention keeps the rows their branches share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from .._errors import BranchError
from .._events import Event, session_event
from .._schema import sessions
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import lock_session
from ._time_travel import (
    HistoryPoint,
    context_counts,
    context_start_at,
    lineage,
    resolve_point,
)

_INSERT: Final[dict[str, Any]] = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
_CHILDREN: Final = (
    sa.select(*sessions.c)
    .where(sessions.c.parent_session_id == sa.bindparam("sid", type_=sa.Text))
    .order_by(sessions.c.created_at, sessions.c.session_id)
)


@dataclass(frozen=True, slots=True)
class Fork:
    """What a fork wrote: the branch, its parent and the parent's seq it shares up to, and
    the context it starts with."""

    session_id: str
    parent_session_id: str
    fork_seq: int
    items: int
    tokens: int


def tx_fork(
    conn: Connection,
    parent_id: str,
    point: HistoryPoint | None,
    branch_id: str,
    keys: SessionKeys,
) -> Fork:
    """Create `branch_id` as a branch of `parent_id` at `point` (None: its newest row): one
    session row."""
    asked = parent_id
    parent: Any = lock_session(conn, parent_id)
    if parent is None:
        raise BranchError(f"cannot fork {parent_id!r}: no such session in this store")
    last = int(parent.last_seq)
    upto = last if point is None else resolve_point(conn, parent_id, point, last, exact_turn=True)
    items, tokens = context_counts(conn, parent_id, upto, keys)
    owner = lineage(conn, parent_id)
    while owner.parent is not None and upto <= owner.fork_seq:  # rows the parent shares:
        parent_id = owner.parent  # branch from the ancestor that holds them
        owner = lineage(conn, parent_id)
    insert = _INSERT[conn.dialect.name](sessions)
    created = conn.execute(
        insert.values(
            session_id=branch_id,
            last_seq=upto,
            context_start_seq=upto + 1,
            context_items=items,
            context_tokens=tokens,
            token_encoding=parent.token_encoding,
            parent_session_id=parent_id,
            fork_seq=upto,
            parent_context_start_seq=owner.context_start_seq
            if upto == owner.last_seq
            else context_start_at(conn, parent_id, upto, owner.fork_seq + 1),
        ).on_conflict_do_nothing(index_elements=[sessions.c.session_id])
    )
    if created.rowcount == 0:  # the id is taken (by a session, or a racing fork or append)
        raise BranchError(
            f"cannot fork {asked!r} into {branch_id!r}: that session already exists "
            "(pick a new id for the branch)"
        )
    return Fork(branch_id, parent_id, upto, items, tokens)


def has_branches_error(session_id: str, branch_ids: list[str]) -> BranchError:
    """Why a session whose rows live branches share cannot be deleted."""
    names = ", ".join(repr(branch) for branch in branch_ids[:3])
    return BranchError(
        f"session {session_id!r} has {len(branch_ids)} live branch(es) sharing its rows "
        f"({names}); delete them first"
    )


def tx_branches(conn: Connection, session_id: str) -> list[Any]:
    """The session rows of the branches forked from `session_id`, oldest first."""
    return list(conn.execute(_CHILDREN, {"sid": session_id}).all())


def fork_event(done: Fork) -> Event:
    """`session.fork`: which parent and seq the branch shares, and what it starts with."""
    return session_event("session.fork", done)
