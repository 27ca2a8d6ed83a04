"""Summarizing a compaction's remainder, with the documented fallbacks: too long -> half
max_tokens (twice), refused -> `brief`, input too large -> drop the oldest units and retry,
any other failure -> prune-only; the summary is scrubbed of the secrets found in its sources.

A mixin of `CompactionManager` (the summary half of its work); the attributes it uses are
declared on it and set by the manager.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from .._errors import (
    SummarizerError,
    SummarizerInputTooLargeError,
    SummaryRefusedError,
    SummaryTooLongError,
)
from .._events import Event
from .._items import text_of
from .._loops import BIG_ROWS, off_loop_if
from .._opaque import is_opaque
from .._schema import SUMMARY_START
from .._store import SessionStore
from .._store._context_replacement import (
    ProviderItem,
)
from .._tokens import TokenEstimator
from ._partition import Partition, Unit
from ._policy import CompactionPolicy
from ._rebind import Rebind
from ._summarizers._factsheet import Carried, carry_forward
from ._summarizers._prompts import resolve_strategy
from ._summarizers._provider_marker import Binding, readable_state, tx_binding
from ._summarizers._summarizer import Summarizer, SummaryRequest, SummaryResult

_TOO_LONG_RETRIES: Final = 2


_MAX_TRIMS: Final = 8


PRUNE_ONLY: Final = "pruning-only"


class Summarizing:
    """The summary half of `CompactionManager` (see the module's docstring)."""

    # Set by CompactionManager.__init__.
    policy: CompactionPolicy
    store: SessionStore
    estimator: TokenEstimator
    summarizer: Summarizer
    _rebind: Callable[[], Rebind]

    async def prior_state(self, session_id: str, plan: Partition) -> PriorState:
        """The previous marker for the summarizer: its text; or, when it is a provider's item,
        the item itself for a summarizer that can read it, else a readable summary rebuilt
        from its archived originals."""
        unit = plan.prior_summary
        if unit is None or not is_opaque(unit.items[0]):
            return PriorState(text=prior_text(unit))
        binding = await self.store.read_snapshot(tx_binding, session_id)
        if binding is None:  # not one of our markers: nothing to read it with
            return PriorState()
        can_read = getattr(self.summarizer, "can_read", None)
        if callable(can_read) and can_read(binding.provider, binding.model):
            return PriorState(item=unit.items[0], binding=binding)
        state = await readable_state(self.store, session_id, binding.compaction_id)
        return PriorState(text=await self._rebind().readable_summary(state), binding=binding)

    async def summary_for(
        self,
        session_id: str,
        plan: Partition,
        max_tokens: int,
        strategy: str | None = None,
        *,
        prior: PriorState | None = None,
    ) -> Summary:
        """The plan's summary with the fallbacks applied, scrubbed of the secrets found in
        what it summarizes (the foreground compaction and a background preparation); `prior`
        is the previous marker as the summarizer gets it (read here when not given)."""
        strategy_name = strategy or self.policy.strategy
        if prior is None:
            prior = await self.prior_state(session_id, plan)
        summary = await self._summarize(session_id, plan, strategy_name, max_tokens, prior)
        # The sources' texts are read from every summarized item: off the loop when many.
        return await off_loop_if(len(plan.remainder) > BIG_ROWS, self._scrubbed, plan, summary)

    async def _summarize(
        self,
        session_id: str,
        plan: Partition,
        strategy_name: str,
        max_tokens: int,
        prior_state: PriorState,
    ) -> Summary:
        """A summary, or None (prune-only) after the documented fallbacks, with their events."""
        events: list[Event] = []
        strategy = resolve_strategy(strategy_name, self.policy.custom_strategies)
        prior = prior_state.text
        units = self._within_input_window(session_id, list(plan.remainder), prior, events)
        kept = [item for unit in [*plan.pinned, *plan.kept] for item in unit.items]
        too_long = 0
        trims = 0
        while True:
            big = len(units) > BIG_ROWS
            request = SummaryRequest(
                items=await off_loop_if(big, _items_of, units),
                prior_summary=prior,
                strategy=strategy.name,
                instructions=strategy.prompt,
                max_tokens=max_tokens,
                keep_keys=self.policy.keep_keys,
                kept=kept,
                prior_item=prior_state.item,
            )
            try:
                result = await self.summarizer.summarize(request)
                if result.item is not None:  # opaque: nothing to measure or carry forward
                    return Summary(
                        result.text, strategy.name, None, events, self._provider_item(result)
                    )
                if self.estimator.count_text(result.text) > max_tokens:
                    raise SummaryTooLongError("summary exceeds max_tokens")
                carried = await off_loop_if(
                    big,
                    carry_forward,
                    prior,
                    result.text,
                    self.estimator.count_text,
                    max_tokens,
                    [*request.items, *request.kept],
                )
                if carried.checked:
                    events.append(carried_event(session_id, carried))
                return Summary(carried.text, strategy.name, None, events)
            except SummaryTooLongError as exc:
                if too_long < _TOO_LONG_RETRIES:
                    too_long += 1
                    max_tokens = max(max_tokens // 2, 16)
                    events.append(
                        self.error_event(session_id, exc, f"retry max_tokens={max_tokens}")
                    )
                    continue
                failure: Exception = exc
            except SummaryRefusedError as exc:
                if strategy.name != "brief":
                    strategy = resolve_strategy("brief", self.policy.custom_strategies)
                    events.append(self.error_event(session_id, exc, "retry strategy=brief"))
                    continue
                failure = exc
            except SummarizerInputTooLargeError as exc:
                if trims < _MAX_TRIMS and len(units) > 1:
                    trims += 1
                    units = units[len(units) // 2 :]  # drop the oldest half, whole units
                    events.append(
                        self.error_event(session_id, exc, f"retry trimmed to {len(units)} units")
                    )
                    continue
                failure = exc
            except SummarizerError as exc:
                failure = exc
            except Exception as exc:  # a broken summarizer must never break the agent
                failure = exc
            events.append(self.error_event(session_id, failure, PRUNE_ONLY))
            return Summary(None, strategy.name, PRUNE_ONLY, events)

    def _provider_item(self, result: SummaryResult) -> ProviderItem:
        """The marker for a provider's item, counted as the tokens the provider reported for
        producing it, else as the estimator reads the item (its ciphertext: an overestimate)."""
        assert result.item is not None
        item = dict(result.item)
        tokens = result.output_tokens or self.estimator.count_item(item)
        return ProviderItem(item, tokens, result.provider or self.summarizer.name, result.model)

    def _scrubbed(self, plan: Partition, summary: Summary) -> Summary:
        """The summary without any secret the redactor finds in what it summarized.

        A summary can carry a secret without the context that made it recognizable
        (`postgres://u:PASSWORD@db` summarized as `PASSWORD`), so the exact values found
        in the sources are removed, before the summary is stored, not only from events.
        """
        if summary.text is None or summary.opaque is not None:
            return summary
        sources = [text_of(item) for unit in plan.remainder for item in unit.items]
        if plan.prior_summary is not None:
            sources.append(text_of(plan.prior_summary.items[0]))
        redactor = self.store.redactor
        text = redactor.scrub(summary.text, redactor.secrets_in(sources))
        return summary if text == summary.text else replace(summary, text=text)

    def _within_input_window(
        self, session_id: str, units: list[Unit], prior: str | None, events: list[Event]
    ) -> list[Unit]:
        """The newest whole units that fit the summarizer's `input_window` (with the prior
        summary), so a small-window summarizer is not sent what it must refuse. The oldest
        units are dropped first; at least one is always sent."""
        window = self.summarizer.input_window
        if window is None:
            return units
        budget = window - (self.estimator.count_text(prior) if prior else 0)
        kept: list[Unit] = []
        used = 0
        for unit in reversed(units):
            if kept and used + unit.tokens > budget:
                break
            kept.append(unit)
            used += unit.tokens
        if len(kept) < len(units):
            events.append(
                Event(
                    "compact.summarizer_input_trimmed",
                    session_id,
                    severity="warning",
                    fields={
                        "input_window": window,
                        "units_sent": len(kept),
                        "units_dropped": len(units) - len(kept),
                        "summarizer": self.summarizer.name,
                    },
                )
            )
        return kept[::-1]

    def error_event(self, session_id: str, exc: Exception, fallback: str) -> Event:
        kind = exc.kind if isinstance(exc, SummarizerError) else type(exc).__name__
        return Event(
            "compact.error",
            session_id,
            severity="error" if fallback == PRUNE_ONLY else "warning",
            fields={
                "status": "error",
                "error_type": kind,
                "message": safe_message(exc),
                "fallback": fallback,
                "summarizer": self.summarizer.name,
            },
        )


@dataclass(frozen=True, slots=True)
class Summary:
    text: str | None
    strategy: str
    fallback: str | None
    events: list[Event]
    opaque: ProviderItem | None = None  # a provider's compaction item: the marker


@dataclass(frozen=True, slots=True)
class PriorState:
    """The previous marker as the summarizer gets it (see `prior_state`)."""

    text: str | None = None
    item: Mapping[str, Any] | None = None  # opaque, for a summarizer that can read it
    binding: Binding | None = None  # of an opaque marker


def carried_event(session_id: str, carried: Carried) -> Event:
    """`compact.facts_carried`: how many standing facts the new summary had to keep, which
    ones the summarizer dropped and were put back, which the conversation superseded (not
    put back), and how many did not fit."""
    message = (
        f"{len(carried.left_out)} standing fact(s) did not fit the summary's allowance and "
        "were left out of it (they stay in the archived originals)"
        if carried.left_out
        else f"{carried.checked} standing fact(s) of the previous summary checked in the new one"
    )
    if carried.reinserted:
        message += f"; {len(carried.reinserted)} the summarizer dropped were put back"
    if carried.superseded:
        message += f"; {len(carried.superseded)} the conversation superseded were not"
    return Event(
        "compact.facts_carried",
        session_id,
        severity="warning" if carried.left_out else "info",
        fields={
            "message": message,
            "checked": carried.checked,
            "reinserted": len(carried.reinserted),
            "reinserted_facts": [fact.line for fact in carried.reinserted],
            "left_out": len(carried.left_out),
            "left_out_kinds": sorted({fact.kind for fact in carried.left_out}),
            "superseded": len(carried.superseded),
            "superseded_facts": [fact.line for fact in carried.superseded],
        },
    )


def prior_text(unit: Unit | None) -> str | None:
    """The previous summary without its marker line: the state the new summary updates."""
    if unit is None:
        return None
    text = text_of(unit.items[0])
    first, _, rest = text.partition("\n")
    return rest if first.startswith(SUMMARY_START) else text


def safe_message(exc: BaseException) -> str:
    """An exception's message, bounded; summarizer errors never carry secrets or content."""
    return f"{type(exc).__name__}: {exc}"[:300]


def _items_of(units: list[Unit]) -> list[dict[str, Any]]:
    """The units' items, in order (a worker thread's work for 100,000 of them)."""
    return [item for unit in units for item in unit.items]
