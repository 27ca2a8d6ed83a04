"""Context compaction: policies, summarizers, context hygiene and the compaction manager.

Everything a program uses is exported here; the modules behind it are private. The
original design's names (`CompactManager`, `CompactConfig`, `CompactPolicy`,
`CompactError`, `CompactErrorReason`) are kept as aliases of the `Compaction*`
classes. docs/COMPACTION.md explains the engine; docs/CONFIGURATION.md the knobs.

Names load on first use, so importing one (say `CompactionPolicy` for a config file)
does not import the manager, the summarizers or the openai client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._errors import (
        CompactionError,
        CompactionErrorReason,
        SummarizerError,
        SummarizerInputTooLargeError,
        SummarizerUnavailableError,
        SummaryRefusedError,
        SummaryToolCallError,
        SummaryTooLongError,
    )
    from .._opaque import is_opaque
    from ._background_policy import BackgroundPolicy
    from ._extractive import ExtractiveSummarizer
    from ._manager import CompactionConfig, CompactionManager, CompactionOutcome, Layers
    from ._marker import SUMMARY_PREFIX, SUMMARY_START, summary_marker
    from ._masking import (
        Masker,
        MaskReport,
        MaskScan,
        MaskView,
        RowMasking,
        ToolOutput,
        output_seqs,
    )
    from ._masking_policy import MaskingPolicy
    from ._message import Message
    from ._normalize import ABORTED_OUTPUT, HygieneScan, NormalizeReport, normalize
    from ._observers import CompactionObserver
    from ._openai_summarizer import OpenAISummarizer
    from ._persist import CompactionResult
    from ._policy import CompactionPolicy, TriggerDecision
    from ._prompts import BUILTIN_STRATEGIES, Strategy
    from ._provider_errors import is_context_length_error
    from ._provider_summarizer import ProviderSummarizer
    from ._report import DiffLine, diff_lines
    from ._summarizer import Summarizer, SummaryRequest, SummaryResult
    from ._truncate import TruncationPolicy

    CompactManager = CompactionManager
    CompactConfig = CompactionConfig
    CompactPolicy = CompactionPolicy
    CompactError = CompactionError
    CompactErrorReason = CompactionErrorReason

_HOMES: dict[str, tuple[str, str]] = {
    **{
        name: ("sessionstore._errors", name)
        for name in (
            "CompactionError",
            "CompactionErrorReason",
            "SummarizerError",
            "SummarizerInputTooLargeError",
            "SummarizerUnavailableError",
            "SummaryRefusedError",
            "SummaryTooLongError",
            "SummaryToolCallError",
        )
    },
    "is_opaque": ("sessionstore._opaque", "is_opaque"),
    "ExtractiveSummarizer": ("._extractive", "ExtractiveSummarizer"),
    "CompactionConfig": ("._manager", "CompactionConfig"),
    "CompactionManager": ("._manager", "CompactionManager"),
    "CompactionOutcome": ("._manager", "CompactionOutcome"),
    "Layers": ("._manager", "Layers"),
    "SUMMARY_PREFIX": ("._marker", "SUMMARY_PREFIX"),
    "SUMMARY_START": ("._marker", "SUMMARY_START"),
    "summary_marker": ("._marker", "summary_marker"),
    "Message": ("._message", "Message"),
    "ABORTED_OUTPUT": ("._normalize", "ABORTED_OUTPUT"),
    "HygieneScan": ("._normalize", "HygieneScan"),
    "NormalizeReport": ("._normalize", "NormalizeReport"),
    "normalize": ("._normalize", "normalize"),
    "CompactionObserver": ("._observers", "CompactionObserver"),
    "OpenAISummarizer": ("._openai_summarizer", "OpenAISummarizer"),
    "ProviderSummarizer": ("._provider_summarizer", "ProviderSummarizer"),
    "CompactionResult": ("._persist", "CompactionResult"),
    "CompactionPolicy": ("._policy", "CompactionPolicy"),
    "TriggerDecision": ("._policy", "TriggerDecision"),
    "BUILTIN_STRATEGIES": ("._prompts", "BUILTIN_STRATEGIES"),
    "Strategy": ("._prompts", "Strategy"),
    "is_context_length_error": ("._provider_errors", "is_context_length_error"),
    "DiffLine": ("._report", "DiffLine"),
    "diff_lines": ("._report", "diff_lines"),
    "Summarizer": ("._summarizer", "Summarizer"),
    "SummaryRequest": ("._summarizer", "SummaryRequest"),
    "SummaryResult": ("._summarizer", "SummaryResult"),
    "TruncationPolicy": ("._truncate", "TruncationPolicy"),
    "BackgroundPolicy": ("._background_policy", "BackgroundPolicy"),
    "MaskingPolicy": ("._masking_policy", "MaskingPolicy"),
    "MaskReport": ("._masking", "MaskReport"),
    "Masker": ("._masking", "Masker"),
    "ToolOutput": ("._masking", "ToolOutput"),
    "output_seqs": ("._masking", "output_seqs"),
    "MaskScan": ("._masking", "MaskScan"),
    "MaskView": ("._masking", "MaskView"),
    "RowMasking": ("._masking", "RowMasking"),
    # The original design's names: the very same classes.
    "CompactManager": ("._manager", "CompactionManager"),
    "CompactConfig": ("._manager", "CompactionConfig"),
    "CompactPolicy": ("._policy", "CompactionPolicy"),
    "CompactError": ("sessionstore._errors", "CompactionError"),
    "CompactErrorReason": ("sessionstore._errors", "CompactionErrorReason"),
}

__all__ = [
    "ABORTED_OUTPUT",
    "BUILTIN_STRATEGIES",
    "SUMMARY_PREFIX",
    "SUMMARY_START",
    "BackgroundPolicy",
    "CompactConfig",
    "CompactError",
    "CompactErrorReason",
    "CompactManager",
    "CompactPolicy",
    "CompactionConfig",
    "CompactionError",
    "CompactionErrorReason",
    "CompactionManager",
    "CompactionObserver",
    "CompactionOutcome",
    "CompactionPolicy",
    "CompactionResult",
    "DiffLine",
    "ExtractiveSummarizer",
    "HygieneScan",
    "Layers",
    "MaskReport",
    "MaskScan",
    "MaskView",
    "Masker",
    "MaskingPolicy",
    "Message",
    "NormalizeReport",
    "OpenAISummarizer",
    "ProviderSummarizer",
    "RowMasking",
    "Strategy",
    "Summarizer",
    "SummarizerError",
    "SummarizerInputTooLargeError",
    "SummarizerUnavailableError",
    "SummaryRefusedError",
    "SummaryRequest",
    "SummaryResult",
    "SummaryTooLongError",
    "SummaryToolCallError",
    "ToolOutput",
    "TriggerDecision",
    "TruncationPolicy",
    "diff_lines",
    "is_context_length_error",
    "is_opaque",
    "normalize",
    "output_seqs",
    "summary_marker",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sessionstore.compaction' has no attribute {name!r}")
    module, attribute = home
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
