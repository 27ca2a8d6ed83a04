"""Background compaction: summarize before the trigger, commit at the trigger.

Past the policy's `prepare_at` share of the trigger threshold, a task on the caller's event
loop takes the session's lease (a `compaction_leases` row, so one summarizer per session
across processes), plans the compaction the trigger would make now, summarizes it and stores
the result in the lease row. When the trigger fires, in whichever process, the compaction
uses that result instead of calling the summarizer, provided the prefix it summarized is
still the start of what the policy would summarize now: same context start, same prior
summary and pinned items, the same rows with the same content (a digest). What the current
partition would summarize beyond that prefix, and everything appended since, is carried
forward verbatim. Anything else discards it (an event says why) and the trigger compacts in
the foreground, as it does without background compaction. The commit itself is the usual
one: compare-and-swap under the session lock, with the lease row removed in that transaction.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, Protocol

from ..._errors import SealedDataError
from ..._events import Event
from ..._items import encode_payload
from ..._rows import StoredRow, visible_rows
from ..._store import SessionStore
from ..._store._compaction_leases import (
    Grant,
    Lease,
    read_lease,
    tx_drop,
    tx_release,
    tx_save_prepared,
    tx_take_lease,
)
from ..._store._context_replacement import ProviderItem, marker_tokens
from ..._tokens import TokenEstimator
from .._partition import Partition, Unit
from .._policy import CompactionPolicy
from .._summarizers._summarizer import Summarizer

_SUMMARY_ROW_OVERHEAD: Final = 16  # the marker line and message framing around the text


class Summary(Protocol):
    """A summary as the manager makes it (None: the summarizer failed)."""

    @property
    def text(self) -> str | None: ...

    @property
    def strategy(self) -> str: ...

    @property
    def events(self) -> list[Event]: ...

    @property
    def opaque(self) -> ProviderItem | None: ...


class Planner(Protocol):
    """What of the compaction manager a preparation uses: the same plan and summary as the
    trigger would make (a protocol, so this module does not import the manager)."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def policy(self) -> CompactionPolicy: ...

    @property
    def estimator(self) -> TokenEstimator: ...

    @property
    def summarizer(self) -> Summarizer: ...

    def plan(self, visible: Sequence[StoredRow], extra_tokens: int) -> tuple[Partition, int]: ...

    async def summary_for(self, session_id: str, plan: Partition, max_tokens: int) -> Summary: ...


@dataclass(frozen=True, slots=True)
class Prepared:
    """A prepared compaction that still fits the session: the plan to commit (its
    remainder is what was summarized) and the summary with the events of making it."""

    plan: Partition
    text: str
    strategy: str
    summarizer: str
    holder: str  # who prepared it
    events: list[Event]
    opaque: ProviderItem | None = None  # a provider's compaction item: the marker


def prefix_digest(prior: Unit | None, remainder: Sequence[Unit]) -> str:
    """SHA-256 of the rows a summary replaces (seq, kind, tokens and payload of each): the
    same digest at the trigger proves it summarized exactly the rows that are there now."""
    digest = hashlib.sha256()
    for unit in [*([prior] if prior else []), *remainder]:
        for row in unit.rows:
            digest.update(f"{row.seq}\x1f{row.kind}\x1f{row.tokens}\x1f".encode())
            digest.update(_payload(row).encode("utf-8", "surrogatepass"))
            digest.update(b"\x1e")
    return digest.hexdigest()


def _payload(row: StoredRow) -> str:
    if row.payload is not None:
        return row.payload
    assert row.item is not None, f"visible row {row.seq} has no payload"
    return encode_payload(row.item, 0)


def _seqs(units: Sequence[Unit]) -> list[int]:
    return [row.seq for unit in units for row in unit.rows]


