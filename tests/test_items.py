"""The item codec: payload validation and the typed SQL columns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore._errors import InvalidItemError
from sessionstore._items import (
    MAX_NESTING,
    ItemInfo,
    answered_call,
    call_names_in,
    calls_in,
    check_typed_columns,
    describe,
    encode_payload,
    is_tool_output,
    role_of,
    text_of,
    tool_name_of,
)


def test_payload_is_compact_unicode_json() -> None:
    item = {"role": "user", "content": "café 🙂"}
    text = encode_payload(item, 0)
    assert text == '{"role":"user","content":"café 🙂"}'
    assert json.loads(text) == item


def test_lone_surrogates_are_escaped_to_stay_valid_utf8() -> None:
    item = {"role": "user", "content": "broken \ud800 text"}
    text = encode_payload(item, 0)
    text.encode("utf-8")
    assert json.loads(text) == item


def _nested(depth: int) -> dict[str, Any]:
    item: dict[str, Any] = {"role": "user"}
    for _ in range(depth):
        item = {"content": item}
    return item


def test_the_deepest_allowed_nesting_round_trips() -> None:
    item = _nested(MAX_NESTING - 2)
    assert json.loads(encode_payload(item, 0)) == item


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ([1, 2], "not a mapping"),
        ({"role": "user", "content": b"bytes"}, "field content is a bytes, which JSON cannot"),
        ({"role": "user", "content": float("inf")}, "not JSON-serializable"),
        ({"role": "user", "content": [{"x": {1, 2}}]}, r"field content\[0\]\.x is a set"),
        ({"role": "user", "meta": {7: "seven"}}, "field meta has a key of type int"),
        ({1: "user"}, r"field \(root\) has a key of type int"),
        (_nested(2000), "nested more than 256 levels deep"),
    ],
)
def test_invalid_items_explain_the_fix(item: Any, fragment: str) -> None:
    with pytest.raises(InvalidItemError, match=fragment) as caught:
        encode_payload(item, 3)
    assert "#3" in str(caught.value)


@pytest.mark.parametrize("value", [object(), b"bytes", {1, 2}])
def test_a_value_json_cannot_hold_is_a_type_error_as_in_the_sdk(value: object) -> None:
    """SDK programs catch json.dumps' TypeError around add_items; ours is one too."""
    with pytest.raises(TypeError, match="which JSON cannot hold"):
        encode_payload({"role": "user", "content": value}, 0)


def test_responses_items_fill_typed_columns() -> None:
    call = {"type": "function_call", "name": "grep", "call_id": "c1", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "hits"}
    names = call_names_in([call, output])
    assert names == {"c1": "grep"}
    assert describe(call, names) == describe(call, {})
    info = describe(output, names)
    assert (info.item_type, info.tool_name, info.call_id) == ("function_call_output", "grep", "c1")
    assert is_tool_output(info)
    message = describe({"role": "user", "content": "hi", "name": "bob"}, {})
    assert (message.role, message.item_type, message.tool_name) == ("user", "message", None)
    reasoning = describe({"type": "reasoning", "id": "r1", "summary": []}, {})
    assert reasoning.item_type == "reasoning" and not is_tool_output(reasoning)


@pytest.mark.parametrize(
    ("item", "name"),
    [
        ({"type": "function_call", "name": "get", "namespace": "crm"}, "crm.get"),
        ({"type": "function_call", "name": "get", "namespace": "get"}, "get"),
        ({"type": "mcp_call", "server_label": "fs", "name": "read"}, "fs.read"),
        ({"type": "mcp_call", "server_label": "fs"}, "fs"),
        ({"type": "web_search_call", "id": "w"}, "web_search_call"),
        ({"type": "tool_search_output", "tools": []}, "tool_search"),
        ({"type": "function_call_output", "call_id": "c1", "output": "x"}, None),
    ],
)
def test_tools_are_named_as_the_agents_sdk_files_them(item: dict[str, Any], name: str) -> None:
    assert tool_name_of(item) == name
    assert describe(item, {}).tool_name == name


