"""Write-time truncation of large tool outputs (docs/COMPACTION.md, "Hygiene").

One `cat` or test run can return 100 KB, which then costs context on every later turn. Like
Codex, we keep the head (setup) and the tail (results) of an oversized output, cut the middle,
and say how much was cut. Outputs slightly over the limit are left alone: the serialization
allowance covers JSON-escaping overhead, so they are not cut for a few characters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._items import SLICE_CHARS, answered_call, role_of
from .._tokens import HeuristicEstimator, TokenEstimator

__all__ = [
    "TruncatedItem",
    "TruncatedText",
    "TruncationPolicy",
    "TruncationUnit",
    "truncate_text",
    "truncate_tool_output",
]

TruncationUnit = Literal["tokens", "bytes"]


class TruncationPolicy(BaseModel):
    """How large a tool output may be before its middle is cut."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["none", "bytes", "tokens"] = "tokens"
    max_tokens: Annotated[int, Field(gt=0)] = 5000
    max_bytes: Annotated[int, Field(gt=0)] = 20000
    # Cut only above budget x allowance: JSON escaping inflates outputs by up to ~20%.
    serialization_allowance: Annotated[float, Field(ge=1.0)] = 1.2
    # Rate of the heuristic used when no estimator is given; >= 1 keeps "a token covers at
    # least one UTF-8 byte" true, which lets small outputs skip counting.
    chars_per_token: Annotated[float, Field(ge=1.0)] = 4.0


@dataclass(frozen=True, slots=True)
class TruncatedText:
    """A cut text: header line, head, marker line, tail."""

    text: str
    removed: int  # tokens or bytes cut from the middle, in `unit`
    unit: TruncationUnit
    original_lines: int


@dataclass(frozen=True, slots=True)
class TruncatedItem:
    """A tool-output item with its output cut; `original` is kept for the archive."""

    item: dict[str, Any]
    original: Mapping[str, Any]
    removed: int
    unit: TruncationUnit


def truncate_text(
    text: str, policy: TruncationPolicy, estimator: TokenEstimator | None = None
) -> TruncatedText | None:
    """Cut `text` to 50% head + 50% tail of the budget, or None when it is within the limit.

    Without an estimator, tokens are estimated at `policy.chars_per_token`.
    """
    meter = _meter(policy, estimator)
    return None if meter is None else meter.truncate(text)


def truncate_tool_output(
    item: Mapping[str, Any], policy: TruncationPolicy, estimator: TokenEstimator | None = None
) -> TruncatedItem | None:
    """Cut the output of a tool-output item (Responses `*_output` or Chat `role: tool`).

    Returns None for other items, non-text outputs and outputs within the limit.
    """
    meter = _meter(policy, estimator)
    if meter is None or answered_call(item) is None:
        return None
    key = "content" if role_of(item) == "tool" else "output"
    value = item.get(key)
    if isinstance(value, str):
        cut = meter.truncate(value)
        if cut is None:
            return None
        new_value: str | list[Any] = cut.text
        removed, unit = cut.removed, cut.unit
    elif isinstance(value, list):
        parts = _truncate_parts(value, meter)
        if parts is None:
            return None
        new_value, removed = parts
        unit = meter.unit
    else:
        return None
    return TruncatedItem({**item, key: new_value}, item, removed, unit)


@dataclass(frozen=True, slots=True)
class _Meter:
    """Measures text in the policy's unit and cuts it."""

    unit: TruncationUnit
    budget: int
    limit: float
    size: Callable[[str], int]

    def may_exceed(self, texts: Sequence[str]) -> bool:
        """False when the texts surely fit, so the common small output is never tokenized.

        A token covers at least one UTF-8 byte (not always one character: an emoji can be 3
        tokens), so the byte length bounds both units; the character count, free to read,
        settles most large texts before any encoding.
        """
        return sum(map(len, texts)) > self.limit or sum(map(_utf8_len, texts)) > self.limit

    def truncate(self, text: str) -> TruncatedText | None:
        if not self.may_exceed((text,)):
            return None
        if self.unit == "tokens" and len(text) > max(_HUGE_CHARS, self.limit * _WINDOW_FACTOR):
            return self.cut_huge(text)
        size = self.size(text)
        return None if size <= self.limit else self.cut(text, size, self.budget)

    def marker(self, removed: int, unit: TruncationUnit | None = None) -> str:
        return f"…{removed} {unit or self.unit} truncated…"

    def cut_huge(self, text: str) -> TruncatedText:
        """Cut a text far above the limit counting only what is kept (tokenizing all of a
        50 MB output took longer than everything else an append does): the head and tail
        are fitted within windows at the ends, and what was removed is reported in bytes."""
        window = int(self.limit * _WINDOW_FACTOR)
        head_text, tail_text = text[:window], text[-window:]
        head_budget = self.budget // 2
        head_len, _ = _longest_fit(
            window, self.size(head_text), head_budget, lambda n: self.size(head_text[:n])
        )
        tail_len, _ = _longest_fit(
            window,
            self.size(tail_text),
            self.budget - head_budget,
            lambda n: self.size(tail_text[window - n :]),
        )
        head, tail = text[:head_len], text[len(text) - tail_len :]
        removed = _utf8_len(text) - _utf8_len(head) - _utf8_len(tail)
        lines = _line_count(text)
        body = f"{head}\n{self.marker(removed, 'bytes')}\n{tail}"
        return TruncatedText(f"Total output lines: {lines}\n\n{body}", removed, "bytes", lines)

    def cut(self, text: str, size: int, budget: int) -> TruncatedText:
        """Keep the longest head within budget/2 and tail within the rest; `size` > budget."""
        head_budget = budget // 2
        tail_budget = budget - head_budget
        head_len, head_size = _longest_fit(
            len(text), size, head_budget, lambda n: self.size(text[:n])
        )
        rest = text[head_len:]
        # Sizes are nearly additive: the estimate only steers the search unless the rest may fit.
        rest_size = size - head_size
        if rest_size <= tail_budget:
            rest_size = self.size(rest)
        tail_len, tail_size = _longest_fit(
            len(rest), rest_size, tail_budget, lambda n: self.size(rest[len(rest) - n :])
        )
        removed = size - head_size - tail_size
        lines = _line_count(text)
        body = f"{text[:head_len]}\n{self.marker(removed)}\n{rest[len(rest) - tail_len :]}"
        return TruncatedText(f"Total output lines: {lines}\n\n{body}", removed, self.unit, lines)


