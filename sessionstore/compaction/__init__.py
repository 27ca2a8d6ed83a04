"""Context compaction: policies, summarizers, context hygiene and the compaction service.

The names most programs need are re-exported here.
"""

from .errors import CompactError, CompactErrorReason
from .message import Message
from .policy import CompactPolicy
from .service import CompactConfig, CompactionOutcome, CompactManager
from .summarizer import Summarizer, SummaryRequest, SummaryResult
from .truncate import TruncationPolicy

__all__ = [
    "CompactConfig",
    "CompactError",
    "CompactErrorReason",
    "CompactManager",
    "CompactPolicy",
    "CompactionOutcome",
    "Message",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "TruncationPolicy",
]
