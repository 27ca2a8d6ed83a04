"""SessionStore on real SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import InvalidItemError, SessionStore, StoreError
from sessionstore._tokens import estimator_for_model
from sessionstore.archive import read_archives
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.database import scalar
from tests.support.histories import coding_session

USER: dict[str, Any] = {"role": "user", "content": "What is the weather in Paris?"}
CALL: dict[str, Any] = {
    "type": "function_call",
    "name": "get_weather",
    "call_id": "call_1",
    "arguments": '{"city": "Paris"}',
}
OUTPUT: dict[str, Any] = {
    "type": "function_call_output",
    "call_id": "call_1",
    "output": "18C and sunny",
}
ANSWER: dict[str, Any] = {
    "role": "assistant",
    "content": [{"type": "output_text", "text": "It is 18C."}],
}
TURN: list[dict[str, Any]] = [USER, CALL, OUTPUT, ANSWER]


async def test_append_then_load_round_trips_items_in_order(store: SessionStore) -> None:
    seqs = await store.append("s1", TURN)
    assert seqs == [1, 2, 3, 4]
    assert await store.load_context("s1") == TURN
    assert await store.append("s1", [USER]) == [5]
    assert await store.load_context("s1") == [*TURN, USER]


async def test_typed_columns_answer_sql_questions(store: SessionStore) -> None:
    await store.append("s1", [USER, CALL])
    await store.append("s1", [OUTPUT, ANSWER])  # output arrives in a later batch
    rows = {row.seq: row for row in await store.history("s1")}
    assert (rows[1].role, rows[1].item_type) == ("user", "message")
    assert (rows[2].item_type, rows[2].tool_name, rows[2].call_id) == (
        "function_call",
        "get_weather",
        "call_1",
    )
    assert (rows[3].item_type, rows[3].tool_name) == ("function_call_output", "get_weather")
    calls = await scalar(
        store,
        "SELECT count(*) FROM messages WHERE session_id = :s AND tool_name = 'get_weather' "
        "AND item_type = 'function_call'",
        s="s1",
    )
    assert calls == 1


async def test_sessions_are_isolated(store: SessionStore) -> None:
    await store.append("a", [USER])
    await store.append("b", [ANSWER])
    assert await store.load_context("a") == [USER]
    assert await store.load_context("b") == [ANSWER]
    assert await store.load_context("missing") == []


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(None, 4), (1, 1), (3, 3), (4, 4), (10, 4), (0, 0), (-1, 4)],
)
async def test_limit_returns_newest_items_in_order(
    store: SessionStore, limit: int | None, expected: int
) -> None:
    await store.append("s1", TURN)
    items = await store.load_context("s1", limit)
    assert items == TURN[len(TURN) - expected :] if expected else items == []


async def test_pop_writes_a_tombstone_and_hides_the_item(store: SessionStore) -> None:
    await store.append("s1", TURN)
    before = await store.context_tokens("s1")
    assert await store.pop("s1") == ANSWER
    assert await store.pop("s1") == OUTPUT
    assert await store.load_context("s1") == [USER, CALL]
    assert await store.load_context("s1", 1) == [CALL]
    history = await store.history("s1")
    assert [(r.seq, r.kind, r.ref_seq) for r in history[-2:]] == [
        (5, "tombstone", 4),
        (6, "tombstone", 3),
    ]
    assert history[3].item == ANSWER  # the audit still sees the popped item
    popped_tokens = sum(r.tokens for r in history if r.seq in (3, 4))
    assert await store.context_tokens("s1") == before - popped_tokens


async def test_pop_on_empty_or_missing_session_returns_none(store: SessionStore) -> None:
    assert await store.pop("nobody") is None
    await store.append("s1", [USER])
    assert await store.pop("s1") == USER
    assert await store.pop("s1") is None
    assert [r.kind for r in await store.history("s1")] == ["item", "tombstone"]


async def test_pop_finds_items_behind_many_tombstones(store: SessionStore) -> None:
    items = [{"role": "user", "content": f"m{i}"} for i in range(40)]
    await store.append("s1", items)
    for expected in reversed(items[5:]):
        assert await store.pop("s1") == expected
    assert await store.load_context("s1") == items[:5]
    assert await store.load_context("s1", 2) == items[3:5]


async def test_clear_starts_an_empty_context_but_keeps_history(store: SessionStore) -> None:
    await store.append("s1", TURN)
    await store.clear("s1")
    assert await store.load_context("s1") == []
    assert await store.context_tokens("s1") == 0
    await store.append("s1", [USER])
    assert await store.load_context("s1") == [USER]
    kinds = [r.kind for r in await store.history("s1")]
    assert kinds == ["item"] * 4 + ["clear", "item"]
    info = await store.session_info("s1")
    assert info is not None and info.context_start_seq == 6 and info.last_seq == 6


async def test_clear_on_missing_session_writes_nothing(store: SessionStore) -> None:
    await store.clear("ghost")
    assert await store.session_info("ghost") is None


async def test_context_tokens_is_the_stored_running_total(store: SessionStore) -> None:
    await store.append("s1", TURN)
    await store.append("s1", [USER])
    rows = await store.history("s1")
    assert await store.context_tokens("s1") == sum(r.tokens for r in rows)
    expected = [store.estimator.count_item(item) for item in [*TURN, USER]]
    assert [r.tokens for r in rows] == expected
    info = await store.session_info("s1")
    assert info is not None and info.token_encoding == store.estimator.name


class _CountingEstimator:
    """Wraps the real estimator and counts calls, to prove reads never re-tokenize."""

    def __init__(self) -> None:
        self.inner = estimator_for_model("gpt-4o")
        self.name = self.inner.name
        self.exact = self.inner.exact
        self.fallback_reason: str | None = None
        self.calls = 0

    def count_text(self, text: str) -> int:
        self.calls += 1
        return self.inner.count_text(text)

    def count_item(self, item: Mapping[str, Any]) -> int:
        self.calls += 1
        return self.inner.count_item(item)


async def test_preflight_total_for_a_128k_context_reads_the_counter(db_url: str) -> None:
    estimator = _CountingEstimator()
    async with SessionStore(db_url, estimator=estimator, create_tables=True) as store:
        paragraph = "The quick brown fox jumps over the lazy dog near the river bank. " * 40
        batch = [{"role": "user", "content": paragraph} for _ in range(50)]
        while await store.context_tokens("big") < 128_000:
            await store.append("big", batch)
        total = await store.context_tokens("big")
        calls_before = estimator.calls
        for _ in range(5):
            assert await store.context_tokens("big") == total
        assert estimator.calls == calls_before  # O(1): no re-tokenizing on reads
        exact = sum(estimator.inner.count_item(item) for item in await store.load_context("big"))
        assert total == exact >= 128_000


async def test_non_json_items_are_rejected_and_nothing_is_stored(store: SessionStore) -> None:
    await store.append("s1", [USER])
    bad_batches: list[list[Any]] = [
        [ANSWER, {"role": "user", "content": datetime(2026, 1, 1)}],
        [{"role": "user", "content": {1, 2}}],
        [{"role": "user", "content": float("nan")}],
        ["just a string"],
        [None],
    ]
    for batch in bad_batches:
        with pytest.raises(InvalidItemError) as caught:
            await store.append("s1", batch)
        message = str(caught.value)
        assert "nothing was stored" in message or "not a mapping" in message
    assert await store.load_context("s1") == [USER]
    assert len(await store.history("s1")) == 1


async def test_session_id_must_be_a_string(store: SessionStore) -> None:
    with pytest.raises(TypeError, match="session_id must be a str"):
        await store.append(42, [USER])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "session_id",
    [
        "'; DROP TABLE messages; --",
        'robert"); DELETE FROM sessions; --',
        "ünïcødé-会话-🙂",
        "",
        "a" * 500,
    ],
)
async def test_hostile_and_unicode_session_ids_are_plain_data(
    store: SessionStore, session_id: str
) -> None:
    item = {"role": "user", "content": "naïve café 東京 🙂 \u0000 \ud800 end"}
    await store.append(session_id, [item, USER])
    assert await store.load_context(session_id) == [item, USER]
    assert await store.load_context("other") == []
    assert [s.session_id for s in await store.list_sessions()] == [session_id]


async def test_twenty_concurrent_writers_lose_nothing(store: SessionStore) -> None:
    async def writer(n: int) -> None:
        for k in range(5):
            await store.append("hot", [{"role": "user", "content": f"w{n}-{k}"}, ANSWER])

    await asyncio.gather(*(writer(n) for n in range(20)))
    history = await store.history("hot")
    assert [row.seq for row in history] == list(range(1, 201))
    contents = [row.item["content"] for row in history if row.item and row.item["role"] == "user"]
    assert sorted(contents) == sorted(f"w{n}-{k}" for n in range(20) for k in range(5))
    for n in range(20):  # each writer's own items stay in its order, each pair adjacent
        mine = [c for c in contents if c.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{k}" for k in range(5)]
    for row in history:
        if row.item and row.item["role"] == "user":
            assert history[row.seq].item == ANSWER
    assert await store.context_tokens("hot") == sum(r.tokens for r in history)


async def test_two_stores_on_one_database_serialize_writes(db_url: str) -> None:
    async with (
        SessionStore(db_url, create_tables=True) as first,
        SessionStore(db_url, create_tables=True) as second,
    ):

        async def writer(target: SessionStore, tag: str) -> None:
            for k in range(20):
                await target.append("shared", [{"role": "user", "content": f"{tag}{k}"}])

        await asyncio.gather(writer(first, "a"), writer(second, "b"), writer(first, "c"))
        history = await second.history("shared")
    assert [row.seq for row in history] == list(range(1, 61))
    assert len({row.item["content"] for row in history if row.item}) == 60


async def test_reload_in_a_new_process_sees_the_same_context(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        await store.append("s1", TURN)
        await store.pop("s1")
        await store.append("s1", [USER, ANSWER])
        expected_items = await store.load_context("s1")
        expected_tokens = await store.context_tokens("s1")
    script = textwrap.dedent(
        f"""
        import asyncio, json
        from sessionstore import SessionStore
        async def main():
            async with SessionStore({db_url!r}) as store:
                print(json.dumps([await store.load_context("s1"),
                                  await store.context_tokens("s1")]))
        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    stdout, _ = await asyncio.wait_for(child.communicate(), timeout=60)
    assert child.returncode == 0
    items, tokens = json.loads(stdout)
    assert items == expected_items
    assert tokens == expected_tokens


