"""Time travel and rewind: `load_context(as_of=...)` returns what a load returned then, and a
rewind restores it as new rows, on both backends."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessionstore import BranchError, HistoryPoint, HistoryPointError, SessionStore
from sessionstore._security._crypto import Keyring, LocalKey
from tests.support.database import scalar
from tests.support.histories import assistant, call, output, user
from tests.support.invariants import assert_session_invariants
from tests.support.managers import small_window_manager

TURN = [user("look up order 7"), call("c1", "lookup", order=7), output("c1", "shipped")]


async def test_as_of_returns_each_earlier_context(store: SessionStore) -> None:
    await store.append("s", TURN)  # seqs 1-3
    after_first = await store.load_context("s")
    await store.append("s", [assistant("order 7 has shipped")])  # 4
    await store.pop("s")  # 5: a tombstone hiding 4
    await store.clear("s")  # 6
    await store.append("s", [user("new topic")])  # 7
    assert await store.load_context("s", as_of=3) == after_first
    assert await store.load_context("s", as_of=4) == [
        *after_first,
        assistant("order 7 has shipped"),
    ]
    assert await store.load_context("s", as_of=5) == after_first
    assert await store.load_context("s", as_of=6) == []
    assert await store.load_context("s", as_of=7) == [user("new topic")]
    assert await store.load_context("s", as_of=0) == []
    assert await store.load_context("s", as_of=2, limit=1) == after_first[-1:]  # whole batch
    assert await store.load_context("s", as_of=HistoryPoint.before_turn(2)) == []
    with pytest.raises(
        HistoryPointError, match="no seq 8 to go back to: its history ends at seq 7"
    ):
        await store.load_context("s", as_of=8)


async def test_time_and_version_points(store: SessionStore) -> None:
    await store.append("s", TURN)
    assert await store.load_context("s", as_of=datetime.now(UTC) - timedelta(days=1)) == []
    now = await store.load_context("s", as_of=datetime.now(UTC) + timedelta(hours=1))
    assert now == TURN
    manager = small_window_manager(store)
    for n in range(6):
        await store.append("s", [user(f"step {n}: check item {n}"), assistant(f"item {n} ok")])
    assert (await manager.compact("s", trigger="manual")).compacted
    compacted = await store.load_context("s")
    await store.append("s", [user("after the compaction")])
    assert await store.load_context("s", as_of=HistoryPoint.after_version(1)) == compacted
    with pytest.raises(HistoryPointError, match="no version 2 to go back to: it has no compaction"):
        await store.load_context("s", as_of=HistoryPoint.after_version(2))
    with pytest.raises(HistoryPointError, match="fewer than 99 user messages"):
        await store.load_context("s", as_of=HistoryPoint.before_turn(99))


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [
        (datetime(2026, 1, 1), ValueError, "timezone-aware datetime"),
        ("12", TypeError, "a seq \\(int\\), a timezone-aware datetime or a HistoryPoint"),
        (True, TypeError, "not a bool"),
        (-1, ValueError, "seq must be at least 0, got -1"),
    ],
)
async def test_bad_points_are_refused_before_any_read(
    store: SessionStore, value: Any, error: type[Exception], fragment: str
) -> None:
    await store.append("s", TURN)
    with pytest.raises(error, match=fragment):
        await store.load_context("s", as_of=value)
    with pytest.raises(error, match=fragment):
        await store.rewind("s", value)
    assert await store.load_context("s") == TURN  # nothing changed


async def test_rewind_restores_the_context_and_deletes_nothing(store: SessionStore) -> None:
    await store.append("s", TURN)  # 1-3
    await store.append("s", [assistant("done")])  # 4
    await store.append("s", [user("and order 8?")])  # 5
    done = await store.rewind("s", HistoryPoint.before_turn(2))  # back to after seq 4
    assert (done.to_seq, done.marker_seq, done.items) == (4, 6, 4)
    assert await store.load_context("s") == [*TURN, assistant("done")]
    assert done.tokens == await store.context_tokens("s")
    history = await store.history("s")
    assert [row.seq for row in history] == list(range(1, 11))  # marker 6, copies 7-10
    assert (history[5].kind, history[5].ref_seq) == ("clear", 4)
    assert [row.ref_seq for row in history[6:]] == [1, 2, 3, 4]  # copies point at originals
    assert history[4].item == user("and order 8?")  # the rewound row stays in history
    await store.append("s", [user("order 9 instead")])
    assert await store.load_context("s", as_of=5) == [
        *TURN,
        assistant("done"),
        user("and order 8?"),
    ]
    assert await store.pop("s") == user("order 9 instead")
    assert await store.pop("s") == assistant("done")  # pops reach the restored copies
    recorded = "SELECT count(*) FROM events WHERE session_id = 's' AND event = 'session.rewind'"
    assert await scalar(store, recorded) == 1
    await assert_session_invariants(store, "s")
    assert (await store.verify_history("s")).ok


async def test_rewind_of_a_compacted_session_and_of_an_encrypted_one(db_url: str) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, encrypt_payloads=True) as store:
        manager = small_window_manager(store)
        for n in range(8):
            await store.append("s", [user(f"secret plan step {n}"), assistant(f"ok {n}")])
        before = await store.load_context("s")
        last = (await store.session_info("s")).last_seq  # type: ignore[union-attr]
        assert (await manager.compact("s", trigger="manual")).compacted
        assert await store.load_context("s") != before
        await store.rewind("s", last)  # back past the compaction
        assert await store.load_context("s") == before
        sealed = await scalar(
            store, "SELECT count(*) FROM messages WHERE session_id = 's' AND payload IS NOT NULL"
        )
        assert sealed == 0  # the copies were sealed too
        assert (await manager.compact("s", trigger="manual")).compacted  # compacts again
        await assert_session_invariants(store, "s")
        assert (await store.verify_history("s")).ok
    async with SessionStore(db_url, keyring=keyring, verify_on_load=True) as checked:
        assert await checked.load_context("s", as_of=last) == before


async def test_rewind_refuses_points_the_session_does_not_have(store: SessionStore) -> None:
    with pytest.raises(HistoryPointError, match="no seq 0 to go back to: no such session"):
        await store.rewind("nobody", 0)
    await store.append("s", TURN)
    with pytest.raises(HistoryPointError, match="its history ends at seq 3"):
        await store.rewind("s", 4)
    assert len(await store.history("s")) == 3


# --------------------------------------------------------------- properties

_item = st.builds(
    lambda role, text: {"role": role, "content": text},
    st.sampled_from(["user", "assistant"]),
    st.text(max_size=30),
)
_op = st.one_of(
    st.tuples(st.just("append"), st.lists(_item, min_size=1, max_size=4)),
    st.tuples(st.just("pop"), st.none()),
    st.tuples(st.just("clear"), st.none()),
    st.tuples(st.just("compact"), st.none()),
    st.tuples(st.just("rewind"), st.floats(min_value=0, max_value=1)),
    st.tuples(st.just("fork"), st.floats(min_value=0, max_value=1)),
)


@dataclass
class _Lineage:
    """What the test recorded of one session: each load at the end of each write (a branch
    starts with its parent's up to the fork), its user turns and its compactions."""

    session_id: str
    loads: dict[int, list[dict[str, Any]]]
    user_turns: list[int]  # for each user message: the seq before its batch
    versions: dict[int, int] = field(default_factory=dict)  # version -> last seq after it
    first: int = 1  # its first own seq


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(_op, max_size=14))
@example(  # a branch's rewind into the shared range restores its parent's summary
    ops=[
        ("append", [{"role": "assistant", "content": ""}, {"role": "user", "content": ""}]),
        ("compact", None),
        ("rewind", 0.0),
        ("append", [{"role": "user", "content": ""}]),
        ("fork", 1.0),
        ("rewind", 0.5),
    ]
)
async def test_as_of_equals_what_each_load_returned(db_url: str, ops: list[Any]) -> None:
    """After any sequence of append/pop/clear/compact/rewind/fork (a fork switches the
    sequence to the new branch), `as_of` every seq of every session returns what a load
    returned once that seq's write ended, a branch starts as its parent stood at the fork,
    parents never change once forked, and seqs stay gapless."""
    root = f"travel-{uuid.uuid4().hex}"  # examples share the PostgreSQL database
    async with SessionStore(db_url, create_tables=True) as store:
        manager = small_window_manager(store)
        current = _Lineage(root, {0: []}, [])
        done: list[tuple[_Lineage, list[dict[str, Any]], list[Any]]] = []  # forked parents
        for op, arg in ops:
            sid = current.session_id
            last = await _last_seq(store, sid)
            if op == "append":
                seqs = await store.append(sid, arg)
                current.user_turns += [seqs[0] - 1 for item in arg if item["role"] == "user"]
            elif op == "pop":
                await store.pop(sid)
            elif op == "clear":
                await store.clear(sid)
            elif op == "compact":
                outcome = await manager.compact(sid, trigger="manual")
                if outcome.compacted:
                    current.versions[len(current.versions) + 1] = await _last_seq(store, sid)
            elif op == "rewind":
                target = int(arg * last)
                if last:
                    await store.rewind(sid, target)
                    restored = current.loads[min(seq for seq in current.loads if seq >= target)]
                    assert await store.load_context(sid) == restored
            elif await store.session_info(sid) is None:  # nothing to fork yet
                with pytest.raises(BranchError, match="no such session"):
                    await store.fork(sid, f"{sid}/never")
            else:
                at = min(seq for seq in current.loads if seq >= int(arg * last))  # a write end
                fork = await store.fork(sid, f"{sid}/{len(done)}", at=at)
                assert fork.fork_seq == at
                inherited = {seq: load for seq, load in current.loads.items() if seq <= at}
                turns = [before for before in current.user_turns if before < at]
                done.append((current, await store.load_context(sid), await store.history(sid)))
                current = _Lineage(fork.session_id, inherited, turns, first=at + 1)
                assert await store.load_context(current.session_id) == inherited[at]
            current.loads[await _last_seq(store, current.session_id)] = await store.load_context(
                current.session_id
            )
        for parent, load, history in done:  # nothing a branch did changed its parent
            assert await store.load_context(parent.session_id) == load
            assert await store.history(parent.session_id) == history
        for lineage in [*(parent for parent, _, _ in done), current]:
            await _assert_travels(store, lineage)


