"""A plain chat loop's memory: Chat Completions messages in, what to send out.

    conversation = ChatConversation(manager, instructions="Be brief.")
    messages = await conversation.prepare("user-42", [{"role": "user", "content": "hi"}])
    reply = await client.chat.completions.create(model=..., messages=messages)
    await conversation.record("user-42", reply)

`prepare` stores the new messages, runs the pre-flight (estimate, decide, compact
when triggered) and returns the active context cleaned for the model (every tool
call answered, no orphan outputs, no private `meta`; old tool outputs masked when the
policy's masking is on); `record` stores the reply and
compacts at the turn boundary when the context crossed the trigger. Nothing here
needs an agent framework: any loop that speaks Chat Completions fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from openai.types.chat import ChatCompletionMessageParam

from ..compaction import CompactionManager, RowMasking, normalize

__all__ = ["ChatConversation", "reply_message"]


class ChatConversation:
    """Conversations of one CompactionManager (and its store), in Chat Completions shape."""

    def __init__(self, manager: CompactionManager, *, instructions: str | None = None) -> None:
        self.manager = manager
        self.store = manager.store
        self.instructions = instructions  # sent first on every call, never stored
        policy = manager.policy
        self.masking = (  # what each session's calls had masked (docs/COMPACTION.md)
            RowMasking(policy.masking, policy, manager.estimator)
            if policy.masking.enabled
            else None
        )

    async def prepare(
        self,
        session_id: str,
        new_messages: Sequence[Mapping[str, Any]] = (),
        *,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> list[ChatCompletionMessageParam]:
        """Store `new_messages`, run the pre-flight, and return the messages to send.

        `tools` are the tool schemas the call sends (their tokens count toward the
        window). Tool results go in `new_messages` as `{"role": "tool", ...}` messages.
        """
        if new_messages:
            await self.manager.append(session_id, list(new_messages))
        if self.masking is None:
            await self.manager.before_model_call(
                session_id, instructions=self.instructions, tools=tools
            )
            messages = normalize(await self.store.load_context(session_id)).items
        else:  # the cascade: old tool outputs masked first, summaries if still over
            view = self.masking.view(session_id, await self.store.context_rows(session_id))
            if await self.manager.before_model_call(
                session_id, instructions=self.instructions, tools=tools, masked=view.report
            ):
                view = self.masking.view(session_id, await self.store.context_rows(session_id))
            messages = normalize(view.items).items
        if self.instructions:
            messages = [{"role": "system", "content": self.instructions}, *messages]
        return cast("list[ChatCompletionMessageParam]", messages)

    async def record(self, session_id: str, reply: object) -> dict[str, Any]:
        """Store the model's reply (a ChatCompletion, its message, or a dict); return it."""
        message = reply_message(reply)
        await self.manager.append(session_id, [message])
        await self.manager.maybe_compact(session_id)
        return message


def reply_message(reply: object) -> dict[str, Any]:
    """The assistant message of a reply as a plain dict, whatever shape the caller has."""
    choices = getattr(reply, "choices", None)
    if choices:  # a ChatCompletion: its first choice's message
        reply = choices[0].message
    dump = getattr(reply, "model_dump", None)
    if callable(dump):  # an openai ChatCompletionMessage (pydantic)
        reply = dump(mode="json", exclude_none=True)
    if not isinstance(reply, Mapping):
        raise TypeError(
            f"record() takes a ChatCompletion, a ChatCompletionMessage or a message dict, "
            f"got a {type(reply).__name__}"
        )
    return dict(reply)
