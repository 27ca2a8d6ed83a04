"""A realistic compaction's events, shaped like `sessionstore.compaction._manager` emits them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sessionstore._events import Event

SESSION = "sess-42"
MODEL = "gpt-5-reasoning"
T0 = datetime(2025, 10, 19, 6, 0, 0, tzinfo=UTC)


def trigger_decision(session_id: str = SESSION) -> Event:
    return Event(
        "compact.trigger_decision",
        session_id,
        fields={
            "model": MODEL,
            "triggered": True,
            "reason": "threshold",
            "t_est": 112345,
            "max": 128000,
            "budget": 126976,
            "usage_pct": 0.8777,
            "policy": {"trigger_pct": 0.85, "hard_cap_buffer": 1024, "strategy": "task_state"},
            "kept": {"pinned": 3, "recent_turns": 6, "tool_pairs": 4},
            "pruned_count": 47,
        },
        ts=T0,
    )


def compaction() -> list[Event]:
    """trigger_decision, summary_created, pruned_messages, policy_applied, archival, error."""
    step = timedelta(milliseconds=15)
    return [
        trigger_decision(),
        Event(
            "compact.summary_created",
            SESSION,
            fields={
                "strategy": "task_state",
                "input_messages": 47,
                "summary_tokens": 480,
                "compression_ratio": 0.0123,
                "summary": 'Goal: ship the exporter. Decisions: use "batch" [REDACTED:api_key].',
            },
            ts=T0 + step,
        ),
        Event(
            "compact.pruned_messages",
            SESSION,
            fields={
                "pruned_count": 47,
                "layers": {"pinned": 3, "summary": 1, "recent_turns": 6, "tool_pairs": 4},
                "tokens_before": 112345,
            },
            ts=T0 + 2 * step,
        ),
        Event(
            "compact.policy_applied",
            SESSION,
            fields={"keep_recent_turns": 6, "keep_tool_io_pairs": 4, "reductions": []},
            ts=T0 + 3 * step,
        ),
        Event(
            "compact.archival",
            SESSION,
            fields={"storage_adapter": "sql", "item_count": 52},
            ts=T0 + 4 * step,
        ),
        Event(
            "compact.error",
            SESSION,
            severity="error",
            fields={
                "status": "error",
                "error_type": "timeout",
                "message": "summarizer timed out",
                "fallback": "pruning-only",
            },
            ts=T0 + 5 * step,
        ),
    ]