async def test_delete_session_removes_rows_and_events(store: SessionStore) -> None:
    await store.append("s1", TURN)
    await store.append("s2", [USER])
    assert await store.delete_session("s1") is True
    assert await store.delete_session("s1") is False
    assert await store.history("s1") == []
    assert await scalar(store, "SELECT count(*) FROM messages WHERE session_id = 's1'") == 0
    assert await store.load_context("s2") == [USER]


async def members(store: SessionStore) -> int:
    count = await scalar(store, "SELECT count(*) FROM archive_ranges")
    assert isinstance(count, int)
    return count


async def test_a_deleted_compacted_session_id_can_be_reused(store: SessionStore) -> None:
    manager = CompactionManager(
        CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=1))
    )
    await manager.append("s1", coding_session(8))
    assert (await manager.compact("s1")).compacted
    assert await members(store) > 0
    assert await store.delete_session("s1") is True
    # Memberships went with their session; the archive itself stays for retention to decide.
    assert await members(store) == 0
    assert await scalar(store, "SELECT count(*) FROM archives WHERE session_id = 's1'") == 1
    await manager.append("s1", coding_session(8, seed=1))
    assert (await manager.compact("s1")).compacted  # no stale membership in the way
    assert await members(store) > 0


async def test_a_compaction_never_archives_rows_an_archive_already_holds(
    store: SessionStore,
) -> None:
    """Runs of archived seqs never overlap (retention reads them so): with a run forged over
    rows the session has not archived (a database edited by hand), the compaction that would
    archive them is refused and writes nothing."""
    manager = CompactionManager(
        CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=1))
    )
    await manager.append("s1", coding_session(8))
    assert (await manager.compact("s1")).compacted
    await manager.append("s1", coding_session(8, seed=1))
    before = await store.context_rows("s1")
    newest = before[-1].seq
    async with store.engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO archive_ranges (session_id, first_seq, last_seq, archive_id)"
                " SELECT 's1', :seq, :seq, max(id) FROM archives"
            ),
            {"seq": newest},
        )
    with pytest.raises(StoreError, match="an archive already holds"):
        await manager.compact("s1")
    assert await store.context_rows("s1") == before
    assert await scalar(store, "SELECT count(*) FROM compactions WHERE session_id = 's1'") == 1


