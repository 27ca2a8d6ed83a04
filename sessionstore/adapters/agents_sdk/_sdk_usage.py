"""AdvancedSQLiteSession's usage calls (`store_run_usage`, `get_session_usage`,
`get_turn_usage`), for SQLSession.

SQLSession stores a run's usage as the run goes: the Runner hands `add_items` the run's
context (`wrapper`) and each model call's usage is stored with the call. `store_run_usage`,
which an SDK program calls after `Runner.run`, is therefore a no-op for a run this session
already recorded; for usage it never saw (a run without this session, a result built by
hand) it stores the result's usage against the current turn, as the SDK does. The SDK
replaces a turn's usage; the ledger is append-only, so the same result stored twice is
recognised and stored once, and only a *different* result for the same turn adds to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import CallUsage
from ._tracking import current_run

if TYPE_CHECKING:
    from agents.result import RunResult
    from agents.usage import Usage

    from ... import SessionStore


class SDKUsageMixin:
    """The usage calls of AdvancedSQLiteSession; mixed into SQLSession."""

    if TYPE_CHECKING:  # provided by SQLSession and SDKTurnsMixin
        store: SessionStore

        @property
        def active_session_id(self) -> str: ...

        def _store_session_of(self, branch_id: str | None) -> str: ...

        async def _first_access(self) -> None: ...

        async def list_branches(self) -> list[dict[str, Any]]: ...

    async def store_run_usage(self, result: RunResult) -> None:
        """Store a run's usage for the current turn, unless this session already stored it
        while the run went (the usual case: then this does nothing). Like the SDK's, it
        never raises over the usage it could not store."""
        await self._first_access()
        usage = result.context_wrapper.usage
        entries = list(usage.request_usage_entries)
        run = current_run(self.active_session_id, id(self.store))
        if run is not None and entries and run.usage_seen >= len(entries):
            return  # add_items stored each of the run's calls with its usage already
        calls = _call_usages(usage)
        if not calls:
            return
        try:
            calls = calls[await self._stored_in_current_turn(calls) :]
            if not calls:
                return
            # A call record naming the current context puts the usage in the current turn.
            recorded = [
                (await self.store.record_model_call(self.active_session_id, []), None)
                for _ in calls
            ]
            await self.store.record_usage(self.active_session_id, calls, calls=recorded)
        except Exception:  # the SDK logs and goes on: usage is telemetry, not the run
            return

    async def _stored_in_current_turn(self, calls: list[CallUsage]) -> int:
        """How many of `calls` the current turn holds already: the SDK *sets* a turn's usage,
        so the same result stored twice counts once, and a result that grew since stores
        only its new requests. 0 when the turn's usage is something else (then it adds)."""
        turns = await self.store.user_turns(self.active_session_id)
        if not turns:
            return 0
        stored = (await self.store.turn_usage(self.active_session_id)).get(turns[-1].turn)
        count = int(stored["requests"]) if stored else 0
        if stored is None or not count or count > len(calls):
            return 0
        head = calls[:count]
        sums = (sum(c.input_tokens for c in head), sum(c.output_tokens for c in head))
        return count if sums == (stored["input_tokens"], stored["output_tokens"]) else 0

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Requests and tokens of the recorded model calls, of every branch (or only of
        `branch_id`), shaped like AdvancedSQLiteSession's; None when there are none."""
        await self._first_access()
        if branch_id is None:
            branches = [str(branch["branch_id"]) for branch in await self.list_branches()]
        else:
            branches = [branch_id]
        totals = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "total_turns": 0}
        found = False
        for branch in branches:
            store_id = self._store_session_of(branch)
            rows = await self.store.usage(session_id=store_id)
            for row in rows:
                totals["requests"] += int(row["calls"])
                totals["input_tokens"] += int(row["input_tokens"])
                totals["output_tokens"] += int(row["output_tokens"])
            if rows:
                found = True
                totals["total_turns"] += len(await self.store.turn_usage(store_id))
        if not found:
            return None
        return {
            "requests": totals["requests"],
            "input_tokens": totals["input_tokens"],
            "output_tokens": totals["output_tokens"],
            "total_tokens": totals["input_tokens"] + totals["output_tokens"],
            "total_turns": totals["total_turns"],
        }

    async def get_turn_usage(
        self, user_turn_number: int | None = None, branch_id: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """Requests and tokens per user turn of a branch (current one by default), shaped
        like AdvancedSQLiteSession's (one turn's without its number, as the SDK's); `{}` for a
        turn without any. A call counts in a turn
        when its input is known: the input filter recorded it, or `store_run_usage` did."""
        await self._first_access()
        store_id = self._store_session_of(branch_id)
        by_turn = await self.store.turn_usage(store_id)
        cleared = await self.store.turns_before_clear(store_id)
        rows = [
            _turn_usage(turn - cleared, totals)
            for turn, totals in sorted(by_turn.items())
            if turn > cleared
        ]
        if user_turn_number is None:
            return rows
        found = next((row for row in rows if row["user_turn_number"] == user_turn_number), {})
        return {key: value for key, value in found.items() if key != "user_turn_number"}


def _call_usages(usage: Usage) -> list[CallUsage]:
    """One CallUsage per request: the per-request entries when the SDK kept them, else the
    totals on the first request (the others zero), so every sum matches the SDK's."""
    if usage.request_usage_entries:
        return [
            CallUsage(
                input_tokens=entry.input_tokens,
                cached_tokens=entry.input_tokens_details.cached_tokens or 0,
                output_tokens=entry.output_tokens,
                reasoning_tokens=entry.output_tokens_details.reasoning_tokens or 0,
            )
            for entry in usage.request_usage_entries
        ]
    if not usage.requests and not usage.input_tokens and not usage.output_tokens:
        return []
    first = CallUsage(
        input_tokens=usage.input_tokens,
        cached_tokens=(usage.input_tokens_details.cached_tokens or 0)
        if usage.input_tokens_details
        else 0,
        output_tokens=usage.output_tokens,
        reasoning_tokens=(usage.output_tokens_details.reasoning_tokens or 0)
        if usage.output_tokens_details
        else 0,
    )
    empty = CallUsage(input_tokens=0, cached_tokens=0, output_tokens=0, reasoning_tokens=0)
    return [first, *[empty] * (max(usage.requests, 1) - 1)]


def _turn_usage(turn: int, totals: dict[str, int]) -> dict[str, Any]:
    return {
        "user_turn_number": turn,
        "requests": totals["requests"],
        "input_tokens": totals["input_tokens"],
        "output_tokens": totals["output_tokens"],
        "total_tokens": totals["input_tokens"] + totals["output_tokens"],
        "input_tokens_details": {"cached_tokens": totals["cached_tokens"]},
        "output_tokens_details": {"reasoning_tokens": totals["reasoning_tokens"]},
    }
