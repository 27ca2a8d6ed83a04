"""What the pre-flight learned about a model input, kept as the input grows.

The SDK builds every model input anew: a fresh copy of the loaded history, then the run's
items. Before each call we need the input's `input_sha256` and its hygiene scan; both
stream, so they are kept for the items seen so far, with private copies of those items
(their own containers around the items' strings). When the next input starts with equal
items (one comparison in C) only the rest is encoded, hashed and scanned; anything else
starts over, so a wrong memo can cost time but never change a digest. `==` cannot tell 1
from 1.0 or True, whose JSON differs: items holding numbers are also compared by their
canonical JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..._items import InputDigest, canonical_json
from ...compaction import HygieneScan, Masker, MaskScan, is_opaque


@dataclass(frozen=True, slots=True)
class InputMemo:
    """The digest and hygiene scan of `seen`, private copies of the items of an input."""

    seen: list[dict[str, Any]] = field(default_factory=list)
    digest: InputDigest = field(default_factory=InputDigest)
    scan: HygieneScan = field(default_factory=HygieneScan)
    numeric: Mapping[int, str] = field(default_factory=dict)  # index -> canonical JSON
    masks: MaskScan = field(default_factory=MaskScan)  # its user messages and tool outputs
    # Whether an item seen is a provider's opaque compaction item (only new items are looked
    # at, so the pre-flight checks its binding without a pass over the whole input).
    opaque: bool = False

    def advance(self, items: Sequence[Mapping[str, Any]]) -> InputMemo:
        """The memo of `items`: this one extended if they start with its items, else anew."""
        if self._prefix_of(items):
            return self._extended(items[len(self.seen) :])
        return InputMemo()._extended(items)

    def grown(self, items: Sequence[Mapping[str, Any]]) -> InputMemo:
        """The memo of `items`, which the caller knows start with this memo's items."""
        return self._extended(items[len(self.seen) :])

    def _prefix_of(self, items: Sequence[Mapping[str, Any]]) -> bool:
        known = len(self.seen)
        return (
            len(items) >= known
            and items[:known] == self.seen
            and all(canonical_json(items[index]) == text for index, text in self.numeric.items())
        )

    def _extended(self, items: Sequence[Mapping[str, Any]]) -> InputMemo:
        if not items:
            return self
        seen = list(self.seen)
        digest = self.digest.copy()
        numeric = dict(self.numeric)
        opaque = self.opaque
        for item in items:
            opaque = opaque or is_opaque(item)
            text = canonical_json(item)  # raises for what JSON cannot hold, as input_sha256 does
            digest.add(text)
            copy = _private_copy(item, text)
            if _holds_numbers(copy):
                numeric[len(seen)] = text
            seen.append(copy)
        masks = self.masks.extend(items)
        return InputMemo(seen, digest, self.scan.extend(items), numeric, masks, opaque)


_LEAVES: Final = (str, int, float, bool, type(None))
_NOT_JSON: Final = object()  # a part JSON would change: the copy comes from the text


def _private_copy(item: Mapping[str, Any], text: str) -> dict[str, Any]:
    """A copy of `item` whose containers are its own and whose strings are the item's.

    The SDK's next input is a deep copy of the same history, which shares those strings:
    comparing it with the memo then finds each string identical without reading it (at
    2,200 items, 0.37 -> 0.19 ms for the prefix comparison). Anything JSON would change (a
    key that is not a string, a value not exactly of JSON's types: a tuple, a str subclass)
    is copied from its JSON text instead, so `==` with the copy still means equal JSON but
    for the numbers `numeric` checks.
    """
    copied = _shared_strings(item)
    if copied is _NOT_JSON:
        copied = json.loads(text)
    assert isinstance(copied, dict)
    return copied


def _shared_strings(value: Any) -> Any:
    """`value` with new dicts and lists around the same leaves, or _NOT_JSON."""
    if type(value) in _LEAVES:
        return value
    if isinstance(value, dict):
        copied = {key: _shared_strings(item) for key, item in value.items()}
        if any(type(key) is not str or item is _NOT_JSON for key, item in copied.items()):
            return _NOT_JSON
        return copied
    if type(value) is list:
        items = [_shared_strings(item) for item in value]
        return _NOT_JSON if any(item is _NOT_JSON for item in items) else items
    return _NOT_JSON


def _holds_numbers(value: object) -> bool:
    """True if a decoded JSON value holds a number or a boolean anywhere."""
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
        elif node is not None and type(node) is not str:
            return True
    return False


class MemoSlot:
    """Where a session keeps its memo between model calls and runs (swapped, not mutated,
    so runs of one session in two tasks at worst start over)."""

    def __init__(self) -> None:
        self.memo = InputMemo()
        self.view = InputMemo()  # of the masked input sent, when masking changed it
        self.view_of: object = None  # the plain inputs `view` follows (their MaskScan's)
        self.masker: Masker | None = None  # the session's masked chunks (docs/COMPACTION.md)

    def advance(self, items: Sequence[Mapping[str, Any]]) -> InputMemo:
        self.memo = self.memo.advance(items)
        return self.memo