async def test_list_sessions_reports_bookkeeping(store: SessionStore) -> None:
    await store.append("a", TURN)
    await store.append("b", [USER])
    infos = {info.session_id: info for info in await store.list_sessions()}
    assert set(infos) == {"a", "b"}
    assert infos["a"].last_seq == 4 and infos["b"].last_seq == 1
    assert infos["a"].context_tokens == await store.context_tokens("a")
    assert len(await store.list_sessions(limit=1)) == 1


# --------------------------------------------------------------- properties

_text = st.text(max_size=40)
_item = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": _text})
_op = st.one_of(
    st.tuples(st.just("append"), st.lists(_item, min_size=1, max_size=4)),
    st.tuples(st.just("pop"), st.none()),
    st.tuples(st.just("clear"), st.none()),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(_op, max_size=12), limit=st.integers(min_value=-2, max_value=6))
async def test_store_matches_a_list_model(db_url: str, ops: list[Any], limit: int) -> None:
    """Any sequence of append/pop/clear behaves like a Python list, seqs stay gapless."""
    sid = f"prop-{abs(hash((str(ops), limit)))}"
    async with SessionStore(db_url, create_tables=True) as store:
        model: list[dict[str, Any]] = []
        for op, arg in ops:
            if op == "append":
                await store.append(sid, arg)
                model.extend(arg)
            elif op == "pop":
                assert await store.pop(sid) == (model.pop() if model else None)
            else:
                await store.clear(sid)
                model.clear()
        assert await store.load_context(sid) == model
        expected_tail = [] if limit == 0 else model if limit < 0 else model[-limit:]
        assert await store.load_context(sid, limit) == expected_tail
        if limit > 0:  # a tail of the context's rows is read alone, and is its tail
            assert await store.context_rows(sid, limit) == (await store.context_rows(sid))[-limit:]
        assert await store.context_tokens(sid) == sum(
            store.estimator.count_item(item) for item in model
        )
        seqs = [row.seq for row in await store.history(sid)]
        assert seqs == list(range(1, len(seqs) + 1))
        info = await store.session_info(sid)
        assert (info.context_items if info else 0) == len(model)


