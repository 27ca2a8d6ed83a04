"""Context hygiene: every call answered once, every output preceded by its call, no `meta`."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore._items import answered_call, calls_in
from sessionstore.compaction._preflight._hygiene import (
    ABORTED_OUTPUT,
    HygieneScan,
    NormalizeReport,
    normalize,
)
from tests.support.histories import Item, call, chat_call, chat_out, output, user
from tests.support.tool_histories import histories


def aborted(call_id: str) -> Item:
    return output(call_id, ABORTED_OUTPUT)


# ----------------------------------------------------------------------------- scenarios


def test_interrupted_sdk_tool_call_gets_an_aborted_output_right_after_it() -> None:
    history = [
        user("list the repo"),
        {"type": "reasoning", "id": "rs_1", "summary": []},
        call("call_1"),
        # the process died here; the user came back later
        user("are you still there?"),
    ]
    report = normalize(history)
    assert report.items == [*history[:3], aborted("call_1"), history[3]]
    assert report.synthesized == ("call_1",)
    assert report.changed


def test_parallel_calls_keep_together_and_the_aborted_output_follows_existing_outputs() -> None:
    history = [user("go"), call("a"), call("b"), output("b"), user("next")]
    assert normalize(history).items == [*history[:4], aborted("a"), history[4]]


def test_synthetic_output_types_match_their_call_types() -> None:
    history: list[Item] = [
        {"type": "custom_tool_call", "call_id": "c1", "name": "patch", "input": "x"},
        {"type": "local_shell_call", "id": "ls", "call_id": "c2", "action": {}, "status": "done"},
        {"type": "apply_patch_call", "call_id": "c3", "operation": {}, "status": "completed"},
    ]
    assert normalize(history).items[3:] == [
        {"type": "custom_tool_call_output", "call_id": "c1", "output": ABORTED_OUTPUT},
        {"type": "local_shell_call_output", "call_id": "c2", "output": ABORTED_OUTPUT},
        {
            "type": "apply_patch_call_output",
            "status": "failed",
            "call_id": "c3",
            "output": ABORTED_OUTPUT,
        },
    ]


def test_orphan_computer_call_is_dropped_because_no_screenshot_can_be_faked() -> None:
    orphan = {"type": "computer_call", "call_id": "cc1", "action": {"type": "click"}}
    answered = {"type": "computer_call", "call_id": "cc2", "action": {"type": "click"}}
    screenshot = {
        "type": "computer_call_output",
        "call_id": "cc2",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="},
    }
    report = normalize([user("click"), orphan, answered, screenshot])
    assert report.items == [user("click"), answered, screenshot]
    assert report.dropped_calls == ("cc1",)
    assert report.synthesized == ()


def test_chat_missing_tool_message_goes_after_the_existing_ones() -> None:
    history = [user("go"), chat_call("a", "b"), chat_out("a"), user("next"), chat_call("c")]
    assert normalize(history).items == [
        *history[:3],
        {"role": "tool", "tool_call_id": "b", "content": ABORTED_OUTPUT},
        history[3],
        history[4],
        {"role": "tool", "tool_call_id": "c", "content": ABORTED_OUTPUT},
    ]


def test_orphan_output_from_a_half_compacted_history_is_dropped() -> None:
    history = [
        {"role": "developer", "content": "<COMPACT-SUMMARY v1> ran the tests"},
        output("call_compacted_away", "10 passed"),
        chat_out("chat_compacted_away"),
        user("thanks"),
    ]
    report = normalize(history)
    assert report.items == [history[0], history[3]]
    assert report.dropped_outputs == ("call_compacted_away", "chat_compacted_away")


def test_output_before_its_call_and_a_duplicate_output_are_dropped() -> None:
    history = [output("a", "early"), call("a"), output("a", "first"), output("a", "again")]
    report = normalize(history)
    assert report.items == [call("a"), output("a", "first")]
    assert report.dropped_outputs == ("a", "a")


def test_meta_is_stripped_copy_on_write() -> None:
    marked = user("remember the port is 8080", meta={"protected": True})
    plain = user("hi")
    history = [marked, plain]
    report = normalize(history)
    assert report.items == [user("remember the port is 8080"), plain]
    assert report.items[1] is plain  # unchanged items are shared, not copied
    assert marked["meta"] == {"protected": True}  # the caller's item is untouched
    assert not report.changed  # stripping meta is routine, not a repair


def test_clean_history_is_reported_unchanged_and_shares_items() -> None:
    history = [user("go"), call("a"), output("a"), chat_call("b"), chat_out("b")]
    report = normalize(history)
    assert report == NormalizeReport(items=history)
    assert all(new is old for new, old in zip(report.items, history, strict=True))
    assert not report.changed


def test_normalize_never_mutates_its_input() -> None:
    history = [output("x"), call("a"), user("u", meta={"protected": True}), chat_call("b")]
    snapshot = copy.deepcopy(history)
    normalize(history)
    assert history == snapshot


# ------------------------------------------------------------------------------ properties


def _assert_well_paired(items: list[Item]) -> None:
    for index, item in enumerate(items):
        for call_id in calls_in(item):
            later = [answered_call(other) for other in items[index + 1 :]]
            assert later.count(call_id) == 1, (call_id, items)
        answer = answered_call(item)
        if answer is not None:
            earlier = [c for other in items[:index] for c in calls_in(other)]
            assert answer in earlier, (answer, items)


def _without_meta(item: Item) -> Item:
    return {key: value for key, value in item.items() if key != "meta"}


def _non_tool(items: list[Item]) -> list[Item]:
    return [
        _without_meta(item) for item in items if not calls_in(item) and answered_call(item) is None
    ]


@settings(max_examples=300, deadline=None)
@given(histories())
def test_normalize_pairs_every_call_and_output(history: list[Item]) -> None:
    snapshot = copy.deepcopy(history)
    report = normalize(history)
    assert history == snapshot
    _assert_well_paired(report.items)
    assert _non_tool(report.items) == _non_tool(history)
    assert not any("meta" in item for item in report.items)
    # The report accounts for every change in length.
    assert len(report.items) == (
        len(history)
        + len(report.synthesized)
        - len(report.dropped_outputs)
        - len(report.dropped_calls)
    )
    if not report.changed:
        assert report.items == [_without_meta(item) for item in history]


@settings(max_examples=300, deadline=None)
@given(histories())
def test_normalize_is_idempotent(history: list[Item]) -> None:
    once = normalize(history)
    twice = normalize(once.items)
    assert twice.items == once.items
    assert not twice.changed


@settings(max_examples=200, deadline=None)
@given(histories())
def test_every_output_follows_its_call_and_every_call_is_answered(history: list[Item]) -> None:
    repaired = normalize(history).items
    for index, item in enumerate(repaired):
        answer = answered_call(item)
        if answer is not None:
            assert answer in [c for other in repaired[:index] for c in calls_in(other)]
    completed = repaired
    for index, item in enumerate(completed):
        for call_id in calls_in(item):
            assert call_id in [answered_call(other) for other in completed[index + 1 :]]


@settings(max_examples=300, deadline=None)
@given(histories(), st.data())
def test_a_scan_kept_as_items_arrive_is_the_one_pass_scan(
    history: list[Item], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(history)))
    kept = HygieneScan().extend(history[:cut]).extend(history[cut:])
    assert kept == HygieneScan().extend(history)
    assert normalize(history, kept) == normalize(history)
    assert kept.clean == (not normalize(history).changed and not any("meta" in i for i in history))
