"""Provider compaction for tests: a manager whose summarizer is the test server's
`/v1/responses/compact`, and a history with a fact an extractive summary must keep."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._schema import compactions
from sessionstore.compaction import (
    BackgroundPolicy,
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
)
from sessionstore.compaction._summarizers._provider import ProviderSummarizer
from tests.support.histories import assistant, turns, user
from tests.support.openai_server import OpenAIServer

BOUND_MODEL = "gpt-5"
# A fact only the oldest turns hold: a readable summary rebuilt from them must carry it.
FACT = "Deploy the release to cluster zeta-42 only."


class ProviderManagers:
    """Managers compacting through a server's `/v1/responses/compact`; `aclose` closes
    their HTTP clients (a test's fixture does, before its event loop ends)."""

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server
        self._summarizers: list[ProviderSummarizer] = []

    def make(
        self,
        store: SessionStore,
        *,
        model: str = BOUND_MODEL,
        window: int = 100_000,
        keep_recent_turns: int = 2,
        background: bool = False,
        provider: str = "openai",
    ) -> CompactionManager:
        """A manager whose summaries are compaction items bound to `model` (prepared off
        the request path with `background`)."""
        summarizer = ProviderSummarizer(
            model, provider=provider, base_url=self.server.base_url, api_key="test", timeout=5
        )
        self._summarizers.append(summarizer)
        return CompactionManager(
            CompactionConfig(
                model=model,
                max_context_tokens=window,
                policy=CompactionPolicy(
                    keep_recent_turns=keep_recent_turns,
                    hard_cap_buffer=200,
                    background=BackgroundPolicy(enabled=background),
                ),
                store=store,
                summarizer=summarizer,
            )
        )

    async def aclose(self) -> None:
        for summarizer in self._summarizers:
            await summarizer.aclose()


def history_with_fact(count: int = 8, *, seed: int = 0) -> list[dict[str, Any]]:
    """`count` turns opened by a user message stating FACT and its acknowledgement."""
    return [user(FACT), assistant("Noted: zeta-42 only."), *turns(count, seed=seed, size=20)]


async def compaction_rows(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """The session's compactions rows, oldest first."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(compactions)
            .where(compactions.c.session_id == session_id)
            .order_by(compactions.c.version)
        )
        return [dict(row._mapping) for row in rows]
