"""When and how long a summarizer prepares the next compaction off the request path.

Off by default: the embedded default summarizer (extractive) takes milliseconds, so there
is nothing to hide, and a prepared summary that the conversation outdates (a clear, a pop,
another compaction) is a summarizer call paid for nothing. Turn it on with an LLM
summarizer (docs/COMPACTION.md, "Background compaction").
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class BackgroundPolicy(BaseModel):
    """Background compaction: prepare at `prepare_at` of the trigger, commit at the trigger."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    # Share of the trigger threshold (not of the window) at which a preparation starts.
    prepare_at: float = Field(0.7, gt=0.0, lt=1.0)
    # How long a preparation may hold the session's lease; a holder that crashed is taken
    # over after it. Longer than the summarizer's slowest call, retries included.
    lease_s: float = Field(300.0, gt=0.0)
