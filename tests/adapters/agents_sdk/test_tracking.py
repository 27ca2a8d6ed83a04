"""A run's pending call records, as the next save waits for them and hands them usage."""

from __future__ import annotations

import asyncio

import pytest
from agents import RunContextWrapper
from agents.usage import RequestUsage, Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk._input_memo import MemoSlot
from sessionstore.adapters.agents_sdk._tracking import RunTracking, current_run, written
from tests.support.histories import user


def _run(*records: asyncio.Future[int]) -> RunTracking:
    run = RunTracking("s", store_id=1, history_len=0, memo=MemoSlot())
    run.pending_calls.extend((record, "gpt-4o") for record in records)
    return run


def _settled(value: int | BaseException | None) -> asyncio.Future[int]:
    """A record's future: written (a row id), failed (an error) or cancelled (None)."""
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    if value is None:
        future.cancel()  # as a loop shutting down cancels the task writing it
    elif isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)
    return future


async def test_a_cancelled_record_does_not_cancel_the_save() -> None:
    cancelled, done = _settled(None), _settled(7)
    run = _run(cancelled, done)
    await run.calls_written()  # returns: the save goes on
    assert [written(record) for record, _ in run.pending_calls] == [False, True]


async def test_a_failed_record_is_raised_once() -> None:
    run = _run(_settled(OSError("disk full")), _settled(OSError("gone")), _settled(7))
    with pytest.raises(OSError, match="disk full"):
        await run.calls_written()
    with pytest.raises(OSError, match="gone"):
        await run.calls_written()
    await run.calls_written()  # each once
    assert [written(record) for record, _ in run.pending_calls] == [False, False, True]


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


def _usage(*inputs: int) -> Usage:
    usage = Usage()
    for tokens in inputs:
        usage.request_usage_entries.append(
            RequestUsage(
                input_tokens=tokens,
                output_tokens=1,
                total_tokens=tokens + 1,
                input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
            )
        )
    return usage


async def test_usage_goes_to_its_own_call_when_an_earlier_record_was_not_written(
    db_url: str,
) -> None:
    """Two model calls since the last save, the first one's record lost (cancelled): the
    second call's usage is attached to the second call's record, the first's is stored as a
    call of unknown input, not shifted onto the wrong record."""
    async with SessionStore(db_url, create_tables=True) as store:
        session = SQLSession("s", store)
        await session.add_items([{"role": "user", "content": "hi"}])
        await session.get_items()  # the run starts: its tracking is in this task's context
        second = await store.record_model_call("s", [user("hi")], model="gpt-4o")
        run = current_run("s", id(store))
        assert run is not None
        run.pending_calls.extend([(_settled(None), "gpt-4o"), (_settled(second), "gpt-4o")])
        wrapper: RunContextWrapper[None] = RunContextWrapper(context=None, usage=_usage(111, 222))
        await session.add_items([{"role": "assistant", "content": "hello"}], wrapper=wrapper)
        calls = {call.call: call for call in await store.model_calls("s")}
    assert calls[second].input_tokens == 222  # its own usage, not the lost call's 111
    assert [call.input_tokens for number, call in calls.items() if number != second] == [111]
