"""What a compaction manager is configured with, and what one compaction did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field

from .._events import Event
from .._store import SessionStore
from .._store._context_replacement import (
    CompactionResult,
)
from .._tokens import TokenEstimator
from ..archive import ArchiveSink
from . import _result_events as result_events
from ._partition import Partition
from ._policy import CompactionPolicy, TriggerDecision
from ._summarizers._summarizer import Summarizer
from ._summarizing import Summary


@dataclass
class CompactionConfig:
    """One object that enables compaction in a few lines (docs/COMPACTION.md).

    `store` is the `SessionStore` the manager reads and writes; `sinks` are where each
    compaction is also copied (files, S3). `storage=` is accepted for compatibility and
    means whichever of the two it is given: a `SessionStore` (as in earlier releases) or
    archive sinks (as in the original design, where "storage" is the archive).
    """

    model: str = "gpt-4o"
    max_context_tokens: int = 128_000
    policy: CompactionPolicy = field(default_factory=CompactionPolicy)
    token_estimator: TokenEstimator | None = None
    store: SessionStore | None = None  # default: the embedded SQLite store
    summarizer: Summarizer | None = None  # default: the extractive summarizer
    record_idle_decisions: bool = True  # store below-threshold estimates as events too
    sinks: Sequence[ArchiveSink] = ()  # filesystem/S3 copies of each compaction (redacted)
    # How long a compaction waits for another compaction of the same session (which holds
    # it for its summarizer call, retries included) before giving up with StoreTimeoutError.
    lock_timeout_s: float = 300.0
    storage: InitVar[SessionStore | ArchiveSink | Sequence[ArchiveSink] | None] = None

    def __post_init__(
        self, storage: SessionStore | ArchiveSink | Sequence[ArchiveSink] | None
    ) -> None:
        if self.max_context_tokens <= 0:
            raise ValueError(f"max_context_tokens must be positive, got {self.max_context_tokens}")
        if not self.lock_timeout_s > 0:
            raise ValueError(f"lock_timeout_s must be positive, got {self.lock_timeout_s}")
        if isinstance(storage, SessionStore):
            if self.store is not None and self.store is not storage:
                raise ValueError("pass the SessionStore once: store=... (storage= is its alias)")
            self.store = storage
        elif storage is not None:
            given = list(storage) if isinstance(storage, Sequence) else [storage]
            if self.sinks:
                raise ValueError("pass archive sinks once: sinks=[...] (storage= is its alias)")
            self.sinks = given


@dataclass(frozen=True, slots=True)
class Layers:
    """How many units and tokens each layer holds (the `compact.pruned_messages` event)."""

    pinned: int
    recent_turns: int
    tool_pairs: int
    users: int
    aborted: int
    summarized: int
    pruned_count: int

    @classmethod
    def of(cls, plan: Partition) -> Layers:
        """Count a partition's layers."""
        return cls(
            pinned=len(plan.pinned),
            recent_turns=plan.recent_turns,
            tool_pairs=sum(unit.pairs for unit in plan.tools),
            users=len(plan.users) + (1 if plan.truncated_user else 0),
            aborted=len(plan.aborted),
            summarized=len(plan.remainder),
            pruned_count=sum(unit.size for unit in plan.remainder),
        )


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What one compaction did (or, with dry_run, would do)."""

    session_id: str
    decision: TriggerDecision
    compacted: bool
    tokens_before: int
    tokens_after: int
    plan: Partition | None = None
    summary: str | None = None
    strategy: str | None = None
    fallback: str | None = None
    result: CompactionResult | None = None
    skipped_reason: str | None = None

    @property
    def reduction(self) -> float:
        """Share of tokens removed (0.4 means 40% fewer)."""
        return 1 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0


def skipped(
    session_id: str,
    decision: TriggerDecision,
    tokens: int,
    reason: str,
    plan: Partition | None = None,
) -> CompactionOutcome:
    """A compaction that found nothing to do, and why."""
    return CompactionOutcome(
        session_id, decision, False, tokens, tokens, plan=plan, skipped_reason=reason
    )


def committed_events(
    session_id: str,
    plan: Partition,
    layers: Layers,
    summary: Summary,
    tokens_before: int,
    *,
    summary_tokens: int,
    budget: int,
    target: int,
) -> list[Event]:
    """The events of a committed compaction's result: the summary made, what was pruned,
    the policy as applied, and what was archived."""
    found: list[Event] = []
    if summary.text is not None:
        found.append(
            result_events.summary_created(
                session_id,
                strategy=summary.strategy,
                input_messages=layers.pruned_count,
                summary_tokens=summary_tokens,
                input_tokens=plan.remainder_tokens
                + (plan.prior_summary.tokens if plan.prior_summary else 0),
                summary=summary.text,
            )
        )
    found.append(
        result_events.pruned_messages(
            session_id,
            pruned_count=layers.pruned_count,
            pinned=layers.pinned,
            summary=1 if summary.text is not None or plan.prior_summary else 0,
            recent_turns=layers.recent_turns,
            tool_pairs=layers.tool_pairs,
            user_messages=layers.users,
            aborted_markers=layers.aborted,
            tokens_before=tokens_before,
        )
    )
    found.append(
        result_events.policy_applied(
            session_id,
            keep_recent_turns=plan.recent_turns,
            keep_tool_io_pairs=plan.tool_pairs,
            recent_user_token_budget=plan.user_budget,
            reductions=plan.reductions,
            budget=budget,
            target=target,
        )
    )
    found.append(
        result_events.archival(
            session_id,
            sum(unit.size for unit in plan.remainder) + (1 if plan.prior_summary else 0),
        )
    )
    return found
