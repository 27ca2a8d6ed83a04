"""The append hot path's chaining (`extend_plain`) gives exactly the digests of the general
`extend`, which `verify` recomputes row by row: any difference would read as tampering."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._chain import PUBLIC_KEY, extend, extend_plain, genesis

_text = st.text(max_size=30)
_maybe = st.none() | _text
_rows = st.lists(
    st.tuples(_maybe, _maybe, _maybe, _maybe, st.integers(0, 10**6), st.booleans(), _text),
    min_size=1,
    max_size=6,
)


@given(
    key=st.sampled_from([PUBLIC_KEY, b"k" * 32]),
    session_id=st.text(min_size=1, max_size=20),
    first=st.integers(1, 10**9),
    rows=_rows,
    token=_maybe,
)
def test_extend_plain_chains_exactly_like_extend(
    key: bytes, session_id: str, first: int, rows: list[Any], token: str | None
) -> None:
    head = genesis(key, session_id, first)
    as_dicts = [
        {
            "session_id": session_id,
            "seq": first + offset,
            "kind": "item",
            "role": role,
            "item_type": item_type,
            "tool_name": tool_name,
            "call_id": call_id,
            "tokens": tokens,
            "protected": protected,
            "payload": payload,
            "append_token": None if offset else token,
        }
        for offset, (role, item_type, tool_name, call_id, tokens, protected, payload) in enumerate(
            rows
        )
    ]
    new_head = extend(key, head, as_dicts)
    bodies, digests, plain_head = extend_plain(key, head, session_id, first, "item", rows, token)
    assert plain_head == new_head
    assert digests == [row["digest"] for row in as_dicts]
    assert bodies == [row["payload_digest"] for row in as_dicts]
