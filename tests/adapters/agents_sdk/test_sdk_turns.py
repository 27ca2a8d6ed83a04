"""AdvancedSQLiteSession's turn readers on SQLSession give the SDK's results for the same
Runner conversation, `branch_id` included, on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from sessionstore import SessionStore, SQLSession
from tests.support.sdk_runs import both_holding, converse, side_by_side

PROMPTS = ("hi", "what is the weather in Paris?", "thanks")


def _without_timestamps(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in turn.items() if k != "timestamp"} for turn in turns]


async def test_get_conversation_by_turns_matches_the_sdk(db_url: str, tmp_path: Path) -> None:
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, _):
        expected = await theirs.get_conversation_by_turns()
        got = await ours.get_conversation_by_turns()
        assert got == expected
        assert sorted(got) == [1, 2, 3]
        assert got[2][:2] == [  # the tool round trip, with the tool's name on the call
            {"type": "user", "tool_name": None},
            {"type": "function_call", "tool_name": "get_weather"},
        ]


async def test_turn_readers_take_the_branch_id_like_the_sdk(db_url: str, tmp_path: Path) -> None:
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, _):
        for session in (theirs, ours):
            await session.create_branch_from_turn(2, "retry")
            await converse(session, ["tell me a joke"])
            await session.switch_to_branch("main")
        for branch in ("main", "retry", None):
            assert _without_timestamps(
                await ours.get_conversation_turns(branch)
            ) == _without_timestamps(await theirs.get_conversation_turns(branch))
            assert await ours.get_conversation_by_turns(branch) == (
                await theirs.get_conversation_by_turns(branch)
            )
            assert await ours.get_tool_usage(branch) == await theirs.get_tool_usage(branch)
        joke = await ours.find_turns_by_content("JOKE", "retry")
        assert [turn["turn"] for turn in joke] == [2]
        assert await ours.find_turns_by_content("joke") == []  # the current branch: main
        assert await ours.find_turns_by_content("joke", "main") == []
        assert [t["turn"] for t in await theirs.find_turns_by_content("joke", "retry")] == [2]
        assert await ours.get_conversation_turns("no-such-branch") == []


async def test_list_content_is_returned_as_parts_and_searched_by_text(
    db_url: str, tmp_path: Path
) -> None:
    parts: list[Any] = [{"type": "input_text", "text": f"part {i}"} for i in range(30)]
    async with SessionStore(db_url, create_tables=True) as store:
        session = SQLSession("parts", store)
        await session.add_items([cast(Any, {"role": "user", "content": parts})])
        await session.add_items([{"role": "user", "content": '["not parts"]'}])
        [first, second] = await session.get_conversation_turns()
        assert first["full_content"] == parts
        assert isinstance(first["content"], str) and first["content"].endswith("...")
        assert second["full_content"] == '["not parts"]'  # a string stays a string
        assert [t["turn"] for t in await session.find_turns_by_content("PART 29")] == [1]
        assert await session.find_turns_by_content("input_text") == []  # text, not JSON


async def test_tool_names_in_conversation_by_turns_are_the_sdks(
    db_url: str, tmp_path: Path
) -> None:
    """MCP calls ("server.tool"), namespaced calls, built-in calls and tool search are filed
    under the names the SDK gives them; outputs under none."""
    items: list[Any] = [
        {"role": "user", "content": "go"},
        {"type": "mcp_call", "id": "m1", "server_label": "fs", "name": "read", "arguments": "{}"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "lookup",
            "namespace": "crm",
            "arguments": "{}",
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "same",
            "namespace": "same",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "web_search_call", "id": "w1", "status": "completed"},
        {"type": "tool_search_output", "id": "t1"},
    ]
    async with both_holding(db_url, tmp_path, items) as (sdk, ours):
        got = await ours.get_conversation_by_turns()
        assert got == await sdk.get_conversation_by_turns()
        assert [entry["tool_name"] for entry in got[1]] == [
            None,
            "fs.read",
            "crm.lookup",
            "same",
            None,
            "web_search_call",
            "tool_search",
        ]


TOOL_SEARCH = {"type": "tool_search_call", "id": "s", "arguments": {}, "status": "completed"}
TOOL_FOUND = {"type": "tool_search_output", "id": "o", "status": "completed", "tools": []}


@pytest.mark.parametrize(
    "turn",
    [
        pytest.param([TOOL_SEARCH, TOOL_FOUND], id="search-call-and-output-count-once"),
        pytest.param([TOOL_FOUND], id="search-output-alone-counts"),
        pytest.param(
            [
                {"type": "function_call", "call_id": "a", "name": "get", "namespace": "crm"},
                {"type": "function_call", "call_id": "b", "name": "get", "namespace": "billing"},
                {"type": "function_call_output", "call_id": "a", "output": "x"},
            ],
            id="namespaces-apart",
        ),
        pytest.param(
            [
                {"type": "mcp_call", "id": "m", "server_label": "fs", "name": "read"},
                {"type": "mcp_approval_request", "id": "r", "server_label": "fs", "name": "rm"},
                {"type": "computer_call", "id": "c", "action": {}},
                {"type": "shell_call", "id": "sh", "action": {}},
            ],
            id="mcp-and-hosted",
        ),
    ],
)
async def test_tool_usage_counts_tools_as_the_sdk_does(
    db_url: str, tmp_path: Path, turn: list[Any]
) -> None:
    items: list[Any] = [{"role": "user", "content": "go"}, *turn]
    items += [{"role": "user", "content": "again"}, *turn]
    async with both_holding(db_url, tmp_path, items) as (sdk, ours):
        expected = sorted(await sdk.get_tool_usage())
        assert expected, "the SDK counted nothing: the case tests nothing"
        assert sorted(await ours.get_tool_usage()) == expected


async def test_turns_are_numbered_from_one_again_after_clear_session(
    db_url: str, tmp_path: Path
) -> None:
    """The SDK's clear_session starts the turn count again; the store numbers over history,
    so the SDK-facing readers (and branching by turn number) count from the clear."""
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, store):
        for session in (theirs, ours):
            await session.clear_session()
            await converse(session, ["what is the weather in Paris?", "and in Rome?"])
        assert _without_timestamps(await ours.get_conversation_turns()) == _without_timestamps(
            await theirs.get_conversation_turns()
        )
        assert [t["turn"] for t in await ours.get_conversation_turns()] == [1, 2]
        assert await ours.get_conversation_by_turns() == await theirs.get_conversation_by_turns()
        assert await ours.get_tool_usage() == await theirs.get_tool_usage()
        assert [t["turn"] for t in await ours.find_turns_by_content("rome")] == [2]
        assert len(await store.user_turns("t")) == 5  # the store still numbers over history
        for session in (theirs, ours):
            await session.create_branch_from_turn(2, "retry")
        assert await ours.get_items() == await theirs.get_items()
        assert [b["user_turns"] for b in await ours.list_branches()] == [2, 1]
