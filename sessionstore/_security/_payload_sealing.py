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
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final

import sqlalchemy as sa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy.engine import Connection

from .._errors import SealedDataError
from .._schema import sessions
from ._chain import ChainKeys
from ._crypto import Keyring

_NONCE: Final = 12
_TAG: Final = 16


def session_key_context(session_id: str, sealed_from: int | None = None) -> dict[str, str]:
    """What a session's wrapped data key is bound to: the session and, for keys made since
    migration 0009, the first seq sealed under it (so that boundary cannot be moved)."""
    context = {"table": "sessions", "purpose": "payloads", "session_id": session_id}
    if sealed_from is not None:
        context["sealed_from"] = str(sealed_from)
    return context


def unwrap_session_key(
    keyring: Keyring, session_id: str, kek_id: str, wrapped: bytes, sealed_from: int | None
) -> bytes:
    """A session's payload data key, or SealedDataError naming the session (for reads and
    for rotation alike). Keys wrapped before 0009 are bound to the session only."""
    key = keyring.get(kek_id) if kek_id in keyring.ids else None
    for context in (session_key_context(session_id, sealed_from), session_key_context(session_id)):
        try:
            if key is not None:
                return key.unwrap(bytes(wrapped), context)
        except Exception:  # try the pre-0009 binding next; one error below
            continue
    raise SealedDataError(
        f"the payload key of session {session_id!r}",
        f"it is wrapped under key {kek_id!r}, which cannot unwrap it here, or its "
        f"sealed-from boundary (seq {sealed_from}) was moved",
    )


def _row_context(session_id: str, seq: int) -> bytes:
    """Associated data of one row: table, session and seq, length-prefixed (unambiguous for any
    session id) and cheap to build for every row of a load."""
    sid = session_id.encode("utf-8", "surrogatepass")
    return b"messages|%d:%s|%d" % (len(sid), sid, seq)


def seal_text(cipher: AESGCM, text: str, context: bytes) -> bytes:
    """nonce + ciphertext of `text` under a session's key, bound to `context` (where it is
    stored: a table, the session, a row)."""
    nonce = os.urandom(_NONCE)
    return nonce + cipher.encrypt(nonce, text.encode("utf-8", "surrogatepass"), context)


def open_text(cipher: AESGCM, sealed: bytes, context: bytes, label: str, altered: str) -> str:
    """What `seal_text` sealed for `context`, or SealedDataError naming `label` (`altered`
    says what a failed check means there): never someone else's data."""
    if len(sealed) < _NONCE + _TAG:
        raise SealedDataError(label, "the sealed payload is truncated")
    try:
        text = cipher.decrypt(sealed[:_NONCE], sealed[_NONCE:], context)
    except InvalidTag:
        raise SealedDataError(label, altered) from None
    return text.decode("utf-8", "surrogatepass")


def seal_payload(cipher: AESGCM, session_id: str, seq: int, payload: str) -> bytes:
    """nonce + ciphertext of a JSON payload, bound to its session and seq."""
    return seal_text(cipher, payload, _row_context(session_id, seq))


def open_payload(cipher: AESGCM, session_id: str, seq: int, sealed: bytes) -> str:
    """The JSON payload, or SealedDataError naming the row: never someone else's data."""
    return open_text(
        cipher,
        sealed,
        _row_context(session_id, seq),
        f"message {seq} of session {session_id!r}",
        "the payload or its binding to session/seq was altered, or it was sealed with "
        "another session's key",
    )


Opener = Callable[[int, Any, Any], Any]  # (seq, payload, payload_sealed) -> plain payload

_SESSION_KEY: Final = sa.select(
    sessions.c.sealed_from_seq, sessions.c.payload_kek_id, sessions.c.payload_wrapped_key
).where(sessions.c.session_id == sa.bindparam("sid"))


