"""What a compaction's plan keeps and what it archives, as the commit records them: the
recent layer in seq order, the seqs of each kept layer, and the replaced rows with their
encoded archive (built on the archive's worker thread)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._rows import StoredRow
from .._store._context_replacement import encode_replaced
from ._partition import Partition, Unit

__all__ = ["kept_record", "kept_rows", "replaced_archive"]


def kept_rows(plan: Partition) -> list[tuple[StoredRow, dict[str, Any] | None]]:
    """The recent layer in seq order; the truncated user message as its shortened copy."""
    kept: list[tuple[StoredRow, dict[str, Any] | None]] = [
        (row, None) for unit in plan.kept for row in unit.rows
    ]
    if plan.truncated_user is not None:
        unit, copy, _tokens = plan.truncated_user
        kept.append((unit.rows[0], copy))
    return sorted(kept, key=lambda pair: pair[0].seq)


def kept_record(plan: Partition) -> dict[str, list[int]]:
    def seqs(units: Sequence[Unit]) -> list[int]:
        return [row.seq for unit in units for row in unit.rows]

    return {
        "pinned": seqs(plan.pinned),
        "recent": seqs(plan.recent),
        "tool_pairs": seqs(plan.tools),
        "aborted": seqs(plan.aborted),
        "users": seqs(plan.users),
        "truncated_user": [plan.truncated_user[0].first_seq] if plan.truncated_user else [],
    }


def replaced_archive(plan: Partition, redact: Any) -> tuple[list[StoredRow], Any]:
    """The rows leaving the context (sorted: one C call over 100,000 rows) and their encoded
    archive, on the archive's worker thread."""
    replaced = plan.replaced_rows
    return replaced, encode_replaced(replaced, redact)
