"""Fixtures for the compaction tests: a live OpenAI-compatible server and the login session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from tests.support.scenarios import login_rate_limit_session


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A real HTTP server speaking the OpenAI API on 127.0.0.1, stopped after the test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def login_session() -> list[dict[str, Any]]:
    """The hand-written login rate-limit session (tests/support/scenarios.py)."""
    return login_rate_limit_session()
