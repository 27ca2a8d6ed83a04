"""The pre-flight's trigger decision as a function of the stored context's token total.

The estimate of a model call is the stored total plus what the caller adds (unsaved
items, instructions, tool schemas). Kept as a function of the stored total, the decision
can be taken inside the transaction that records the call, from the total it reads there:
no separate read before it, and rows another process appended meanwhile are counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..._events import Event
from .._policy import TriggerDecision
from ._masking import MaskReport


class Decider(Protocol):
    """What of the manager a decision uses (its policy, window and event shapes)."""

    def decide(self, t_est: int) -> TriggerDecision: ...

    def estimate_event(
        self, session_id: str, t_est: int, breakdown: Mapping[str, int]
    ) -> Event: ...

    def decision_event(self, session_id: str, decision: TriggerDecision, **extra: Any) -> Event: ...


@dataclass(frozen=True, slots=True)
class PreflightDecision:
    """One model call's decision, waiting for the stored total."""

    manager: Decider
    session_id: str
    unsaved_tokens: int
    system_tokens: int
    schema_tokens: int
    record_idle: bool  # store below-threshold decisions too
    masked: MaskReport = field(default_factory=MaskReport)  # what masking took out of the input
    # The last estimate decided from (a decision may be taken again, on another thread):
    # what the background preparation compares with its threshold after the call.
    _estimates: list[int] = field(default_factory=list, compare=False, repr=False)

    @property
    def extra_tokens(self) -> int:
        """What the call adds to the stored context."""
        return self.unsaved_tokens + self.system_tokens + self.schema_tokens

    @property
    def last_estimate(self) -> int | None:
        """The estimate of the last decision taken, None before any."""
        return self._estimates[-1] if self._estimates else None

    def decision(self, stored_tokens: int) -> TriggerDecision:
        """The cascade's decision: summarize only if the masked input is over the trigger."""
        decision = self.manager.decide(stored_tokens + self.extra_tokens - self.masked.tokens_freed)
        self._estimates[:] = [decision.t_est]
        return decision

    def events(self, stored_tokens: int, decision: TriggerDecision) -> list[Event]:
        """The estimate, and for an idle decision the decision (a compaction records its own)."""
        breakdown = {
            "system": self.system_tokens,
            "tools_schema": self.schema_tokens,
            "messages": stored_tokens + self.unsaved_tokens - self.masked.tokens_freed,
        }
        if self.masked.outputs:
            breakdown["masked"] = self.masked.tokens_freed
        estimate = self.manager.estimate_event(self.session_id, decision.t_est, breakdown)
        masked = [self.masked.event(self.session_id)] if self.masked.outputs else []
        if decision.triggered:
            return [*masked, estimate]
        return [*masked, estimate, self.manager.decision_event(self.session_id, decision)]

    def recorded(self, stored_tokens: int) -> list[Event]:
        """The events of a call already sent on an earlier estimate of the total: what the
        decision from the stored one says, even a triggered one (this call did not compact;
        the next pre-flight does)."""
        decision = self.decision(stored_tokens)
        if decision.triggered:
            return self.events(stored_tokens, decision)
        return self._idle_events(stored_tokens, decision)

    def __call__(self, stored_tokens: int) -> list[Event] | None:
        """An idle call's events to store with it (none if idle decisions are not
        recorded), or None when a trigger fires: the session must compact first."""
        decision = self.decision(stored_tokens)
        if decision.triggered:
            return None
        return self._idle_events(stored_tokens, decision)

    def _idle_events(self, stored_tokens: int, decision: TriggerDecision) -> list[Event]:
        """The events an idle decision stores with its call."""
        if self.record_idle:
            return self.events(stored_tokens, decision)
        return [self.masked.event(self.session_id)] if self.masked.new_seqs else []
