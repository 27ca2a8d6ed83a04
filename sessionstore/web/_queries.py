"""The viewer's own reads: plain SQL over the documented tables (docs/SCHEMA.md), run
through `SessionStore.read_snapshot`, for what the store's methods read whole.

A page of 100,000 sessions, sorted and filtered, or one page of a 10,000-row history,
must cost a page: these queries page in SQL (keyset on the sort column and the id) and read
only the columns a page shows. Tables are named here, not imported from the kernel's private
schema module: the viewer is an application over the documented schema, like any client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_sessions: Final = sa.table(
    "sessions",
    sa.column("session_id", sa.Text),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
    sa.column("last_seq", sa.BigInteger),
    sa.column("context_tokens", sa.BigInteger),
    sa.column("context_items", sa.Integer),
    sa.column("compaction_count", sa.Integer),
    sa.column("parent_session_id", sa.Text),
    sa.column("fork_seq", sa.BigInteger),
)
_messages: Final = sa.table(
    "messages",
    sa.column("session_id", sa.Text),
    sa.column("seq", sa.BigInteger),
    sa.column("kind", sa.Text),
    sa.column("role", sa.Text),
    sa.column("item_type", sa.Text),
    sa.column("tool_name", sa.Text),
    sa.column("call_id", sa.Text),
    sa.column("tokens", sa.Integer),
    sa.column("ref_seq", sa.BigInteger),
    sa.column("compaction_id", sa.BigInteger),
    sa.column("archive_id", sa.BigInteger),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("payload", sa.JSON),
    sa.column("payload_sealed", sa.LargeBinary),
    sa.column("agent", sa.Text),
)
_usage: Final = sa.table(
    "session_usage", sa.column("session_id", sa.Text), sa.column("cost_usd", sa.Float)
)
_compactions: Final = sa.table(
    "compactions",
    *(
        sa.column(name)
        for name in (
            "id",
            "session_id",
            "version",
            "trigger",
            "strategy",
            "status",
            "fallback",
            "note",
            "model",
            "summarizer",
            "covered_from_seq",
            "covered_to_seq",
            "context_start_seq",
            "summary_seq",
            "tokens_before",
            "tokens_after",
            "summary_tokens",
            "duration_ms",
            "provider",
        )
    ),
    sa.column("kept", sa.JSON),
    sa.column("created_at", sa.DateTime(timezone=True)),
)
_events: Final = sa.table(
    "events",
    sa.column("id", sa.BigInteger),
    sa.column("ts", sa.DateTime(timezone=True)),
    sa.column("session_id", sa.Text),
    sa.column("event", sa.Text),
    sa.column("severity", sa.Text),
    sa.column("compaction_id", sa.BigInteger),
    sa.column("max_tokens", sa.Integer),
    sa.column("payload", sa.JSON),
)

SORTS: Final = {
    "updated": _sessions.c.updated_at,
    "items": _sessions.c.context_items,
    "tokens": _sessions.c.context_tokens,
    "cost": sa.func.coalesce(_usage.c.cost_usd, 0.0),
    "id": _sessions.c.session_id,
    "branch": sa.func.coalesce(
        _sessions.c.parent_session_id, ""
    ),  # branches of one parent together
}


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One line of the session list."""

    session_id: str
    updated_at: datetime
    context_items: int
    context_tokens: int
    compaction_count: int
    cost_usd: float | None
    parent_session_id: str | None
    last_seq: int


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _sort_key(sort: str, dialect: str) -> Any:
    """The sort column as compared: SQLite keeps timestamps as text, compared as stored."""
    key = SORTS[sort]
    return sa.cast(key, sa.Text) if sort == "updated" and dialect == "sqlite" else key


