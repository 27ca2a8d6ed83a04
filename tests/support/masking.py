"""Tool-heavy histories and policies for the masking tests (deterministic by turn number)."""

from __future__ import annotations

import random
from typing import Any

from sessionstore.compaction import CompactionPolicy, MaskingPolicy
from tests.support.histories import Item, assistant, call, output, user, words


def tool_turn(n: int, *, tool: str = "read_file", size: int = 300) -> list[Item]:
    """One turn: a question, a tool call, its `size`-word output, an answer."""
    body = f"file {n}: " + words(random.Random(n), size)
    return [
        user(f"question {n}"),
        call(f"call_{n}", tool, path=f"src/m{n}.py"),
        output(f"call_{n}", body),
        assistant(f"answer {n}"),
    ]


def tool_history(turns: int, **kwargs: Any) -> list[Item]:
    """`turns` tool turns in a row."""
    return [item for n in range(turns) for item in tool_turn(n, **kwargs)]


def masking_policy(**masking: Any) -> CompactionPolicy:
    """A compaction policy with masking on (two recent turns, one kept output by default)."""
    options: dict[str, Any] = {"enabled": True, "clear_at_least": 0, "keep_tool_outputs": 1}
    options.update(masking)
    return CompactionPolicy(keep_recent_turns=2, masking=MaskingPolicy(**options))


PLACEHOLDER_START = "[tool output masked by sessionstore]"


def is_placeholder(item: Item) -> bool:
    """Whether an output item was sent masked."""
    text = item.get("output", item.get("content"))
    return isinstance(text, str) and text.startswith(PLACEHOLDER_START)
