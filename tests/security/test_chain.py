"""The append hot path's chaining (`extend_plain`) gives exactly the digests of the general
`extend`, which `verify` recomputes row by row: any difference would read as tampering."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._security._chain import PUBLIC_KEY, _mac, extend, extend_plain, genesis

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
    agent=_maybe,
)
def test_extend_plain_chains_exactly_like_extend(
    key: bytes, session_id: str, first: int, rows: list[Any], token: str | None, agent: str | None
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
            "agent": agent,
        }
        for offset, (role, item_type, tool_name, call_id, tokens, protected, payload) in enumerate(
            rows
        )
    ]
    new_head = extend(key, head, as_dicts)
    bodies, digests, plain_head = extend_plain(
        key, head, session_id, first, "item", rows, token, agent
    )
    assert plain_head == new_head
    assert digests == [row["digest"] for row in as_dicts]
    assert bodies == [row["payload_digest"] for row in as_dicts]


def _one_row(**columns: Any) -> dict[str, Any]:
    return {
        "session_id": "user-42",
        "seq": 7,
        "kind": "item",
        "role": "assistant",
        "item_type": "message",
        "tool_name": None,
        "call_id": None,
        "tokens": 12,
        "protected": False,
        "payload": '{"role":"assistant","content":"hi"}',
        "append_token": "t0",
        **columns,
    }


def test_a_row_without_an_agent_keeps_the_digest_it_had_before_migration_0015() -> None:
    # Computed with the chain as it was before the agent column (commit 3be5121): rows
    # written then still verify, and rows that name no agent chain exactly as they did.
    before = "791971c1c59b2ead7918814352edf807401c14abdc95d7e48ce805b7dc402342"
    head = genesis(PUBLIC_KEY, "user-42", 7)
    assert extend(PUBLIC_KEY, head, [_one_row()]).hex() == before
    assert extend(PUBLIC_KEY, head, [_one_row(agent=None)]).hex() == before


@given(agent=st.text(min_size=1, max_size=30), other=st.text(min_size=1, max_size=30))
def test_the_agent_is_part_of_the_digest(agent: str, other: str) -> None:
    head = genesis(PUBLIC_KEY, "user-42", 7)
    named = extend(PUBLIC_KEY, head, [_one_row(agent=agent)])
    assert named != extend(PUBLIC_KEY, head, [_one_row()])
    assert (named == extend(PUBLIC_KEY, head, [_one_row(agent=other)])) == (agent == other)


@given(
    key=st.binary(max_size=150),  # shorter than, equal to and longer than SHA-256's block
    previous=st.binary(max_size=40),
    encoded=st.text(max_size=60),
    body=st.none() | st.binary(min_size=32, max_size=32),
)
def test_a_row_digest_is_the_standard_hmac(
    key: bytes, previous: bytes, encoded: str, body: bytes | None
) -> None:
    # The chain builds HMAC-SHA256 from the key's padded hashes (no Python code per row);
    # every digest must be the standard one, or stored chains would stop verifying.
    message = previous + encoded.encode("utf-8", "surrogatepass") + (b"-" if body is None else body)
    assert _mac(key, previous, encoded, body) == hmac.new(key, message, hashlib.sha256).digest()