def session_page(
    conn: Connection,
    *,
    sort: str,
    descending: bool,
    query: str | None,
    after: tuple[Any, str] | None,
    limit: int,
    backwards: bool = False,
) -> tuple[list[SessionRow], list[Any]]:
    """`limit` sessions in `sort` order after the keyset `after` (the last row's sort
    value and id), whose id contains `query`, with each row's sort value (the next page's
    keyset): one top-N scan, whatever the page's depth. `backwards`: the `limit` sessions
    just *before* the keyset (the previous page: the order and the ties reversed, the
    nearest first)."""
    key = _sort_key(sort, conn.dialect.name)
    descending = descending != backwards
    cost = _usage.c.cost_usd if sort == "cost" else sa.null()
    statement = sa.select(
        _sessions.c.session_id,
        _sessions.c.updated_at,
        _sessions.c.context_items,
        _sessions.c.context_tokens,
        _sessions.c.compaction_count,
        cost.label("cost_usd"),
        _sessions.c.parent_session_id,
        _sessions.c.last_seq,
        key,
    ).select_from(
        _sessions.outerjoin(_usage, _usage.c.session_id == _sessions.c.session_id)
        if sort == "cost"
        else _sessions
    )
    if query:
        statement = statement.where(_sessions.c.session_id.like(_like(query), escape="\\"))
    # Ties go by id, ascending forwards (descending backwards); the id sort is its own order.
    ties_descending = descending if sort == "id" else backwards
    sid = _sessions.c.session_id
    if after is not None:
        value, last_id = after
        tie = sid < last_id if ties_descending else sid > last_id
        if sort == "id":
            statement = statement.where(tie)
        else:
            beyond = key < value if descending else key > value
            statement = statement.where(sa.or_(beyond, sa.and_(key == value, tie)))
    order = key.desc() if descending else key.asc()
    ids = sid.desc() if ties_descending else sid.asc()
    statement = statement.order_by(order, ids).limit(limit)
    found = conn.execute(statement).all()
    rows = [SessionRow(*row[:8]) for row in found]
    keys = [row[8] for row in found]
    if sort != "cost" and rows:  # the page's costs: one lookup of its ids in the view
        costs = dict(
            conn.execute(
                sa.select(_usage.c.session_id, _usage.c.cost_usd).where(
                    _usage.c.session_id.in_([row.session_id for row in rows])
                )
            ).all()
        )
        rows = [replace(row, cost_usd=costs.get(row.session_id)) for row in rows]
    return rows, keys


def session_count(conn: Connection, query: str | None) -> int:
    """How many sessions the list holds (matching `query`)."""
    statement = sa.select(sa.func.count()).select_from(_sessions)
    if query:
        statement = statement.where(_sessions.c.session_id.like(_like(query), escape="\\"))
    return int(conn.execute(statement).scalar_one())


AGENT_ROWS: Final = 5_000  # the list's agents are those of each session's newest rows


def agents_of(conn: Connection, sessions: Sequence[tuple[str, int]]) -> dict[str, list[str]]:
    """The agents that produced each session's newest AGENT_ROWS rows, for a page of
    (session id, last seq): one query of bounded primary-key ranges, whatever the sessions'
    length (`messages.agent` has no index)."""
    if not sessions:
        return {}
    ranges = [
        sa.and_(_messages.c.session_id == sid, _messages.c.seq > last_seq - AGENT_ROWS)
        for sid, last_seq in sessions
    ]
    statement = (
        sa.select(_messages.c.session_id, _messages.c.agent)
        .where(sa.or_(*ranges), _messages.c.agent.is_not(None))
        .distinct()
    )
    found: dict[str, list[str]] = {}
    for session_id, agent in conn.execute(statement):
        found.setdefault(session_id, []).append(agent)
    return {key: sorted(value) for key, value in found.items()}


@dataclass(frozen=True, slots=True)
class RawRow:
    """A history row as the timeline pages it: typed columns, the payload's JSON text."""

    session_id: str
    seq: int
    kind: str
    role: str | None
    item_type: str | None
    tool_name: str | None
    call_id: str | None
    tokens: int
    ref_seq: int | None
    compaction_id: int | None
    archive_id: int | None
    created_at: datetime
    payload: str | None
    sealed: bool
    agent: str | None