# A text of more than _HUGE_CHARS characters (counting it takes over ~100 ms) is cut
# without counting it whole: its head and tail are fitted within windows of
# _WINDOW_FACTOR x the limit at its ends. A window holds half the budget unless the text
# averages ~10 characters a token (long runs of one character); then the window, within
# the budget, is kept whole.
_HUGE_CHARS: Final = 1_000_000
_WINDOW_FACTOR: Final = 4


def _meter(policy: TruncationPolicy, estimator: TokenEstimator | None) -> _Meter | None:
    if policy.mode == "none":
        return None
    if policy.mode == "bytes":
        budget, size = policy.max_bytes, _utf8_len
    else:
        counter = estimator or HeuristicEstimator(policy.chars_per_token)
        budget, size = policy.max_tokens, counter.count_text
    unit: TruncationUnit = "bytes" if policy.mode == "bytes" else "tokens"
    return _Meter(unit, budget, budget * policy.serialization_allowance, size)


def _truncate_parts(parts: list[Any], meter: _Meter) -> tuple[list[Any], int] | None:
    """Keep text parts in order while the budget lasts, cut the one that crosses it and replace
    the rest with one marker part; non-text parts (images, files) are always kept."""
    texts = [part["text"] for part in parts if _is_text_part(part)]
    if not meter.may_exceed(texts):
        return None
    sizes = [meter.size(text) for text in texts]
    if sum(sizes) <= meter.limit:
        return None
    size_of_next = iter(sizes)
    remaining = meter.budget
    kept: list[Any] = []
    removed = dropped = 0
    marker_at: tuple[int, Mapping[str, Any]] | None = None
    for part in parts:
        if not _is_text_part(part):
            kept.append(part)
            continue
        size = next(size_of_next)
        if size <= remaining:
            kept.append(part)
            remaining -= size
        elif remaining > 0:
            cut = meter.cut(part["text"], size, remaining)
            kept.append({**part, "text": cut.text})
            removed += cut.removed
            remaining = 0
        else:
            marker_at = marker_at or (len(kept), part)
            dropped += size
    if marker_at is not None:
        index, first_dropped = marker_at
        kept.insert(index, {**first_dropped, "text": meter.marker(dropped)})
    return kept, removed + dropped


def _is_text_part(part: object) -> bool:
    return isinstance(part, Mapping) and isinstance(part.get("text"), str)


def _utf8_len(text: str) -> int:
    """UTF-8 length; a huge text a slice at a time (one encode of 50 MB held the GIL, and
    so stalled the event loop, for ~80 ms). surrogatepass: a lone surrogate (from odd JSON)
    must be measured, not raise."""
    if text.isascii():
        return len(text)
    if len(text) <= SLICE_CHARS:
        return len(text.encode("utf-8", "surrogatepass"))
    return sum(
        len(text[start : start + SLICE_CHARS].encode("utf-8", "surrogatepass"))
        for start in range(0, len(text), SLICE_CHARS)
    )


def _line_count(text: str) -> int:
    """Lines as a reader counts them: a trailing newline does not start another line."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _longest_fit(
    length: int, total: int, budget: int, size_of: Callable[[int], int]
) -> tuple[int, int]:
    """The largest n <= length with size_of(n) <= budget, and that size (size_of(length) is
    `total`, size_of(0) is 0).

    Size grows about linearly with n, so interpolating between the bracketing probes lands near
    the cut in a few probes (each probe tokenizes a prefix); bisecting whenever the same bound
    moves twice in a row keeps the worst case logarithmic.
    """
    if total <= budget:
        return length, total
    lo, lo_size, hi, hi_size = 0, 0, length, total
    last_fit, streak = False, 0
    while hi - lo > 1 and lo_size < budget:
        if streak >= 2:
            probe = (lo + hi) // 2
        else:
            probe = lo + (budget - lo_size) * (hi - lo) // (hi_size - lo_size)
        probe = min(max(probe, lo + 1), hi - 1)
        probe_size = size_of(probe)
        fit = probe_size <= budget
        if fit:
            lo, lo_size = probe, probe_size
        else:
            hi, hi_size = probe, probe_size
        streak = streak + 1 if fit == last_fit else 1
        last_fit = fit
    return lo, lo_size
