"""SQLSession's branch methods by the SDK's names: the same Runner conversation branched in
AdvancedSQLiteSession (which copies messages) and in SQLSession (which shares rows) gives the
model the same items, on both backends."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from agents.extensions.memory import AdvancedSQLiteSession

from sessionstore import BranchError, SessionStore, SQLSession
from tests.support.database import scalar
from tests.support.sdk_runs import converse, side_by_side

PROMPTS = ["hi", "what is the weather in Paris?", "thanks, and the WEATHER tomorrow?"]


async def test_branching_matches_advanced_sqlite_session(db_url: str, tmp_path: Path) -> None:
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, store):
        stored = await scalar(store, "SELECT count(*) FROM messages")
        assert await theirs.create_branch_from_turn(2, "retry") == "retry"
        assert await ours.create_branch_from_turn(2, "retry") == "retry"
        assert await scalar(store, "SELECT count(*) FROM messages") == stored  # nothing copied
        assert ours.branch_id == "retry" and ours.active_session_id == "t#branch:retry"
        assert await ours.get_items() == await theirs.get_items()
        await converse(theirs, ["tell me about Rome instead"])
        await converse(ours, ["tell me about Rome instead"])
        assert await ours.get_items() == await theirs.get_items()
        keys = ("turn", "content")
        assert [{key: t[key] for key in keys} for t in await ours.get_conversation_turns()] == [
            {key: t[key] for key in keys} for t in await theirs.get_conversation_turns()
        ]
        listed = await ours.list_branches()
        assert [(b["branch_id"], b["is_current"]) for b in listed] == [
            ("main", False),
            ("retry", True),
        ]
        assert [b["message_count"] for b in listed] == [
            len(await SQLSession("t", store).get_items()),
            len(await ours.get_items()),
        ]
        assert await ours.get_items(branch_id="main") == await theirs.get_items(branch_id="main")
        await ours.switch_to_branch("main")
        await theirs.switch_to_branch("main")
        assert await ours.get_items() == await theirs.get_items()
        assert await ours.create_branch_from_content("weather", "w") == "w"
        assert await ours.get_items() == (await SQLSession("t", store).get_items())[:2]
        with pytest.raises(ValueError, match="Cannot delete current branch 'w'"):
            await ours.delete_branch("w")
        await ours.delete_branch("w", force=True)
        assert ours.branch_id == "main"
        assert [b["branch_id"] for b in await ours.list_branches()] == ["main", "retry"]


async def test_branch_errors_name_the_problem(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        ours = SQLSession("t", store)
        await converse(ours, ["hi", "again"])
        with pytest.raises(ValueError, match=r"Turn 3 does not contain a user message in branch"):
            await ours.create_branch_from_turn(3)
        with pytest.raises(ValueError, match="Branch name cannot be empty"):
            await ours.create_branch_from_turn(1, " ")
        with pytest.raises(ValueError, match="No user turns found containing 'zebra'"):
            await ours.create_branch_from_content("zebra")
        with pytest.raises(ValueError, match="Branch 'nope' does not exist"):
            await ours.switch_to_branch("nope")
        with pytest.raises(ValueError, match="Cannot delete the 'main' branch"):
            await ours.delete_branch("main")
        named = await ours.create_branch_from_turn(2)
        assert named.startswith("branch_from_turn_2_")
        with pytest.raises(ValueError, match=f"Branch ID '{named}' has already been used"):
            await ours.create_branch_from_turn(1, named)
        with pytest.raises(ValueError, match="cannot contain '#'"):
            await ours.create_branch_from_turn(1, "a#b")
        with pytest.raises(ValueError, match="name branches: open SQLSession"):
            SQLSession(f"t#branch:{named}", store)
        # A branch made from a branch at a point the latter shares is still reported as
        # made from it (the store forks it from the session that holds those rows).
        nested = await ours.create_branch_from_turn(1, "nested")
        parents = {b["branch_id"]: b["parent"] for b in await ours.list_branches()}
        assert parents[nested] == named
        await ours.switch_to_branch("main")
        with pytest.raises(BranchError, match="live branch"):
            await store.delete_session("t")


async def _contents(session: Any, branch: str | None = None) -> list[Any]:
    return [item.get("content") for item in await session.get_items(branch_id=branch)]


async def test_a_deleted_parent_leaves_its_branches_their_history(
    db_url: str, tmp_path: Path
) -> None:
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, _):
        for session in (theirs, ours):
            await session.create_branch_from_turn(2, "a")
            await converse(session, ["rome?", "and milan?"])
            await session.create_branch_from_turn(3, "b")  # shares turn 2 (rome) with "a"
            await session.delete_branch("a")
        assert await _contents(ours) == await _contents(theirs)
        assert "rome?" in await _contents(ours)
        assert [b["branch_id"] for b in await ours.list_branches()] == ["main", "b"]
        assert await ours.get_items(branch_id="a") == await theirs.get_items(branch_id="a") == []


async def test_branch_names_stay_used_after_delete_and_generated_ones_count_up(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, _):
        for session in (theirs, ours):
            assert await session.create_branch_from_turn(2) == "branch_from_turn_2_1700000000"
            await session.switch_to_branch("main")
            assert await session.create_branch_from_turn(2) == "branch_from_turn_2_1700000000_2"
            await session.switch_to_branch("main")
            await session.create_branch_from_turn(2, "used")
            await session.switch_to_branch("main")
            await session.delete_branch("used")
            with pytest.raises(ValueError, match="'used' has already been used"):
                await session.create_branch_from_turn(2, "used")
            with pytest.raises(ValueError, match="'main' has already been used"):
                await session.create_branch_from_turn(1, "main")


async def test_clearing_deletes_every_branch_and_a_stale_object_returns_to_main(
    db_url: str, tmp_path: Path
) -> None:
    """A second object's clear_session (another worker, say) empties the session as the
    SDK's does; the object still on a branch writes to "main" afterwards."""
    async with side_by_side(db_url, tmp_path, PROMPTS) as (theirs, ours, store):
        path = str(tmp_path / "advanced.db")
        sdk_clearer = AdvancedSQLiteSession(session_id="t", db_path=path)
        pairs: list[tuple[Any, Any]] = [(theirs, sdk_clearer), (ours, SQLSession("t", store))]
        try:
            for session, clearer in pairs:
                await session.create_branch_from_turn(2, "stale")
                await clearer.clear_session()
                await session.add_items([{"role": "user", "content": "after clear"}])
                assert await _contents(session) == ["after clear"]
                assert await session.get_items(branch_id="stale") == []
                assert [b["branch_id"] for b in await session.list_branches()] == ["main"]
            assert ours.branch_id == "main"
        finally:
            sdk_clearer.close()
