"""The chat-loop adapter end to end: the real `openai` client, a real HTTP server, no SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from sessionstore import SessionStore
from sessionstore._schema import SUMMARY_START
from sessionstore._tokens import estimator_for_model
from sessionstore.adapters.chat import ChatConversation, reply_message
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.openai_server import OpenAIServer, ok, tool_call

WINDOW = 1_500
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up.",
            "parameters": {"type": "object", "properties": {"order": {"type": "integer"}}},
        },
    }
]


def _lookup_order(arguments: str) -> str:
    order = json.loads(arguments)["order"]
    lines = [f"Order {order} shipped on 2026-11-{order % 28 + 1:02d} by DHL, tracking DHL{order}X."]
    lines += [f"  line {n}: SKU-{order}-{n} x{n + 1}, warehouse B{n}, packed" for n in range(8)]
    return "\n".join(lines)


async def _chat(conversation: ChatConversation, client: openai.AsyncOpenAI, turns: int) -> None:
    """A loop written the way users write one: prepare, call, record, run tools."""
    for turn in range(turns):
        new: list[dict[str, Any]] = [
            {"role": "user", "content": f"Please look up order {7000 + turn} and summarize it."}
        ]
        while True:
            messages = await conversation.prepare("user-42", new, tools=TOOLS)
            reply = await client.chat.completions.create(
                model="test-model",
                messages=messages,
                tools=TOOLS,  # type: ignore[arg-type]
            )
            message = await conversation.record("user-42", reply)
            calls = message.get("tool_calls") or []
            if not calls:
                break
            new = [
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": _lookup_order(call["function"]["arguments"]),
                }
                for call in calls
            ]


async def test_a_plain_chat_loop_stays_in_its_window_and_compacts(db_url: str) -> None:
    estimator = estimator_for_model("gpt-4o")
    with OpenAIServer() as server:
        for turn in range(12):  # every turn: a tool call, then an answer
            server.enqueue(tool_call("lookup_order", {"order": 7000 + turn}), ok())
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        async with client, SessionStore(db_url, create_tables=True) as store:
            policy = CompactionPolicy(
                keep_recent_turns=2, keep_tool_io_pairs=1, hard_cap_buffer=300
            )
            manager = CompactionManager(
                CompactionConfig(store=store, max_context_tokens=WINDOW, policy=policy)
            )
            conversation = ChatConversation(manager, instructions="You track orders.")
            await _chat(conversation, client, 12)
            sent = [request.body for request in server.requests]
            info = await store.session_info("user-42")
            rows = await store.history("user-42")
    assert len(sent) == 24
    assert info is not None and info.compaction_count >= 1
    for body in sent:
        messages = body["messages"]
        assert messages[0] == {"role": "system", "content": "You track orders."}
        assert sum(estimator.count_item(m) for m in messages) <= WINDOW
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
        assert calls == answered  # every call answered, no orphan result
    last = sent[-1]["messages"]
    assert any(
        str(m.get("content")).startswith(SUMMARY_START) for m in last
    )  # the summary was sent
    assert last[-1]["role"] == "tool" and last[-1]["content"].startswith("Order 7011 shipped")
    assert [row.seq for row in rows] == list(range(1, len(rows) + 1))
    assert not any(row.item and row.item.get("role") == "system" for row in rows)  # not stored


async def test_a_new_process_sees_the_same_conversation(sqlite_url: str) -> None:
    with OpenAIServer() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        async with client, SessionStore(sqlite_url) as store:
            conversation = ChatConversation(CompactionManager(CompactionConfig(store=store)))
            first = await conversation.prepare("u", [{"role": "user", "content": "hello"}])
            reply = await client.chat.completions.create(model="m", messages=first)
            await conversation.record("u", reply)
    async with SessionStore(sqlite_url) as reopened:
        again = ChatConversation(CompactionManager(CompactionConfig(store=reopened)))
        messages = await again.prepare("u")
    assert messages == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "echo: hello"},
    ]


def test_reply_message_takes_every_shape_users_have() -> None:
    message = {"role": "assistant", "content": "hi"}
    assert reply_message(message) == message
    completion = openai.types.chat.ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": message, "logprobs": None}
            ],
        }
    )
    assert reply_message(completion) == message
    assert reply_message(completion.choices[0].message) == message
    with pytest.raises(TypeError, match="got a str"):
        reply_message("hi")
