"""Context compaction: policies, summarizers, context hygiene and the compaction manager.

The names most programs need are re-exported here. The design documents' names
(`CompactManager`, `CompactConfig`, `CompactPolicy`, `CompactError`,
`CompactErrorReason`) are kept as aliases of the `Compaction*` classes.
"""

from .errors import CompactionError, CompactionErrorReason
from .message import Message
from .policy import CompactionPolicy
from .service import CompactionConfig, CompactionManager, CompactionOutcome
from .summarizer import Summarizer, SummaryRequest, SummaryResult
from .truncate import TruncationPolicy

CompactManager = CompactionManager
CompactConfig = CompactionConfig
CompactPolicy = CompactionPolicy
CompactError = CompactionError
CompactErrorReason = CompactionErrorReason

__all__ = [
    "CompactConfig",
    "CompactError",
    "CompactErrorReason",
    "CompactManager",
    "CompactPolicy",
    "CompactionConfig",
    "CompactionError",
    "CompactionErrorReason",
    "CompactionManager",
    "CompactionOutcome",
    "CompactionPolicy",
    "Message",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "TruncationPolicy",
]
