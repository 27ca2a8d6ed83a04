"""A tamper-evident history: each session's rows form a hash chain.

Every row written after migration 0009 stores two digests: `payload_digest`, the SHA-256
of its payload as stored (the sealed bytes of an encrypted row, the JSON text of a plain
one; kept when retention purges the payload), and `digest`, an HMAC-SHA256 over the
previous row's digest and everything the row says (seq, kind, typed columns, links,
whether it is sealed, the payload digest, and the agent that produced it when one is
named). The session row keeps the newest digest as
`chain_head`. Editing, deleting, reordering or injecting a row, or moving the context
start, breaks the chain where it happened; `sessionstore verify` and the store's optional
check on load find it.

With a keyring the HMAC key is a random per-session key wrapped by the active KEK (like
payload keys), so nobody without the keyring can recompute a chain. Without one the key
is a public constant: the chain still catches accidents and edits by tools that do not
know it, not a forger. The first chained row's predecessor is a genesis digest naming
the session and its chain start, so rows that predate the chain cannot be passed off as
newer ones.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .._errors import SealedDataError
from ._crypto import Keyring

PUBLIC_KEY: Final = b"sessionstore/chain/v1/unkeyed"
# The columns a row's digest covers, in order (besides the previous digest).
CHAINED_COLUMNS: Final = (
    "session_id",
    "seq",
    "kind",
    "role",
    "item_type",
    "tool_name",
    "call_id",
    "tokens",
    "protected",
    "ref_seq",
    "compaction_id",
    "archive_id",
    "append_token",
)
_DEFAULTS: Final = {
    **dict.fromkeys(CHAINED_COLUMNS),
    "tokens": 0,
    "protected": False,
    "payload": None,
    "payload_sealed": None,
    "agent": None,
}


def chain_key_context(session_id: str) -> dict[str, str]:
    """What a session's wrapped chain key is bound to."""
    return {"table": "sessions", "purpose": "chain", "session_id": session_id}


def genesis(key: bytes, session_id: str, start_seq: int) -> bytes:
    """The digest before a session's first chained row."""
    message = json.dumps(["genesis", session_id, start_seq], ensure_ascii=False)
    return hmac.digest(key, message.encode("utf-8", "surrogatepass"), "sha256")


def payload_digest(payload: str | None, sealed: bytes | None) -> bytes | None:
    """SHA-256 of a payload as stored; None for rows without one (tombstones, clears)."""
    if sealed is not None:
        return hashlib.sha256(sealed).digest()
    if payload is None:
        return None
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).digest()


def link(key: bytes, previous: bytes, row: Mapping[str, Any], body: bytes | None) -> bytes:
    """The digest of one row (its stored columns) given its predecessor's; `body` is its
    payload digest, which the row itself may no longer hold (a purged payload)."""
    fields = [row.get(column) for column in CHAINED_COLUMNS]
    fields[8] = bool(fields[8])  # SQLite hands booleans back as 0/1
    fields.append(row.get("payload_sealed") is not None)
    return _mac(key, previous, _encoded(fields) + agent_part(row.get("agent")), body)


def agent_part(agent: str | None) -> str:
    """What a row's agent adds to its digest: nothing when it names none, so the digests of
    rows written before migration 0015 (and of rows without an agent) stay what they were;
    the encoding is self-delimiting, so a named agent cannot pass for another column."""
    return "" if agent is None else _encoded((agent,))


def _mac(key: bytes, previous: bytes, encoded: str, body: bytes | None) -> bytes:
    """HMAC-SHA256(key, previous + encoded + body), from the key's two padded hashes."""
    inner_start, outer_start = _keyed(key)
    inner = inner_start.copy()
    inner.update(previous)
    inner.update(encoded.encode("utf-8", "surrogatepass"))
    inner.update(b"-" if body is None else body)
    outer = outer_start.copy()
    outer.update(inner.digest())
    return outer.digest()


def extend_plain(
    key: bytes,
    head: bytes,
    session_id: str,
    first: int,
    kind: str,
    rows: Iterable[tuple[str | None, str | None, str | None, str | None, int, bool, str]],
    token: str | None,
    agent: str | None = None,
) -> tuple[list[bytes], list[bytes], bytes]:
    """`extend` for an append's rows with plain payloads, without a dict per row (the append
    hot path): rows are (role, item_type, tool_name, call_id, tokens, protected, payload)
    numbered from `first`, the batch `token` on the first, every row produced by `agent`.
    Returns the payload digests, the digests and the new head; the digests are exactly
    `extend`'s (a property test holds it)."""
    # `_encoded` of each row's fields, written out for their known types (the columns' text
    # or None, an int, a bool): the same text without a loop and type tests per field.
    session = _text(session_id)
    kind_part = _text(kind)
    first_tail = f"~{_text(token)}F{agent_part(agent)}"  # ref seq, the batch token, sealed
    tail = f"~~F{agent_part(agent)}"
    bodies: list[bytes] = []
    digests: list[bytes] = []
    for offset, (role, item_type, tool_name, call_id, tokens, protected, payload) in enumerate(
        rows
    ):
        body = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).digest()
        encoded = (
            f"{session}i{first + offset};{kind_part}{_text(role)}{_text(item_type)}"
            f"{_text(tool_name)}{_text(call_id)}i{tokens};{'T' if protected else 'F'}~~"
            f"{tail if offset else first_tail}"
        )
        head = _mac(key, head, encoded, body)
        bodies.append(body)
        digests.append(head)
    return bodies, digests, head


