"""MaskingPolicy: which old tool outputs the model is sent as a placeholder (docs/COMPACTION.md).

Masking is a view: the stored rows never change, only what a model call is sent. It is the
first stage of the trigger cascade (summaries run only when the masked context is still over
the trigger), so its options are about keeping the sent prefix stable for prompt caches.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ALL_TOOLS", "MaskingPolicy"]

ALL_TOOLS = "*"  # a `previews` key: the preview of every tool not named


class MaskingPolicy(BaseModel):
    """Old tool outputs, outside the policy's recent turns, sent as a short placeholder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    # Mask only once the outputs newly due add up to this many tokens: every masking changes
    # the sent prefix (a prompt-cache miss), so it happens in chunks, not on every call.
    clear_at_least: Annotated[int, Field(ge=0)] = 2000
    # The newest tool outputs stay whole, however old their turn.
    keep_tool_outputs: Annotated[int, Field(ge=0)] = 3
    # Smaller outputs stay whole: their placeholder would save little or nothing.
    min_output_tokens: Annotated[int, Field(ge=1)] = 100
    exclude_tools: tuple[str, ...] = ()  # never masked (the policy's protected_tools neither)
    # Tool name (or "*" for the rest) -> characters of the output kept in its placeholder.
    previews: dict[str, int] = Field(default_factory=dict)

    @field_validator("previews")
    @classmethod
    def _previews_are_sizes(cls, previews: dict[str, int]) -> dict[str, int]:
        for tool, chars in previews.items():
            if chars < 0:
                raise ValueError(
                    f"previews[{tool!r}] is {chars}: give the number of characters of the "
                    "output to keep in its placeholder (0 or more)"
                )
        return previews

    def preview_chars(self, tool: str | None) -> int:
        """Characters of a tool's output its placeholder keeps."""
        if tool is not None and tool in self.previews:
            return self.previews[tool]
        return self.previews.get(ALL_TOOLS, 0)