@dataclass(frozen=True, slots=True)
class Segment:
    """Rows `first..last` of the history shown are `session_id`'s (a branch shares its
    parent's rows up to its fork)."""

    session_id: str
    first: int
    last: int


_ROW_COLUMNS: Final = (
    _messages.c.session_id,
    _messages.c.seq,
    _messages.c.kind,
    _messages.c.role,
    _messages.c.item_type,
    _messages.c.tool_name,
    _messages.c.call_id,
    _messages.c.tokens,
    _messages.c.ref_seq,
    _messages.c.compaction_id,
    _messages.c.archive_id,
    _messages.c.created_at,
    sa.cast(_messages.c.payload, sa.Text),
    _messages.c.payload_sealed.is_not(None),
    _messages.c.agent,
)


def _raw(row: Sequence[Any]) -> RawRow:
    return RawRow(*tuple(row))


def history_page(
    conn: Connection, segments: Sequence[Segment], before: int, limit: int
) -> list[RawRow]:
    """Up to `limit` rows with seq below `before` along the lineage, newest first: one
    primary-key range scan per segment it reaches."""
    found: list[RawRow] = []
    for segment in segments:  # newest segment first
        if len(found) >= limit or segment.first >= before:
            continue
        statement = (
            sa.select(*_ROW_COLUMNS)
            .where(
                _messages.c.session_id == segment.session_id,
                _messages.c.seq >= segment.first,
                _messages.c.seq <= min(segment.last, before - 1),
            )
            .order_by(_messages.c.seq.desc())
            .limit(limit - len(found))
        )
        found += [_raw(row) for row in conn.execute(statement)]
    return found


def rows_in(
    conn: Connection, session_id: str, first: int, last: int, limit: int | None = None
) -> list[RawRow]:
    """A session's own rows `first..last`, in order (the first `limit` of them)."""
    statement = (
        sa.select(*_ROW_COLUMNS)
        .where(
            _messages.c.session_id == session_id,
            _messages.c.seq >= first,
            _messages.c.seq <= last,
        )
        .order_by(_messages.c.seq)
        .limit(limit)
    )
    return [_raw(row) for row in conn.execute(statement)]


@dataclass(frozen=True, slots=True)
class Written:
    """What one compaction wrote: its summary row(s), the first carried rows (a page of
    them), how many rows it carried in all, and the seqs they carry."""

    summary: list[RawRow]
    carried: list[RawRow]
    carried_total: int
    carried_seqs: frozenset[int]


def written_by(
    conn: Connection, session_id: str, compaction_id: int, start: int, limit: int
) -> Written:
    """The rows compaction `compaction_id` wrote, from its context start `start`.

    A compaction writes one contiguous block of rows at the end of the session, so the
    block ends at the first later row it did not write: the read scans the block's light
    columns and fetches whole rows only for the summary and the first `limit` carries,
    however long the session grew after it (it read every row written since)."""
    seq = _messages.c.seq
    own = sa.and_(_messages.c.session_id == session_id, seq >= start)
    after = conn.execute(
        sa.select(seq)
        .where(own, _messages.c.compaction_id.is_distinct_from(compaction_id))
        .order_by(seq)
        .limit(1)
    ).scalar()
    block = sa.and_(own, _messages.c.compaction_id == compaction_id)
    if after is not None:
        block = sa.and_(block, seq < after)
    light = conn.execute(
        sa.select(seq, _messages.c.kind, _messages.c.ref_seq).where(block).order_by(seq)
    ).all()
    carries = [row for row in light if row.kind == "carry"]
    wanted = [row.seq for row in light if row.kind == "summary"]
    wanted += [row.seq for row in carries[:limit]]
    rows = [
        _raw(row)
        for row in conn.execute(
            sa.select(*_ROW_COLUMNS)
            .where(_messages.c.session_id == session_id, seq.in_(wanted))
            .order_by(seq)
        )
    ]
    return Written(
        summary=[row for row in rows if row.kind == "summary"],
        carried=[row for row in rows if row.kind == "carry"],
        carried_total=len(carries),
        carried_seqs=frozenset(row.ref_seq for row in carries if row.ref_seq is not None),
    )


