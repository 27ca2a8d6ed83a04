"""Templated-line collapse: one line per repeated template, its numbers as ranges."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from sessionstore.compaction._summarizers._collapse import collapse_lines, number_ranges


def test_consecutive_numbers_become_ranges() -> None:
    assert number_ranges([3, 1, 2, 7, 9, 10, 11, 12, 9]) == "1-3, 7, 9-12"
    assert number_ranges([5]) == "5"


def test_a_repeated_template_becomes_one_line_at_its_first_position() -> None:
    lines = ["Goal: ship v2."] + [f"Order {n} has shipped." for n in (7000, 7013, 7026)]
    lines.append("Refunds above 500 EUR need approval.")
    assert collapse_lines(lines) == [
        "Goal: ship v2.",
        "Order 7000, 7013, 7026 has shipped. (3 times)",
        "Refunds above 500 EUR need approval.",
    ]


def test_constant_numbers_stay_and_a_repeated_varying_number_is_listed_once() -> None:
    lines = [f'lookup {{"id": {n}}}: {{"id": {n}, "eta": 3}}' for n in (4, 5, 6)]
    assert collapse_lines(lines) == ['lookup {"id": 4-6}: {"id": …, "eta": 3} (3 times)']


def test_two_similar_lines_are_not_a_template() -> None:
    lines = ["Step 1 done.", "Step 2 done."]
    assert collapse_lines(lines) == lines


def test_a_very_long_run_names_its_first_and_last_values_and_counts_the_rest() -> None:
    lines = [f"Checked ticket {n * 2}." for n in range(200)]
    (line,) = collapse_lines(lines)
    assert line.startswith("Checked ticket 0, 2, 4,") and "398." in line
    assert "more" in line and line.endswith("(200 times)")


def named_numbers(line: str) -> set[int]:
    """The numbers a collapsed line names, ranges expanded."""
    named: set[int] = set()
    for low, high in re.findall(r"(\d+)(?:-(\d+))?", line):
        named.update(range(int(low), int(high or low) + 1))
    return named


@given(st.lists(st.tuples(st.sampled_from(["a", "b c", "d-e"]), st.integers(0, 50)), max_size=40))
def test_every_template_survives_and_every_number_is_named(pairs: list[tuple[str, int]]) -> None:
    lines = [f"{word} {number} end" for word, number in pairs]
    collapsed = collapse_lines(lines)
    assert len(collapsed) <= len(lines)
    for word, number in pairs:
        assert any(
            line.startswith(f"{word} ") and number in named_numbers(line) for line in collapsed
        )


def test_a_line_collapsed_in_an_earlier_round_absorbs_this_rounds_lines() -> None:
    earlier = "done: step 1-212, 215 (213 times)"
    lines = [earlier, "Goal: ship.", "done: step 213", "done: step 214"]
    assert collapse_lines(lines) == ["done: step 1-215 (215 times)", "Goal: ship."]
    # Two rounds' collapses merge, and a template seen twice in all is still no template.
    assert collapse_lines(["Fact 0-3. (4 times)", "Fact 4-7. (4 times)"]) == [
        "Fact 0-7. (8 times; next: 8)"
    ]
    assert collapse_lines(["Step 1 done.", "Step 2 done."]) == ["Step 1 done.", "Step 2 done."]


def test_a_progression_says_what_comes_next_and_nothing_else_does() -> None:
    steps = [f"Continue with step {step}: check item 17." for step in range(1, 213)]
    (line,) = collapse_lines(steps)
    assert line == "Continue with step 1-212: check item 17. (212 times; next: 213)"
    assert collapse_lines([line, "Continue with step 213: check item 17."]) == [
        "Continue with step 1-213: check item 17. (213 times; next: 214)"
    ]
    # Ids looked up one after another, a gap, or steps out of order are not progressions.
    orders = [f"Order {order} has shipped." for order in range(7000, 7040)]
    assert collapse_lines(orders) == ["Order 7000-7039 has shipped. (40 times)"]
    assert collapse_lines(["Step 1 done.", "Step 2 done.", "Step 4 done."]) == [
        "Step 1-2, 4 done. (3 times)"
    ]
    assert collapse_lines(["Step 2 done.", "Step 1 done.", "Step 3 done."]) == [
        "Step 1-3 done. (3 times)"
    ]


def test_when_several_numbers_vary_they_stay_aligned_line_by_line() -> None:
    lines = [f"Step {step}: latency is {ms} ms." for step, ms in ((0, 120), (6, 376), (12, 438))]
    assert collapse_lines(lines) == ["Step {0, 6, 12}: latency is {120, 376, 438} ms. (3 times)"]


def test_an_aligned_list_collapsed_again_is_flattened_and_capped() -> None:
    lines = [f"Batch {n} matched: {3 * n} bins." for n in range(180, 200)]
    (first,) = collapse_lines(lines)
    assert first.count("{") == 2 and "{{" not in first
    assert first.startswith("Batch {180, 181, …, 191,") and first.endswith("(20 times)")
    (again,) = collapse_lines(
        [first, "Batch 200 matched: 600 bins.", "Batch 201 matched: 603 bins."]
    )
    assert "{{" not in again and again.endswith("(22 times)")
    assert "200, 201}" in again and "600, 603}" in again  # the newest pairs, still aligned
    assert len(again) < 200
