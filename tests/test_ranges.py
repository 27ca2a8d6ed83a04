"""Integers as runs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._ranges import runs


def test_runs_are_sorted_deduplicated_ranges() -> None:
    assert runs([3, 1, 2, 7, 9, 10, 11, 12, 9]) == ["1-3", "7", "9-12"]
    assert runs([5]) == ["5"] and runs([]) == []


@given(st.sets(st.integers(min_value=0, max_value=200)))
def test_runs_name_exactly_the_values(values: set[int]) -> None:
    named: list[int] = []
    for run in runs(values):
        low, _, high = run.partition("-")
        named.extend(range(int(low), int(high or low) + 1))
    assert named == sorted(values)  # each value once, in order