def test_chat_completions_messages_fill_typed_columns() -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    }
    tool = {"role": "tool", "tool_call_id": "t1", "content": "a.txt"}
    names = call_names_in([assistant, tool])
    assert names == {"t1": "ls"}
    info = describe(assistant, names)
    assert (info.role, info.tool_name, info.call_id) == ("assistant", "ls", "t1")
    tool_info = describe(tool, names)
    assert (tool_info.tool_name, tool_info.call_id) == ("ls", "t1")
    assert is_tool_output(tool_info)


def test_meta_protected_marks_the_row() -> None:
    assert describe(
        {"role": "developer", "content": "x", "meta": {"protected": True}}, {}
    ).protected
    assert not describe(
        {"role": "developer", "content": "x", "meta": {"protected": 1}}, {}
    ).protected


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                *("role", "type", "name", "call_id", "tool_calls", "tool_call_id", "meta"),
                *("content", "namespace", "server_label"),
            ]
        ),
        _json,
    )
)
def test_describe_never_raises_and_payload_round_trips(item: dict[str, Any]) -> None:
    describe(item, call_names_in([item]))
    assert json.loads(encode_payload(item, 0)) == item


# Typed values around every limit: NUL, a lone surrogate, non-ASCII, 32 and 64 characters.
_typed = (
    st.none()
    | st.sampled_from(
        ["user", "a" * 32, "a" * 33, "a" * 64, "a" * 65, "us\x00er", "café", "\ud800"]
    )
    | st.text(alphabet=st.sampled_from(["a", "é", "\x00", "\ud800", "_"]), max_size=70)
)


def _storable(value: str | None, width: int | None) -> bool:
    if value is None:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value and (width is None or len(value) <= width)


@settings(max_examples=400)
@given(role=_typed, item_type=_typed, tool_name=_typed, call_id=_typed)
def test_typed_columns_are_refused_exactly_when_a_backend_could_not_store_them(
    role: str | None, item_type: str | None, tool_name: str | None, call_id: str | None
) -> None:
    """No NUL, valid UTF-8, role within 32 and type within 64 characters: anything else is
    refused with the field named, whichever check sees it (the fast one or the full one)."""
    info = ItemInfo(role, item_type, tool_name, call_id, False)
    storable = (
        _storable(role, 32)
        and _storable(item_type, 64)
        and _storable(tool_name, None)
        and _storable(call_id, None)
    )
    if storable:
        assert check_typed_columns(info, 3) is info
    else:
        with pytest.raises(InvalidItemError, match=r"item #3 field (role|type|name|call_id) "):
            check_typed_columns(info, 3)


def test_shapes_of_both_formats() -> None:
    call = {"type": "function_call", "name": "grep", "call_id": "c1", "arguments": '{"q":"x"}'}
    output = {"type": "function_call_output", "call_id": "c1", "output": "3 hits"}
    chat_call = {
        "role": "assistant",
        "content": "checking",
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "t2", "type": "function", "function": {"name": "cat", "arguments": "{}"}},
        ],
    }
    chat_out = {"role": "tool", "tool_call_id": "t2", "content": "file body"}
    user = {"role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    assert (calls_in(call), answered_call(call)) == (["c1"], None)
    assert (calls_in(output), answered_call(output)) == ([], "c1")
    assert calls_in(chat_call) == ["t1", "t2"] and answered_call(chat_out) == "t2"
    assert calls_in(user) == [] and answered_call(user) is None
    assert text_of(call) == 'grep({"q":"x"})'
    assert text_of(output) == "3 hits"
    assert text_of(user) == "hello"
    assert text_of(chat_call) == "checking\nls({})\ncat({})"
    assert (
        text_of({"type": "reasoning", "summary": [{"type": "summary_text", "text": "why"}]})
        == "why"
    )
    assert role_of(user) == "user" and role_of(call) is None
