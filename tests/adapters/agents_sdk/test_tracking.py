"""A run's pending call records, as the next save waits for them."""

from __future__ import annotations

import asyncio

import pytest

from sessionstore.adapters.agents_sdk._input_memo import MemoSlot
from sessionstore.adapters.agents_sdk._tracking import RunTracking


def _run(*records: asyncio.Future[int]) -> RunTracking:
    run = RunTracking("s", store_id=1, history_len=0, memo=MemoSlot())
    run.pending_calls.extend((record, "gpt-4o") for record in records)
    return run


async def test_a_cancelled_record_is_dropped_without_cancelling_the_save() -> None:
    loop = asyncio.get_running_loop()
    cancelled: asyncio.Future[int] = loop.create_future()
    cancelled.cancel()  # as a loop shutting down cancels the task writing it
    written: asyncio.Future[int] = loop.create_future()
    written.set_result(7)
    run = _run(cancelled, written)
    await run.calls_written()  # returns: the save goes on
    assert run.pending_calls == [(written, "gpt-4o")]


async def test_a_failed_record_is_raised_once_and_dropped() -> None:
    loop = asyncio.get_running_loop()
    failed: asyncio.Future[int] = loop.create_future()
    failed.set_exception(OSError("disk full"))
    written: asyncio.Future[int] = loop.create_future()
    written.set_result(7)
    run = _run(failed, written)
    with pytest.raises(OSError, match="disk full"):
        await run.calls_written()
    assert run.pending_calls == [(written, "gpt-4o")]
    await run.calls_written()  # once


async def test_a_cancelled_caller_is_cancelled_and_leaves_the_record_being_written() -> None:
    pending: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    run = _run(pending)
    waiting = asyncio.ensure_future(run.calls_written())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not pending.cancelled()  # the write goes on
    pending.set_result(3)
    await run.calls_written()
    assert run.pending_calls == [(pending, "gpt-4o")]
