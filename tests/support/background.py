"""Builders for background compaction tests: a slow real summarizer and a manager using it."""

from __future__ import annotations

import asyncio
from typing import Any

from sessionstore import SessionStore
from sessionstore._tokens import TokenEstimator
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from sessionstore.compaction._background_policy import BackgroundPolicy
from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer
from sessionstore.compaction._summarizers._summarizer import SummaryRequest, SummaryResult
from tests.support.histories import turns


class SlowSummarizer:
    """The real extractive summarizer behind an optional gate and delay, counting its calls
    and the most that ran at once (a summarizer the size of an LLM call, without a network)."""

    def __init__(self, estimator: TokenEstimator, *, delay_s: float = 0.0) -> None:
        self.inner = ExtractiveSummarizer(estimator)
        self.name = "slow-extractive"
        self.input_window: int | None = None
        self.delay_s = delay_s
        self.gate: asyncio.Event | None = None  # set: calls wait for it
        self.started = asyncio.Event()
        self.calls = 0
        self.running = 0
        self.most_at_once = 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        self.started.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return await self.inner.summarize(request)
        finally:
            self.running -= 1


def background_manager(
    store: SessionStore,
    summarizer: Any = None,
    *,
    window: int = 4_000,
    enabled: bool = True,
    lease_s: float = 300.0,
    **policy: Any,
) -> CompactionManager:
    """A manager with background compaction (`enabled=False`: the same one without it)."""
    settings: dict[str, Any] = {"hard_cap_buffer": 200, "keep_recent_turns": 2, **policy}
    return CompactionManager(
        CompactionConfig(
            max_context_tokens=window,
            policy=CompactionPolicy(
                **settings, background=BackgroundPolicy(enabled=enabled, lease_s=lease_s)
            ),
            store=store,
            summarizer=summarizer,
        )
    )


async def fill_between(
    manager: CompactionManager, session_id: str, *, seed: int = 0, size: int = 30
) -> int:
    """Append turns until the stored context is past `prepare_at` but under the trigger;
    returns how many turns that took."""
    window = manager.config.max_context_tokens
    low = manager.policy.prepare_threshold(window)
    high = manager.policy.threshold(window)
    count = 0
    while await manager.store.context_tokens(session_id) < low:
        await manager.append(session_id, turns(1, seed=seed + count, size=size))
        count += 1
    tokens = await manager.store.context_tokens(session_id)
    assert tokens < high, f"one turn jumped from under {low} to {tokens} >= {high}"
    return count


async def prepare(manager: CompactionManager, session_id: str) -> None:
    """Run the turn-boundary check (past `prepare_at` it starts a preparation) and wait for
    the preparation to end."""
    await manager.maybe_compact(session_id)
    assert manager.background is not None, "background compaction is off"
    await manager.background.settle()


async def prepared_session(
    store: SessionStore, session_id: str
) -> tuple[CompactionManager, SlowSummarizer]:
    """A session past `prepare_at` whose summary was prepared, its manager and summarizer."""
    slow = SlowSummarizer(store.estimator)
    manager = background_manager(store, slow)
    await fill_between(manager, session_id)
    await prepare(manager, session_id)
    return manager, slow
