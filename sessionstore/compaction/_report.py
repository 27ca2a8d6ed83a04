"""What a compaction keeps, summarizes and adds: the rows behind `compact --dry-run --diff`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._items import text_of
from ._partition import Partition, Unit

# "archived" and "kept summary" are what a prune-only compaction (the summarizer failed) did
# with the rows planned as "summarized" and "prior summary".
Fate = Literal[
    "pinned",
    "recent",
    "tool pair",
    "user",
    "aborted",
    "summarized",
    "prior summary",
    "archived",
    "kept summary",
]


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One row of the active context and what compaction does with it."""

    seq: int
    fate: Fate
    label: str  # role or item type
    tokens: int
    preview: str

    @property
    def sign(self) -> str:
        """`=` stays, `-` leaves the context (archived), as in a diff."""
        return "-" if self.fate in ("summarized", "prior summary", "archived") else "="


def diff_lines(plan: Partition, *, width: int = 72) -> list[DiffLine]:
    """Every row of the snapshot with its fate, in seq order."""
    fates: list[tuple[Unit, Fate]] = [
        *((unit, "pinned") for unit in plan.pinned),
        *((unit, "recent") for unit in plan.recent),
        *((unit, "tool pair") for unit in plan.tools),
        *((unit, "user") for unit in plan.users),
        *((unit, "aborted") for unit in plan.aborted),
        *((unit, "summarized") for unit in plan.remainder),
    ]
    if plan.prior_summary is not None:
        fates.append((plan.prior_summary, "prior summary"))
    lines = []
    for unit, fate in fates:
        for row in unit.rows:
            item = row.item or {}
            text = " ".join(text_of(item).split())
            lines.append(
                DiffLine(
                    seq=row.seq,
                    fate=fate,
                    label=row.role or row.item_type or row.kind,
                    tokens=row.tokens,
                    preview=text if len(text) <= width else text[: width - 1] + "…",
                )
            )
    return sorted(lines, key=lambda line: line.seq)
