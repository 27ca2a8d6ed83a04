"""Compaction managers that tests of the store's other features share."""

from __future__ import annotations

from sessionstore import SessionStore
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy


def small_window_manager(store: SessionStore) -> CompactionManager:
    """A 2,000-token window that keeps one recent turn, so a manual compaction of a few
    turns always has something to summarize (and archive)."""
    policy = CompactionPolicy(hard_cap_buffer=50, keep_recent_turns=1)
    return CompactionManager(CompactionConfig(max_context_tokens=2_000, policy=policy, store=store))
