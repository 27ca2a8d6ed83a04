"""Replace a provider marker that the next model cannot read with a readable summary.

An opaque compaction item is bound to the provider and model that made it. When the call
about to be made goes to another model (or provider), sending the item would fail or be
ignored, so the originals it replaced are decrypted from the archives, the extractive
summarizer (offline, deterministic) summarizes them with any readable summary before
them, and a new compaction replaces the marker with that summary: one transaction with
the same compare-and-swap as any compaction, the marker itself archived.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .._events import Event
from .._items import text_of
from .._opaque import is_opaque
from .._rows import StoredRow, visible_rows
from .._schema import KIND_SUMMARY, summary_marker
from .._store import SessionStore
from .._store._context_replacement import (
    CompactionResult,
    CompactionWrite,
    encode_replaced,
    own_start,
)
from .._store._context_replacement import tx_commit_compaction as commit
from .._tokens import TokenEstimator
from . import _result_events as result_events
from ._policy import CompactionPolicy, TriggerDecision
from ._summarizers._extractive import ExtractiveSummarizer
from ._summarizers._prompts import resolve_strategy
from ._summarizers._provider_marker import Binding, ReadableState, readable_state, tx_binding
from ._summarizers._summarizer import SummaryRequest

__all__ = ["REBIND_TRIGGER", "Rebind", "Rebuilt"]

# The `compactions.trigger` of a rebuild: the model about to be called changed.
REBIND_TRIGGER: Final = "model_switch"
_MIN_SUMMARY_TOKENS: Final = 256


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """One attempt's outcome: the committed compaction (with what it wrote and the summary,
    for the archive sinks), or None when nothing was left to rebuild (another process did
    it, or the marker is gone)."""

    result: CompactionResult | None
    write: CompactionWrite | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class Rebind:
    """What a rebuild needs from its compaction manager."""

    store: SessionStore
    estimator: TokenEstimator
    policy: CompactionPolicy
    window: int  # max_context_tokens
    decision_event: Callable[..., Event]  # the manager's: (session_id, decision, **fields)

    async def readable_summary(
        self,
        state: ReadableState,
        kept: Sequence[Mapping[str, Any]] = (),
        max_tokens: int | None = None,
    ) -> str:
        """The extractive summary of an opaque marker's originals (and the readable summary
        before them), without any secret the redactor finds in them."""
        strategy = resolve_strategy(self.policy.strategy, self.policy.custom_strategies)
        result = await ExtractiveSummarizer(self.estimator).summarize(
            SummaryRequest(
                items=state.items,
                prior_summary=state.prior_summary,
                strategy=strategy.name,
                instructions=strategy.prompt,
                max_tokens=self.policy.summary_allowance(self.window)
                if max_tokens is None
                else max_tokens,
                keep_keys=self.policy.keep_keys,
                kept=kept,
            )
        )
        sources = [text_of(item) for item in state.items]
        if state.prior_summary:
            sources.append(state.prior_summary)
        redactor = self.store.redactor
        return redactor.scrub(result.text, redactor.secrets_in(sources))

    async def once(self, session_id: str, provider: str, model: str) -> Rebuilt | None:
        """Rebuild if the marker is still bound elsewhere; None: the session moved (retry)."""
        started = time.perf_counter()
        binding = await self.store.read_snapshot(tx_binding, session_id)
        if binding is None or binding.readable_by(provider, model):
            return Rebuilt(None)
        rows = await self.store.context_rows(session_id)
        visible = visible_rows(rows)
        markers = (i for i, row in enumerate(visible) if row.kind == KIND_SUMMARY)
        at = next((i for i in markers if is_opaque(visible[i].item)), None)
        if at is None:
            return Rebuilt(None)
        marker, after = visible[at], visible[at + 1 :]
        state = await readable_state(self.store, session_id, binding.compaction_id)
        # Within the room the rest (and the summary row's own wrapping) leaves below the
        # target, so the next pre-flight does not compact again (down to 256 tokens).
        wrapping = self.estimator.count_item(
            {"role": self.policy.summary_role, "content": summary_marker(0, "")}
        )
        target = self.policy.target(self.window)
        room = target - wrapping - sum(row.tokens for row in visible if row is not marker)
        allowance = self.policy.summary_allowance(self.window)
        text = await self.readable_summary(
            state,
            [row.item for row in after if row.item],
            max(min(allowance, room), _MIN_SUMMARY_TOKENS),
        )
        redact = self.store.redactor.value if self.store.redact_archives else None
        write = CompactionWrite(
            session_id=session_id,
            snapshot_start=own_start(session_id, rows),
            snapshot_last=rows[-1].seq,
            pinned=visible[:at],
            summary_text=text,
            summary_role=self.policy.summary_role,
            prior_summary=None,
            kept=[(row, None) for row in after],
            replaced=[marker],
            archive=await asyncio.to_thread(encode_replaced, [marker], redact),
            record=self._record(binding, provider, model, visible, at, started),
            events=self.store.redacted(
                self._events(session_id, binding, provider, model, state, text, visible, at)
            ),
        )
        result = await self.store.write_transaction(
            commit, write, self.estimator.count_item, self.store.session_keys
        )
        return None if result is None else Rebuilt(result, write, text)

    def _record(
        self,
        binding: Binding,
        provider: str,
        model: str,
        visible: Sequence[StoredRow],
        at: int,
        started: float,
    ) -> dict[str, Any]:
        return {
            "trigger": REBIND_TRIGGER,
            "strategy": self.policy.strategy,
            "status": "summarized",
            "fallback": None,
            "note": _why(binding, provider, model),
            "model": model,
            "summarizer": ExtractiveSummarizer.name,
            "provider": None,
            "kept": {
                "pinned": [row.seq for row in visible[:at]],
                "recent": [row.seq for row in visible[at + 1 :]],
            },
            "tokens_before": sum(row.tokens for row in visible),
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    def _events(
        self,
        session_id: str,
        binding: Binding,
        provider: str,
        model: str,
        state: ReadableState,
        text: str,
        visible: Sequence[StoredRow],
        at: int,
    ) -> list[Event]:
        """The events of every compaction (docs/OBSERVABILITY.md), for one that replaced
        only the marker, and why it did."""
        summary_tokens = self.estimator.count_text(text)
        input_tokens = sum(self.estimator.count_item(item) for item in state.items)
        tokens_before = sum(row.tokens for row in visible)
        budget = self.policy.budget(self.window)
        decision = TriggerDecision(True, REBIND_TRIGGER, tokens_before, self.window, budget)
        return [
            self.decision_event(
                session_id,
                decision,
                note=_why(binding, provider, model),
                kept={"pinned": at, "recent_turns": 0, "tool_pairs": 0},
                pruned_count=1,
            ),
            Event(
                "compact.provider_item_unusable",
                session_id,
                severity="warning",
                fields={
                    "marker_provider": binding.provider,
                    "marker_model": binding.model,
                    "marker_compaction_id": binding.compaction_id,
                    "provider": provider,
                    "model": model,
                    "rebuilt_from_items": len(state.items),
                    "fallback": "extractive",
                },
            ),
            result_events.summary_created(
                session_id,
                strategy=self.policy.strategy,
                input_messages=len(state.items),
                summary_tokens=summary_tokens,
                input_tokens=input_tokens,
                summary=text,
            ),
            result_events.pruned_messages(
                session_id,
                pruned_count=1,
                pinned=at,
                summary=1,
                recent_turns=0,
                tool_pairs=0,
                user_messages=0,
                aborted_markers=0,
                tokens_before=tokens_before,
            ),
            result_events.policy_applied(
                session_id,
                keep_recent_turns=self.policy.keep_recent_turns,
                keep_tool_io_pairs=self.policy.keep_tool_io_pairs,
                recent_user_token_budget=self.policy.recent_user_token_budget,
                reductions=[],
                budget=budget,
                target=self.policy.target(self.window),
            ),
            result_events.archival(session_id, 1),
        ]


def _why(binding: Binding, provider: str, model: str) -> str:
    """The rebuild's note, on its compaction row and its decision event."""
    return f"{binding.provider} item bound to {binding.model}; next call: {provider} {model}"
