"""The message-list API's `Message` type (docs/COMPACTION.md), accepted wherever it takes one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "developer", "assistant", "user", "tool"]


@dataclass
class Message:
    """A chat message with free-form `meta` (e.g. `{"protected": True}`, `tool_name`)."""

    role: Role
    content: str
    meta: dict[str, Any] = field(default_factory=dict)


def as_item(message: Any) -> dict[str, Any]:
    """A stored item for a Message, a mapping (Responses item / chat message) as-is."""
    if isinstance(message, Message):
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.meta:
            item["meta"] = dict(message.meta)
        return item
    if isinstance(message, Mapping):
        return dict(message)
    raise TypeError(
        f"messages must be sessionstore.compaction.Message objects or dicts, got "
        f"{type(message).__name__}"
    )
