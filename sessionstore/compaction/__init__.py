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
    from .._schema import SUMMARY_PREFIX, SUMMARY_START, summary_marker
    from .._store._context_replacement import CompactionResult
    from ._background_policy import BackgroundPolicy
    from ._manager import CompactionManager
    from ._masking_policy import MaskingPolicy
    from ._message import Message
    from ._observers import CompactionObserver
    from ._outcome import CompactionConfig, CompactionOutcome, Layers
    from ._policy import CompactionPolicy, TriggerDecision
    from ._preflight._hygiene import ABORTED_OUTPUT, HygieneScan, NormalizeReport, normalize
    from ._preflight._masking import (
        Masker,
        MaskReport,
        MaskScan,
        MaskView,
        RowMasking,
        ToolOutput,
        output_seqs,
    )
    from ._report import DiffLine, diff_lines
    from ._summarizers._extractive import ExtractiveSummarizer
    from ._summarizers._openai import OpenAISummarizer
    from ._summarizers._prompts import BUILTIN_STRATEGIES, Strategy
    from ._summarizers._provider import ProviderSummarizer
    from ._summarizers._provider_errors import is_context_length_error
    from ._summarizers._summarizer import Summarizer, SummaryRequest, SummaryResult
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
    "ExtractiveSummarizer": ("._summarizers._extractive", "ExtractiveSummarizer"),
    "CompactionConfig": ("._outcome", "CompactionConfig"),
    "CompactionManager": ("._manager", "CompactionManager"),
    "CompactionOutcome": ("._outcome", "CompactionOutcome"),
    "Layers": ("._outcome", "Layers"),
    "SUMMARY_PREFIX": (".._schema", "SUMMARY_PREFIX"),
    "SUMMARY_START": (".._schema", "SUMMARY_START"),
    "summary_marker": (".._schema", "summary_marker"),
    "Message": ("._message", "Message"),
    "ABORTED_OUTPUT": ("._preflight._hygiene", "ABORTED_OUTPUT"),
    "HygieneScan": ("._preflight._hygiene", "HygieneScan"),
    "NormalizeReport": ("._preflight._hygiene", "NormalizeReport"),
    "normalize": ("._preflight._hygiene", "normalize"),
    "CompactionObserver": ("._observers", "CompactionObserver"),
    "OpenAISummarizer": ("._summarizers._openai", "OpenAISummarizer"),
    "ProviderSummarizer": ("._summarizers._provider", "ProviderSummarizer"),
    "CompactionResult": (".._store._context_replacement", "CompactionResult"),
    "CompactionPolicy": ("._policy", "CompactionPolicy"),
    "TriggerDecision": ("._policy", "TriggerDecision"),
    "BUILTIN_STRATEGIES": ("._summarizers._prompts", "BUILTIN_STRATEGIES"),
    "Strategy": ("._summarizers._prompts", "Strategy"),
    "is_context_length_error": ("._summarizers._provider_errors", "is_context_length_error"),
    "DiffLine": ("._report", "DiffLine"),
    "diff_lines": ("._report", "diff_lines"),
    "Summarizer": ("._summarizers._summarizer", "Summarizer"),
    "SummaryRequest": ("._summarizers._summarizer", "SummaryRequest"),
    "SummaryResult": ("._summarizers._summarizer", "SummaryResult"),
    "TruncationPolicy": ("._truncate", "TruncationPolicy"),
    "BackgroundPolicy": ("._background_policy", "BackgroundPolicy"),
    "MaskingPolicy": ("._masking_policy", "MaskingPolicy"),
    "MaskReport": ("._preflight._masking", "MaskReport"),
    "Masker": ("._preflight._masking", "Masker"),
    "ToolOutput": ("._preflight._masking", "ToolOutput"),
    "output_seqs": ("._preflight._masking", "output_seqs"),
    "MaskScan": ("._preflight._masking", "MaskScan"),
    "MaskView": ("._preflight._masking", "MaskView"),
    "RowMasking": ("._preflight._masking", "RowMasking"),
    # The original design's names: the very same classes.
    "CompactManager": ("._manager", "CompactionManager"),
    "CompactConfig": ("._outcome", "CompactionConfig"),
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
