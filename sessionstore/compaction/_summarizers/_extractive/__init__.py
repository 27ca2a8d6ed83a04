"""The deterministic, offline summarizer (the embedded default and the fallback of last
resort): `ExtractiveSummarizer` and what the fact sheet and the OpenAI summarizer share of it."""

from ._summarizer import (
    CARRIED_TITLE,
    NO_CONTEXT,
    ExtractiveSummarizer,
    SheetLine,
    current_state,
    stated_sentences,
    summary_facts,
)

__all__ = [
    "CARRIED_TITLE",
    "NO_CONTEXT",
    "ExtractiveSummarizer",
    "SheetLine",
    "current_state",
    "stated_sentences",
    "summary_facts",
]
