"""LoopSafeLock and PerLoop: correct from any thread and event loop, never stranded."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sessionstore._errors import StoreTimeoutError
from sessionstore._loops import KeyedLocks, LoopSafeLock, PerLoop


def test_the_lock_excludes_tasks_on_loops_in_different_threads() -> None:
    lock = LoopSafeLock("the counter")
    inside: list[int] = []
    overlaps: list[int] = []

    async def bump(n: int) -> None:
        for _ in range(20):
            async with lock.hold(30):
                inside.append(n)
                if len(inside) > 1:
                    overlaps.append(n)
                await asyncio.sleep(0)  # let other tasks of this loop try to get in
                inside.remove(n)

    async def thread_main(n: int) -> None:
        await asyncio.gather(bump(n), bump(n + 100))

    threads = [threading.Thread(target=asyncio.run, args=(thread_main(n),)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert overlaps == []
    assert not lock.locked()


async def test_a_timed_out_waiter_says_what_it_waited_for_and_leaves_the_lock_usable() -> None:
    lock = LoopSafeLock("the schema check")
    await lock.acquire(1)
    with pytest.raises(StoreTimeoutError, match=r"waited 0\.05 s for the schema check"):
        await lock.acquire(0.05)
    lock.release()
    await lock.acquire(1)  # nobody is left queued: it is free again
    lock.release()
    assert not lock.locked()


async def test_a_cancelled_waiter_chosen_at_release_hands_the_lock_on() -> None:
    lock = LoopSafeLock("x")
    await lock.acquire(1)
    first = asyncio.ensure_future(lock.acquire(10))
    second = asyncio.ensure_future(lock.acquire(10))
    await asyncio.sleep(0)
    lock.release()  # `first` is chosen; its wake-up is scheduled ...
    first.cancel()  # ... but it is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 5)  # the lock went on to `second`
    assert lock.locked()
    lock.release()
    assert not lock.locked()


def test_a_waiter_whose_loop_closed_is_skipped() -> None:
    lock = LoopSafeLock("x")
    holder = asyncio.new_event_loop()
    holder.run_until_complete(lock.acquire(1))
    orphan = asyncio.new_event_loop()
    task = orphan.create_task(lock.acquire(10))
    orphan.run_until_complete(asyncio.sleep(0.01))  # queued as a waiter
    task.cancel()
    orphan.close()  # closed with its waiter still queued
    lock.release()
    assert not lock.locked()
    holder.run_until_complete(lock.acquire(1))
    lock.release()
    holder.close()


def test_keyed_locks_are_one_per_key() -> None:
    locks = KeyedLocks("the session")
    assert locks("a") is locks("a")
    assert locks("a") is not locks("b")
    assert locks("a").what == "the session 'a'"


class _Resource:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.closed_on: asyncio.AbstractEventLoop | None = None
        self.abandoned = False

    async def close(self) -> None:
        self.closed_on = asyncio.get_running_loop()

    def abandon(self) -> None:
        self.abandoned = True


def _per_loop() -> PerLoop[_Resource]:
    return PerLoop(_Resource, _Resource.close, _Resource.abandon)


def test_a_resource_is_made_per_loop_and_closed_when_asyncio_run_ends() -> None:
    resources = _per_loop()

    async def use() -> _Resource:
        first = resources.current()
        assert resources.current() is first  # the same loop reuses it
        return first

    made = asyncio.run(use())
    other = asyncio.run(use())
    assert made is not other
    assert made.closed_on is made.loop and other.closed_on is other.loop  # each on its own loop
    assert resources.existing() == []


def test_close_all_closes_another_running_loops_resource_on_that_loop() -> None:
    resources = _per_loop()
    ready = threading.Event()
    stop = threading.Event()
    made: list[_Resource] = []

    async def serve() -> None:
        made.append(resources.current())
        ready.set()
        await asyncio.to_thread(stop.wait, 30)

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    assert ready.wait(30)

    async def close_here() -> None:
        here = resources.current()
        await resources.close_all()
        assert here.closed_on is here.loop

    asyncio.run(close_here())
    stop.set()
    thread.join(30)
    assert made[0].closed_on is made[0].loop and not made[0].abandoned


def test_a_loop_closed_without_shutdown_has_its_resource_abandoned_on_next_use() -> None:
    resources = _per_loop()
    loop = asyncio.new_event_loop()

    async def make() -> _Resource:
        return resources.current()

    stale = loop.run_until_complete(make())
    loop.close()  # no shutdown_asyncgens(): nothing ran the close
    fresh = asyncio.run(make())
    assert stale.abandoned and stale.closed_on is None
    assert fresh.closed_on is fresh.loop
