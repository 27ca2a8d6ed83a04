"""Branches: `fork` shares the parent's rows (one session row written, whatever the length),
and a branch loads, appends, pops, compacts, rewinds and is verified and retained like any
session, on both backends, without ever changing its parent."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import BranchError, HistoryPoint, HistoryPointError, SessionStore
from sessionstore._jobs._retention import (
    RetentionAction,
    RetentionPolicy,
    run_retention,
    set_policy,
)
from sessionstore._schema import messages
from sessionstore._security._crypto import Keyring, LocalKey
from tests.support.database import age, edit_rows, scalar
from tests.support.histories import assistant, call, output, user
from tests.support.invariants import assert_session_invariants
from tests.support.managers import small_window_manager


async def _conversation(store: SessionStore, session_id: str, turns: int) -> None:
    for n in range(turns):
        await store.append(session_id, [user(f"question {n}"), assistant(f"answer {n}")])


async def _row_counts(store: SessionStore) -> tuple[object, object]:
    return (
        await scalar(store, "SELECT count(*) FROM messages"),
        await scalar(store, "SELECT count(*) FROM sessions"),
    )


async def test_a_branch_starts_as_its_parent_stood_and_then_goes_its_own_way(
    store: SessionStore,
) -> None:
    await _conversation(store, "p", 5)  # seqs 1-10
    parent_before = await store.load_context("p")
    history_before = await store.history("p")
    rows_before = await _row_counts(store)
    done = await store.fork("p", "b", at=HistoryPoint.before_turn(4))
    assert (done.fork_seq, done.items, done.parent_session_id) == (6, 6, "p")
    messages_after, sessions_after = await _row_counts(store)
    assert (messages_after, sessions_after) == (rows_before[0], int(rows_before[1]) + 1)  # type: ignore[call-overload]
    assert await store.load_context("b") == parent_before[:6]
    assert done.tokens == await store.context_tokens("b")
    assert await store.load_context("b", limit=2) == parent_before[4:6]
    assert await store.append("b", [user("a different question")]) == [7]  # numbering goes on
    assert await store.load_context("b") == [*parent_before[:6], user("a different question")]
    assert await store.load_context("b", limit=3) == [
        *parent_before[4:6],
        user("a different question"),
    ]
    assert await store.pop("b") == user("a different question")
    assert await store.pop("b") == parent_before[5]  # a pop reaches the shared rows ...
    assert await store.load_context("b") == parent_before[:5]
    assert await store.load_context("p") == parent_before  # ... and never changes the parent
    assert await store.history("p") == history_before
    info = await store.session_info("b")
    assert info is not None and (info.parent_session_id, info.fork_seq) == ("p", 6)
    assert [branch.session_id for branch in await store.branches("p")] == ["b"]
    recorded = "SELECT count(*) FROM events WHERE session_id = 'b' AND event = 'session.fork'"
    assert await scalar(store, recorded) == 1
    for session_id in ("p", "b"):
        await assert_session_invariants(store, session_id)
        report = await store.verify_history(session_id)
        assert report.ok, report.problems


async def test_a_tail_of_a_branch_reads_back_through_every_shared_range(
    store: SessionStore,
) -> None:
    await _conversation(store, "p", 30)  # 60 items
    await store.pop("p")  # a pop inside the shared range
    await store.fork("p", "b", at=50)
    await store.append("b", [user("b1"), assistant("b2")])
    await store.fork("b", "c")
    await store.pop("c")
    await store.pop("c")
    await store.pop("c")  # the third pop hides a row shared from p
    await store.append("c", [user("c1")])
    for session_id in ("b", "c"):
        full = await store.load_context(session_id)
        for limit in (1, 2, 3, 5, 17, len(full) - 1, len(full), len(full) + 5):
            got = await store.load_context(session_id, limit=limit)
            assert got == full[-limit:], (session_id, limit)
        rows = await store.context_rows(session_id)  # `sessions show --tail` reads these
        for tail in (1, 3, 5, 17, len(rows), len(rows) + 5):
            assert await store.context_rows(session_id, tail) == rows[-tail:], (session_id, tail)


@pytest.mark.parametrize("turns", [5, 300])
async def test_a_fork_writes_one_row_whatever_the_history_length(
    store: SessionStore, turns: int
) -> None:
    await _conversation(store, "p", turns)
    messages_before, sessions_before = await _row_counts(store)
    await store.fork("p", "b")  # at the newest row
    assert await _row_counts(store) == (messages_before, int(sessions_before) + 1)  # type: ignore[call-overload]
    assert await store.load_context("b") == await store.load_context("p")


async def test_a_branch_compacts_rewinds_and_clears_like_any_session(store: SessionStore) -> None:
    manager = small_window_manager(store)
    await store.append("p", [user("find order 7"), call("c1", "lookup", order=7)])
    await store.append("p", [output("c1", "shipped")])
    await _conversation(store, "p", 6)
    parent = await store.load_context("p")
    await store.fork("p", "b")
    await store.append("b", [user("and order 8?"), assistant("also shipped")])
    outcome = await manager.compact("b", trigger="manual")
    assert outcome.compacted
    compacted = await store.load_context("b")
    assert compacted != [*parent, user("and order 8?"), assistant("also shipped")]
    members = "SELECT count(*) FROM archive_ranges WHERE session_id = 'p'"
    assert await scalar(store, members) == 0  # the parent's rows stay the parent's
    assert await store.load_context("p") == parent
    await assert_session_invariants(store, "b")
    assert (await store.verify_history("b")).ok
    fork_seq = (await store.fork("b", "b2", at=HistoryPoint.after_version(1))).fork_seq
    assert await store.load_context("b2") == compacted
    # Rewinding the branch to a point it shares with its parent restores the parent's context.
    await store.rewind("b", HistoryPoint.at_seq(3))
    assert await store.load_context("b") == await store.load_context("p", as_of=3)
    assert await store.load_context("b2") == compacted  # a branch of a branch is unmoved
    await store.clear("b2")
    assert await store.load_context("b2") == []
    assert await store.load_context("b2", as_of=fork_seq) == compacted
    for session_id in ("p", "b", "b2"):
        await assert_session_invariants(store, session_id)
        assert (await store.verify_history(session_id)).ok


async def test_a_branch_with_no_rows_of_its_own_compacts_to_a_smaller_context(
    store: SessionStore,
) -> None:
    manager = small_window_manager(store)
    await _conversation(store, "p", 12)
    await store.fork("p", "b")
    outcome = await manager.compact("b", trigger="manual")
    assert outcome.compacted
    context = await store.load_context("b")
    assert len(context) < 24 and context[0]["content"].startswith("<COMPACT-SUMMARY v1>")
    history = await store.history("b")
    assert (history[0].seq, history[0].kind) == (25, "clear")  # the marker that ends sharing
    assert (await store.verify_history("b")).ok
    await assert_session_invariants(store, "b")
    assert len(await store.load_context("p")) == 24
    assert await store.load_context("b", as_of=25) == context  # the marker is part of the write


async def test_fork_and_rewind_start_just_before_a_turn_even_inside_a_write(
    store: SessionStore,
) -> None:
    turns = [user("q1"), assistant("a1"), user("q2"), assistant("a2"), user("q3")]
    await store.append("p", turns)  # one write, as an import stores a session
    assert (await store.fork("p", "b", at=HistoryPoint.before_turn(3))).fork_seq == 4
    assert await store.load_context("b") == turns[:4]
    assert await store.context_tokens("b") == sum(map(store.estimator.count_item, turns[:4]))
    await store.rewind("b", HistoryPoint.before_turn(2))
    assert await store.load_context("b") == turns[:2]
    # A read as of a turn still shows what a load returned: the write is whole or absent.
    assert await store.load_context("p", as_of=HistoryPoint.before_turn(3)) == []
    await assert_session_invariants(store, "b")
    assert (await store.verify_history("b")).ok


async def test_forking_before_a_compaction_reconstructs_the_context_then(
    store: SessionStore,
) -> None:
    manager = small_window_manager(store)
    await _conversation(store, "p", 8)
    before = await store.load_context("p")
    last = (await store.session_info("p")).last_seq  # type: ignore[union-attr]
    assert (await manager.compact("p", trigger="manual")).compacted
    await store.fork("p", "b", at=last)
    assert await store.load_context("b") == before
    assert await store.context_tokens("b") == sum(
        store.estimator.count_item(item) for item in before
    )
    await assert_session_invariants(store, "b")


async def test_a_branch_of_an_encrypted_parent_opens_both_keys(db_url: str) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, encrypt_payloads=True) as store:
        await _conversation(store, "p", 3)
        await store.fork("p", "b", at=HistoryPoint.before_turn(3))
        await store.append("b", [user("sealed in the branch")])
        expected = [*(await store.load_context("p"))[:4], user("sealed in the branch")]
        assert await store.load_context("b") == expected
        plain = "SELECT count(*) FROM messages WHERE payload IS NOT NULL"
        assert await scalar(store, plain) == 0
    async with SessionStore(db_url, keyring=keyring, verify_on_load=True) as checked:
        assert await checked.load_context("b") == expected
        # An edit in the parent's shared rows is caught when the branch loads.
        await edit_rows(
            checked,
            messages.update()
            .where(messages.c.session_id == "p", messages.c.seq == 1)
            .values(tokens=999),
        )
        with pytest.raises(Exception, match="parent 'p': row 1"):
            await checked.load_context("b")
        assert not (await checked.verify_history("b")).ok
        await checked.fork("p", "nothing-shared", at=0)  # shares no row, so the edit is not its
        assert (await checked.verify_history("nothing-shared")).ok


async def test_time_travel_and_turns_follow_the_lineage(store: SessionStore) -> None:
    await _conversation(store, "p", 4)  # turns 1-4, seqs 1-8
    await store.fork("p", "b", at=HistoryPoint.before_turn(3))  # shares turns 1-2
    await store.append("b", [user("branch turn"), call("c9", "search", q="x")])
    await store.append("b", [output("c9", "found")])
    assert [turn.turn for turn in await store.turns("b")] == [1, 2, 3]
    assert (await store.turns("b"))[2].user_text == "branch turn"
    assert [(u.turn, u.user_text) for u in await store.user_turns("b")] == [
        (1, "question 0"),
        (2, "question 1"),
        (3, "branch turn"),
    ]
    assert await store.tool_usage("b") == [("search", 1, 3)]
    assert await store.load_context("b", as_of=2) == await store.load_context("p", as_of=2)
    assert await store.load_context("b", as_of=HistoryPoint.before_turn(2)) == (
        await store.load_context("p", as_of=HistoryPoint.before_turn(2))
    )
    assert (
        await store.load_context("b", as_of=HistoryPoint.before_turn(3))
        == (await store.load_context("p"))[:4]
    )
    long_ago = datetime.now(UTC) - timedelta(days=1)
    assert await store.load_context("b", as_of=long_ago) == []
    await store.fork("b", "bb", at=HistoryPoint.before_turn(3))
    assert await store.load_context("bb") == (await store.load_context("p"))[:4]


async def test_bad_forks_say_what_was_wrong(store: SessionStore) -> None:
    with pytest.raises(BranchError, match="cannot fork 'nobody': no such session"):
        await store.fork("nobody", "b")
    await _conversation(store, "p", 2)
    await _conversation(store, "taken", 1)
    with pytest.raises(BranchError, match="into 'taken': that session already exists"):
        await store.fork("p", "taken")
    with pytest.raises(HistoryPointError, match="its history ends at seq 4"):
        await store.fork("p", "b", at=9)
    with pytest.raises(TypeError, match="session_id must be a str, got int"):
        await store.fork("p", 7)  # type: ignore[arg-type]
    assert await store.session_info("b") is None


async def test_racing_forks_into_one_id_make_one_branch(store: SessionStore) -> None:
    await _conversation(store, "p", 2)
    await _conversation(store, "q", 2)

    async def fork(parent: str) -> str:
        try:
            await store.fork(parent, "same")
        except BranchError:
            return "refused"
        return parent

    outcomes = await asyncio.gather(*(fork(parent) for parent in ("p", "q") * 4))
    assert sorted(outcomes).count("refused") == 7
    [winner] = [outcome for outcome in outcomes if outcome != "refused"]
    assert await store.load_context("same") == await store.load_context(winner)


async def test_a_parent_with_live_branches_is_kept(store: SessionStore) -> None:
    await _conversation(store, "p", 2)
    await store.fork("p", "b")
    with pytest.raises(BranchError, match=r"session 'p' has 1 live branch\(es\).*'b'"):
        await store.delete_session("p")
    assert len(await store.history("p")) == 4
    assert await store.delete_session("b")
    assert await store.delete_session("p")


async def _retention_scenario(store: SessionStore, now: datetime) -> list[Any]:
    """Two old, compacted, idle parents, one with a branch that shares its early rows."""
    manager = small_window_manager(store)
    for parent in ("shared", "alone"):
        await _conversation(store, parent, 8)
    await store.fork("shared", "branch", at=HistoryPoint.before_turn(3))
    for parent in ("shared", "alone"):
        assert (await manager.compact(parent, trigger="manual")).compacted
        await age(store, parent, now - timedelta(days=200))
    for policy in (
        RetentionPolicy("purge", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 30),
        RetentionPolicy("idle", RetentionAction.DELETE_IDLE_SESSIONS, 90),
    ):
        await set_policy(store, policy)
    return await store.load_context("branch")


NOW = datetime(2026, 12, 1, tzinfo=UTC)
_PURGED = "SELECT count(*) FROM messages WHERE payload IS NULL AND session_id = :sid AND seq <= 4"


async def test_retention_keeps_what_a_branch_shares(store: SessionStore) -> None:
    branch = await _retention_scenario(store, NOW)
    report = await run_retention(store, now=NOW)
    assert report.counts["idle"] == 1  # "alone" went; "shared" has a live branch
    assert await store.session_info("alone") is None
    assert await scalar(store, _PURGED, sid="shared") == 0
    assert await store.load_context("branch") == branch
    await assert_session_invariants(store, "branch")
    assert await store.delete_session("branch")
    await run_retention(store, now=NOW)
    assert await store.session_info("shared") is None


async def test_the_postgres_function_keeps_what_a_branch_shares(pg_url: str) -> None:
    from tests.conftest import _empty_tables

    await _empty_tables(pg_url)
    async with SessionStore(pg_url) as store:
        branch = await _retention_scenario(store, NOW)
        async with store.engine.begin() as conn:
            rows = (
                await conn.execute(
                    sa.text("SELECT * FROM sessionstore_apply_retention(false, :at)"), {"at": NOW}
                )
            ).all()
        assert {row.policy: row.affected for row in rows}["idle"] == 1
        assert await store.session_info("alone") is None
        assert await scalar(store, _PURGED, sid="shared") == 0
        assert await store.load_context("branch") == branch
        async with store.engine.begin() as conn:
            await conn.execute(sa.text("DELETE FROM retention_policies"))
