"""The viewer's own reads: what one compaction wrote is read from its block alone."""

from __future__ import annotations

from sessionstore import SessionStore
from sessionstore.web import _queries as q
from tests.support.histories import assistant, user
from tests.support.managers import small_window_manager


async def test_what_a_compaction_wrote_is_read_whole_and_capped(db_url: str) -> None:
    """Two compactions, turns before, between and after: for each, the summary, how many
    rows it carried and which, are those of a scan of the whole history; whole rows are
    fetched for the summary and the first `limit` carries only."""
    async with SessionStore(db_url, create_tables=True) as store:
        manager = small_window_manager(store)
        ids = []
        for round_ in range(2):
            for n in range(12):
                await store.append("c", [user(f"r{round_} step {n}"), assistant(f"ok {n}")])
            outcome = await manager.compact("c", trigger="manual")
            assert outcome.result is not None
            ids.append(outcome.result.compaction_id)
        for n in range(30):  # written after the last compaction: never read for it
            await store.append("c", [user(f"later {n}")])
        history = await store.history("c")
        records = {int(c["id"]): c for c in await store.read_snapshot(q.compactions_of, "c")}
        for cid in ids:
            mine = [row for row in history if row.compaction_id == cid]
            carries = [row for row in mine if row.kind == "carry"]
            start = int(records[cid]["context_start_seq"])
            for limit in (0, 1, len(carries) + 5):
                written = await store.read_snapshot(q.written_by, "c", cid, start, limit)
                assert [row.seq for row in written.summary] == [
                    row.seq for row in mine if row.kind == "summary"
                ]
                assert [row.seq for row in written.carried] == [row.seq for row in carries[:limit]]
                assert written.carried_total == len(carries)
                assert written.carried_seqs == {row.ref_seq for row in carries}
        assert len(carries) >= 1  # the last compaction carried the kept turn
