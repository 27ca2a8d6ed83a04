"""Session ids in links and forms, without showing what the page hides.

A page shows a session id redacted and made inert; a link or a form must still carry the
id itself, or following it finds nothing. An id that showing would change (a secret in it,
a bidi control) therefore travels sealed: `ref=` holds it encrypted under a key this server
made at start, so the page's source shows no more than its text and only this server can
open it. Every other id stays readable in the address bar (`id=`)."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# The parameters that name a session, and the name each takes when sealed.
SEALED_NAME: Final = {"id": "ref", "session": "sref"}
CURSOR: Final = "after"  # the list's page cursor: a sort value and a session id, always sealed
BACK_CURSOR: Final = "prev"  # the cursor of the page before, sealed alike
_NONCE_BYTES: Final = 12


class SessionRefs:
    """Seals ids a page would show changed; opens what this server sealed."""

    def __init__(self, shown: Callable[[str], str]) -> None:
        self._shown = shown  # how a page shows a text (redacted, inert)
        self._cipher = AESGCM(AESGCM.generate_key(bit_length=256))

    def param(self, name: str, session_id: str) -> tuple[str, str]:
        """(`name`, the id) when the page would show the id as it is, else it sealed."""
        if name not in SEALED_NAME or self._shown(session_id) == session_id:
            return name, session_id
        return SEALED_NAME[name], self.seal(SEALED_NAME[name], session_id)

    def seal(self, sealed_name: str, text: str) -> str:
        """`text` encrypted for `open(sealed_name, ...)` (the list's page cursors, which
        hold a session id, are always sealed)."""
        nonce = os.urandom(_NONCE_BYTES)
        sealed = nonce + self._cipher.encrypt(nonce, text.encode(), sealed_name.encode())
        return base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, sealed_name: str, sealed: str) -> str | None:
        """The text sealed under `sealed_name` (`ref`, `sref`, a cursor); None for anything
        else (damaged, or sealed by an earlier run of the server, whose key is gone)."""
        try:
            raw = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
            opened = self._cipher.decrypt(
                raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], sealed_name.encode()
            )
        except (ValueError, binascii.Error, InvalidTag):
            return None
        return opened.decode()