async def _assert_travels(store: SessionStore, lineage: _Lineage) -> None:
    sid = lineage.session_id
    last = max(await _last_seq(store, sid), lineage.first - 1)
    for seq in range(last + 1):
        write_end = min(end for end in lineage.loads if end >= seq)
        assert await store.load_context(sid, as_of=seq) == lineage.loads[write_end], (sid, seq)
    for version, end in lineage.versions.items():
        got = await store.load_context(sid, as_of=HistoryPoint.after_version(version))
        assert got == lineage.loads[end]
    for turn, before in enumerate(lineage.user_turns, start=1):
        got = await store.load_context(sid, as_of=HistoryPoint.before_turn(turn))
        assert got == lineage.loads[before], (sid, turn)
    seqs = [row.seq for row in await store.history(sid)]
    assert seqs == list(range(lineage.first, last + 1))
    if seqs:
        assert (await store.verify_history(sid)).ok
        await assert_session_invariants(store, sid)


async def _last_seq(store: SessionStore, session_id: str) -> int:
    info = await store.session_info(session_id)
    return 0 if info is None else info.last_seq


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("120", HistoryPoint.at_seq(120)),
        (" v3 ", HistoryPoint.after_version(3)),
        ("turn:5", HistoryPoint.before_turn(5)),
        ("2026-11-25T14:00:00", HistoryPoint.at_time(datetime(2026, 11, 25, 14, tzinfo=UTC))),
        ("2026-11-25T15:00:00+01:00", HistoryPoint.at_time(datetime(2026, 11, 25, 14, tzinfo=UTC))),
    ],
)
def test_a_point_is_parsed_as_people_type_it(text: str, expected: HistoryPoint) -> None:
    assert HistoryPoint.parse(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "v0", "turn:0", "-3", "v", ""])
def test_a_point_that_is_none_says_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"seq|version|turn|point in history"):
        HistoryPoint.parse(text)
