"""Partitioning into layers (docs/COMPACTION.md, "What is kept: the layers")."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore._errors import CompactionError, CompactionErrorReason
from sessionstore._items import call_names_in, calls_in, describe, text_of
from sessionstore._rows import StoredRow
from sessionstore._tokens import estimator_for_model
from sessionstore.compaction._partition import TURN_ABORTED, build_units, fit, partition
from sessionstore.compaction._policy import CompactionPolicy
from tests.support.histories import assistant, call, output, turns, user

ESTIMATOR = estimator_for_model("gpt-4o")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def rows_of(
    items: list[dict[str, Any]],
    *,
    kinds: dict[int, str] | None = None,
    payloads: list[str | None] | None = None,
) -> list[StoredRow]:
    """StoredRows for items, as the store would hold them (with the JSON texts they were
    read from, when given)."""
    names = call_names_in(items)
    rows = []
    for seq, item in enumerate(items, 1):
        info = describe(item, names)
        rows.append(
            StoredRow(
                session_id="s",
                seq=seq,
                kind=(kinds or {}).get(seq, "item"),
                role=info.role,
                item_type=info.item_type,
                tool_name=info.tool_name,
                call_id=info.call_id,
                tokens=ESTIMATOR.count_item(item),
                protected=info.protected,
                ref_seq=None,
                compaction_id=None,
                archive_id=None,
                item=item,
                created_at=NOW,
                payload=None if payloads is None else payloads[seq - 1],
            )
        )
    return rows


def layers(items: list[dict[str, Any]], policy: CompactionPolicy, **counts: int) -> Any:
    units = build_units(rows_of(items), policy)
    return partition(
        units,
        recent_turns=counts.get("turns", policy.keep_recent_turns),
        tool_pairs=counts.get("pairs", policy.keep_tool_io_pairs),
        user_budget=counts.get("users", 0),
        estimator=ESTIMATOR,
    )


def texts(units: Any) -> list[str]:
    out = []
    for unit in units:
        for item in unit.items:
            content = item.get("content")
            out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def test_keep_recent_turns_keeps_the_last_six_pairs() -> None:
    items = turns(20, size=5)
    plan = layers(items, CompactionPolicy(), turns=6)
    kept = texts(plan.recent)
    assert len(kept) == 12 and kept[0].startswith("turn 14") and kept[-1].startswith("answer 19")
    assert len(plan.remainder) == 28  # 14 older pairs are eligible for summarization


def test_keep_tool_pairs_keeps_the_last_four_and_never_splits_a_pair() -> None:
    items: list[dict[str, Any]] = []
    for n in range(10):
        items += [call(f"c{n}", q=n), output(f"c{n}", f"result {n}")]
    plan = layers(items, CompactionPolicy(), pairs=4)
    kept_calls = [unit.items[0]["call_id"] for unit in plan.tools]
    assert kept_calls == ["c6", "c7", "c8", "c9"]
    for unit in plan.tools + plan.remainder:
        assert [item["type"] for item in unit.items] == ["function_call", "function_call_output"]
    assert len(plan.remainder) == 6


def test_an_output_far_from_its_call_stays_with_it() -> None:
    items = [call("c1"), user("meanwhile"), assistant("working"), output("c1", "done")]
    units = build_units(rows_of(items), CompactionPolicy())
    tool_units = [unit for unit in units if unit.kind == "tools"]
    assert len(tool_units) == 1 and [r.seq for r in tool_units[0].rows] == [1, 4]


def test_chat_completions_tool_calls_group_with_their_tool_messages() -> None:
    items = [
        user("list files"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "t2", "type": "function", "function": {"name": "pwd", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "t2", "content": "/src"},
        {"role": "assistant", "content": "a.txt in /src"},
    ]
    units = build_units(rows_of(items), CompactionPolicy())
    assert [unit.kind for unit in units] == ["message", "tools", "message"]
    assert units[1].pairs == 2 and len(units[1].rows) == 3


def test_protected_items_and_roles_are_pinned_never_remainder() -> None:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a release assistant."},
        {"role": "developer", "content": "Never deploy on Fridays."},
        {"role": "user", "content": "Acceptance: p99 < 200ms", "meta": {"protected": True}},
        *turns(10, size=5),
    ]
    plan = layers(items, CompactionPolicy(), turns=1, pairs=1)
    pinned = texts(plan.pinned)
    assert pinned == [
        "You are a release assistant.",
        "Never deploy on Fridays.",
        "Acceptance: p99 < 200ms",
    ]
    assert not any(t in texts(plan.remainder) for t in pinned)


def test_roles_never_prune_is_configurable() -> None:
    items = [{"role": "developer", "content": "style guide"}, *turns(8, size=3)]
    plan = layers(items, CompactionPolicy(roles_never_prune=()), turns=1)
    assert plan.pinned == [] and "style guide" in texts(plan.remainder)


def test_protected_tools_survive_compaction() -> None:
    items = [call("todo1", "manage_todo_list"), output("todo1", "1. ship"), *turns(8, size=3)]
    plan = layers(items, CompactionPolicy(protected_tools=("manage_todo_list",)), turns=1, pairs=0)
    assert [unit.items[0]["call_id"] for unit in plan.pinned] == ["todo1"]


def test_turn_aborted_markers_are_kept() -> None:
    items = [
        *turns(3, size=3),
        user("<turn-aborted> user interrupted the deploy"),
        *turns(6, size=3),
    ]
    plan = layers(items, CompactionPolicy(), turns=1, pairs=0)
    assert any("<turn-aborted>" in t for t in texts(plan.aborted))


def test_recent_user_messages_fill_a_budget_newest_first_last_one_truncated() -> None:
    items = []
    for n in range(10):
        items += [user(f"request {n} " + "detail " * 40), assistant(f"ok {n}")]
    one = ESTIMATOR.count_item(items[0])
    plan = layers(items, CompactionPolicy(), turns=1, pairs=0, users=2 * one + 40)
    kept = texts(plan.users)
    assert [t.split()[1] for t in kept] == ["7", "8"]  # 9 is a recent turn already
    assert plan.truncated_user is not None
    original, copy, tokens = plan.truncated_user
    assert original.items[0]["content"].startswith("request 6")
    assert tokens < one and "truncated" in copy["content"]


def test_fit_reduces_turns_then_pairs_then_raises() -> None:
    items = []
    for n in range(12):
        items += [
            user(f"u{n} " + "x " * 50),
            call(f"c{n}"),
            output(f"c{n}", "y " * 50),
            assistant("ok"),
        ]
    policy = CompactionPolicy(summary_max_tokens=64, recent_user_token_budget=0)
    units = build_units(rows_of(items), policy)
    small = sum(u.tokens for u in units) // 3
    plan, summary = fit(
        units, policy, target=small, ceiling=small, fixed_tokens=0, estimator=ESTIMATOR
    )
    order = [f"keep_recent_turns->{k}" for k in (5, 4, 3, 2, 1)]
    order += [f"keep_tool_io_pairs->{k}" for k in (3, 2, 1)]
    assert plan.reductions and plan.reductions == order[: len(plan.reductions)]
    assert plan.pinned_tokens + plan.kept_tokens + summary <= small
    with pytest.raises(CompactionError) as caught:
        fit(units, policy, target=50, ceiling=50, fixed_tokens=0, estimator=ESTIMATOR)
    assert caught.value.reason is CompactionErrorReason.INSUFFICIENT_BUDGET
    assert "1 recent turn and 1 tool pair" in str(caught.value)


def test_protected_only_overflow_says_to_reduce_protected_memory() -> None:
    items = [{"role": "developer", "content": "rule " * 400}, *turns(3, size=3)]
    units = build_units(rows_of(items), CompactionPolicy())
    with pytest.raises(CompactionError, match="Reduce protected memory") as caught:
        fit(units, CompactionPolicy(), target=100, ceiling=100, fixed_tokens=0, estimator=ESTIMATOR)
    assert caught.value.reason is CompactionErrorReason.INSUFFICIENT_BUDGET


# Texts that hold the marker, hold it escaped or split, or only look like it.
_marker_texts = st.sampled_from(
    [
        "<turn-aborted>",
        "user said <turn-aborted> then left",
        "<turn-aborted",
        "turn-aborted>",
        "<turn- aborted>",
        "\u00e9t\u00e9 <turn-aborted> \u2028",
        'quote " and \\ then <turn-aborted>',
        "plain text",
        "",
    ]
)
_marked_item = st.one_of(
    st.builds(lambda text: {"role": "user", "content": text}, _marker_texts),
    st.builds(
        lambda a, b: {
            "role": "assistant",
            "content": [{"type": "output_text", "text": a}, {"type": "refusal", "refusal": b}],
        },
        _marker_texts,
        _marker_texts,
    ),
    st.builds(
        lambda name, args: {
            "type": "function_call",
            "call_id": "c",
            "name": name,
            "arguments": args,
        },
        _marker_texts,
        _marker_texts,
    ),
    st.builds(
        lambda out: {"type": "function_call_output", "call_id": "z", "output": out}, _marker_texts
    ),
    st.builds(lambda text: {"type": "reasoning", "summary": [{"text": text}]}, _marker_texts),
)


# How other encoders may have stored the same item: escaping non-ASCII, HTML-safe (< > &
# as \u escapes, as Go does), or even a character of the marker (valid JSON here: the items
# hold no negative numbers).
_ENCODERS = (
    lambda item: json.dumps(item, ensure_ascii=False),
    json.dumps,
    lambda item: json.dumps(item).replace("<", "\\u003c").replace(">", "\\u003e"),
    lambda item: json.dumps(item).replace("-", "\\u002d"),
)


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(_marked_item, min_size=1, max_size=6),
    encoder=st.sampled_from(_ENCODERS),
    read_without_text=st.booleans(),
)
def test_aborted_units_are_found_from_the_stored_json_as_from_the_text(
    items: list[dict[str, Any]], encoder: Any, read_without_text: bool
) -> None:
    """A unit is aborted exactly when an item's text holds the marker, whether the rows carry
    their JSON text (however it was escaped) or not."""
    texts: list[str] = [encoder(item) for item in items]
    assert [json.loads(text) for text in texts] == items  # the same items, however escaped
    payloads: list[str | None] | None = None if read_without_text else list(texts)
    units = build_units(rows_of(items, payloads=payloads), CompactionPolicy())
    for unit in units:
        assert unit.aborted == any(TURN_ABORTED in text_of(item) for item in unit.items)


_event = st.sampled_from(["user", "assistant", "tool", "protected", "developer"])


@settings(max_examples=60, deadline=None)
@given(
    events=st.lists(_event, min_size=1, max_size=40),
    turns_kept=st.integers(0, 5),
    pairs_kept=st.integers(0, 5),
)
def test_partition_is_a_partition(events: list[str], turns_kept: int, pairs_kept: int) -> None:
    """Every unit lands in exactly one layer; protected ones are pinned; pairs stay whole."""
    items: list[dict[str, Any]] = []
    for n, kind in enumerate(events):
        if kind == "tool":
            items += [call(f"c{n}"), output(f"c{n}", f"r{n}")]
        elif kind == "protected":
            items.append({"role": "user", "content": f"p{n}", "meta": {"protected": True}})
        elif kind == "developer":
            items.append({"role": "developer", "content": f"d{n}"})
        else:
            items.append({"role": kind, "content": f"{kind}{n}"})
    units = build_units(rows_of(items), CompactionPolicy())
    plan = partition(
        units, recent_turns=turns_kept, tool_pairs=pairs_kept, user_budget=0, estimator=ESTIMATOR
    )
    placed = [*plan.pinned, *plan.kept, *plan.remainder]
    assert sorted(id(u) for u in placed) == sorted(id(u) for u in units)
    assert all(u.protected for u in plan.pinned)
    assert not any(u.protected for u in plan.remainder)
    for unit in units:
        made = {c for item in unit.items for c in calls_in(item)}
        answered = {
            item["call_id"] for item in unit.items if item.get("type") == "function_call_output"
        }
        assert answered <= made
