"""CompactionPolicy and the trigger decision.

Defaults: docs/COMPACTION.md, "Policy reference". Budget = max_context_tokens - hard_cap_buffer; the
buffer is reserved for the next user input and tool responses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._background_policy import BackgroundPolicy
from ._masking_policy import MaskingPolicy
from ._truncate import TruncationPolicy


class CompactionPolicy(BaseModel):
    """What triggers compaction, what it keeps, and how it summarizes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trigger_pct: float = Field(0.85, ge=0.0, le=1.0)
    hard_cap_buffer: int = Field(1500, ge=0)
    # Dual threshold: compact at the soft limit; after compacting, anything still
    # above the hard limit is an error (the budget is the hard limit when unset).
    soft_limit_tokens: int | None = Field(None, gt=0)
    hard_limit_tokens: int | None = Field(None, gt=0)
    keep_recent_turns: int = Field(6, ge=0)
    keep_tool_io_pairs: int = Field(4, ge=0)
    roles_never_prune: tuple[str, ...] = ("system", "developer")
    protected_flag: str = "protected"
    protected_tools: tuple[str, ...] = ()
    recent_user_token_budget: int = Field(20_000, ge=0)
    strategy: str = "task_state"
    custom_strategies: dict[str, str] = Field(default_factory=dict)
    # Facts every summary carries verbatim, whatever the summarizer picks (a project's
    # name, a standing constraint); `Summarizer.summarize` receives them as `keep_keys`.
    keep_keys: tuple[str, ...] = ()
    # None scales the summary's allowance with the window (see summary_allowance).
    summary_max_tokens: int | None = Field(None, ge=16)
    summary_role: Literal["assistant", "user"] = "assistant"
    max_consecutive_compactions: int = Field(3, ge=1)
    truncation: TruncationPolicy = Field(default_factory=TruncationPolicy)
    background: BackgroundPolicy = Field(default_factory=BackgroundPolicy)
    masking: MaskingPolicy = Field(default_factory=MaskingPolicy)  # a view, before summaries

    @model_validator(mode="after")
    def _limits_are_ordered(self) -> CompactionPolicy:
        soft, hard = self.soft_limit_tokens, self.hard_limit_tokens
        if soft is not None and hard is not None and soft > hard:
            raise ValueError(
                f"soft_limit_tokens ({soft}) must not exceed hard_limit_tokens ({hard})"
            )
        return self

    def summary_allowance(self, max_context_tokens: int) -> int:
        """Tokens the summary may use: `summary_max_tokens`, or 3% of the (usable) window,
        between 2,048 and 16,384. A fixed 2,048 starves a 1M-token session's summary."""
        if self.summary_max_tokens is not None:
            return self.summary_max_tokens
        return min(max(math.ceil(max_context_tokens * 0.03), 2048), 16_384)

    def budget(self, max_context_tokens: int) -> int:
        """Tokens the context may use: the window minus the reserved buffer."""
        return max(max_context_tokens - self.hard_cap_buffer, 0)

    def threshold(self, max_context_tokens: int) -> int:
        """The smallest estimate that triggers automatic compaction."""
        limits = [
            math.ceil(self.trigger_pct * max_context_tokens),
            self.budget(max_context_tokens) + 1,
        ]
        if self.soft_limit_tokens is not None:
            limits.append(self.soft_limit_tokens)
        return min(limits)

    def prepare_threshold(self, max_context_tokens: int) -> int:
        """The smallest estimate at which background compaction prepares a summary."""
        return math.ceil(self.background.prepare_at * self.threshold(max_context_tokens))

    def ceiling(self, max_context_tokens: int) -> int:
        """After compacting, a context above this is an error (hard limit or budget)."""
        budget = self.budget(max_context_tokens)
        return budget if self.hard_limit_tokens is None else min(budget, self.hard_limit_tokens)

    def target(self, max_context_tokens: int) -> int:
        """What compaction aims for: under the trigger, so the next call does not compact again."""
        ceiling = self.ceiling(max_context_tokens)
        below_trigger = self.threshold(max_context_tokens) - 1
        return ceiling if below_trigger <= 0 else min(ceiling, below_trigger)


# "model_switch": a provider's marker replaced because the next call cannot read it.
Trigger = Literal[
    "threshold", "tokens_left", "soft_limit", "manual", "overflow", "model_switch", "none"
]


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    """Whether to compact now, and why (the `compact.trigger_decision` event)."""

    triggered: bool
    reason: Trigger
    t_est: int
    max_tokens: int
    budget: int

    @property
    def usage_pct(self) -> float:
        """Estimated share of the window in use."""
        return self.t_est / self.max_tokens if self.max_tokens else 1.0


def decide(
    t_est: int,
    max_context_tokens: int,
    policy: CompactionPolicy,
    *,
    forced: Literal["manual", "overflow"] | None = None,
) -> TriggerDecision:
    """Apply every trigger of the policy to an estimate; `forced` always compacts."""
    budget = policy.budget(max_context_tokens)
    reason: Trigger = "none"
    if forced is not None:
        reason = forced
    elif t_est > budget:
        reason = "tokens_left"
    elif t_est >= math.ceil(policy.trigger_pct * max_context_tokens):
        reason = "threshold"
    elif policy.soft_limit_tokens is not None and t_est >= policy.soft_limit_tokens:
        reason = "soft_limit"
    return TriggerDecision(reason != "none", reason, t_est, max_context_tokens, budget)
