"""Triggers and budgets (docs/COMPACTION.md, "Triggers")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from sessionstore.compaction._policy import CompactionPolicy, decide


def test_defaults_are_spec_002s() -> None:
    policy = CompactionPolicy()
    assert (policy.trigger_pct, policy.hard_cap_buffer) == (0.85, 1500)
    assert (policy.keep_recent_turns, policy.keep_tool_io_pairs) == (6, 4)
    assert policy.roles_never_prune == ("system", "developer")
    assert (policy.protected_flag, policy.strategy) == ("protected", "task_state")


def test_budget_is_window_minus_buffer() -> None:
    assert CompactionPolicy().budget(128_000) == 126_500


def test_triggers_at_85_percent() -> None:
    decision = decide(108_800, 128_000, CompactionPolicy())
    assert decision.triggered and decision.reason == "threshold"
    assert decision.usage_pct == pytest.approx(0.85)


def test_does_not_trigger_at_75_percent() -> None:
    decision = decide(96_000, 128_000, CompactionPolicy())
    assert not decision.triggered and decision.reason == "none"


def test_tokens_left_below_buffer_triggers_even_with_a_high_percentage() -> None:
    policy = CompactionPolicy(trigger_pct=1.0, hard_cap_buffer=2_000)
    assert decide(126_001, 128_000, policy).reason == "tokens_left"
    assert not decide(126_000, 128_000, policy).triggered


def test_soft_and_hard_dual_threshold() -> None:
    policy = CompactionPolicy(trigger_pct=1.0, soft_limit_tokens=60_000, hard_limit_tokens=90_000)
    assert decide(60_000, 128_000, policy).reason == "soft_limit"
    assert not decide(59_999, 128_000, policy).triggered
    assert policy.ceiling(128_000) == 90_000
    assert policy.target(128_000) == 59_999


def test_manual_and_overflow_always_trigger() -> None:
    assert decide(10, 128_000, CompactionPolicy(), forced="manual").reason == "manual"
    assert decide(10, 128_000, CompactionPolicy(), forced="overflow").triggered


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trigger_pct", 1.5),
        ("trigger_pct", -0.1),
        ("hard_cap_buffer", -1),
        ("keep_recent_turns", -1),
        ("summary_max_tokens", 0),
        ("summary_role", "system"),
        ("unknown_field", 1),
    ],
)
def test_invalid_policies_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        CompactionPolicy(**{field: value})
    assert field in str(caught.value)


def test_soft_limit_above_hard_limit_is_rejected() -> None:
    with pytest.raises(ValidationError, match="soft_limit_tokens"):
        CompactionPolicy(soft_limit_tokens=10_000, hard_limit_tokens=5_000)


@given(
    pct=st.floats(min_value=0.05, max_value=1.0),
    window=st.integers(min_value=1_000, max_value=2_000_000),
    buffer=st.integers(min_value=0, max_value=900),
)
def test_target_is_below_the_trigger_and_within_budget(
    pct: float, window: int, buffer: int
) -> None:
    policy = CompactionPolicy(trigger_pct=pct, hard_cap_buffer=buffer)
    target = policy.target(window)
    assert target <= policy.budget(window)
    assert not decide(target, window, policy).triggered


def test_the_summary_allowance_scales_with_the_window_unless_fixed() -> None:
    policy = CompactionPolicy()
    assert policy.summary_allowance(16_000) == 2048  # small windows keep the old default
    assert policy.summary_allowance(200_000) == 6000
    assert policy.summary_allowance(1_000_000) == 16_384
    assert CompactionPolicy(summary_max_tokens=500).summary_allowance(1_000_000) == 500
