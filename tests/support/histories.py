"""Synthetic conversation histories for compaction tests (deterministic by seed)."""

from __future__ import annotations

import json
import random
from typing import Any

Item = dict[str, Any]
WORDS = [
    "deploy",
    "build",
    "branch",
    "config",
    "test",
    "cache",
    "schema",
    "index",
    "latency",
    "budget",
    "rollout",
    "review",
    "migration",
    "token",
    "window",
    "summary",
    "archive",
    "policy",
    "metric",
    "alert",
    "incident",
    "ticket",
]


def words(rng: random.Random, count: int) -> str:
    """`count` pseudo-random words."""
    return " ".join(rng.choice(WORDS) for _ in range(count))


def user(text: str, **extra: Any) -> Item:
    return {"role": "user", "content": text, **extra}


def message(role: str, text: str) -> Item:
    """A message whose content is a plain string (both APIs accept it)."""
    return {"role": role, "content": text}


def assistant(text: str) -> Item:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(call_id: str, name: str = "run_tool", **arguments: Any) -> Item:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
    }


def output(call_id: str, text: str = "ok") -> Item:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def chat_call(*call_ids: str, name: str = "shell") -> Item:
    """A Chat Completions assistant message calling tools (`tool_calls`)."""
    calls = [
        {"id": c, "type": "function", "function": {"name": name, "arguments": "{}"}}
        for c in call_ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def chat_out(call_id: str, content: str = "ok") -> Item:
    """A Chat Completions tool message answering `call_id`."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def turns(count: int, *, seed: int = 0, size: int = 30, tools_every: int = 0) -> list[Item]:
    """`count` user/assistant turns; every `tools_every`-th turn also calls a tool."""
    rng = random.Random(seed)
    items: list[Item] = []
    for n in range(count):
        items.append(user(f"turn {n}: {words(rng, size)}"))
        if tools_every and n % tools_every == 0:
            items.append(call(f"call_{seed}_{n}", query=words(rng, 3)))
            items.append(output(f"call_{seed}_{n}", words(rng, size * 2)))
        items.append(assistant(f"answer {n}: {words(rng, size)}"))
    return items


def coding_session(count: int, *, seed: int = 0) -> list[Item]:
    """A realistic coding-assistant shape: short requests, long answers and tool outputs."""
    rng = random.Random(seed)
    items: list[Item] = []
    for n in range(count):
        items.append(user(f"step {n}: please {words(rng, 12)}"))
        items.append(call(f"cs_{seed}_{n}", "read_file", path=f"src/module_{n}.py"))
        items.append(output(f"cs_{seed}_{n}", words(rng, 300)))
        items.append(assistant(f"step {n} done: {words(rng, 120)}"))
    return items


# One of each item shape with the column texts a NULL stand-in must not swallow ("0", a
# number-like call id), for tests that compare how rows are stored.
EDGE_ITEMS: list[Item] = [
    {"role": "user", "content": "0"},
    {"type": "function_call", "name": "0", "call_id": "0", "arguments": ""},
    {"type": "function_call_output", "call_id": "0", "output": "0"},
    {"type": "function_call", "name": "lookup", "call_id": "12", "arguments": "{}"},
    {"role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    {"type": "reasoning", "summary": []},
]
