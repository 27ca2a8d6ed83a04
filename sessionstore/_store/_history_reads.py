"""What a store answers about a session's past: turns, branches, time travel, search,
model calls and usage, and the chain's verification.

A mixin of `SessionStore`, kept apart so the class's own module holds the write path and
the context load. Each method checks its arguments and runs one read (or one history
write: rewind, fork, usage) through the store's database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from .._arguments import (
    check_agent_name,
    check_flag,
    check_positive,
    check_session_id,
)
from .._errors import HistoryTamperedError
from .._events import Event
from .._history._agents import tx_agent_history
from .._history._branches import Fork, fork_event, tx_branches, tx_fork
from .._history._model_calls import (
    USAGE_GROUPS,
    CallUsage,
    ModelCall,
    tx_attach_usage,
    tx_calls,
    tx_usage,
    usage_by_turn,
)
from .._history._prices import Price, cost_usd, price_of
from .._history._search import SearchHit, search_words, tx_search
from .._history._time_travel import (
    HistoryPoint,
    Rewind,
    rewind_event,
    tx_rewind,
    tx_rows_as_of,
)
from .._history._turns import (
    Turn,
    UserTurn,
    tx_tool_usage,
    tx_turns,
    tx_turns_before_clear,
    tx_user_turns,
)
from .._history._verify import ChainReport, tx_checked_active, tx_verify
from .._redaction import Redactor
from .._rows import (
    SessionInfo,
    StoredRow,
)
from .._security._payload_sealing import SessionKeys
from .._storage._database import Database
from ._reads import (
    HISTORY,
    read_context_rows,
    read_rows,
    session_info_of,
)


class _Store(Protocol):
    """What the mixin's methods use of the store they are part of."""

    @property
    def database(self) -> Database: ...
    @property
    def session_keys(self) -> SessionKeys: ...
    @property
    def verify_on_load(self) -> bool: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def prices(self) -> Mapping[str, Price]: ...
    async def ensure_ready(self) -> None: ...
    async def record_events(self, batch: Sequence[Event]) -> None: ...
    async def model_calls(self, session_id: str) -> list[ModelCall]: ...
    async def turns(self, session_id: str) -> list[Turn]: ...


