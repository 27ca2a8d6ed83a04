"""One OpenAI or provider summarizer shared by threads that each run their own event loop.

The web-server pattern the README recommends: a thread pool whose requests each call
`asyncio.run(...)` with one shared manager. An HTTP client's connection pool is bound to the
loop that opened it, so a summarizer that reused one client failed on every other loop
("bound to a different event loop", "Event loop is closed") and compaction fell back to
pruning. Real threads, real loops, the real openai client against a real local server.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from sessionstore.compaction._summarizers._openai import OpenAISummarizer
from sessionstore.compaction._summarizers._prompts import resolve_strategy
from sessionstore.compaction._summarizers._provider import ProviderSummarizer
from sessionstore.compaction._summarizers._summarizer import SummaryRequest, SummaryResult
from tests.support.openai_server import OpenAIServer, ok, sleep

REQUEST = SummaryRequest(
    items=[{"role": "user", "content": "Deploy JIRA-7."}, {"role": "assistant", "content": "Ok."}],
    prior_summary=None,
    strategy="task_state",
    instructions=resolve_strategy("task_state").prompt,
    max_tokens=128,
)
KINDS = [OpenAISummarizer, ProviderSummarizer]


@pytest.fixture
def loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in its own thread (a long-lived worker), stopped after the test."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


@pytest.mark.parametrize("kind", KINDS)
def test_threads_each_running_asyncio_run_share_one_summarizer(
    kind: type[OpenAISummarizer], openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(*[sleep(0.05, ok(f"state {n}")) for n in range(12)])
    summarizer = kind("gpt-5", base_url=openai_server.base_url, api_key="k", timeout=10)
    clients: list[openai.AsyncOpenAI] = []

    async def one_request() -> SummaryResult:
        clients.append(summarizer._client)
        return await summarizer.summarize(REQUEST)

    try:
        with ThreadPoolExecutor(4) as pool:  # overlapping requests, a new loop for each
            results = list(pool.map(lambda _: asyncio.run(one_request()), range(12)))
    finally:
        asyncio.run(summarizer.aclose())

    assert len(results) == 12 and all(result.text for result in results)
    assert len(openai_server.requests) == 12
    # Each loop had its own client, closed when asyncio.run shut that loop down.
    assert len({id(client) for client in clients}) == 12
    assert all(client.is_closed() for client in clients)
    assert summarizer._clients.existing() == []


@pytest.mark.parametrize("kind", KINDS)
def test_aclose_closes_the_clients_of_loops_that_still_run(
    kind: type[OpenAISummarizer],
    openai_server: OpenAIServer,
    loop_thread: asyncio.AbstractEventLoop,
) -> None:
    summarizer = kind("gpt-5", base_url=openai_server.base_url, api_key="k", timeout=10)
    asyncio.run_coroutine_threadsafe(summarizer.summarize(REQUEST), loop_thread).result(10)
    [worker_client] = summarizer._clients.existing()

    async def here_then_close() -> openai.AsyncOpenAI:
        await summarizer.summarize(REQUEST)
        client = summarizer._client
        await summarizer.aclose()  # from another loop than the worker's
        return client

    here_client = asyncio.run(here_then_close())

    assert worker_client is not here_client
    assert worker_client.is_closed() and here_client.is_closed()
    assert summarizer._clients.existing() == []
