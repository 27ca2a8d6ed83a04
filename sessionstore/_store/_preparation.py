"""Preparing a batch: the CPU work of an append (validate, encode, describe, count) and the
write-time truncation asked about each item on the way, done once for every writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from .._items import (
    ItemInfo,
    call_names_in,
    check_item_size,
    check_typed_columns,
    describe,
    encode_payload,
)
from .._tokens import TokenEstimator

__all__ = ["PREPARE_INLINE_MAX_CHARS", "Truncation", "prepare_items"]

# Preparing this much text (validate, encode, count) takes ~10 ms; a batch with more is
# prepared on a worker thread so the event loop keeps serving other tasks.
PREPARE_INLINE_MAX_CHARS: Final = 64 * 1024


class Truncation(Protocol):
    """Write-time truncation applied to a batch on its way in (a `CompactionManager` is one):
    the store asks it about each item while it prepares the batch, so every item is checked
    once and the caller has one door, `append`."""

    def truncate_item(
        self, item: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """(the item to store, the original to archive whole), or None to store it as is."""
        ...

    def items_truncated(self, session_id: str) -> None:
        """Told once a batch holding truncated items is stored (a caller's copy is stale)."""
        ...


def prepare_items(
    items: Sequence[Mapping[str, Any]],
    truncation: Truncation | None,
    limit: int,
    estimator: TokenEstimator,
) -> tuple[list[str], list[ItemInfo], list[int], dict[int, Mapping[str, Any]]]:
    """Validate, encode, describe and count a batch (the CPU work of an append), with the
    originals of the items `truncation` cut, by index."""
    originals: dict[int, Mapping[str, Any]] = {}
    if truncation is not None:
        items = list(items)
        for index, item in enumerate(items):
            if type(item) is not dict and not isinstance(item, Mapping):
                continue  # encode_payload says why it is no item
            cut = truncation.truncate_item(item)
            if cut is not None:
                check_item_size(item, index, limit)  # the original is archived whole
                items[index], originals[index] = cut
    payloads = [encode_payload(item, index, limit) for index, item in enumerate(items)]
    names = call_names_in(items)  # validated above: every item is a mapping
    infos = [check_typed_columns(describe(item, names), n) for n, item in enumerate(items)]
    return payloads, infos, [estimator.count_item(item) for item in items], originals
