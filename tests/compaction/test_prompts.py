"""Strategy templates, the transcript every summarizer sees, and the messages sent to a model."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sessionstore.compaction._summarizers._prompts import (
    BUILTIN_STRATEGIES,
    Strategy,
    build_messages,
    build_prompt,
    fill_template,
    render_transcript,
    resolve_strategy,
)
from sessionstore.compaction._summarizers._summarizer import SummaryRequest

NAMES = ("task_state", "brief", "decision_log", "code_delta", "step_ledger", "requirements_ledger")


def test_all_builtins_exist() -> None:
    assert set(BUILTIN_STRATEGIES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_template_forbids_invention_limits_tokens_and_updates(name: str) -> None:
    prompt = resolve_strategy(name).prompt
    assert "Do NOT invent details" in prompt
    assert "{max_tokens}" in prompt
    assert "UPDATE" in prompt and "PRIOR SUMMARY" in prompt
    assert "never call tools" in prompt


@pytest.mark.parametrize(
    ("name", "prd_line"),
    [
        ("task_state", "- Constraints (security, compliance, SLAs, budgets)"),
        ("task_state", "- Decisions taken + rationale"),
        ("decision_log", "[step_id] decision :: rationale :: inputs (brief) :: outputs (brief)"),
        ("decision_log", "Keep neutral tone. No restatements."),
        ("code_delta", "- file_path: summary of changes (functions, APIs touched, side effects)"),
        ("code_delta", "Focus on what changed, why, and follow-ups."),
    ],
)
def test_prd_section_6_texts_are_used(name: str, prd_line: str) -> None:
    assert prd_line in resolve_strategy(name).prompt


def test_custom_templates_override_and_extend() -> None:
    custom = {"task_state": "Mine, {max_tokens} max.", "triage": "Triage in {max_tokens}."}
    assert resolve_strategy("task_state", custom) == Strategy(
        "task_state", "Mine, {max_tokens} max."
    )
    assert resolve_strategy("triage", custom).prompt == "Triage in {max_tokens}."
    assert resolve_strategy("brief", custom).prompt == BUILTIN_STRATEGIES["brief"]


def test_unknown_strategy_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match="unknown summarization strategy 'nope'") as info:
        resolve_strategy("nope", {"triage": "x"})
    for name in (*NAMES, "triage"):
        assert name in str(info.value)


def test_strategy_is_frozen() -> None:
    strategy = resolve_strategy("brief")
    with pytest.raises(dataclasses.FrozenInstanceError):
        strategy.name = "other"  # type: ignore[misc]


def test_fill_template_leaves_other_braces_alone() -> None:
    assert fill_template('Reply as {"summary": ...} in {max_tokens}.', 250) == (
        'Reply as {"summary": ...} in 250.'
    )


def test_transcript_of_responses_items() -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": "Find the\n  bug."}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Search first."}]},
        {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": '{"q": "bug"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "src/a.py:3: bug"},
        {"type": "function_call_output", "call_id": "c0", "output": "orphan"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]},
    ]
    assert render_transcript(items) == "\n".join(
        [
            "[user] Find the bug.",
            "[reasoning] Search first.",
            '[tool call grep] {"q": "bug"}',
            "[tool output grep] src/a.py:3: bug",
            "[tool output] orphan",
            "[assistant] Found it.",
        ]
    )


def test_transcript_of_chat_completions_messages() -> None:
    call = {"id": "t1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "Be terse."},
        {"role": "assistant", "content": "Running.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "t1", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": [call | {"id": "t2"}]},
    ]
    assert render_transcript(items).splitlines() == [
        "[system] Be terse.",
        "[assistant] Running.",
        "[tool call run] {}",
        "[tool output run] ok",
        "[tool call run] {}",
    ]


def test_transcript_skips_odd_items_without_raising() -> None:
    items: list[Any] = [
        "not a mapping",
        {"role": "user", "content": None},
        {"role": "user", "content": [{"type": "input_image", "image_url": "x"}]},
        {"type": "function_call", "call_id": "c", "name": None, "arguments": {"a": 1}},
        {"tool_calls": "broken", "role": "assistant", "content": 7},
        {"role": "user", "content": "kept"},
    ]
    assert render_transcript(items).splitlines() == [
        '[tool call function_call] {"a": 1}',
        "[user] kept",
    ]


def _request(**changes: Any) -> SummaryRequest:
    base = SummaryRequest(
        items=[{"role": "user", "content": "Deploy to staging."}],
        prior_summary="## Goals\n- ship v2",
        strategy="task_state",
        instructions=resolve_strategy("task_state").prompt,
        max_tokens=321,
    )
    return dataclasses.replace(base, **changes)


def test_messages_are_a_system_prompt_and_a_user_prompt() -> None:
    messages = build_messages(_request())
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = build_prompt(_request())
    assert messages[0].get("content") == system and messages[1].get("content") == user
    assert "<= 321" not in system and "Stay within 321 tokens" in system
    assert "{max_tokens}" not in system
    assert "PRIOR SUMMARY (the current state: UPDATE it" in user
    assert "<prior_summary>\n## Goals\n- ship v2\n</prior_summary>" in user
    assert "<transcript>\n[user] Deploy to staging.\n</transcript>" in user
    assert user.index("<prior_summary>") < user.index("<transcript>")


def test_without_a_prior_summary_the_model_starts_fresh() -> None:
    _, user = build_prompt(_request(prior_summary=None))
    assert "PRIOR SUMMARY: none; start a new summary." in user
    assert "<prior_summary>" not in user


def test_keep_keys_are_listed_verbatim() -> None:
    _, user = build_prompt(_request(keep_keys=("Budget: 40h", "Owner: Ana")))
    assert "FACTS TO CARRY VERBATIM:\n- Budget: 40h\n- Owner: Ana" in user


def test_empty_instructions_fall_back_to_the_named_strategy() -> None:
    system, _ = build_prompt(_request(instructions="", strategy="code_delta"))
    assert system == fill_template(BUILTIN_STRATEGIES["code_delta"], 321)
