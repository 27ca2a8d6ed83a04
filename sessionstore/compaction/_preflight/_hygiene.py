"""Context hygiene run on the prompt copy before every model call (docs/COMPACTION.md).

Stored history can hold a tool call without its output (the run was interrupted) or an output
whose call was compacted away; either makes the model API reject the whole request. Repairing the
copy sent to the model (like Codex's normalize.rs) keeps the stored history exactly as it happened.
Inputs are never mutated: unchanged items are shared, changed ones are copied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from ..._items import answered_call, calls_in, role_of

__all__ = [
    "ABORTED_OUTPUT",
    "HygieneScan",
    "NormalizeReport",
    "normalize",
]

Item = dict[str, Any]
ItemT = TypeVar("ItemT", bound=Mapping[str, Any])  # SDK TypedDicts and plain dicts alike

ABORTED_OUTPUT: Final = "aborted"

# Responses call types whose output can be synthesized validly, with the output's fixed fields.
# Others (computer_call needs a screenshot, shell_call structured outcomes) have their orphan
# calls dropped instead.
_SYNTHETIC_OUTPUT_FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "function_call": {"type": "function_call_output"},
    "custom_tool_call": {"type": "custom_tool_call_output"},
    "local_shell_call": {"type": "local_shell_call_output"},
    "apply_patch_call": {"type": "apply_patch_call_output", "status": "failed"},
}

# Users mark items with meta={"protected": True}; the model API must never see the key.
_PRIVATE_KEY: Final = "meta"


@dataclass(frozen=True, slots=True)
class NormalizeReport:
    """The items to send plus what was repaired, so callers can record malformed history."""

    items: list[Item]
    synthesized: tuple[str, ...] = ()  # call ids given an "aborted" output
    dropped_outputs: tuple[str, ...] = ()  # outputs answering no earlier unanswered call
    dropped_calls: tuple[str, ...] = ()  # call ids of orphan calls whose output can't be faked

    @property
    def changed(self) -> bool:
        """True when tool pairs were repaired; stripping `meta` is routine and not counted."""
        return bool(self.synthesized or self.dropped_outputs or self.dropped_calls)


def normalize(
    items: Sequence[Mapping[str, Any]], scan: HygieneScan | None = None
) -> NormalizeReport:
    """Strip private keys, drop orphan outputs, then give every unanswered call an output.

    `scan` is `HygieneScan().extend(items)` when the caller kept it as its items grew (the
    pre-flight does), so a clean input is not scanned again."""
    if (HygieneScan().extend(items) if scan is None else scan).clean:
        return NormalizeReport(items=list(items))  # type: ignore[arg-type]  # plain dicts
    public = [_public(item) for item in items]
    kept, dropped_outputs = _remove_orphan_outputs(public)
    repaired, synthesized, dropped_calls = _ensure_call_outputs_present(kept)
    return NormalizeReport(
        items=repaired,
        synthesized=tuple(synthesized),
        dropped_outputs=tuple(dropped_outputs),
        dropped_calls=tuple(dropped_calls),
    )


@dataclass(frozen=True, slots=True)
class HygieneScan:
    """What one cheap pass learned about a list of items, kept so the list can grow without
    being scanned again: whether everything so far was usual (plain dicts, no `meta`, every
    output answering an earlier open call, no call id reused while open), and the calls still
    open. Anything unusual (or merely unfamiliar) ends the fast path: `normalize` repairs."""

    usual: bool = True
    open_calls: frozenset[str] = frozenset()

    @property
    def clean(self) -> bool:
        """Nothing to repair: usual, and every call answered."""
        return self.usual and not self.open_calls

    def extend(self, items: Iterable[Mapping[str, Any]]) -> HygieneScan:
        """The scan of the scanned items followed by `items` (O(len(items)))."""
        if not self.usual:
            return self
        pending = set(self.open_calls)
        for item in items:
            if type(item) is not dict or _PRIVATE_KEY in item:
                return _UNUSUAL
            answered = answered_call(item)
            if answered is not None:
                if answered not in pending:
                    return _UNUSUAL
                pending.discard(answered)
                continue
            for call_id in calls_in(item):
                if call_id in pending:
                    return _UNUSUAL
                pending.add(call_id)
        return HygieneScan(open_calls=frozenset(pending))


_UNUSUAL: Final = HygieneScan(usual=False)


def _public(item: Mapping[str, Any]) -> Item:
    """The item as the model may see it: a dict without `meta`, copied only when needed."""
    if isinstance(item, dict) and _PRIVATE_KEY not in item:
        return item
    return {key: value for key, value in item.items() if key != _PRIVATE_KEY}


def _remove_orphan_outputs(items: Sequence[ItemT]) -> tuple[list[ItemT], list[str]]:
    # A multiset, so a duplicate answer is dropped like an orphan and repeated ids stay paired.
    pending: Counter[str] = Counter()
    kept: list[ItemT] = []
    dropped: list[str] = []
    for item in items:
        answer = answered_call(item)
        if answer is not None:
            if not pending[answer]:
                dropped.append(answer)
                continue
            pending[answer] -= 1
        pending.update(calls_in(item))
        kept.append(item)
    return kept, dropped


def _ensure_call_outputs_present(
    items: Sequence[ItemT],
) -> tuple[list[ItemT | Item], list[str], list[str]]:
    missing = _unanswered_calls(items)
    inserts: dict[int, list[Item]] = {}
    dropped_at: set[int] = set()
    synthesized: list[str] = []
    dropped: list[str] = []
    for index in sorted(missing):
        outputs = _aborted_outputs(items[index], missing[index])
        if outputs is None:
            dropped_at.add(index)
            dropped.extend(missing[index])
        else:
            inserts.setdefault(_block_end(items, index), []).extend(outputs)
            synthesized.extend(missing[index])
    repaired: list[ItemT | Item] = []
    for index, item in enumerate(items):
        if index not in dropped_at:
            repaired.append(item)
        repaired.extend(inserts.get(index, ()))
    return repaired, synthesized, dropped


def _unanswered_calls(items: Sequence[Mapping[str, Any]]) -> dict[int, list[str]]:
    """Index -> call ids of that item that no later output answers (each output answers one)."""
    later: Counter[str] = Counter()
    missing: dict[int, list[str]] = {}
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        unanswered = []
        for call_id in calls_in(item):
            if later[call_id]:
                later[call_id] -= 1
            else:
                unanswered.append(call_id)
        if unanswered:
            missing[index] = unanswered
        answer = answered_call(item)
        if answer is not None:
            later[answer] += 1
    return missing


def _aborted_outputs(call: Mapping[str, Any], call_ids: list[str]) -> list[Item] | None:
    """Outputs answering `call_ids` of `call`, or None when its type has no valid fake output."""
    if role_of(call) is not None:  # Chat Completions assistant message with tool_calls
        return [
            {"role": "tool", "tool_call_id": call_id, "content": ABORTED_OUTPUT}
            for call_id in call_ids
        ]
    kind = call.get("type")
    fields = _SYNTHETIC_OUTPUT_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return None
    return [{**fields, "call_id": call_id, "output": ABORTED_OUTPUT} for call_id in call_ids]


def _is_responses_call(item: Mapping[str, Any]) -> bool:
    return role_of(item) is None and bool(calls_in(item))


def _block_end(items: Sequence[Mapping[str, Any]], index: int) -> int:
    """Where a synthetic output goes: after the run of parallel Responses calls the call belongs
    to (a Chat assistant message is its own run) and any outputs already following it."""
    end = index
    if role_of(items[index]) is None:
        while end + 1 < len(items) and _is_responses_call(items[end + 1]):
            end += 1
    while end + 1 < len(items) and answered_call(items[end + 1]) is not None:
        end += 1
    return end
