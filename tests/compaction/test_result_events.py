"""The result events every compaction records, as docs/OBSERVABILITY.md lists their fields."""

from __future__ import annotations

from sessionstore.compaction import _result_events as result_events


def test_summary_created_says_how_much_smaller_the_summary_is() -> None:
    event = result_events.summary_created(
        "s", strategy="general", input_messages=3, summary_tokens=10, input_tokens=30, summary="x"
    )
    assert event.event == "compact.summary_created"
    assert event.fields["compression_ratio"] == 0.3333
    empty = result_events.summary_created(
        "s", strategy="general", input_messages=0, summary_tokens=5, input_tokens=0, summary="y"
    )
    assert empty.fields["compression_ratio"] == 5.0  # no input: divided by 1, never by 0


def test_the_other_result_events_carry_their_documented_fields() -> None:
    pruned = result_events.pruned_messages(
        "s",
        pruned_count=2,
        pinned=1,
        summary=1,
        recent_turns=3,
        tool_pairs=2,
        user_messages=4,
        aborted_markers=0,
        tokens_before=99,
    )
    assert pruned.fields == {
        "pruned_count": 2,
        "layers": {  # docs/OBSERVABILITY.md's layers, in its order
            "pinned": 1,
            "summary": 1,
            "recent_turns": 3,
            "tool_pairs": 2,
            "user_messages": 4,
            "aborted_markers": 0,
        },
        "tokens_before": 99,
    }
    policy = result_events.policy_applied(
        "s",
        keep_recent_turns=4,
        keep_tool_io_pairs=2,
        recent_user_token_budget=100,
        reductions=["keep_recent_turns->3"],
        budget=900,
        target=600,
    )
    assert set(policy.fields) == {
        "keep_recent_turns",
        "keep_tool_io_pairs",
        "recent_user_token_budget",
        "reductions",
        "budget",
        "target",
    }
    archival = result_events.archival("s", 7)
    assert (archival.event, archival.fields) == (
        "compact.archival",
        {"storage_adapter": "sql", "item_count": 7},
    )