class BackgroundCompactor:
    """One manager's background preparations, and the check that commits their results."""

    def __init__(self, manager: Planner, window: int) -> None:
        self.manager = manager
        self.window = window  # the manager's max_context_tokens
        self.settings = manager.policy.background
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # Sessions not to ask about again before this monotonic time: this process prepared
        # them, or found another holder's lease or result (asked again after a lease period).
        self._quiet_until: dict[str, float] = {}

    # ------------------------------------------------------------- preparing

    def consider(self, session_id: str, t_est: int, extra_tokens: int) -> None:
        """Start a preparation if the estimate is in the band between the preparation
        threshold and the trigger and none is running or settled here (no I/O: called on
        every pre-flight)."""
        policy = self.manager.policy
        if not policy.prepare_threshold(self.window) <= t_est < policy.threshold(self.window):
            return
        if time.monotonic() < self._quiet_until.get(session_id, 0.0):
            return
        running = self._tasks.get(session_id)
        if running is not None and not running.done() and not running.get_loop().is_closed():
            return
        self._quiet_until[session_id] = time.monotonic() + self.settings.lease_s
        task = asyncio.get_running_loop().create_task(self._prepare(session_id, extra_tokens))
        self._tasks[session_id] = task
        task.add_done_callback(partial(self._forget, session_id))

    def _forget(self, session_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(session_id) is task:
            del self._tasks[session_id]

    async def settle(self, session_id: str | None = None) -> None:
        """Wait for this loop's running preparations (of one session, or all) to end."""
        loop = asyncio.get_running_loop()
        tasks = [
            task
            for sid, task in list(self._tasks.items())
            if (session_id is None or sid == session_id) and task.get_loop() is loop
        ]
        if tasks:
            await asyncio.wait(tasks)  # never cancels them if this wait is cancelled

    async def _prepare(self, session_id: str, extra_tokens: int) -> None:
        """Take the lease, summarize, store the result; every outcome is an event."""
        store = self.manager.store
        try:
            grant = await store.write_transaction(
                tx_take_lease, session_id, self.holder, _now(), self.settings.lease_s
            )
            if grant.took_over is not None:
                await store.record_events([self._taken_over(session_id, grant)])
            if grant.outcome != "granted":
                return
            await self._prepare_holding(session_id, extra_tokens)
        except asyncio.CancelledError:
            # Its loop is ending (`asyncio.run` per request) or it was cancelled: hand the
            # lease back so the next request, on its own loop, can prepare again, instead
            # of the session waiting a whole lease period.
            self._quiet_until.pop(session_id, None)
            await self._release(session_id)
            await self._record_quietly([self._discarded(session_id, "cancelled")])
            raise
        except Exception as exc:  # a background task must never fail unseen
            await self._release(session_id)
            await self._record_quietly(
                [self._discarded(session_id, "error", error_type=type(exc).__name__)]
            )

    async def _prepare_holding(self, session_id: str, extra_tokens: int) -> None:
        manager, store = self.manager, self.manager.store
        started = time.perf_counter()
        rows = await store.context_rows(session_id)
        visible = visible_rows(rows)
        plan, budget = manager.plan(visible, extra_tokens)
        if not plan.remainder:
            await self._release(session_id)
            return
        summary = await manager.summary_for(session_id, plan, budget)
        if summary.text is None:  # the summarizer failed: the trigger tries again itself
            await self._release(session_id)
            await store.record_events(
                [*summary.events, self._discarded(session_id, "summarizer_failed")]
            )
            return
        prepared: dict[str, Any] = {
            "remainder": _seqs(plan.remainder),
            "pinned": _seqs(plan.pinned),
            "prior": plan.prior_summary.first_seq if plan.prior_summary else None,
            "summary": summary.text,
            "strategy": summary.strategy,
            "summarizer": manager.summarizer.name,
            "provider_item": None if summary.opaque is None else _opaque_record(summary.opaque),
            "events": [
                {"event": event.event, "severity": event.severity, "fields": dict(event.fields)}
                for event in summary.events
            ],
        }
        digest = prefix_digest(plan.prior_summary, plan.remainder)
        lost = await store.write_transaction(
            tx_save_prepared,
            session_id,
            self.holder,
            digest,
            prepared,
            _now(),
            store.session_keys,
        )
        fields = {
            "covered_from_seq": plan.remainder[0].first_seq,
            "covered_to_seq": plan.remainder[-1].rows[-1].seq,
            "summarized_items": len(prepared["remainder"]),
            "summary_tokens": marker_tokens(manager.estimator, summary.text, summary.opaque),
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "holder": self.holder,
        }
        if lost is not None:
            await store.record_events([self._discarded(session_id, lost, **fields)])
            return
        await store.record_events([Event("compact.prepared", session_id, fields=fields)])

    async def _release(self, session_id: str) -> None:
        try:
            await self.manager.store.write_transaction(tx_release, session_id, self.holder)
        except Exception:  # best effort: an unreleased lease expires and is taken over
            return

    async def _record_quietly(self, batch: list[Event]) -> None:
        try:
            await self.manager.store.record_events(batch)
        except Exception:  # the store itself failed: nothing left to tell it
            return

    # ------------------------------------------------------------ committing

    async def claim(
        self, session_id: str, snapshot_start: int, plan: Partition, extra_tokens: int
    ) -> Prepared | None:
        """At the trigger: the prepared compaction if one fits the current plan, else None
        (a mismatch is discarded with an event). A preparation running in this process is
        waited for first: it is further along than a summarizer call started now."""
        await self.settle(session_id)
        self._quiet_until.pop(session_id, None)  # the next cycle may prepare again
        store = self.manager.store
        try:
            lease = await store.read_snapshot(read_lease, session_id, store.session_keys)
        except SealedDataError:  # altered, or sealed for another session: never used
            lease = await store.read_snapshot(read_lease, session_id)
            assert lease is not None
            await store.write_transaction(tx_drop, session_id, lease.holder)
            await store.record_events([self._discarded(session_id, "unreadable")])
            return None
        if lease is None or lease.prepared is None:
            return None
        reason, prepared = self._match(lease, snapshot_start, plan, extra_tokens)
        if prepared is not None:
            return prepared
        await store.write_transaction(tx_drop, session_id, lease.holder)
        await store.record_events([self._discarded(session_id, reason, holder=lease.holder)])
        return None

    def _match(
        self, lease: Lease, snapshot_start: int, plan: Partition, extra_tokens: int
    ) -> tuple[str, Prepared | None]:
        """(why not, None) or ("", the plan to commit with the prepared summary)."""
        found = lease.prepared
        assert found is not None
        if lease.context_start_seq != snapshot_start:
            return "context_restarted", None
        prior = plan.prior_summary.first_seq if plan.prior_summary else None
        if found["prior"] != prior:
            return "summary_changed", None
        if list(found["pinned"]) != _seqs(plan.pinned):
            return "pinned_changed", None
        covered = set(found["remainder"])
        summarized = [unit for unit in plan.remainder if unit.first_seq in covered]
        carried = [unit for unit in plan.remainder if unit.first_seq not in covered]
        if _seqs(summarized) != sorted(covered) or (
            prefix_digest(plan.prior_summary, summarized) != lease.prefix_sha256
        ):
            return "prefix_changed", None
        truncated = plan.truncated_user
        if truncated is not None and any(unit is truncated[0] for unit in carried):
            truncated = None  # carried whole instead
        committed = replace(
            plan,
            remainder=summarized,
            recent=sorted([*plan.recent, *carried], key=lambda unit: unit.first_seq),
            truncated_user=truncated,
        )
        text = str(found["summary"])
        opaque = _opaque_of(found.get("provider_item"))
        manager = self.manager
        needed = (
            committed.pinned_tokens
            + committed.kept_tokens
            + marker_tokens(manager.estimator, text, opaque)
            + _SUMMARY_ROW_OVERHEAD
            + extra_tokens
        )
        if needed > manager.policy.target(self.window):
            return "no_longer_fits", None
        age = None if lease.prepared_at is None else (_now() - lease.prepared_at).total_seconds()
        committed_event = Event(
            "compact.prepared_committed",
            lease.session_id,
            fields={
                "holder": lease.holder,
                "summarized_items": len(covered),
                "carried_units": len(carried),
                "age_s": None if age is None else round(age, 3),
            },
        )
        events = [_event(lease.session_id, stored) for stored in found["events"]]
        return "", Prepared(
            committed,
            text,
            str(found["strategy"]),
            str(found["summarizer"]),
            lease.holder,
            [*events, committed_event],
            opaque,
        )

    # ---------------------------------------------------------------- events

    def _discarded(self, session_id: str, reason: str, **fields: Any) -> Event:
        return Event(
            "compact.prepared_discarded",
            session_id,
            severity="warning" if reason == "error" else "info",
            fields={"reason": reason, **fields},
        )

    def _taken_over(self, session_id: str, grant: Grant) -> Event:
        return Event(
            "compact.lease_taken_over",
            session_id,
            severity="warning" if grant.took_over == "expired" else "info",
            fields={
                "reason": grant.took_over,
                "previous_holder": grant.previous_holder,
                "holder": self.holder,
            },
        )


def _event(session_id: str, stored: Mapping[str, Any]) -> Event:
    return Event(
        str(stored["event"]),
        session_id,
        severity=str(stored["severity"]),
        fields=dict(stored["fields"]),
    )


def _opaque_record(opaque: ProviderItem) -> dict[str, Any]:
    return {
        "item": dict(opaque.item),
        "tokens": opaque.tokens,
        "provider": opaque.provider,
        "model": opaque.model,
    }


def _opaque_of(record: Mapping[str, Any] | None) -> ProviderItem | None:
    """A prepared provider item back from the lease row (None: a readable summary)."""
    if record is None:
        return None
    model = record["model"]
    return ProviderItem(
        dict(record["item"]),
        int(record["tokens"]),
        str(record["provider"]),
        None if model is None else str(model),
    )


def _now() -> datetime:
    return datetime.now(UTC)