async def test_an_append_replayed_with_its_token_is_stored_once(store: SessionStore) -> None:
    batch = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    first = await store.append("s", batch, token="turn-1")
    assert await store.append("s", batch, token="turn-1") == first  # the replay: same seqs
    second = await store.append("s", batch)  # a fresh token each time by default
    assert second == [3, 4]
    assert len(await store.history("s")) == 4
    assert await store.append("other", batch, token="turn-1") == [1, 2]  # tokens are per session
    with pytest.raises(TypeError, match="token must be a str of 1 to 128 characters"):
        await store.append("s", batch, token="")


async def test_append_counted_returns_the_tokens_it_stored(store: SessionStore) -> None:
    batch = [{"role": "user", "content": "count me"}, {"role": "assistant", "content": "ok"}]
    seqs, tokens = await store.append_counted("s", batch, token="t1")
    assert seqs == [1, 2] and tokens == await store.context_tokens("s") > 0
    assert tokens == sum(store.estimator.count_item(item) for item in batch)
    assert await store.append_counted("s", batch, token="t1") == (seqs, tokens)  # a replay
    assert await store.context_tokens("s") == tokens
    assert await store.append_counted("s", []) == ([], 0)


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda s: s.append("s", ({"role": "user"} for _ in "x")), None, None),
        (lambda s: s.append("s", {"role": "user"}), TypeError, "wrap a single item in a list"),
        (lambda s: s.append("s", "hello"), TypeError, "items must be a list of items, got a str"),
        (lambda s: s.append("s", [{"role": "u"}], protected="no"), TypeError, "protected must"),
        (lambda s: s.load_context("s", limit="5"), TypeError, "limit must be an int or None"),
        (lambda s: s.load_context("s", limit=1.5), TypeError, "limit must be an int or None"),
        (lambda s: s.load_context("s", limit=True), TypeError, "limit must be an int or None"),
        (lambda s: s.list_sessions(limit=-1), ValueError, "limit must be >= 0"),
        (lambda s: s.list_sessions(offset=-1), ValueError, "offset must be >= 0"),
        (lambda s: s.merge_session_metadata("s", {"k": {1, 2}}), InvalidItemError, "k is a set"),
        (
            lambda s: s.merge_session_metadata("s", {3: "x"}),
            InvalidItemError,
            "has a key of type int",
        ),
        # One behaviour on both backends: what PostgreSQL's columns refuse, SQLite refuses too.
        (lambda s: s.append("s\x00t", [{"role": "u"}]), ValueError, "NUL character"),
        (lambda s: s.append("s", [{"role": "us\x00er"}]), InvalidItemError, "field role"),
        (
            lambda s: s.append("s", [{"type": "function_call", "name": "x\x00", "call_id": "c"}]),
            InvalidItemError,
            "field name contains a NUL",
        ),
        (lambda s: s.append("s", [{"role": "u" * 33}]), InvalidItemError, "more than its col"),
        (lambda s: s.append("s", [{"type": "t" * 65}]), InvalidItemError, "field type is 65"),
    ],
)
async def test_bad_arguments_fail_clearly_before_anything_is_written(
    store: SessionStore, call: Any, error: type[Exception] | None, fragment: str | None
) -> None:
    await store.append("s", [{"role": "user", "content": "before"}])
    if error is None:  # accepted: a generator of items is read once, as a list
        await call(store)
        assert len(await store.history("s")) == 2
        return
    with pytest.raises(error, match=fragment):
        await call(store)
    assert [row.item for row in await store.history("s")] == [{"role": "user", "content": "before"}]