class SessionKeys:
    """Ciphers of encrypted sessions: data keys unwrapped once, kept for the store's life.

    `encrypt_new` says whether sessions without a key get one on their next write;
    a session that has a key keeps sealing its rows either way. `chains` holds the keys
    of the sessions' history chains (same keyring).
    """

    def __init__(self, keyring: Keyring | None, *, encrypt_new: bool = False) -> None:
        if encrypt_new and keyring is None:
            raise ValueError(
                "encrypt_payloads needs a keyring: set SESSIONSTORE_KEYS or "
                "SESSIONSTORE_KEY_FILE, or pass keyring=Keyring([...])"
            )
        self.keyring = keyring
        self.encrypt_new = encrypt_new
        self.chains = ChainKeys(keyring)
        # By (session, wrapped key, sealed-from): a reused session id never gets a stale key.
        self._ciphers: dict[tuple[str, bytes, int | None], AESGCM] = {}

    def for_rows(
        self, conn: Connection, session: Mapping[str, Any], first_seq: int
    ) -> AESGCM | None:
        """The cipher new rows (numbered from `first_seq`) of this session are sealed with,
        or None (stored plain). A new key is created and stored inside the caller's
        transaction, which holds the session's lock."""
        if session["payload_wrapped_key"] is not None:
            return self.cipher(session)
        if not self.encrypt_new:
            return None
        session_id = session["session_id"]
        keyring = self._require_keyring(session_id)
        key = AESGCM.generate_key(bit_length=256)
        wrapped = keyring.active.wrap(key, session_key_context(session_id, first_seq))
        conn.execute(
            sessions.update()
            .where(sessions.c.session_id == session_id)
            .values(
                payload_kek_id=keyring.active.key_id,
                payload_wrapped_key=wrapped,
                sealed_from_seq=first_seq,
            )
        )
        self._ciphers[session_id, wrapped, first_seq] = AESGCM(key)
        return self._ciphers[session_id, wrapped, first_seq]

    def cipher(self, session: Mapping[str, Any]) -> AESGCM:
        """The cipher of a session whose row holds a payload key (its boundary checked)."""
        session_id = session["session_id"]
        wrapped = bytes(session["payload_wrapped_key"])
        sealed_from = session["sealed_from_seq"]
        if (session_id, wrapped, sealed_from) not in self._ciphers:
            keyring = self._require_keyring(session_id)
            key = unwrap_session_key(
                keyring, session_id, session["payload_kek_id"], wrapped, sealed_from
            )
            self._ciphers[session_id, wrapped, sealed_from] = AESGCM(key)
        return self._ciphers[session_id, wrapped, sealed_from]

    def opener(self, conn: Connection, session_id: str) -> Opener:
        """How to read this session's payloads: sealed ones opened, and a plain row where
        the session is encrypted refused (a downgrade), never returned."""
        row = conn.execute(_SESSION_KEY, {"sid": session_id}).first()
        if row is None or row.payload_wrapped_key is None:
            return partial(_open_plain_session, session_id)
        session = {"session_id": session_id, **row._mapping}
        cipher = self.cipher(session)
        sealed_from = -1 if row.sealed_from_seq is None else int(row.sealed_from_seq)
        return partial(_open_encrypted, cipher, session_id, sealed_from)

    def _require_keyring(self, session_id: str) -> Keyring:
        if self.keyring is None:
            raise SealedDataError(
                f"session {session_id!r}",
                "its payloads are encrypted but no keyring is configured "
                "(set SESSIONSTORE_KEYS or SESSIONSTORE_KEY_FILE)",
            )
        return self.keyring


def _open_plain_session(session_id: str, seq: int, payload: Any, sealed: Any) -> Any:
    if sealed is not None:
        raise SealedDataError(
            f"message {seq} of session {session_id!r}",
            "it is sealed but its session has no stored data key",
        )
    return payload


def _open_encrypted(
    cipher: AESGCM, session_id: str, sealed_from: int, seq: int, payload: Any, sealed: Any
) -> Any:
    if sealed is not None:
        return open_payload(cipher, session_id, seq, bytes(sealed))
    if payload is not None and seq >= sealed_from:
        raise SealedDataError(
            f"message {seq} of session {session_id!r}",
            f"it is stored plain, but the session is encrypted from seq {sealed_from} on: "
            "the row was downgraded (forged) or written around the store",
        )
    return payload  # written before the session was encrypted, or purged
