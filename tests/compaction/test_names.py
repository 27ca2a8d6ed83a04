"""The original Compact* names stay importable: they are the Compaction* classes themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessionstore.compaction as compaction
from sessionstore import SessionStore
from sessionstore.archive import FilesystemSink
from sessionstore.compaction import CompactionConfig, CompactionManager


def test_the_seed_names_are_aliases_of_the_compaction_classes() -> None:
    assert compaction.CompactManager is compaction.CompactionManager
    assert compaction.CompactConfig is compaction.CompactionConfig
    assert compaction.CompactPolicy is compaction.CompactionPolicy
    assert compaction.CompactError is compaction.CompactionError
    assert compaction.CompactErrorReason is compaction.CompactionErrorReason
    assert set(compaction.__all__) >= {"CompactManager", "CompactionManager"}


async def test_storage_means_the_store_or_the_archive_sinks_it_is_given(tmp_path: Path) -> None:
    sink = FilesystemSink(tmp_path / "archive")
    async with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        assert CompactionConfig(storage=store).store is store
        assert CompactionConfig(store=store).store is store
        assert list(CompactionConfig(store=store, storage=sink).sinks) == [sink]
        assert list(CompactionConfig(store=store, storage=[sink]).sinks) == [sink]
        manager = CompactionManager(CompactionConfig(storage=store, max_context_tokens=1_000))
        assert manager.store is store
        with pytest.raises(ValueError, match="pass the SessionStore once"):
            CompactionConfig(store=store, storage=SessionStore(f"sqlite:///{tmp_path / 'o.db'}"))
        with pytest.raises(ValueError, match="pass archive sinks once"):
            CompactionConfig(sinks=[sink], storage=[sink])
