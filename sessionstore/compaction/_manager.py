"""CompactionManager: decide, partition, summarize (with fallbacks), persist.

One compaction: snapshot the active context, fit the layers to the budget,
summarize the remainder outside any lock, then commit everything in one
transaction with a compare-and-swap (see _persist.py). Failures (docs/COMPACTION.md):
too long -> half max_tokens (twice), refused -> `brief`, tool calls or errors ->
prune-only, input too large -> drop the oldest units and retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, Literal

from .._arguments import item_list
from .._errors import (
    CompactionError,
    CompactionErrorReason,
)
from .._events import Event
from .._loops import BIG_ROWS, KeyedLocks, off_loop_if
from .._rows import StoredRow, visible_rows
from .._store import SessionStore
from .._store._compaction_leases import tx_commit_releasing
from .._store._context_replacement import (
    CompactionResult,
    CompactionWrite,
    archived_record,
    marker_tokens,
    own_start,
)
from ..archive import ArchiveDelivery
from ._background._background import BackgroundCompactor
from ._collector import freeze_more, snapshot_frozen
from ._message import as_item
from ._observers import CompactionObserver
from ._outcome import CompactionConfig, CompactionOutcome, Layers, committed_events, skipped
from ._partition import Partition, build_units, fit
from ._plan_parts import kept_record, kept_rows, replaced_archive
from ._policy import Trigger, TriggerDecision, decide
from ._preflight._fixed_costs import FixedCostCache
from ._preflight._masking import MaskReport, RowMasking
from ._preflight._preflight import PreflightDecision
from ._rebind import Rebind
from ._summarizers._extractive import ExtractiveSummarizer
from ._summarizers._prompts import resolve_strategy
from ._summarizers._provider_marker import tx_binding
from ._summarizers._summarizer import Summarizer
from ._summarizing import PriorState, Summarizing, Summary
from ._truncate import truncate_tool_output

_CAS_ATTEMPTS: Final = 3


class CompactionManager(Summarizing):
    """Compaction for sessions in one SessionStore."""

    def __init__(self, config: CompactionConfig | None = None) -> None:
        self.config = config or CompactionConfig()
        self.policy = self.config.policy
        self.store = self.config.store or SessionStore(model=self.config.model)
        self.estimator = self.config.token_estimator or self.store.estimator
        self.summarizer: Summarizer = self.config.summarizer or ExtractiveSummarizer(self.estimator)
        resolve_strategy(self.policy.strategy, self.policy.custom_strategies)  # fail fast
        self.fixed_costs = FixedCostCache()
        self._observers: list[CompactionObserver] = []
        self._locks = KeyedLocks("the compaction lock of session")
        self._consecutive: dict[str, int] = {}
        # Summaries prepared off the request path (docs/COMPACTION.md, "Background compaction").
        self.background = (
            BackgroundCompactor(self, self.config.max_context_tokens)
            if self.policy.background.enabled
            else None
        )
        # Session -> tokens masking took out of its last input (the turn boundary's check).
        self.masked_tokens: dict[str, int] = {}

    # ------------------------------------------------------- integration points

    def observe(self, observer: CompactionObserver) -> None:
        """Tell `observer` of every rewrite of a stored context (added once, however often)."""
        if observer not in self._observers:
            self._observers.append(observer)

    def _rewritten(self, session_id: str) -> None:
        self.masked_tokens.pop(session_id, None)  # its outputs may be gone
        for observer in self._observers:
            observer.context_rewritten(session_id)

    async def maybe_compact(self, session_id: str) -> CompactionOutcome | None:
        """Compact if the stored context crossed the trigger (an O(1) check); a turn boundary.
        With masking on, a crossing is checked against the masked input (the cascade).

        The total is the one this store keeps after its own appends when it has one (no read:
        three turn boundaries a Runner turn), else read; a crossing is confirmed from the
        stored total before compacting. Another process's appends are seen by the next
        pre-flight, which decides from the stored total (`record_model_call`)."""
        known = self.store.known_context_tokens(session_id)
        tokens = known if known is not None else await self.store.context_tokens(session_id)
        decision = self.decide(tokens)
        if decision.triggered and known is not None:  # another process may have compacted it
            decision = self.decide(await self.store.context_tokens(session_id))
        if decision.triggered and self.policy.masking.enabled:  # the cascade: masking first
            decision = self.decide(decision.t_est - await self._masked_tokens(session_id))
        if not decision.triggered:
            self._prepare_if_due(session_id, decision.t_est, 0)
            return None
        outcome = await self.compact(session_id, trigger=decision.reason, note="turn boundary")
        return outcome

    async def _masked_tokens(self, session_id: str) -> int:
        """What masking frees in the session's next input: as the last pre-flight found it
        (chunks only grow until the context is rewritten), else from the stored rows."""
        freed = self.masked_tokens.get(session_id)
        if freed is None:
            rows = await self.store.context_rows(session_id)
            masking = RowMasking(self.policy.masking, self.policy, self.estimator)
            freed = masking.view(session_id, rows).report.tokens_freed
        return freed

    def truncate_item(
        self, item: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """Write-time truncation (the store's `Truncation`): the item to store and the
        original to archive, or None when the item is stored as it is."""
        cut = truncate_tool_output(item, self.policy.truncation, self.estimator)
        return None if cut is None else (cut.item, cut.original)

    def items_truncated(self, session_id: str) -> None:
        """A batch with truncated outputs was stored: a caller still holds the full ones."""
        self._rewritten(session_id)

    async def append(
        self,
        session_id: str,
        items: Iterable[Mapping[str, Any]],
        *,
        token: str | None = None,
        agent: str | None = None,
    ) -> list[int]:
        """`SessionStore.append` with write-time truncation (originals archived in the same
        transaction): `token` is the batch's idempotency token, `agent` the agent that
        produced the items. Items are read once (a generator works) and checked once."""
        return await self.store.append(
            session_id, item_list(items), token=token, agent=agent, truncation=self
        )

    # ------------------------------------- the message-list API (docs/COMPACTION.md)

    async def preflight(
        self,
        session_id: str,
        messages: Sequence[Any],
        *,
        instructions: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        model: str | None = None,
        provider: str = "openai",
    ) -> list[dict[str, Any]]:
        """Estimate, decide and (if triggered) compact; return the messages to send.

        The session's rows mirror the list you pass: the stored context is a prefix
        of it (new messages are appended) or it is replaced (a clear marker, then
        the list). Keep the returned list and append to it. With `model` (the model the
        messages go to, at `provider`), a provider's compaction item it cannot read is
        replaced by a readable summary (`ensure_readable`).
        """
        await self._mirror(session_id, messages)
        await self.before_model_call(session_id, instructions=instructions, tools=tools or ())
        if model is not None:
            await self.ensure_readable(session_id, model=model, provider=provider)
        return await self.store.load_context(session_id)

    async def before_model_call(
        self,
        session_id: str,
        *,
        unsaved_tokens: int = 0,
        instructions: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        masked: MaskReport | None = None,
    ) -> bool:
        """The pre-flight every adapter runs before a model call; True if it compacted.

        The estimate is the stored context's running total (O(1)) plus what the caller
        holds unsaved, the instructions and the tool schemas; the decision is recorded
        (idle ones too unless `record_idle_decisions` is off) and a triggered one compacts
        with room for what the call adds. After True, reload the stored context. `masked`
        is what masking takes out of the input sent (the decision counts it, and its
        `compact.masked` event is stored with the estimate).
        """
        decide = self.preflight_decision(
            session_id, unsaved_tokens=unsaved_tokens, instructions=instructions, tools=tools
        )
        if masked is not None:
            decide = replace(decide, masked=masked)
            self.masked_tokens[session_id] = masked.tokens_freed
        stored_tokens = await self.store.context_tokens(session_id)
        decision = decide.decision(stored_tokens)
        if decision.triggered or self.config.record_idle_decisions:
            await self.store.record_events(decide.events(stored_tokens, decision))
        if not decision.triggered:
            self._prepare_if_due(session_id, decision.t_est, decide.extra_tokens)
            return False
        outcome = await self.compact(
            session_id,
            trigger=decision.reason,
            note="preflight",
            extra_tokens=decide.extra_tokens,
        )
        return outcome.compacted

    def preflight_decision(
        self,
        session_id: str,
        *,
        unsaved_tokens: int = 0,
        instructions: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> PreflightDecision:
        """The pre-flight's decision as a function of the stored context's token total, so
        the store can take it inside the model call's own record from the total it reads
        there (`record_model_call(decide=...)`): no separate read, and a row another
        process appended meanwhile is counted."""
        system, schema = self.fixed_costs.cost(self.estimator, instructions, list(tools))
        return PreflightDecision(
            self, session_id, unsaved_tokens, system, schema, self.config.record_idle_decisions
        )

    def prepare_if_due(self, decided: PreflightDecision) -> None:
        """After an idle pre-flight decision: start a background preparation if the estimate
        it was taken from passed the policy's `prepare_at` (no I/O when it did not)."""
        if decided.last_estimate is not None:
            self._prepare_if_due(decided.session_id, decided.last_estimate, decided.extra_tokens)

    def _prepare_if_due(self, session_id: str, t_est: int, extra_tokens: int) -> None:
        if self.background is not None:
            self.background.consider(session_id, t_est, extra_tokens)

    async def ensure_readable(
        self, session_id: str, *, model: str, provider: str = "openai"
    ) -> bool:
        """Before a call to `provider`'s `model`: a provider's marker bound to another model or
        provider is replaced by a readable summary of its archived originals, with a
        `compact.provider_item_unusable` event (docs/COMPACTION.md). True if it rebuilt: then
        reload the stored context. One indexed read when nothing is bound elsewhere."""
        binding = await self.store.read_snapshot(tx_binding, session_id)
        if binding is None or binding.readable_by(provider, model):
            return False
        rebind = self._rebind()
        async with self._locks(session_id).hold(self.config.lock_timeout_s):
            for _ in range(_CAS_ATTEMPTS):
                rebuilt = await rebind.once(session_id, provider, model)
                if rebuilt is not None:
                    break
            else:
                raise CompactionError(
                    CompactionErrorReason.CONFLICT,
                    f"session {session_id!r} changed during {_CAS_ATTEMPTS} attempts to replace "
                    "its provider marker; nothing was changed. Retry when it is idle.",
                )
        if rebuilt.result is None or rebuilt.write is None:
            return False
        await self._committed(rebuilt.write, rebuilt.result, self.policy.strategy, rebuilt.summary)
        return True

    def _rebind(self) -> Rebind:
        window = self.config.max_context_tokens
        return Rebind(self.store, self.estimator, self.policy, window, self.decision_event)

    async def manual_compact(
        self, session_id: str, messages: Sequence[Any], note: str = "manual"
    ) -> list[dict[str, Any]]:
        """Compact now regardless of usage (the `/compact` command); return the new messages."""
        await self._mirror(session_id, messages)
        await self.compact(session_id, trigger="manual", note=note)
        return await self.store.load_context(session_id)

    async def _mirror(self, session_id: str, messages: Sequence[Any]) -> None:
        items = [as_item(message) for message in messages]
        stored = await self.store.load_context(session_id)
        if items[: len(stored)] == stored:
            new = items[len(stored) :]
        else:
            await self.store.clear(session_id)
            new = items
        if new:
            await self.append(session_id, new)

    # ------------------------------------------------------------- decisions

    def decide(
        self, t_est: int, forced: Literal["manual", "overflow"] | None = None
    ) -> TriggerDecision:
        """The trigger decision for an estimate under this manager's policy and window."""
        return decide(t_est, self.config.max_context_tokens, self.policy, forced=forced)

    def decision_event(self, session_id: str, decision: TriggerDecision, **extra: Any) -> Event:
        """`compact.trigger_decision` with the fields docs/OBSERVABILITY.md lists."""
        fields: dict[str, Any] = {
            "model": self.config.model,
            "triggered": decision.triggered,
            "reason": decision.reason,
            "t_est": decision.t_est,
            "max": decision.max_tokens,
            "budget": decision.budget,
            "usage_pct": round(decision.usage_pct, 4),
            "policy": {
                "trigger_pct": self.policy.trigger_pct,
                "hard_cap_buffer": self.policy.hard_cap_buffer,
                "strategy": self.policy.strategy,
            },
            **extra,
        }
        return Event("compact.trigger_decision", session_id, fields=fields)

    def estimate_event(self, session_id: str, t_est: int, breakdown: Mapping[str, int]) -> Event:
        """`compact.token_estimate` with the breakdown the spec asks for."""
        max_tokens = self.config.max_context_tokens
        fields = {
            "model": self.config.model,
            "t_est": t_est,
            "max": max_tokens,
            "usage_pct": round(t_est / max_tokens, 4),
            "breakdown": dict(breakdown),
            "estimator": self.estimator.name,
        }
        return Event("compact.token_estimate", session_id, fields=fields)

    # ------------------------------------------------------------ compaction

    async def compact(
        self,
        session_id: str,
        *,
        trigger: Trigger = "manual",
        note: str | None = None,
        strategy: str | None = None,
        extra_tokens: int = 0,
        dry_run: bool = False,
    ) -> CompactionOutcome:
        """Compact the session's active context now (it is persisted unless `dry_run`).

        `extra_tokens` counts what the next model call adds beyond the stored
        context (instructions, tool schemas, unsaved input) so the result fits.
        """
        if strategy is not None:  # an unknown name fails now, not when there is work
            resolve_strategy(strategy, self.policy.custom_strategies)
        async with self._locks(session_id).hold(self.config.lock_timeout_s):
            # Only a big context freezes what survives out of the collector's walks while it
            # compacts (_collector.py): small ones never hold the process's cycles back.
            info = await self.store.session_info(session_id)
            big = info is not None and info.context_items > BIG_ROWS
            for attempt in range(_CAS_ATTEMPTS):
                with snapshot_frozen() if big else contextlib.nullcontext():
                    outcome = await self._compact_once(
                        session_id, trigger, note, strategy, extra_tokens, dry_run, attempt > 0
                    )
                if outcome is not None:
                    return outcome
            error = Event(
                "compact.error",
                session_id,
                severity="error",
                fields={
                    "error_type": "conflict",
                    "message": "the session kept changing under the compaction (another "
                    "process compacting it, pops or clears)",
                    "fallback": "skipped",
                },
            )
            await self.store.record_events([error])
            raise CompactionError(
                CompactionErrorReason.CONFLICT,
                f"session {session_id!r} changed during {_CAS_ATTEMPTS} compaction attempts "
                "(another process compacted it, or a pop or clear); nothing was changed. Retry "
                "when it is idle.",
            )

    async def _compact_once(
        self,
        session_id: str,
        trigger: Trigger,
        note: str | None,
        strategy: str | None,
        extra_tokens: int,
        dry_run: bool,
        retried: bool = False,
    ) -> CompactionOutcome | None:
        started = time.perf_counter()
        rows = await self.store.context_rows(session_id)
        # Over a big context, grouping and fitting are hundreds of ms of Python: not on the
        # loop's thread (issue #34).
        big = len(rows) > BIG_ROWS
        if big:
            freeze_more()  # the rows: no collection walks them again (_collector.py)
        tokens_before, snapshot_start, planned = await off_loop_if(
            big, self._planned, session_id, rows, extra_tokens
        )
        if big:
            freeze_more()  # the units
        forced: Literal["manual", "overflow"] | None = (
            trigger if trigger in ("manual", "overflow") else None
        )
        decision = self.decide(tokens_before, forced)
        if retried and forced is None and not decision.triggered:
            # The lock is per process: another one compacted the session while this attempt
            # summarized, and it is no longer over the trigger. Nothing is left to do.
            return skipped(
                session_id,
                decision,
                tokens_before,
                "another writer compacted it meanwhile: no longer over the trigger",
            )
        if isinstance(planned, CompactionError):
            await self._record_error(session_id, "InsufficientBudget", str(planned), "raised")
            raise planned
        plan, summary_budget = planned
        if not plan.remainder:
            return skipped(
                session_id,
                decision,
                tokens_before,
                "nothing to summarize: every item is pinned or recent",
                plan,
            )
        if dry_run:
            estimate = plan.pinned_tokens + plan.kept_tokens + summary_budget + extra_tokens
            return CompactionOutcome(
                session_id, decision, False, tokens_before, estimate, plan=plan
            )
        self._guard_loop(session_id)
        prepared = None
        if self.background is not None:
            prepared = await self.background.claim(session_id, snapshot_start, plan, extra_tokens)
        if prepared is not None:  # summarized before the trigger, still the same prefix
            plan = prepared.plan
        redact = self.store.redactor.value if self.store.redact_archives else None
        # Encoded while the summarizer runs (zlib and SHA-256 release the GIL), off the lock:
        # handed to the thread now, not by a task that would start only once this coroutine
        # first yields (a summarizer that never waits would leave all of it for the end), in
        # this context, as `to_thread` would (a redaction hook may read context variables).
        archive = asyncio.get_running_loop().run_in_executor(
            None, contextvars.copy_context().run, replaced_archive, plan, redact
        )
        try:
            if prepared is None:
                prior = await self.prior_state(session_id, plan)
                summary = await self.summary_for(
                    session_id, plan, summary_budget, strategy, prior=prior
                )
            else:  # its prior state was read when it was prepared
                prior = PriorState()
                summary = Summary(
                    prepared.text, prepared.strategy, None, prepared.events, prepared.opaque
                )
            replaced, archive_body = await archive
        finally:
            archive.cancel()  # a no-op once it finished; never left unawaited on an error
        # Counting the layers and listing what is kept walk every unit: off the loop too.
        write = await off_loop_if(
            big,
            self._write,
            session_id,
            snapshot_start,
            rows[-1].seq,
            plan,
            summary,
            prior,
            replaced,
            archive_body,
            decision,
            note,
            tokens_before,
            started,
            prepared,
        )
        result = await self.store.write_transaction(
            tx_commit_releasing,
            write,
            self.estimator.count_item,
            self.store.session_keys,
            None if prepared is None else prepared.holder,
        )
        if result is None:
            return None
        await self._committed(write, result, summary.strategy, summary.text)
        tokens_after = result.tokens_after + extra_tokens
        self._after(session_id, tokens_after)
        return CompactionOutcome(
            session_id,
            decision,
            compacted=True,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            plan=plan,
            summary=summary.text,
            strategy=summary.strategy,
            fallback=summary.fallback,
            result=result,
        )

    def _planned(
        self, session_id: str, rows: Sequence[StoredRow], extra_tokens: int
    ) -> tuple[int, int, tuple[Partition, int] | CompactionError]:
        """(tokens before, the snapshot's context start, the plan and the summary's allowance
        or the InsufficientBudget error) of a context's rows: synchronous, for a worker
        thread when the context is big."""
        visible = visible_rows(rows)
        tokens_before = sum(row.tokens for row in visible) + extra_tokens
        try:
            planned: tuple[Partition, int] | CompactionError = self.plan(visible, extra_tokens)
        except CompactionError as exc:
            planned = exc
        start = own_start(session_id, rows) if rows else 0  # no rows: nothing to compact
        return tokens_before, start, planned

    def _write(
        self,
        session_id: str,
        snapshot_start: int,
        snapshot_last: int,
        plan: Partition,
        summary: Summary,
        prior: PriorState,
        replaced: Sequence[StoredRow],
        archive_body: Any,
        decision: TriggerDecision,
        note: str | None,
        tokens_before: int,
        started: float,
        prepared: Any,
    ) -> CompactionWrite:
        """What the commit writes (synchronous: a worker thread's when the context is big)."""
        layers = Layers.of(plan)
        # An opaque marker (new, or the prior one a prune-only compaction keeps) is bound.
        bound = summary.opaque or (prior.binding if summary.text is None else None)
        return CompactionWrite(
            session_id=session_id,
            snapshot_start=snapshot_start,
            snapshot_last=snapshot_last,
            pinned=[row for unit in plan.pinned for row in unit.rows],
            summary_text=summary.text,
            summary_role=self.policy.summary_role,
            prior_summary=plan.prior_summary.rows[0] if plan.prior_summary else None,
            kept=kept_rows(plan),
            replaced=replaced,
            archive=archive_body,
            record={
                "trigger": decision.reason,
                "strategy": summary.strategy,
                "status": "summarized" if summary.text is not None else "pruned_only",
                "fallback": summary.fallback,
                "note": note,
                "model": bound.model if bound else self.config.model,
                "provider": bound.provider if bound else None,
                "summarizer": self.summarizer.name if prepared is None else prepared.summarizer,
                "kept": kept_record(plan),
                "tokens_before": tokens_before,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            },
            events=self.store.redacted(
                [
                    self.decision_event(
                        session_id,
                        decision,
                        note=note,
                        kept={
                            "pinned": layers.pinned,
                            "recent_turns": layers.recent_turns,
                            "tool_pairs": layers.tool_pairs,
                        },
                        pruned_count=layers.pruned_count,
                    ),
                    *summary.events,
                    *committed_events(
                        session_id,
                        plan,
                        layers,
                        summary,
                        tokens_before,
                        summary_tokens=(
                            0
                            if summary.text is None
                            else marker_tokens(self.estimator, summary.text, summary.opaque)
                        ),
                        budget=self.policy.budget(self.config.max_context_tokens),
                        target=self.policy.target(self.config.max_context_tokens),
                    ),
                ]
            ),
            provider_item=summary.opaque,
        )

    async def _committed(
        self, write: CompactionWrite, result: CompactionResult, strategy: str, summary: str | None
    ) -> None:
        """After a compaction committed: export its events, tell the observers the stored
        context was rewritten, copy it to the sinks."""
        self.store.publish(result.events)
        self._rewritten(write.session_id)
        for observer in self._observers:
            observer.compacted(write.session_id, result, strategy)
        await self._deliver(write, result, summary)

    async def _deliver(
        self, write: CompactionWrite, result: CompactionResult, summary: str | None
    ) -> None:
        """Copy the compaction to each configured sink; a failing sink is recorded, never fatal
        (the compaction and its SQL archive are already committed)."""
        if not self.config.sinks:
            return
        delivery = ArchiveDelivery(
            session_id=write.session_id,
            step=result.version,
            transcript=[archived_record(row) for row in write.replaced],
            summary=None
            if summary is None
            else {
                "version": result.version,
                "text": summary,
                "compaction_id": result.compaction_id,
            },
            events=result.events,
        )
        produced: list[Event] = []
        for sink in self.config.sinks:
            try:
                produced += await asyncio.to_thread(sink.deliver, delivery)
            except Exception as exc:  # a sink outage must not undo a committed compaction
                produced.append(
                    self.error_event(write.session_id, exc, f"skipped sink {sink.name}")
                )
        await self.store.record_events(produced)

    def _guard_loop(self, session_id: str) -> None:
        """Refuse a compaction after too many in a row that did not get under the trigger."""
        if self._consecutive.get(session_id, 0) >= self.policy.max_consecutive_compactions:
            self._consecutive[session_id] = 0
            raise CompactionError(
                CompactionErrorReason.COMPACTION_LOOP,
                f"{self.policy.max_consecutive_compactions} consecutive compactions of "
                f"{session_id!r} left the context above the trigger threshold; refusing to "
                "loop. Lower keep_recent_turns/keep_tool_io_pairs, protect less, or raise "
                "max_context_tokens.",
            )

    def _after(self, session_id: str, tokens_after: int) -> None:
        threshold = self.policy.threshold(self.config.max_context_tokens)
        if tokens_after >= threshold:
            self._consecutive[session_id] = self._consecutive.get(session_id, 0) + 1
        else:
            self._consecutive.pop(session_id, None)
        ceiling = self.policy.ceiling(self.config.max_context_tokens)
        if tokens_after > ceiling:
            raise CompactionError(
                CompactionErrorReason.INSUFFICIENT_BUDGET,
                f"after compacting, {session_id!r} still needs {tokens_after} tokens but the "
                f"hard limit is {ceiling}; use a model with a larger window or keep less.",
            )

    # ---------------------------------------------------------- summarizing

    def plan(self, visible: Sequence[StoredRow], extra_tokens: int) -> tuple[Partition, int]:
        """The partition of a context's visible rows that fits the target with room for
        `extra_tokens`, and the summary's allowance (raises InsufficientBudget)."""
        max_tokens = self.config.max_context_tokens
        return fit(
            build_units(visible, self.policy),
            self.policy,
            target=self.policy.target(max_tokens),
            ceiling=self.policy.ceiling(max_tokens),
            fixed_tokens=extra_tokens,
            estimator=self.estimator,
        )

    async def _record_error(self, session_id: str, kind: str, message: str, fallback: str) -> None:
        await self.store.record_events(
            [
                Event(
                    "compact.error",
                    session_id,
                    severity="error",
                    fields={
                        "status": "error",
                        "error_type": kind,
                        "message": message,
                        "fallback": fallback,
                    },
                )
            ]
        )
