"""The demo scenario on both backends: what it shows must be true."""

from __future__ import annotations

from sessionstore.cli._demo_scenario import PROMPTS, LongSessionReport, run_demo, run_long_session
from sessionstore.compaction import CompactionPolicy


async def test_demo_reloads_the_identical_context_after_restart(db_url: str) -> None:
    result = await run_demo(db_url)
    assert len(result.answers) == len(PROMPTS)
    assert "Lyon" in result.answers[2]
    assert result.context_after_restart == result.context_before_restart
    assert result.tokens_after_restart == result.tokens_before_restart > 0
    assert result.tokens_before_restart == sum(row.tokens for row in result.rows)
    assert result.tool_calls == [("get_weather", 2)]
    kinds = [row.item_type for row in result.rows]
    assert kinds.count("function_call") == kinds.count("function_call_output") == 2


async def test_running_the_demo_twice_starts_fresh_but_keeps_history(db_url: str) -> None:
    first = await run_demo(db_url)
    second = await run_demo(db_url)
    assert second.context_after_restart == first.context_after_restart
    assert second.rows[0].seq > first.rows[-1].seq  # history kept, context restarted
    assert second.tool_calls == [("get_weather", 4)]


def assert_long_session_stayed_in_budget(report: LongSessionReport, window: int) -> None:
    """The synthetic long session (docs/QUALITY.md): rounds, nothing ever over the budget."""
    budget = CompactionPolicy().budget(window)  # the demo's manager runs the default policy
    assert report.traffic_tokens >= 3 * window
    assert report.largest_model_input <= budget  # every model input, tool loops included
    assert report.final_context_tokens <= budget
    assert len(report.compactions) >= 3
    assert all(row.tokens_after < row.tokens_before for row in report.compactions)
    assert all(row.tokens_after <= budget for row in report.compactions)
    assert [row.version for row in report.compactions] == list(
        range(1, len(report.compactions) + 1)
    )
    assert report.summary_preview.startswith(f"<COMPACT-SUMMARY v{len(report.compactions)}>")


async def test_long_session_goes_through_three_windows_without_overflow(db_url: str) -> None:
    report = await run_long_session(db_url, window=8_000, factor=3)
    assert_long_session_stayed_in_budget(report, 8_000)