def token_steps(
    conn: Connection, segments: Sequence[Segment]
) -> list[tuple[int, str, str | None, int, int | None, int | None]]:
    """(seq, kind, role, tokens, ref_seq, compaction_id) of every row along the lineage,
    oldest first: the typed columns only, no payload is read."""
    steps: list[tuple[int, str, str | None, int, int | None, int | None]] = []
    for segment in reversed(segments):
        statement = (
            sa.select(
                _messages.c.seq,
                _messages.c.kind,
                _messages.c.role,
                _messages.c.tokens,
                _messages.c.ref_seq,
                _messages.c.compaction_id,
            )
            .where(
                _messages.c.session_id == segment.session_id,
                _messages.c.seq >= segment.first,
                _messages.c.seq <= segment.last,
            )
            .order_by(_messages.c.seq)
        )
        steps += [
            (int(a), str(b), c, int(d or 0), e, f) for a, b, c, d, e, f in conn.execute(statement)
        ]
    return steps


def user_turns_before(conn: Connection, segments: Sequence[Segment], seq: int) -> int:
    """How many user messages the lineage holds before `seq` (the turn a page starts in)."""
    total = 0
    for segment in segments:
        statement = sa.select(sa.func.count()).where(
            _messages.c.session_id == segment.session_id,
            _messages.c.seq >= segment.first,
            _messages.c.seq <= min(segment.last, seq - 1),
            _messages.c.kind == "item",
            _messages.c.role == "user",
        )
        total += int(conn.execute(statement).scalar_one())
    return total


def compactions_of(conn: Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's compactions, oldest first, every column."""
    return compactions_in(conn, [session_id])


def compactions_in(conn: Connection, session_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The compactions of these sessions (a branch's lineage), oldest first, every column."""
    statement = (
        sa.select(*_compactions.c)
        .where(_compactions.c.session_id.in_(list(session_ids)))
        .order_by(_compactions.c.id)
    )
    return [dict(row._mapping) for row in conn.execute(statement)]


def events_of(
    conn: Connection,
    session_id: str,
    *,
    compaction_id: int | None = None,
    names: Sequence[str] | None = None,
    limit: int = 500,
) -> list[dict[str, Any]]:
    """The session's events (of one compaction, of some names), oldest first."""
    statement = sa.select(
        _events.c.id, _events.c.ts, _events.c.event, _events.c.severity, _events.c.payload
    ).where(_events.c.session_id == session_id)
    if compaction_id is not None:
        statement = statement.where(_events.c.compaction_id == compaction_id)
    if names is not None:
        statement = statement.where(_events.c.event.in_(list(names)))
    statement = statement.order_by(_events.c.id.desc()).limit(limit)
    rows = [dict(row._mapping) for row in conn.execute(statement)]
    return rows[::-1]


def window_of(conn: Connection, session_id: str) -> tuple[int | None, float | None]:
    """The context window and trigger share the session's newest trigger decision named."""
    statement = (
        sa.select(_events.c.max_tokens, _events.c.payload)
        .where(
            _events.c.session_id == session_id,
            _events.c.event == "compact.trigger_decision",
            _events.c.max_tokens.is_not(None),
        )
        .order_by(_events.c.id.desc())
        .limit(1)
    )
    row = conn.execute(statement).first()
    if row is None:
        return None, None
    payload = row[1] if isinstance(row[1], dict) else {}
    policy = payload.get("policy")
    share = policy.get("trigger_pct") if isinstance(policy, dict) else None
    return int(row[0]), float(share) if isinstance(share, int | float) else None
