"""The Summarizer protocol and the failures the compaction service knows how to handle.

The service reacts to each failure kind (docs/COMPACTION.md): too long -> retry at
half max_tokens (twice), refused -> retry with the `brief` strategy, tool calls,
unavailable or anything else -> prune-only, input too large -> trim the oldest
items and retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What to summarize and how."""

    items: Sequence[Mapping[str, Any]]  # the items being replaced, oldest first
    prior_summary: str | None  # the previous summary: the state to update, not to re-summarize
    strategy: str  # e.g. "task_state"
    instructions: str  # the strategy's prompt template
    max_tokens: int  # the summary must fit in this many tokens
    keep_keys: Sequence[str] = field(default_factory=tuple)  # facts to carry verbatim
    # The items that stay verbatim after the summary (recent turns, user messages): the
    # summary need not repeat them, and a statement among them can supersede a prior fact.
    kept: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    # The previous marker when it is a provider's opaque compaction item (prior_summary is
    # then None): only a summarizer of the same provider and model can read it.
    prior_item: Mapping[str, Any] | None = None
    # The current state read from the prior summary and the items: one line per subject
    # ("deploy/prod.yaml: database.read_replica = db-7.internal", "On-call is Marco (was
    # Ana)"), newest value only. A model summarizer is asked to keep these lines as written.
    state: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """A summary the service can store (without the <COMPACT-SUMMARY vN> prefix)."""

    text: str
    model: str | None = None
    output_tokens: int | None = None
    # A provider's opaque compaction item to store as the marker instead of `text` (which
    # then only describes it); bound to `provider` and `model`.
    item: Mapping[str, Any] | None = None
    provider: str | None = None


@runtime_checkable
class Summarizer(Protocol):
    """Turns replaced items (plus the prior summary) into a new summary."""

    name: str  # e.g. "extractive" or "openai:gpt-4o-mini"
    input_window: int | None  # tokens the summarizer accepts; None means unbounded

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Return a summary or raise a SummarizerError subclass."""
        ...