class SessionHistory:
    """The history half of `SessionStore`'s methods (see the module's docstring)."""

    async def verify_history(self: _Store, session_id: str) -> ChainReport:
        """Check a session's whole history against its hash chain: rows edited, moved,
        injected or deleted, a moved context start, downgraded (plain) rows of an encrypted
        session. Reads only; see ChainReport for what it found."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.read(tx_verify, session_id, self.session_keys)

    async def context_rows(
        self: _Store, session_id: str, tail: int | None = None
    ) -> list[StoredRow]:
        """Every row of the active context (tombstones and hidden rows included), or only
        the last `tail` of them (read alone: a 100,000-row session's tail costs a tail)."""
        check_session_id(session_id)
        if tail is not None and tail < 1:
            raise ValueError(f"tail must be at least 1, got {tail}")
        await self.ensure_ready()
        if self.verify_on_load:  # prove the context before showing its rows
            await self.database.read(tx_checked_active, session_id, self.session_keys)
        return await self.database.read(read_context_rows, session_id, self.session_keys, tail)

    async def rows_as_of(
        self: _Store, session_id: str, point: HistoryPoint | int | datetime
    ) -> tuple[int, list[StoredRow]]:
        """The seq `point` resolves to (the end of the write that holds it) and the rows of
        the active context as they stood then, tombstones and popped rows included."""
        check_session_id(session_id)
        point = HistoryPoint.of(point)
        await self.ensure_ready()
        if self.verify_on_load:  # prove the history the old context is read from
            report = await self.database.read(tx_verify, session_id, self.session_keys)
            if not report.ok:
                raise HistoryTamperedError(session_id, report.problems)
        return await self.database.read(tx_rows_as_of, session_id, point, self.session_keys)

    async def rewind(self: _Store, session_id: str, to: HistoryPoint | int | datetime) -> Rewind:
        """Make the active context exactly what it was at `to` (a seq, a datetime or a
        HistoryPoint), with a marker row and copies of the items active then. Nothing is
        deleted: the rewound rows stay in history, audits and `as_of` reads."""
        check_session_id(session_id)
        point = HistoryPoint.of(to)
        await self.ensure_ready()
        done = await self.database.write(tx_rewind, session_id, point, self.session_keys)
        await self.record_events([rewind_event(done)])
        return done

    async def fork(
        self: _Store,
        session_id: str,
        new_session_id: str,
        *,
        at: HistoryPoint | int | datetime | None = None,
    ) -> Fork:
        """Branch `session_id` into `new_session_id` at `at` (a seq, a datetime or a
        HistoryPoint such as `HistoryPoint.before_turn(3)`; default: its newest row). The
        branch shares the parent's rows instead of copying them: one session row is
        written, whatever the history's length. It then loads, appends, compacts and is
        retained like any session; the parent is never changed by it."""
        check_session_id(session_id)
        check_session_id(new_session_id)
        point = None if at is None else HistoryPoint.of(at)
        await self.ensure_ready()

        done = await self.database.write(
            tx_fork, session_id, point, new_session_id, self.session_keys
        )
        await self.record_events([fork_event(done)])
        return done

    async def branches(self: _Store, session_id: str) -> list[SessionInfo]:
        """The sessions forked from `session_id` (its direct branches), oldest first."""
        check_session_id(session_id)
        await self.ensure_ready()
        return [session_info_of(row) for row in await self.database.read(tx_branches, session_id)]

    async def search(
        self: _Store,
        query: str,
        *,
        session_id: str | None = None,
        limit: int = 20,
        redact: bool = True,
    ) -> list[SearchHit]:
        """Rows of any session's history (or of `session_id`'s) that hold every word of
        `query`, best match first; redacted unless `redact=False`. Rows sealed by payload
        encryption are not indexed and never found."""
        words = search_words(query)
        if session_id is not None:
            check_session_id(session_id)
        check_positive("limit", limit)
        redactor = self.redactor if check_flag("redact", redact) else Redactor(enabled=False)
        await self.ensure_ready()
        complete = await self.database.catch_up_search_index(session_id)
        return await self.database.read(
            tx_search, words, session_id, limit, self.session_keys, redactor, not complete
        )

    async def record_usage(
        self: _Store,
        session_id: str,
        usages: Sequence[CallUsage],
        *,
        calls: Sequence[tuple[int, str | None]] = (),
        model: str | None = None,
    ) -> None:
        """Attach the usage providers reported, in order, to recorded calls (row id, model)
        and price it; usage beyond them is recorded as calls of `model` with unknown input."""
        check_session_id(session_id)
        if not usages:
            return

        def priced(usage: CallUsage, name: str | None) -> float | None:
            price = price_of(self.prices, name)
            return cost_usd(price, usage.input_tokens, usage.cached_tokens, usage.output_tokens)

        attached = [
            (row_id, usage, priced(usage, name))
            for (row_id, name), usage in zip(calls, usages, strict=False)
        ]
        unmatched = [(usage, priced(usage, model)) for usage in usages[len(calls) :]]
        await self.ensure_ready()
        await self.database.write(tx_attach_usage, session_id, attached, unmatched, model)

    async def model_calls(self: _Store, session_id: str) -> list[ModelCall]:
        """The session's recorded model calls, in order (`call` 1, 2, 3...)."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.read(tx_calls, session_id)

    async def usage(
        self: _Store,
        *,
        by: str = "session",
        session_id: str | None = None,
        since: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """Model calls, tokens (input, cached, output, reasoning) and cost in USD, per
        `by` ("session", "model" or "day"), optionally of one session and since a time."""
        if by not in USAGE_GROUPS:
            raise ValueError(f"by must be one of {', '.join(USAGE_GROUPS)}, got {by!r}")
        if session_id is not None:
            check_session_id(session_id)
        if since is not None and (not isinstance(since, datetime) or since.tzinfo is None):
            raise ValueError("since must be a timezone-aware datetime")
        await self.ensure_ready()
        return await self.database.read(tx_usage, by, session_id, since)

    async def turn_usage(self: _Store, session_id: str) -> dict[int, dict[str, int]]:
        """Requests and tokens per turn, for the calls whose input was recorded (a call
        belongs to the turn of the newest row it was sent)."""
        calls = await self.model_calls(session_id)
        starts = [(turn.turn, turn.first_seq) for turn in await self.turns(session_id)]
        return usage_by_turn(calls, starts)

    async def turns(self: _Store, session_id: str) -> list[Turn]:
        """The session's turns (the `turns` view): each user message starts one."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.read(tx_turns, session_id, self.session_keys)

    async def user_turns(self: _Store, session_id: str) -> list[UserTurn]:
        """The user messages that start the session's turns, numbered as `turns` numbers
        them; reads only those rows (what listing or searching turns needs)."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.read(tx_user_turns, session_id, self.session_keys)

    async def turns_before_clear(self: _Store, session_id: str) -> int:
        """How many user turns came before the session's newest `clear` marker (rewinds
        aside; a branch inherits its parent's before the fork), 0 if it was never cleared:
        where the Agents SDK's turn count starts again. One count, no payload read."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.read(tx_turns_before_clear, session_id)

    async def tool_usage(self: _Store, session_id: str) -> list[tuple[str, int, int]]:
        """(tool, calls, turn) for every tool the session called, in turn order."""
        check_session_id(session_id)
        await self.ensure_ready()
        return await self.database.read(tx_tool_usage, session_id)

    async def history(
        self: _Store, session_id: str, *, agent: str | None = None
    ) -> list[StoredRow]:
        """Every row the session ever had, in seq order; with `agent`, only the rows that
        agent produced (`WHERE agent = ...`)."""
        check_session_id(session_id)
        named = check_agent_name(agent)
        await self.ensure_ready()
        if named is not None:
            return await self.database.read(tx_agent_history, session_id, named, self.session_keys)
        return await self.database.read(read_rows, HISTORY, session_id, self.session_keys)
