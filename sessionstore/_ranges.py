"""Integers written as runs: `1-3, 7, 9-12`, for messages that name many seqs or steps."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["runs"]


def runs(values: Iterable[int]) -> list[str]:
    """[1, 2, 3, 7, 9, 10] -> ["1-3", "7", "9-10"]: sorted, duplicates dropped, consecutive
    values as one range."""
    ordered = sorted(set(values))
    if not ordered:
        return []
    found: list[str] = []
    start = previous = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        found.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    return found
