"""Integers as runs of consecutive values: `[(1, 3), (7, 7)]` to store, `1-3, 7` to print."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["runs", "spans"]


def spans(values: Iterable[int]) -> list[tuple[int, int]]:
    """[1, 2, 3, 7, 9, 10] -> [(1, 3), (7, 7), (9, 10)]: sorted, duplicates dropped,
    consecutive values as one (first, last) pair."""
    ordered = sorted(set(values))
    if not ordered:
        return []
    found: list[tuple[int, int]] = []
    start = previous = ordered[0]
    for value in ordered[1:]:
        if value != previous + 1:
            found.append((start, previous))
            start = value
        previous = value
    found.append((start, previous))
    return found


def runs(values: Iterable[int]) -> list[str]:
    """[1, 2, 3, 7, 9, 10] -> ["1-3", "7", "9-10"]: `spans` written for people."""
    return [str(first) if first == last else f"{first}-{last}" for first, last in spans(values)]
