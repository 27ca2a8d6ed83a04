"""Fixtures for the compaction tests: a live OpenAI-compatible server and the login session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sessionstore.compaction._summarizers._openai import OpenAISummarizer
from tests.support.openai_server import OpenAIServer
from tests.support.scenarios import login_rate_limit_session
from tests.support.summarizers import S, SummarizerMaker


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A real HTTP server speaking the OpenAI API on 127.0.0.1, stopped after the test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
async def summarizers(openai_server: OpenAIServer) -> AsyncIterator[SummarizerMaker]:
    """`summarizers(OpenAISummarizer, "gpt-4o-mini", **options)`: summarizers of the openai
    client pointed at the live server, closed after the test."""
    made: list[OpenAISummarizer] = []

    def make(kind: type[S], model: str, /, **options: Any) -> S:
        options.setdefault("base_url", openai_server.base_url)
        summarizer = kind(model, **options)
        made.append(summarizer)
        return summarizer

    yield make
    for summarizer in made:
        await summarizer.aclose()


@pytest.fixture
def login_session() -> list[dict[str, Any]]:
    """The hand-written login rate-limit session (tests/support/scenarios.py)."""
    return login_rate_limit_session()
