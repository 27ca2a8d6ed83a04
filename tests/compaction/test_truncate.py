"""Write-time truncation: head and tail kept verbatim, the cut measured, small outputs free."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sessionstore._tokens import estimator_for_model
from sessionstore.compaction._truncate import (
    TruncatedText,
    TruncationPolicy,
    truncate_text,
    truncate_tool_output,
)

EXACT = estimator_for_model("gpt-4o")
BYTES = TruncationPolicy(mode="bytes", max_bytes=100)


class SpyEstimator:
    """Counts exactly and records what it was asked to tokenize."""

    name = "spy"
    exact = True
    fallback_reason: str | None = None

    def __init__(self) -> None:
        self.calls: list[int] = []

    def count_text(self, text: str) -> int:
        self.calls.append(len(text))
        return EXACT.count_text(text)

    def count_item(self, item: Mapping[str, Any]) -> int:
        raise AssertionError("truncation counts text, not items")


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def header(result: TruncatedText) -> str:
    return f"Total output lines: {result.original_lines}\n\n"


def marker_line(result: TruncatedText) -> str:
    return f"\n…{result.removed} {result.unit} truncated…\n"


def head_and_tail(result: TruncatedText) -> tuple[str, str]:
    """Split a result into the kept head and tail (the texts under test never contain '…')."""
    assert result.text.startswith(header(result))
    head, tail = result.text[len(header(result)) :].split(marker_line(result))
    return head, tail


def shell_output(lines: int) -> str:
    rng = random.Random(7)
    return "".join(
        f"-rw-r--r--  1 dev  staff  {rng.randint(0, 99999):>6} Jan {n % 28 + 1:>2} 12:{n % 60:02}"
        f" src/module_{n}/file_{rng.randint(0, 999)}.py\n"
        for n in range(lines)
    )


# ----------------------------------------------------------------------------- policy


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_tokens", 0),
        ("max_bytes", -1),
        ("serialization_allowance", 0.9),
        ("chars_per_token", 0.5),
        ("mode", "lines"),
    ],
)
def test_invalid_policy_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        TruncationPolicy.model_validate({field: value})


def test_policy_defaults_follow_the_rfc_and_the_policy_is_frozen() -> None:
    policy = TruncationPolicy()
    assert (policy.mode, policy.max_tokens, policy.max_bytes) == ("tokens", 5000, 20000)
    assert (policy.serialization_allowance, policy.chars_per_token) == (1.2, 4.0)
    with pytest.raises(ValidationError, match="frozen"):
        policy.max_tokens = 1  # type: ignore[misc]  # frozen: the pydantic plugin rejects it
    with pytest.raises(ValidationError, match="max_token"):
        TruncationPolicy.model_validate({"max_token": 10})  # typo: not silently ignored


# ------------------------------------------------------------------------------- text


def test_allowance_spares_outputs_just_above_the_budget() -> None:
    assert truncate_text("x" * 120, BYTES) is None  # 100 bytes x 1.2
    result = truncate_text("x" * 121, BYTES)
    assert result is not None
    assert head_and_tail(result) == ("x" * 50, "x" * 50)
    assert result.removed == 21


def test_without_an_estimator_tokens_are_estimated_at_chars_per_token() -> None:
    policy = TruncationPolicy(max_tokens=100, chars_per_token=4.0)
    assert truncate_text("y" * 480, policy) is None  # 120 estimated tokens
    result = truncate_text("y" * 484, policy)  # 121
    assert result is not None
    assert (result.unit, result.removed) == ("tokens", 21)
    assert head_and_tail(result) == ("y" * 200, "y" * 200)


def test_mode_none_never_truncates() -> None:
    assert truncate_text("z" * 1_000_000, TruncationPolicy(mode="none")) is None


def test_header_counts_lines_like_a_reader() -> None:
    result = truncate_text("line\n" * 100, BYTES)
    assert result is not None
    assert result.original_lines == 100
    assert result.text.startswith("Total output lines: 100\n\n")


def test_small_output_is_never_tokenized() -> None:
    spy = SpyEstimator()
    assert truncate_text("a" * 5000, TruncationPolicy(), spy) is None
    assert spy.calls == []


def test_emoji_dense_text_is_counted_even_when_it_has_few_characters() -> None:
    # 300 characters but 600 tokens: a character count alone would wrongly skip it.
    text = "\U0001f9d1\u200d\U0001f4bb" * 100
    assert EXACT.count_text(text) > 360 >= len(text)
    result = truncate_text(text, TruncationPolicy(max_tokens=300), EXACT)
    assert result is not None
    head, tail = head_and_tail(result)
    assert text.startswith(head) and text.endswith(tail)


def test_large_output_is_cut_with_few_tokenizer_calls() -> None:
    text = shell_output(1500)
    spy = SpyEstimator()
    result = truncate_text(text, TruncationPolicy(), spy)
    assert result is not None
    assert len(spy.calls) <= 25
    assert sum(spy.calls) <= 4 * len(text)  # not a tokenization per probed character


_ALPHABET = st.one_of(
    st.characters(codec="utf-8", exclude_characters="…"),
    st.sampled_from(["中", "文", "\U0001f600", "\U0001f9d1", "\u200d", "\U0001f4bb", "\u0301"]),
    st.sampled_from(["\n", " ", "a", "e", "1"]),
)
_TEXTS = st.text(alphabet=_ALPHABET, max_size=1500)


@settings(max_examples=400, deadline=None)
@given(
    text=_TEXTS,
    max_bytes=st.integers(1, 400),
    allowance=st.floats(1.0, 2.0),
)
def test_bytes_mode_keeps_exact_halves_and_reports_the_exact_cut(
    text: str, max_bytes: int, allowance: float
) -> None:
    policy = TruncationPolicy(mode="bytes", max_bytes=max_bytes, serialization_allowance=allowance)
    result = truncate_text(text, policy)
    if utf8(text) <= max_bytes * allowance:
        assert result is None
        return
    assert result is not None
    head, tail = head_and_tail(result)
    middle_end = len(text) - len(tail)
    assert text[: len(head)] == head and text[middle_end:] == tail
    assert len(head) < middle_end
    # 50/50 split of the budget, each side as long as it can be without splitting a character.
    assert utf8(head) <= max_bytes // 2 < utf8(text[: len(head) + 1])
    assert utf8(tail) <= max_bytes - max_bytes // 2 < utf8(text[middle_end - 1 :])
    assert result.removed == utf8(text[len(head) : middle_end]) == utf8(text) - utf8(head + tail)
    assert utf8(result.text) <= max_bytes * allowance + utf8(header(result) + marker_line(result))
    assert result.original_lines == len(text.split("\n")) - text.endswith("\n")


@settings(max_examples=150, deadline=None)
@given(
    text=_TEXTS,
    max_tokens=st.integers(2, 300),
    allowance=st.floats(1.0, 1.5),
)
def test_tokens_mode_stays_within_budget_and_keeps_head_and_tail_verbatim(
    text: str, max_tokens: int, allowance: float
) -> None:
    policy = TruncationPolicy(max_tokens=max_tokens, serialization_allowance=allowance)
    result = truncate_text(text, policy, EXACT)
    total = EXACT.count_text(text)
    if total <= max_tokens * allowance:
        assert result is None
        return
    assert result is not None
    head, tail = head_and_tail(result)
    middle_end = len(text) - len(tail)
    assert text[: len(head)] == head and text[middle_end:] == tail
    assert len(head) < middle_end
    head_tokens, tail_tokens = EXACT.count_text(head), EXACT.count_text(tail)
    assert head_tokens <= max_tokens // 2
    assert tail_tokens <= max_tokens - max_tokens // 2
    assert result.removed == total - head_tokens - tail_tokens > 0
    # Header and marker cost their own tokens; BPE may also split each of the three seams
    # between the pieces differently from the pieces alone (at most a token per seam).
    overhead = EXACT.count_text(header(result)) + EXACT.count_text(marker_line(result)) + 3
    assert EXACT.count_text(result.text) <= max_tokens * allowance + overhead
    result.text.encode("utf-8")  # no lone surrogate was produced by a cut


# ------------------------------------------------------------------------------- items


def test_100kb_shell_output_is_cut_to_about_5000_tokens() -> None:
    text = shell_output(1500)
    assert utf8(text) > 100_000
    item = {"type": "local_shell_call_output", "call_id": "call_sh", "output": text}
    snapshot = copy.deepcopy(item)
    result = truncate_tool_output(item, TruncationPolicy(), EXACT)
    assert result is not None
    assert result.original is item and item == snapshot
    assert {k: v for k, v in result.item.items() if k != "output"} == {
        "type": "local_shell_call_output",
        "call_id": "call_sh",
    }
    output = result.item["output"]
    assert output.startswith("Total output lines: 1500\n\n-rw-r--r--")
    assert output.endswith(text[-40:])
    assert f"\n…{result.removed} tokens truncated…\n" in output
    assert 4900 <= EXACT.count_text(output) <= 5000 + 20
    assert result.removed >= EXACT.count_text(text) - 5000
    assert result.unit == "tokens"


@pytest.mark.parametrize(
    ("item", "key"),
    [
        ({"type": "function_call_output", "call_id": "c", "output": "x" * 200}, "output"),
        ({"type": "custom_tool_call_output", "call_id": "c", "output": "x" * 200}, "output"),
        ({"role": "tool", "tool_call_id": "c", "content": "x" * 200}, "content"),
    ],
)
def test_tool_outputs_of_both_formats_are_truncated(item: dict[str, Any], key: str) -> None:
    result = truncate_tool_output(item, BYTES)
    assert result is not None
    assert result.item[key] == "Total output lines: 1\n\n" + "x" * 50 + (
        "\n…100 bytes truncated…\n" + "x" * 50
    )
    assert (result.removed, result.unit) == (100, "bytes")
    assert item[key] == "x" * 200


@pytest.mark.parametrize(
    "item",
    [
        {"role": "user", "content": "x" * 500},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "x" * 500},
        {"type": "function_call_output", "call_id": "c", "output": "x" * 120},
        {"type": "computer_call_output", "call_id": "c", "output": {"image_url": "x" * 500}},
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "x" * 60}] * 2},
    ],
)
def test_other_items_and_outputs_within_the_limit_are_left_alone(item: dict[str, Any]) -> None:
    assert truncate_tool_output(item, BYTES) is None


def test_text_parts_share_the_budget_and_other_parts_are_kept() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 1000}
    item = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [
            {"type": "input_text", "text": "a" * 10},
            image,
            {"type": "input_text", "text": "b" * 500},
            {"type": "input_text", "text": "c" * 70},
            {"type": "input_text", "text": "d" * 30},
        ],
    }
    snapshot = copy.deepcopy(item)
    result = truncate_tool_output(item, BYTES)
    assert result is not None
    cut = "Total output lines: 1\n\n" + "b" * 45 + "\n…410 bytes truncated…\n" + "b" * 45
    assert result.item["output"] == [
        {"type": "input_text", "text": "a" * 10},
        image,
        {"type": "input_text", "text": cut},
        {"type": "input_text", "text": "…100 bytes truncated…"},
    ]
    assert result.removed == 410 + 100
    assert item == snapshot


def test_chat_content_parts_are_truncated() -> None:
    item = {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "q" * 300}]}
    result = truncate_tool_output(item, BYTES)
    assert result is not None
    [part] = result.item["content"]
    assert part["text"].endswith("\n…200 bytes truncated…\n" + "q" * 50)
    assert result.removed == 200


def test_a_huge_output_is_cut_counting_only_what_is_kept() -> None:
    text = shell_output(60_000)  # ~4 MB: counting all of it would tokenize 4 MB
    spy = SpyEstimator()
    item = {"type": "function_call_output", "call_id": "c", "output": text}
    result = truncate_tool_output(item, TruncationPolicy(), spy)
    assert result is not None and result.unit == "bytes"
    output = result.item["output"]
    assert output.startswith("Total output lines: 60000\n\n-rw-r--r--")
    assert output.endswith(text[-40:])
    assert EXACT.count_text(output) <= 5000 + 20
    head, tail = output.split(f"\n…{result.removed} bytes truncated…\n")
    kept = utf8(head.removeprefix("Total output lines: 60000\n\n")) + utf8(tail)
    assert result.removed == utf8(text) - kept
    assert sum(spy.calls) < len(text) / 10  # only windows at the two ends were tokenized
