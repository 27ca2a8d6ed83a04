"""Integers as runs."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._ranges import runs, spans


def test_runs_are_sorted_deduplicated_ranges() -> None:
    assert runs([3, 1, 2, 7, 9, 10, 11, 12, 9]) == ["1-3", "7", "9-12"]
    assert runs([5]) == ["5"] and runs([]) == []
    assert spans([3, 1, 2, 7, 9, 10]) == [(1, 3), (7, 7), (9, 10)] and spans([]) == []


@given(st.sets(st.integers(min_value=0, max_value=200)))
def test_runs_name_exactly_the_values(values: set[int]) -> None:
    named: list[int] = []
    for run in runs(values):
        low, _, high = run.partition("-")
        named.extend(range(int(low), int(high or low) + 1))
    assert named == sorted(values)  # each value once, in order


@given(st.lists(st.integers(min_value=-50, max_value=200)))
def test_spans_hold_exactly_the_values_and_are_as_few_as_can_be(values: list[int]) -> None:
    found = spans(values)
    named = [value for first, last in found for value in range(first, last + 1)]
    assert named == sorted(set(values))  # each value once, in order
    # Maximal: no two spans touch, so none could be merged.
    assert all(later[0] > earlier[1] + 1 for earlier, later in pairwise(found))
