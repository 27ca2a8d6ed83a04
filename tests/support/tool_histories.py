"""A hypothesis strategy for tool-call histories: well paired, or broken in every way the
hygiene pass repairs (orphan outputs, unanswered or repeated calls, private `meta`)."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.support.histories import Item, chat_call, chat_out, user

RESPONSES_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "computer_call")
RESPONSES_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


@st.composite
def histories(draw: st.DrawFn) -> list[Item]:
    """Random interleavings of calls (unique ids), outputs (to known, unknown, repeated or later
    ids) and plain items, in the Responses or Chat Completions format."""
    chat = draw(st.booleans())
    ids = [f"call_{n}" for n in range(draw(st.integers(0, 8)))]
    calls: list[Item] = []
    if chat:
        remaining = list(ids)
        while remaining:
            take = draw(st.integers(1, len(remaining)))
            calls.append(chat_call(*remaining[:take]))
            remaining = remaining[take:]
    else:
        for call_id in ids:
            kind = draw(st.sampled_from(RESPONSES_CALL_TYPES))
            calls.append({"type": kind, "call_id": call_id})
    answer_ids = st.sampled_from([*ids, "ghost"]) if ids else st.just("ghost")
    outputs = [
        chat_out(call_id)
        if chat
        else {"type": draw(st.sampled_from(RESPONSES_OUTPUT_TYPES)), "call_id": call_id}
        for call_id in draw(st.lists(answer_ids, max_size=10))
    ]
    plain = [
        user(f"m{n}", meta={"protected": True}) if draw(st.booleans()) else user(f"m{n}")
        for n in range(draw(st.integers(0, 4)))
    ]
    if not chat:
        plain.append({"type": "reasoning", "id": "rs", "summary": []})
    # Interleave: calls keep their order, the rest go anywhere.
    history = list(calls)
    for item in [*outputs, *plain]:
        history.insert(draw(st.integers(0, len(history))), item)
    return history
