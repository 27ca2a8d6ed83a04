"""Encryption of live message payloads at rest (opt-in): one data key per session.

Each session gets a random 256-bit data key, wrapped by the keyring's active KEK
and stored on its `sessions` row (rotation rewraps it, like archive keys). Every
payload is sealed with AES-256-GCM under that key with a fresh 96-bit nonce and
associated data naming the table, session and seq, so a row copied elsewhere or
edited fails to open. The typed columns (role, item type, tool name, call id,
tokens) stay plain, so history is still queryable with SQL.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy.engine import Connection

from ._crypto import Keyring
from ._errors import SealedDataError
from ._schema import sessions

_NONCE: Final = 12
_TAG: Final = 16
_WRAPPED_KEY: Final = sa.select(sessions.c.payload_kek_id, sessions.c.payload_wrapped_key).where(
    sessions.c.session_id == sa.bindparam("sid")
)


def session_key_context(session_id: str) -> dict[str, str]:
    """What a session's wrapped data key is bound to."""
    return {"table": "sessions", "purpose": "payloads", "session_id": session_id}


def unwrap_session_key(keyring: Keyring, session_id: str, kek_id: str, wrapped: bytes) -> bytes:
    """A session's payload data key, or SealedDataError naming the session (for reads and
    for rotation alike)."""
    try:
        return keyring.get(kek_id).unwrap(bytes(wrapped), session_key_context(session_id))
    except Exception as exc:  # any KEK failure: name the session, hide the details
        raise SealedDataError(
            f"the payload key of session {session_id!r}",
            f"it is wrapped under key {kek_id!r}, which cannot unwrap it here "
            f"({type(exc).__name__}: {exc})",
        ) from None


def _row_context(session_id: str, seq: int) -> bytes:
    """Associated data of one row: table, session and seq, length-prefixed (unambiguous for any
    session id) and cheap to build for every row of a load."""
    sid = session_id.encode("utf-8", "surrogatepass")
    return b"messages|%d:%s|%d" % (len(sid), sid, seq)


def seal_payload(cipher: AESGCM, session_id: str, seq: int, payload: str) -> bytes:
    """nonce + ciphertext of a JSON payload, bound to its session and seq."""
    nonce = os.urandom(_NONCE)
    text = payload.encode("utf-8", "surrogatepass")
    return nonce + cipher.encrypt(nonce, text, _row_context(session_id, seq))


def open_payload(cipher: AESGCM, session_id: str, seq: int, sealed: bytes) -> str:
    """The JSON payload, or SealedDataError naming the row: never someone else's data."""
    label = f"message {seq} of session {session_id!r}"
    if len(sealed) < _NONCE + _TAG:
        raise SealedDataError(label, "the sealed payload is truncated")
    try:
        text = cipher.decrypt(sealed[:_NONCE], sealed[_NONCE:], _row_context(session_id, seq))
    except InvalidTag:
        raise SealedDataError(
            label,
            "the payload or its binding to session/seq was altered, or it was sealed with "
            "another session's key",
        ) from None
    return text.decode("utf-8", "surrogatepass")


class SessionKeys:
    """Ciphers of encrypted sessions: data keys unwrapped once, kept for the store's life.

    `encrypt_new` says whether sessions without a key get one on their next write;
    a session that has a key keeps sealing its rows either way.
    """

    def __init__(self, keyring: Keyring | None, *, encrypt_new: bool = False) -> None:
        if encrypt_new and keyring is None:
            raise ValueError(
                "encrypt_payloads needs a keyring: set SESSIONSTORE_KEYS or "
                "SESSIONSTORE_KEY_FILE, or pass keyring=Keyring([...])"
            )
        self.keyring = keyring
        self.encrypt_new = encrypt_new
        self._ciphers: dict[str, AESGCM] = {}

    def for_rows(self, conn: Connection, session: Mapping[str, Any]) -> AESGCM | None:
        """The cipher new rows of this session are sealed with, or None (stored plain)."""
        if session["payload_wrapped_key"] is None and not self.encrypt_new:
            return None
        return self.for_write(conn, session)

    def plain(self, conn: Connection, session_id: str, seq: int, payload: Any, sealed: Any) -> Any:
        """A row's payload as stored in plain form (JSON text or value), opening it if sealed."""
        if sealed is None:
            return payload
        return open_payload(self.for_read(conn, session_id), session_id, seq, bytes(sealed))

    def for_write(self, conn: Connection, session: Mapping[str, Any]) -> AESGCM:
        """The session's cipher, creating and storing its data key on first use (inside
        the caller's transaction, which holds the session's lock)."""
        session_id = session["session_id"]
        if session["payload_wrapped_key"] is not None:
            return self._unwrap(
                session_id, session["payload_kek_id"], session["payload_wrapped_key"]
            )
        keyring = self._require_keyring(session_id)
        key = AESGCM.generate_key(bit_length=256)
        wrapped = keyring.active.wrap(key, session_key_context(session_id))
        conn.execute(
            sessions.update()
            .where(sessions.c.session_id == session_id)
            .values(payload_kek_id=keyring.active.key_id, payload_wrapped_key=wrapped)
        )
        self._ciphers[session_id] = AESGCM(key)
        return self._ciphers[session_id]

    def for_read(self, conn: Connection, session_id: str) -> AESGCM:
        """The cipher of a session that has sealed rows."""
        if session_id in self._ciphers:
            return self._ciphers[session_id]
        row = conn.execute(_WRAPPED_KEY, {"sid": session_id}).first()
        if row is None or row.payload_wrapped_key is None:
            raise SealedDataError(
                f"session {session_id!r}", "it has sealed payloads but no stored data key"
            )
        return self._unwrap(session_id, row.payload_kek_id, row.payload_wrapped_key)

    def _unwrap(self, session_id: str, kek_id: str, wrapped: bytes) -> AESGCM:
        if session_id not in self._ciphers:
            keyring = self._require_keyring(session_id)
            key = unwrap_session_key(keyring, session_id, kek_id, wrapped)
            self._ciphers[session_id] = AESGCM(key)
        return self._ciphers[session_id]

    def _require_keyring(self, session_id: str) -> Keyring:
        if self.keyring is None:
            raise SealedDataError(
                f"session {session_id!r}",
                "its payloads are encrypted but no keyring is configured "
                "(set SESSIONSTORE_KEYS or SESSIONSTORE_KEY_FILE)",
            )
        return self.keyring
