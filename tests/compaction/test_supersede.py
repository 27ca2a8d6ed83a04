"""Superseded facts: a later statement that retracts or replaces a standing fact."""

from __future__ import annotations

import pytest

from sessionstore.compaction._summarizers._supersede import superseding

GOAL = "Customer wants to refund order 7697 before Friday."
CONSTRAINT = "Policy reminder: refunds above 500 EUR need manager approval."
ARTIFACT = "The dataset file is corpus-v3.parquet."
DECISION = "We chose PostgreSQL because it has JSONB."


@pytest.mark.parametrize(
    ("fact", "statement"),
    [
        (GOAL, "Cancel the refund of order 7697, the customer keeps it."),
        (CONSTRAINT, "The approval limit for refunds changed to 800 EUR."),
        (CONSTRAINT, "Refunds above 500 EUR no longer need manager approval."),
        (ARTIFACT, "Use corpus-v4.parquet instead of corpus-v3.parquet."),
        (DECISION, "Scratch that: we replace PostgreSQL with SQLite, JSONB is not needed."),
    ],
)
def test_a_retraction_about_the_same_thing_supersedes(fact: str, statement: str) -> None:
    assert superseding(fact, ["Look up order 1234.", statement, "Thanks."]) == statement


@pytest.mark.parametrize(
    ("fact", "statement"),
    [
        (GOAL, "Order 7697 is now shipped."),  # news about it, no retraction
        (GOAL, "Look up order 7697 again."),
        (GOAL, "Cancel the meeting on Thursday."),  # a retraction of something else
        (CONSTRAINT, "Continue with step 212: check item 17."),
        (ARTIFACT, "Check XX69334 instead."),
        (DECISION, "The deploy was cancelled because of the storm."),
    ],
)
def test_news_or_a_retraction_of_something_else_does_not(fact: str, statement: str) -> None:
    assert superseding(fact, [statement]) is None


def test_the_last_retraction_wins_and_the_fact_itself_is_no_retraction() -> None:
    first = "Refunds above 500 EUR no longer need manager approval; the limit is 600 EUR."
    second = "The refund approval limit changed to 900 EUR instead."
    assert superseding(CONSTRAINT, [first, second]) == second
    assert superseding(CONSTRAINT, [CONSTRAINT]) is None
