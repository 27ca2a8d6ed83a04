"""A session as it stood at an earlier point of its history, and rewinding to that point.

History is append-only, so the context at any earlier moment is a function of the rows up to
it: the last clear (a rewind is a clear that names its target) or compaction before the point
says where the context started, the tombstones up to it say which rows were popped. A point is
a seq, a time, a compaction version or a turn; it is moved to the end of the write that
contains it (a batch, a pop, a clear, a compaction, a rewind), because a load never sees half
a write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeAlias

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._errors import HistoryPointError
from .._events import Event, session_event
from .._rows import StoredRow, visible_rows
from .._schema import (
    KIND_CARRY,
    KIND_CLEAR,
    KIND_ITEM,
    KIND_SUMMARY,
    KIND_TOMBSTONE,
    VISIBLE_KINDS,
    compactions,
    messages,
    sessions,
)
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import (
    ROW_COLUMNS,
    AnyRow,
    carried_copy,
    lock_session,
    marker_row,
    seq_range,
    stored_rows,
    write_rows,
)

PointKind = Literal["seq", "time", "version", "turn"]
_sid: Final = sa.bindparam("sid", type_=sa.Text)
_m: Final = messages.c
_FORMS: Final = (
    "a seq (120), a compaction version (v3), a turn (turn:5) or a time (2026-11-25T14:00:00Z)"
)
_VERSION: Final = re.compile(r"v(\d+)")
_TURN: Final = re.compile(r"turn:(\d+)")


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """A moment of a session's history: after the write of row `seq`, at a `time`, right
    after compaction `version`, or just before `turn` N (its user message) was stored."""

    kind: PointKind
    value: int | datetime

    @classmethod
    def at_seq(cls, seq: int) -> HistoryPoint:
        """After the write that stored row `seq` (0: before anything was written)."""
        return cls("seq", _whole("seq", seq, minimum=0))

    @classmethod
    def at_time(cls, when: datetime) -> HistoryPoint:
        """As the session stood at `when` (timezone-aware; the database's clock)."""
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValueError(
                "a time in history must be a timezone-aware datetime, e.g. "
                "datetime(2026, 11, 25, 14, 0, tzinfo=UTC)"
            )
        return cls("time", when.astimezone(UTC))

    @classmethod
    def after_version(cls, version: int) -> HistoryPoint:
        """Right after compaction `version` (the N of <COMPACT-SUMMARY vN>) committed."""
        return cls("version", _whole("version", version, minimum=1))

    @classmethod
    def before_turn(cls, turn: int) -> HistoryPoint:
        """Just before the write holding the session's `turn`-th user message."""
        return cls("turn", _whole("turn", turn, minimum=1))

    @classmethod
    def of(cls, value: HistoryPoint | int | datetime) -> HistoryPoint:
        """A point from what a caller may pass: a point, a seq (int) or a datetime."""
        if isinstance(value, HistoryPoint):
            return value
        if isinstance(value, datetime):
            return cls.at_time(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls.at_seq(value)
        raise TypeError(
            "a point in history is a seq (int), a timezone-aware datetime or a HistoryPoint "
            f"(HistoryPoint.after_version(3), HistoryPoint.before_turn(5)), not a "
            f"{type(value).__name__}"
        )

    @classmethod
    def parse(cls, text: str) -> HistoryPoint:
        """A point as people type it: a seq (120), a compaction version (v3), a turn
        (turn:5) or an ISO time (UTC when it has no offset, the database's clock); a
        ValueError saying the accepted forms otherwise (the CLI's --as-of, the viewer)."""
        text = text.strip()
        if text.isdigit():
            return cls.at_seq(int(text))
        if match := _VERSION.fullmatch(text):
            return cls.after_version(int(match[1]))
        if match := _TURN.fullmatch(text):
            return cls.before_turn(int(match[1]))
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a point in history: use {_FORMS}") from None
        return cls.at_time(when if when.tzinfo else when.replace(tzinfo=UTC))

    def __str__(self) -> str:
        if isinstance(self.value, datetime):
            return f"time {self.value.isoformat()}"
        return f"{self.kind} {self.value}"


def _whole(name: str, value: object, *, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got a {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if value >= 2**63:  # past every 64-bit column: no row has it, and a driver would overflow
        raise ValueError(f"{name} must be below 2**63, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class Rewind:
    """What a rewind wrote: its marker, the seq it restored and the context it left."""

    session_id: str
    marker_seq: int
    to_seq: int
    items: int
    tokens: int


# A row starts a write when it is a batch's first item (it holds the batch's token), a pop, a
# clear or rewind marker, or the first row of a compaction other than the given one.
_STARTS_WRITE: Final = sa.or_(
    _m.kind.in_((KIND_TOMBSTONE, KIND_CLEAR)),
    sa.and_(_m.kind == KIND_ITEM, _m.append_token.is_not(None)),
    sa.and_(
        _m.compaction_id.is_not(None),
        sa.or_(
            sa.bindparam("cid", type_=sa.BigInteger).is_(None),
            _m.compaction_id != sa.bindparam("cid", type_=sa.BigInteger),
        ),
    ),
)
_ROW_AT: Final = sa.select(_m.compaction_id).where(
    _m.session_id == _sid, _m.seq == sa.bindparam("seq")
)
_NEXT_WRITE: Final = sa.select(sa.func.min(_m.seq)).where(
    _m.session_id == _sid, _m.seq > sa.bindparam("seq"), _STARTS_WRITE
)
_LAST_BEFORE_TIME: Final = sa.select(sa.func.max(_m.seq)).where(
    _m.session_id == _sid, _m.created_at <= sa.bindparam("at", type_=sa.DateTime(timezone=True))
)
_COMPACTION: Final = sa.select(compactions.c.id, compactions.c.context_start_seq).where(
    compactions.c.session_id == _sid, compactions.c.version == sa.bindparam("version")
)
_COMPACTION_END: Final = sa.select(sa.func.max(_m.seq)).where(
    _m.session_id == _sid, _m.compaction_id == sa.bindparam("cid")
)
_NTH_USER_MESSAGE: Final = (
    sa.select(_m.seq)
    .where(_m.session_id == _sid, _m.kind == KIND_ITEM, _m.role == "user")
    .order_by(_m.seq)
    .offset(sa.bindparam("offset"))
    .limit(1)
)
_USER_MESSAGES_UPTO: Final = sa.select(sa.func.count()).where(
    _m.session_id == _sid, _m.kind == KIND_ITEM, _m.role == "user", _m.seq <= sa.bindparam("upto")
)
_BATCH_START: Final = sa.select(sa.func.max(_m.seq)).where(
    _m.session_id == _sid,
    _m.seq <= sa.bindparam("seq"),
    sa.or_(_m.kind != KIND_ITEM, _m.append_token.is_not(None)),
)
# The kind is a literal so the planner can use the partial index of clear markers.
_LAST_CLEAR: Final = sa.select(sa.func.max(_m.seq)).where(
    _m.session_id == _sid,
    _m.kind == sa.literal_column(f"'{KIND_CLEAR}'"),
    _m.seq <= sa.bindparam("upto"),
)
_COMPACTION_STARTS: Final = sa.select(compactions.c.id, compactions.c.context_start_seq).where(
    compactions.c.session_id == _sid,
    compactions.c.context_start_seq <= sa.bindparam("upto") + 1,
)
_ROWS_BETWEEN: Final = seq_range(*ROW_COLUMNS, first="start", last="upto")
_IN_RANGE: Final = (
    _m.session_id == _sid,
    _m.seq >= sa.bindparam("start"),
    _m.seq <= sa.bindparam("upto"),
)
_VISIBLE_SUMS: Final = sa.select(
    sa.func.count().label("items"),
    sa.func.sum(_m.tokens).label("tokens"),
    sa.func.sum(
        sa.case((sa.and_(_m.payload.is_(None), _m.payload_sealed.is_(None)), 1), else_=0)
    ).label("purged"),
).where(*_IN_RANGE, _m.kind.in_(sorted(VISIBLE_KINDS)))
# Rows the range's tombstones hide among the session's own (each pop hides one visible row).
_hidden: Final = messages.alias("hidden")
_HIDDEN_SUMS: Final = (
    sa.select(sa.func.count().label("items"), sa.func.sum(_hidden.c.tokens).label("tokens"))
    .select_from(messages)
    .join(
        _hidden,
        sa.and_(
            _hidden.c.session_id == _m.session_id,
            _hidden.c.seq == _m.ref_seq,
            _hidden.c.seq >= sa.bindparam("start"),
        ),
    )
    .where(*_IN_RANGE, _m.kind == KIND_TOMBSTONE)
)
# ... and the rows of its parent a branch's tombstones hide.
_HIDES_SHARED: Final = sa.select(_m.ref_seq).where(
    *_IN_RANGE, _m.kind == KIND_TOMBSTONE, _m.ref_seq <= sa.bindparam("fork")
)
_ROW_TOKENS: Final = sa.select(_m.tokens).where(
    _m.session_id == _sid, _m.seq == sa.bindparam("seq")
)
_COUNTERS: Final = sa.select(sessions.c.context_items, sessions.c.context_tokens).where(
    sessions.c.session_id == _sid
)
_SESSION_LAST: Final = sa.select(sessions.c.last_seq).where(sessions.c.session_id == _sid)


def _scalar(conn: Connection, statement: sa.Select[Any], **params: Any) -> Any:
    return conn.execute(statement, params).scalar()


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a session's own rows begin: a branch (SessionStore.fork) continues its parent's
    numbering after `fork_seq`; any other session has no parent and starts at seq 1."""

    parent: str | None
    fork_seq: int
    context_start_seq: int
    last_seq: int
    parent_start: int = 1  # the parent's context start at fork_seq

    @property
    def inherits(self) -> bool:
        """True while the branch's context still begins with its parent's (no clear,
        compaction or rewind of its own yet)."""
        return self.parent is not None and shares_parent_rows(self.fork_seq, self.context_start_seq)


def shares_parent_rows(fork_seq: int | None, context_start_seq: int) -> bool:
    """Whether a session's context begins with rows of its parent: it is a branch (it has a
    fork seq) and no marker of its own has moved its context start past the fork."""
    return fork_seq is not None and context_start_seq == fork_seq + 1


_LINEAGE: Final = sa.select(
    sessions.c.parent_session_id,
    sessions.c.fork_seq,
    sessions.c.context_start_seq,
    sessions.c.last_seq,
    sessions.c.parent_context_start_seq,
).where(sessions.c.session_id == _sid)


def lineage(conn: Connection, session_id: str) -> Lineage:
    """The session's parent and fork seq (none for a session that was never written)."""
    row = conn.execute(_LINEAGE, {"sid": session_id}).first()
    if row is None:
        return Lineage(None, 0, 1, 0)
    fork = 0 if row.fork_seq is None else int(row.fork_seq)
    parent_start = row.parent_context_start_seq
    return Lineage(
        row.parent_session_id,
        fork,
        int(row.context_start_seq),
        int(row.last_seq),
        1 if parent_start is None else int(parent_start),
    )


def _write_end(conn: Connection, session_id: str, seq: int, last: int) -> int:
    """The last row of the write that stored row `seq`."""
    if seq == 0:
        return 0
    cid = _scalar(conn, _ROW_AT, sid=session_id, seq=seq)
    following = _scalar(conn, _NEXT_WRITE, sid=session_id, seq=seq, cid=cid)
    return last if following is None else int(following) - 1


def resolve_point(
    conn: Connection, session_id: str, point: HistoryPoint, last: int, *, exact_turn: bool = False
) -> int:
    """The seq of the last row written at `point` (0: nothing yet); HistoryPointError when
    the session's history has no such point. A branch's history before its own first row
    is its parent's, up to the fork. A turn point is the start of the write holding the
    turn's user message (what a load saw then), or with `exact_turn` the row just before
    the message itself (where a fork or rewind may start, even inside a write)."""
    line = lineage(conn, session_id)
    if line.parent is not None and _before_own_rows(conn, session_id, point, line):
        parent_last = lineage(conn, line.parent).last_seq
        found = resolve_point(conn, line.parent, point, parent_last, exact_turn=exact_turn)
        return min(found, line.fork_seq)
    if point.kind == "seq":
        seq = int(point.value)  # type: ignore[arg-type]
        if seq > last:
            raise HistoryPointError(session_id, point, f"its history ends at seq {last}")
        return _write_end(conn, session_id, seq, last)
    if point.kind == "time":
        at = _stored_time(conn, point)
        found = _scalar(conn, _LAST_BEFORE_TIME, sid=session_id, at=at)
        return 0 if found is None else _write_end(conn, session_id, int(found), last)
    if point.kind == "version":
        compaction = conn.execute(_COMPACTION, {"sid": session_id, "version": point.value}).first()
        if compaction is None:
            raise HistoryPointError(session_id, point, "it has no compaction of that version")
        end = _scalar(conn, _COMPACTION_END, sid=session_id, cid=compaction.id)
        return int(compaction.context_start_seq) - 1 if end is None else int(end)
    turn = int(point.value)  # type: ignore[arg-type]
    if line.parent is not None:  # a branch's first turns are its parent's, up to the fork
        inherited = user_messages(conn, line.parent, line.fork_seq)
        if turn <= inherited:
            parent_last = lineage(conn, line.parent).last_seq
            found = resolve_point(conn, line.parent, point, parent_last, exact_turn=exact_turn)
            return min(found, line.fork_seq)
        turn -= inherited
    user_seq = _scalar(conn, _NTH_USER_MESSAGE, sid=session_id, offset=turn - 1)
    if user_seq is None:
        raise HistoryPointError(session_id, point, f"it has fewer than {turn} user messages")
    if exact_turn:
        return int(user_seq) - 1
    batch_start = _scalar(conn, _BATCH_START, sid=session_id, seq=user_seq)
    return int(batch_start if batch_start is not None else user_seq) - 1


def user_messages(conn: Connection, session_id: str, upto: int) -> int:
    """How many user messages the session's lineage holds up to row `upto`: the number of
    turns a branch inherits."""
    line = lineage(conn, session_id)
    if line.parent is not None and upto <= line.fork_seq:
        return user_messages(conn, line.parent, upto)
    own = int(_scalar(conn, _USER_MESSAGES_UPTO, sid=session_id, upto=upto))
    return own + (user_messages(conn, line.parent, line.fork_seq) if line.parent else 0)


def _stored_time(conn: Connection, point: HistoryPoint) -> datetime:
    at = point.value
    assert isinstance(at, datetime)
    return at.replace(tzinfo=None) if conn.dialect.name == "sqlite" else at  # naive UTC text


def _before_own_rows(conn: Connection, session_id: str, point: HistoryPoint, line: Lineage) -> bool:
    """Whether a seq or time point of a branch lies before the branch's first own row."""
    if point.kind == "seq":
        return int(point.value) <= line.fork_seq  # type: ignore[arg-type]
    if point.kind == "time":
        found = _scalar(conn, _LAST_BEFORE_TIME, sid=session_id, at=_stored_time(conn, point))
        return found is None
    return False


def context_start_at(conn: Connection, session_id: str, upto: int, first: int) -> int:
    """Where the active context started once row `upto` was written (`first`: the
    session's first own seq)."""
    start = first
    cleared = _scalar(conn, _LAST_CLEAR, sid=session_id, upto=upto)
    if cleared is not None:
        start = int(cleared) + 1
    for compaction in conn.execute(_COMPACTION_STARTS, {"sid": session_id, "upto": upto}):
        begins = int(compaction.context_start_seq)
        if begins > start and (begins <= upto or _wrote_nothing(conn, session_id, compaction.id)):
            start = begins
    return start


def _wrote_nothing(conn: Connection, session_id: str, compaction_id: int) -> bool:
    """A compaction that kept nothing restarts the context past the newest row."""
    return _scalar(conn, _COMPACTION_END, sid=session_id, cid=compaction_id) is None


def tx_rows_as_of(
    conn: Connection, session_id: str, point: HistoryPoint, keys: SessionKeys
) -> tuple[int, list[StoredRow]]:
    """The seq the point resolved to and the rows of the active context then, tombstones
    and popped rows included (a load keeps the visible ones)."""
    last = _scalar(conn, _SESSION_LAST, sid=session_id)  # None: never written, seq 0 only
    upto = resolve_point(conn, session_id, point, int(last or 0))
    return upto, rows_upto(conn, session_id, upto, keys)


def rows_upto(conn: Connection, session_id: str, upto: int, keys: SessionKeys) -> list[StoredRow]:
    """The rows of the session's active context once row `upto` was written; a branch's
    context begins with its parent's as of the fork until its own first context start."""
    line = lineage(conn, session_id)
    if line.parent is not None and upto <= line.fork_seq:
        return rows_upto(conn, line.parent, upto, keys)
    if upto == 0:
        return []
    start = context_start_at(conn, session_id, upto, line.fork_seq + 1)
    found = conn.execute(_ROWS_BETWEEN, {"sid": session_id, "start": start, "upto": upto})
    rows = stored_rows(conn, keys, session_id, found)
    purged = [row.seq for row in visible_rows(rows) if row.item is None]
    if purged:
        raise HistoryPointError(
            session_id,
            HistoryPoint.at_seq(upto),
            f"retention purged the stored text of row {purged[0]} (its archive still holds "
            "it: `sessionstore archive show`)",
        )
    if line.parent is not None and start == line.fork_seq + 1:
        return rows_upto(conn, line.parent, line.fork_seq, keys) + rows
    return rows


def context_counts(
    conn: Connection, session_id: str, upto: int, keys: SessionKeys
) -> tuple[int, int]:
    """(items, tokens) of the session's context once row `upto` was written, summed in SQL
    (no payload is read): what a fork starts with, in time independent of history length
    when it forks at the newest row."""
    line = lineage(conn, session_id)
    if line.parent is not None and upto <= line.fork_seq:
        return context_counts(conn, line.parent, upto, keys)
    if upto == line.last_seq:  # the running counters already say
        return _session_counts(conn, session_id)
    start = context_start_at(conn, session_id, upto, line.fork_seq + 1)
    bounds = {"sid": session_id, "start": start, "upto": upto}
    visible = conn.execute(_VISIBLE_SUMS, bounds).one()
    if visible.purged:  # rows retention emptied: read them, which says which one
        rows = visible_rows(rows_upto(conn, session_id, upto, keys))
        return len(rows), sum(int(row.tokens) for row in rows)
    items, tokens = int(visible.items), int(visible.tokens or 0)
    hidden = conn.execute(_HIDDEN_SUMS, bounds).one()
    items -= int(hidden.items)
    tokens -= int(hidden.tokens or 0)
    if line.parent is not None and start == line.fork_seq + 1:
        for shared in conn.execute(_HIDES_SHARED, {**bounds, "fork": line.fork_seq}).scalars():
            items -= 1  # a pop of a row the branch shares with its parent
            tokens -= _tokens_of(conn, line.parent, int(shared))
        inherited_items, inherited_tokens = context_counts(conn, line.parent, line.fork_seq, keys)
        items += inherited_items
        tokens += inherited_tokens
    return items, tokens


def _tokens_of(conn: Connection, session_id: str, seq: int) -> int:
    """The tokens of row `seq` of the session's lineage."""
    line = lineage(conn, session_id)
    if line.parent is not None and seq <= line.fork_seq:
        return _tokens_of(conn, line.parent, seq)
    return int(_scalar(conn, _ROW_TOKENS, sid=session_id, seq=seq))


def _session_counts(conn: Connection, session_id: str) -> tuple[int, int]:
    row = conn.execute(_COUNTERS, {"sid": session_id}).one()
    return int(row.context_items), int(row.context_tokens)


Segment: TypeAlias = tuple[str, int, int]  # a session's rows first..last of a context


def inherited_segments(conn: Connection, session_id: str) -> list[Segment]:
    """The parent rows a branch's active context begins with, as ranges from the oldest
    ancestor's on (none once the branch cleared, compacted or rewound, and for any session
    that is not a branch). Read from the session rows alone: no history is walked."""
    line = lineage(conn, session_id)
    return _parent_segments(conn, line) if line.inherits else []


def _parent_segments(conn: Connection, line: Lineage) -> list[Segment]:
    assert line.parent is not None
    shared: Segment = (line.parent, line.parent_start, line.fork_seq)
    parent = lineage(conn, line.parent)
    if parent.parent is not None and line.parent_start == parent.fork_seq + 1:
        return [*_parent_segments(conn, parent), shared]  # the parent still inherited then
    return [shared]


def inherited_rows(conn: Connection, session_id: str, keys: SessionKeys) -> list[StoredRow]:
    """The rows a branch's active context takes from its ancestors (see inherited_segments),
    each opened with its own session's key."""
    rows: list[StoredRow] = []
    for owner, first, last in inherited_segments(conn, session_id):
        found = conn.execute(_ROWS_BETWEEN, {"sid": owner, "start": first, "upto": last})
        rows += stored_rows(conn, keys, owner, found)
    return rows


def tx_rewind(conn: Connection, session_id: str, point: HistoryPoint, keys: SessionKeys) -> Rewind:
    """Restore the active context as it stood at `point`: a clear marker naming the seq it
    rewinds to, then copies of the items visible then. Nothing is deleted."""
    session: AnyRow | None = lock_session(conn, session_id)
    if session is None:
        raise HistoryPointError(session_id, point, "no such session")
    upto = resolve_point(conn, session_id, point, int(session.last_seq), exact_turn=True)
    restored = visible_rows(rows_upto(conn, session_id, upto, keys))
    seq = int(session.last_seq) + 1
    rows = [marker_row(session_id, seq, KIND_CLEAR, upto)]
    for kept in restored:
        kind = KIND_SUMMARY if kept.kind == KIND_SUMMARY else KIND_CARRY
        rows.append(carried_copy(kept, session_id=session_id, seq=seq + len(rows), kind=kind))
    columns = set(rows[-1])  # the marker lacks the item columns its copies have
    for new in rows:
        new.update({name: None for name in columns - set(new)})
    chained = write_rows(conn, keys, dict(session._mapping), rows)
    conn.execute(messages.insert(), rows)
    tokens = sum(int(kept.tokens) for kept in restored)
    conn.execute(
        sessions.update()
        .where(sessions.c.session_id == session_id)
        .values(
            last_seq=seq + len(restored),
            context_start_seq=seq + 1,
            context_items=len(restored),
            context_tokens=tokens,
            updated_at=sa.func.current_timestamp(),
            **chained,
        )
    )
    return Rewind(session_id, seq, upto, len(restored), tokens)


def rewind_event(done: Rewind) -> Event:
    """`session.rewind`: which seq the context went back to, and what it holds now."""
    return session_event("session.rewind", done)