def _text(value: str | None) -> str:
    """`_encoded` of one text column's value."""
    return "~" if value is None else f"s{len(value)}:{value}"


def _encoded(fields: Sequence[Any]) -> str:
    """An unambiguous text for a row's fields: each typed and length-prefixed, so no value
    can pass for another or for two (cheaper than JSON on the append path)."""
    parts = []
    for value in fields:
        if value is None:
            parts.append("~")
        elif value is True or value is False:
            parts.append("T" if value else "F")
        elif isinstance(value, int):
            parts.append(f"i{value};")
        else:
            parts.append(_text(str(value)))
    return "".join(parts)


@functools.lru_cache(maxsize=256)
def _keyed(key: bytes) -> tuple[hashlib._Hash, hashlib._Hash]:
    """HMAC-SHA256's inner and outer hashes for `key` (RFC 2104), fed the padded key and
    nothing else, to copy per row: the key schedule once per key, and per row only C calls
    (`hmac.HMAC.copy` and its updates are Python code: 4.0 against 2.2 us a row). A property
    test holds every digest equal to `hmac`'s."""
    block = hashlib.sha256().block_size
    padded = (hashlib.sha256(key).digest() if len(key) > block else key).ljust(block, b"\0")
    inner = hashlib.sha256(bytes(byte ^ 0x36 for byte in padded))
    outer = hashlib.sha256(bytes(byte ^ 0x5C for byte in padded))
    return inner, outer


def extend(key: bytes, head: bytes, rows: Sequence[dict[str, Any]]) -> bytes:
    """Chain new rows (dicts with the stored columns) onto `head`: sets each row's
    `payload_digest` and `digest` in place and returns the new head."""
    for row in rows:
        for column, default in _DEFAULTS.items():  # what the database would fill in
            row.setdefault(column, default)
        body = payload_digest(row.get("payload"), row.get("payload_sealed"))
        row["payload_digest"] = body
        head = link(key, head, row, body)
        row["digest"] = head
    return head


@dataclass(frozen=True, slots=True)
class ChainStart:
    """Where new rows of a session chain on: the key, the head, and what the session row
    must store besides the new head (the chain's start and wrapped key, for a new chain)."""

    key: bytes
    head: bytes
    updates: dict[str, Any]

    def after(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Chain `rows` and return the session columns to store with them."""
        return {**self.updates, "chain_head": extend(self.key, self.head, rows)}


class ChainKeys:
    """Sessions' chain keys: created with a session's chain when a keyring is configured,
    unwrapped once and kept for the store's life."""

    def __init__(self, keyring: Keyring | None) -> None:
        self.keyring = keyring
        self._keys: dict[tuple[str, bytes], bytes] = {}  # by session and wrapped key

    def start(self, session: Mapping[str, Any], first_seq: int) -> ChainStart:
        """How rows numbered from `first_seq` chain onto `session` (its stored row)."""
        session_id = session["session_id"]
        if session.get("chain_head") is not None:
            key = self.key_of(session_id, session["chain_kek_id"], session["chain_wrapped_key"])
            return ChainStart(key, bytes(session["chain_head"]), {})
        updates: dict[str, Any] = {"chain_start_seq": first_seq}
        if self.keyring is None:
            key = PUBLIC_KEY
        else:
            key = os.urandom(32)
            active = self.keyring.active
            updates["chain_kek_id"] = active.key_id
            wrapped = active.wrap(key, chain_key_context(session_id))
            updates["chain_wrapped_key"] = wrapped
            self._keys[session_id, wrapped] = key
        return ChainStart(key, genesis(key, session_id, first_seq), updates)

    def key_of(self, session_id: str, kek_id: str | None, wrapped: bytes | None) -> bytes:
        """A session's chain key: the public one when it has none stored."""
        if wrapped is None:
            return PUBLIC_KEY
        wrapped = bytes(wrapped)
        if (session_id, wrapped) not in self._keys:
            if self.keyring is None:
                raise SealedDataError(
                    f"the history chain of session {session_id!r}",
                    "it is keyed but no keyring is configured "
                    "(set SESSIONSTORE_KEYS or SESSIONSTORE_KEY_FILE)",
                )
            try:
                key = self.keyring.get(str(kek_id)).unwrap(wrapped, chain_key_context(session_id))
            except Exception as exc:  # any KEK failure: name the session, hide the details
                raise SealedDataError(
                    f"the history chain key of session {session_id!r}",
                    f"it is wrapped under key {kek_id!r}, which cannot unwrap it here "
                    f"({type(exc).__name__})",
                ) from None
            self._keys[session_id, wrapped] = key
        return self._keys[session_id, wrapped]