async def test_an_item_above_max_item_bytes_is_refused_before_any_work(db_url: str) -> None:
    big = {"type": "function_call_output", "call_id": "c", "output": "x" * 200_000}
    async with SessionStore(db_url, create_tables=True, max_item_bytes=100_000) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        await store.append("s", [{"role": "user", "content": "before"}])
        with pytest.raises(InvalidItemError, match=r"item #1 is 200,\d+ bytes or more, above"):
            await store.append("s", [{"role": "user", "content": "ok"}, big])
        with pytest.raises(InvalidItemError, match="max_item_bytes"):
            await manager.append("s", [big])  # refused before truncation and archiving
        assert len(await store.history("s")) == 1
        async with store.engine.connect() as conn:
            assert (await conn.exec_driver_sql("SELECT count(*) FROM archives")).scalar() == 0
    with pytest.raises(ValueError, match="max_item_bytes must be > 0"):
        SessionStore(db_url, max_item_bytes=0)


async def test_a_50_mb_tool_output_through_a_manager_is_cut_and_archived_whole(
    db_url: str,
) -> None:
    line = "2026-11-25 INFO worker processed batch 1842 in 12.4 ms\n"
    output = (line * (50_000_000 // len(line) + 1))[:50_000_000]
    call = {"type": "function_call", "call_id": "c1", "name": "logs", "arguments": "{}"}
    result = {"type": "function_call_output", "call_id": "c1", "output": output}
    async with SessionStore(db_url, create_tables=True) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        await manager.append("s", [call, result])
        stored = (await store.load_context("s"))[1]["output"]
        assert len(stored) < 40_000 and stored.endswith(output[-30:])
        assert "bytes truncated" in stored
        rows = await store.history("s")
        assert rows[1].archive_id is not None
        (archive,) = await read_archives(store, "s")
        assert archive.archive_id == rows[1].archive_id
        assert [record["item"] for record in archive.records] == [result]  # the whole original


class _CutLong:
    """A Truncation that stores any item holding "long" as a stub, and says when it did."""

    def __init__(self) -> None:
        self.told: list[str] = []
        self.asked = 0

    def truncate_item(
        self, item: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        self.asked += 1
        if "long" not in str(item.get("content")):
            return None
        return {**item, "content": "[cut]"}, item

    def items_truncated(self, session_id: str) -> None:
        self.told.append(session_id)


async def test_one_door_appends_with_truncation_and_archives_each_original(db_url: str) -> None:
    """`append(truncation=...)` asks about every item once, stores the cut copies with
    their originals archived in the same write, and says so once per batch that cut."""
    cut = _CutLong()
    long_item = {"role": "tool", "content": "a long output", "tool_call_id": "c1"}
    async with SessionStore(db_url, create_tables=True) as store:
        await store.append("s", [{"role": "user", "content": "hi"}], truncation=cut)
        assert cut.told == [] and cut.asked == 1  # nothing cut: nothing to say
        await store.append("s", [{"role": "user", "content": "x"}, long_item], truncation=cut)
        assert cut.told == ["s"] and cut.asked == 3
        assert (await store.load_context("s"))[-1]["content"] == "[cut]"
        (archive,) = await read_archives(store, "s")
        assert [record["item"] for record in archive.records] == [long_item]
        with pytest.raises(ValueError, match="originals or truncation"):
            await store.append("s", [long_item], originals={0: long_item}, truncation=cut)
        with pytest.raises(InvalidItemError, match="item #0"):  # checked, not truncated
            await store.append("s", ["not an item"], truncation=cut)  # type: ignore[list-item]
        assert len(await store.history("s")) == 3
