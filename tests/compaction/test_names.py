"""The design documents' names stay importable: they are the Compaction* classes themselves."""

from __future__ import annotations

import sessionstore.compaction as compaction


def test_the_seed_names_are_aliases_of_the_compaction_classes() -> None:
    assert compaction.CompactManager is compaction.CompactionManager
    assert compaction.CompactConfig is compaction.CompactionConfig
    assert compaction.CompactPolicy is compaction.CompactionPolicy
    assert compaction.CompactError is compaction.CompactionError
    assert compaction.CompactErrorReason is compaction.CompactionErrorReason
    assert set(compaction.__all__) >= {"CompactManager", "CompactionManager"}
