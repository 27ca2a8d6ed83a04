"""While compactions run, what survives is frozen out of the cyclic collector's walks; the
last one to end thaws it, and an application's own freeze is never undone."""

from __future__ import annotations

import gc
import threading

from sessionstore import SessionStore
from sessionstore._loops import BIG_ROWS
from sessionstore.compaction import (
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
    SummaryRequest,
    SummaryResult,
)
from sessionstore.compaction._collector import _refreeze, freeze_more, snapshot_frozen
from tests.support.histories import turns


def test_a_compaction_freezes_and_the_last_one_thaws() -> None:
    assert gc.get_freeze_count() == 0
    with snapshot_frozen():
        assert gc.get_freeze_count() > 0
        with snapshot_frozen():  # a second compaction of the process, nested
            kept = [[index] for index in range(1_000)]
            freeze_more()
            frozen = gc.get_freeze_count()
            assert frozen >= len(kept)
        assert gc.get_freeze_count() > 0  # the first is still running: nothing thawed
    assert gc.get_freeze_count() == 0
    assert len(gc.callbacks) == len([c for c in gc.callbacks if c is not None])


def test_survivors_of_a_collection_are_frozen_meanwhile() -> None:
    with snapshot_frozen():
        before = gc.get_freeze_count()
        survivors = [[index] for index in range(5_000)]  # lists: tracked by the collector
        gc.collect(1)  # what survives the middle generation is frozen by the callback
        assert gc.get_freeze_count() >= before + len(survivors)
    assert gc.get_freeze_count() == 0


def test_an_applications_own_freeze_is_left_alone() -> None:
    gc.freeze()  # a pre-fork server froze its imports
    try:
        frozen = gc.get_freeze_count()
        with snapshot_frozen():
            made = [[index] for index in range(1_000)]
            freeze_more()
            # Not more (what it made stays unfrozen), nor thawed (frozen objects may be freed).
            assert frozen // 2 < gc.get_freeze_count() < frozen + len(made)
        assert frozen // 2 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_compactions_in_threads_thaw_once_all_have_ended() -> None:
    inside = threading.Barrier(3)
    leave = threading.Event()

    def compaction() -> None:
        with snapshot_frozen():
            inside.wait()
            leave.wait(10)

    threads = [threading.Thread(target=compaction) for _ in range(2)]
    for thread in threads:
        thread.start()
    inside.wait()
    assert gc.get_freeze_count() > 0
    leave.set()
    for thread in threads:
        thread.join(10)
    assert gc.get_freeze_count() == 0


def test_a_collection_that_ends_after_the_last_compaction_freezes_nothing() -> None:
    """The callback runs in whichever thread collected: if the last compaction ended while
    it was on its way, it must not freeze the process for good."""
    with snapshot_frozen():
        pass
    _refreeze("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() == 0


def test_callbacks_cleared_by_the_application_still_thaw() -> None:
    saved = list(gc.callbacks)
    try:
        with snapshot_frozen():
            gc.callbacks.clear()
        assert gc.get_freeze_count() == 0
    finally:
        gc.callbacks[:] = saved


class _SeesTheCollector:
    """A summarizer that notes whether the collector was frozen while it ran."""

    name = "sees-the-collector"
    input_window: int | None = None

    def __init__(self) -> None:
        self.frozen: list[int] = []

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.frozen.append(gc.get_freeze_count())
        return SummaryResult("summary")


async def test_only_a_big_context_freezes_and_it_thaws_after(sqlite_url: str) -> None:
    summarizer = _SeesTheCollector()
    async with SessionStore(sqlite_url) as store:
        manager = CompactionManager(
            CompactionConfig(
                max_context_tokens=2_000_000,
                policy=CompactionPolicy(keep_recent_turns=1),
                store=store,
                summarizer=summarizer,
            )
        )
        await store.append("small", turns(20, size=5))
        await store.append("big", turns(BIG_ROWS // 2 + 50, size=5))  # 2 items a turn
        for session_id in ("small", "big"):
            outcome = await manager.compact(session_id, trigger="manual")
            assert outcome.compacted, session_id
            assert gc.get_freeze_count() == 0  # thawed once the compaction ended
    small, big = summarizer.frozen
    assert small == 0 and big > 0
