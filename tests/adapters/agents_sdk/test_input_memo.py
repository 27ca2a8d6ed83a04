"""The pre-flight's memo of model inputs: whatever inputs follow one another, its digest is
`input_sha256` and its hygiene scan the one-pass scan of exactly the input it was handed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore._items import InputDigest, canonical_json, input_sha256
from sessionstore._opaque import is_opaque
from sessionstore.adapters.agents_sdk._input_memo import InputMemo
from sessionstore.compaction._preflight._hygiene import HygieneScan
from tests.support.tool_histories import histories

# JSON values where == and JSON disagree (1 == 1.0 == True) and text needing care.
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(-2, 2, allow_nan=False),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "é", "\u2028", '"\\', "compaction"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_ITEMS = st.dictionaries(
    st.sampled_from(["role", "content", "type", "x", "é"]), _VALUES, max_size=4
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ITEMS, max_size=8), st.data())
def test_the_streamed_digest_is_input_sha256(
    items: list[dict[str, Any]], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(items)))
    digest = InputDigest()
    for item in items[:cut]:
        digest.add(canonical_json(item))
    grown = digest.copy()
    for item in items[cut:]:
        grown.add(canonical_json(item))
    assert grown.hexdigest() == input_sha256(items)
    assert digest.hexdigest() == input_sha256(items[:cut])  # a copy leaves the original alone


def _edited(items: list[dict[str, Any]], data: st.DataObject) -> list[dict[str, Any]]:
    """The next input: usually the last one grown, sometimes changed in place or cut."""
    following = copy.deepcopy(items)  # the SDK hands over a fresh copy every call
    edit = data.draw(st.sampled_from(["grow", "grow", "retype", "replace", "cut"]))
    if edit == "grow":
        following += data.draw(st.lists(_ITEMS, max_size=3))
    elif following and edit == "retype":  # equal by ==, different JSON
        index = data.draw(st.integers(0, len(following) - 1))
        value = data.draw(st.sampled_from([1, 1.0, True, 0, 0.0, False]))
        following[index] = {**following[index], "x": value}
    elif following and edit == "replace":
        following[data.draw(st.integers(0, len(following) - 1))] = data.draw(_ITEMS)
    elif edit == "cut":
        following = following[: data.draw(st.integers(0, len(following)))]
    return following


@pytest.mark.untraced  # repeats paths the rest of the suite covers (tests/conftest.py)
@settings(max_examples=300, deadline=None)
@given(st.lists(_ITEMS, max_size=6), st.data())
def test_a_memo_always_describes_the_input_it_was_handed(
    first: list[dict[str, Any]], data: st.DataObject
) -> None:
    memo = InputMemo()
    items = first
    for _ in range(4):
        memo = memo.advance(items)
        assert memo.digest.hexdigest() == input_sha256(items)
        assert memo.scan == HygieneScan().extend(items)
        assert memo.opaque == any(is_opaque(item) for item in items)
        items = _edited(items, data)


@settings(max_examples=200, deadline=None)
@given(histories(), st.data())
def test_a_memo_scans_tool_histories_like_one_pass(
    history: list[dict[str, Any]], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(history)))
    memo = InputMemo().advance(history[:cut]).advance(copy.deepcopy(history))
    assert memo.scan == HygieneScan().extend(history)
    assert memo.digest.hexdigest() == input_sha256(history)


def test_an_item_changed_in_place_after_the_call_is_not_taken_from_the_memo() -> None:
    items = [{"role": "user", "content": "hi"}]
    memo = InputMemo().advance(items)
    items[0]["content"] = "changed"  # the memo kept its own copy
    assert memo.advance(items).digest.hexdigest() == input_sha256(items)


def test_the_memo_shares_the_strings_of_the_items_it_copies() -> None:
    """So the SDK's next copy of the same history compares string by identity."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": "x" * 500}]}
    ]
    memo = InputMemo().advance(items)
    assert memo.seen == items and memo.seen[0] is not items[0]
    assert memo.seen[0]["content"] is not items[0]["content"]  # containers are its own
    assert memo.seen[0]["content"][0]["text"] is items[0]["content"][0]["text"]


def test_keys_equal_by_value_but_not_by_json_are_not_taken_from_the_memo() -> None:
    """{1: ...} == {1.0: ...} == {True: ...}, but their JSON keys differ."""
    first: list[dict[Any, Any]] = [{"role": "user", "content": {1: "a"}}]
    memo = InputMemo().advance(first)
    assert memo.digest.hexdigest() == input_sha256(first)
    for key in (1.0, True):
        following: list[dict[Any, Any]] = [{"role": "user", "content": {key: "a"}}]
        assert following == first
        assert memo.advance(following).digest.hexdigest() == input_sha256(following)


def test_tuples_and_str_subclasses_are_copied_through_json() -> None:
    class Name(str):
        pass

    items: list[dict[str, Any]] = [{"role": Name("user"), "content": ("a", "b")}]
    memo = InputMemo().advance(items)
    assert memo.seen == [{"role": "user", "content": ["a", "b"]}]
    assert type(memo.seen[0]["role"]) is str
