"""The deterministic, offline summarizer (the embedded default and the fallback of last
resort): `ExtractiveSummarizer` and what the fact sheet and the OpenAI summarizer share of it."""

from ._facts import CARRIED_TITLE, NO_CONTEXT
from ._merge import stated_sentences
from ._prior import SheetLine, summary_facts
from ._summarizer import ExtractiveSummarizer, current_state

__all__ = [
    "CARRIED_TITLE",
    "NO_CONTEXT",
    "ExtractiveSummarizer",
    "SheetLine",
    "current_state",
    "stated_sentences",
    "summary_facts",
]
