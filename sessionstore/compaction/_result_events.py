"""The events every committed compaction records about its result (docs/OBSERVABILITY.md),
shaped in one place for the manager's compactions and the provider marker's rebuild."""

from __future__ import annotations

from collections.abc import Sequence

from .._events import ARCHIVAL_EVENT, Event


def summary_created(
    session_id: str,
    *,
    strategy: str,
    input_messages: int,
    summary_tokens: int,
    input_tokens: int,
    summary: str,
) -> Event:
    """`compact.summary_created`: the summary, and how much smaller than its input it is."""
    return Event(
        "compact.summary_created",
        session_id,
        fields={
            "strategy": strategy,
            "input_messages": input_messages,
            "summary_tokens": summary_tokens,
            "compression_ratio": round(summary_tokens / max(input_tokens, 1), 4),
            "summary": summary,
        },
    )


def pruned_messages(
    session_id: str,
    *,
    pruned_count: int,
    pinned: int,
    summary: int,
    recent_turns: int,
    tool_pairs: int,
    user_messages: int,
    aborted_markers: int,
    tokens_before: int,
) -> Event:
    """`compact.pruned_messages`: how many rows left the context, and what each layer kept
    (every documented layer, named by the caller: none can be left out)."""
    layers = {
        "pinned": pinned,
        "summary": summary,
        "recent_turns": recent_turns,
        "tool_pairs": tool_pairs,
        "user_messages": user_messages,
        "aborted_markers": aborted_markers,
    }
    return Event(
        "compact.pruned_messages",
        session_id,
        fields={"pruned_count": pruned_count, "layers": layers, "tokens_before": tokens_before},
    )


def policy_applied(
    session_id: str,
    *,
    keep_recent_turns: int,
    keep_tool_io_pairs: int,
    recent_user_token_budget: int,
    reductions: Sequence[str],
    budget: int,
    target: int,
) -> Event:
    """`compact.policy_applied`: the policy's knobs as this compaction applied them."""
    return Event(
        "compact.policy_applied",
        session_id,
        fields={
            "keep_recent_turns": keep_recent_turns,
            "keep_tool_io_pairs": keep_tool_io_pairs,
            "recent_user_token_budget": recent_user_token_budget,
            "reductions": reductions,
            "budget": budget,
            "target": target,
        },
    )


def archival(session_id: str, item_count: int) -> Event:
    """`compact.archival`: the originals archived in the database's own archive table."""
    return Event(
        ARCHIVAL_EVENT, session_id, fields={"storage_adapter": "sql", "item_count": item_count}
    )
