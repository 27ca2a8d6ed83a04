"""A plain chat loop over the `openai` client, with sessionstore memory and compaction.

No agent framework: Chat Completions messages in, the messages to send out. Works with
any OpenAI-compatible server:

    OPENAI_API_KEY=... python examples/chat_loop.py
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=x CHAT_MODEL=llama3 \
        python examples/chat_loop.py

It asks about five orders (the model calls a `lookup_order` tool for each) in a small
window, so you can watch it compact; the conversation is in ./sessionstore.db.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import openai

from sessionstore import SessionStore
from sessionstore.adapters.chat import ChatConversation
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its number.",
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "integer"}},
                "required": ["order"],
            },
        },
    }
]


def lookup_order(order: int) -> str:
    """The tool: a fake order system with a verbose answer."""
    lines = [f"Order {order}: shipped 2026-11-{order % 28 + 1:02d} by DHL, tracking DHL{order}X."]
    lines += [f"  item {n}: SKU-{order}-{n} x{n + 1} from warehouse B{n}" for n in range(8)]
    return "\n".join(lines)


async def main() -> None:
    if not os.environ.get("OPENAI_API_KEY"):
        sys.exit("set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server)")
    model = os.environ.get("CHAT_MODEL", "gpt-4o-mini")
    url = os.environ.get("SESSIONSTORE_URL", "sqlite:///sessionstore.db")
    async with openai.AsyncOpenAI() as client, SessionStore(url) as store:
        policy = CompactionPolicy(keep_recent_turns=2, hard_cap_buffer=200)
        manager = CompactionManager(
            CompactionConfig(store=store, model=model, max_context_tokens=1_000, policy=policy)
        )
        chat = ChatConversation(manager, instructions="You answer questions about orders.")
        await store.clear("chat-demo")  # start the demo conversation afresh
        for order in range(7001, 7006):
            new: list[dict[str, Any]] = [{"role": "user", "content": f"Where is order {order}?"}]
            while True:
                messages = await chat.prepare("chat-demo", new, tools=TOOLS)
                reply = await client.chat.completions.create(
                    model=model,
                    messages=messages,
                    tools=TOOLS,  # type: ignore[arg-type]
                )
                message = await chat.record("chat-demo", reply)
                calls = message.get("tool_calls") or []
                if not calls:
                    print(f"order {order}: {message.get('content')}")
                    break
                new = [
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": lookup_order(json.loads(call["function"]["arguments"])["order"]),
                    }
                    for call in calls
                ]
        info = await store.session_info("chat-demo")
        assert info is not None
        print(f"{info.compaction_count} compactions, {info.context_tokens} tokens in context")


if __name__ == "__main__":
    asyncio.run(main())
