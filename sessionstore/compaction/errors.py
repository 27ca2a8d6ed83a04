"""CompactionError: compaction could not bring the context within budget."""

from __future__ import annotations

from enum import StrEnum

from ..errors import SessionStoreError


class CompactionErrorReason(StrEnum):
    """Why compaction gave up (the seed's `CompactionError(InsufficientBudget)` and friends)."""

    INSUFFICIENT_BUDGET = "InsufficientBudget"
    COMPACTION_LOOP = "CompactionLoop"
    CONFLICT = "Conflict"


class CompactionError(SessionStoreError):
    """Compaction failed; `reason` says why and the message says what to do about it."""

    def __init__(self, reason: CompactionErrorReason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason
