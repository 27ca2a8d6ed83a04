"""Envelope encryption: AES-256-GCM payloads under per-call data keys wrapped by a keyring.

Every `seal` draws a fresh 256-bit data key and 96-bit nonce. The payload's associated data is
the canonical encoding of the caller's context (table, session, compaction, seq range, ...) and
the format version, so a row copied to another place, or edited, fails to open. The data key is
wrapped by the keyring's active key-encryption key (KEK) under the same context. The KEK id is
deliberately not part of the payload's associated data: `rewrap` must re-key a row without
touching its ciphertext, and a swapped KEK id already fails when the data key is unwrapped.

No message or repr here ever contains key material or plaintext, so all of it is safe to log.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sessionstore._errors import SessionStoreError

from .._errors import (
    KeyIntegrityError,
    KeyringError,
    KeyUnavailableError,
    MissingKeyError,
    SealedDataError,
)

ENVELOPE_V1: Final = 1
KEYS_ENV: Final = "SESSIONSTORE_KEYS"
ACTIVE_KEY_ENV: Final = "SESSIONSTORE_ACTIVE_KEY"
KEY_FILE_ENV: Final = "SESSIONSTORE_KEY_FILE"

_KEY_BYTES: Final = 32
_NONCE_BYTES: Final = 12
_TAG_BYTES: Final = 16
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_KEY_ID_RULE: Final = "1-64 characters from A-Z a-z 0-9 . _ -"
_HOW_TO_MAKE: Final = "make one with: openssl rand -base64 32"
_KMS_INTEGRITY_CODES: Final = frozenset({"InvalidCiphertextException", "IncorrectKeyException"})


def canonical_context(context: Mapping[str, str]) -> bytes:
    """Deterministic bytes for an encryption context, identical on every platform.

    Compact JSON with keys sorted by code point and everything non-ASCII escaped, e.g.
    `{"compaction":"7","seq":"1-40","session":"abc","table":"archives"}`.
    """
    return _canonical_json(_checked_context(context))


def _payload_aad(format_version: int, context: Mapping[str, str]) -> bytes:
    """The payload's associated data: `{"context":{...},"format_version":1}`, canonical."""
    return _canonical_json({"context": _checked_context(context), "format_version": format_version})


def _checked_context(context: Mapping[str, str]) -> dict[str, str]:
    # JSON would encode 1 and "1" differently, and KMS takes only strings: refuse both early.
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in context.items()):
        raise TypeError("encryption context keys and values must all be str")
    return dict(context)


def _canonical_json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(
        "ascii"
    )


def _check_key_id(key_id: str, where: str) -> None:
    # The rejected id is never echoed: a swapped "secret:id" pair would print the secret.
    if not _KEY_ID.fullmatch(key_id):
        raise KeyringError(
            f"{where}: invalid key id ({len(key_id)} chars); a key id is {_KEY_ID_RULE}"
            " (is the entry written as id:secret?)"
        )


class KeyEncryptionKey(Protocol):
    """Wraps data keys; `context` must be given again, unchanged, to unwrap."""

    @property
    def key_id(self) -> str: ...

    def wrap(self, data_key: bytes, context: Mapping[str, str]) -> bytes: ...

    def unwrap(self, wrapped: bytes, context: Mapping[str, str]) -> bytes: ...


class LocalKey:
    """A 32-byte secret held in process; wraps with AES-256-GCM, context as associated data."""

    __slots__ = ("_aead", "_key_id", "_secret")

    def __init__(self, key_id: str, secret: bytes) -> None:
        _check_key_id(key_id, "local key")
        if not isinstance(secret, bytes):
            raise KeyringError(f"key {key_id!r}: secret must be bytes (decode base64 first)")
        if len(secret) != _KEY_BYTES:
            raise KeyringError(
                f"key {key_id!r}: secret is {len(secret)} bytes, need exactly {_KEY_BYTES}"
                f" ({_HOW_TO_MAKE})"
            )
        self._key_id = key_id
        self._secret = secret
        self._aead = AESGCM(secret)

    @classmethod
    def generate(cls, key_id: str) -> LocalKey:
        """A new key with a random secret from the OS CSPRNG."""
        return cls(key_id, AESGCM.generate_key(bit_length=256))

    @property
    def key_id(self) -> str:
        return self._key_id

    def wrap(self, data_key: bytes, context: Mapping[str, str]) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, data_key, canonical_context(context))

    def unwrap(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        if len(wrapped) < _NONCE_BYTES + _TAG_BYTES:
            raise KeyIntegrityError(
                f"the data key wrapped under key {self._key_id!r} is truncated"
                f" ({len(wrapped)} bytes)"
            )
        nonce, body = wrapped[:_NONCE_BYTES], wrapped[_NONCE_BYTES:]
        try:
            return self._aead.decrypt(nonce, body, canonical_context(context))
        except InvalidTag:
            raise KeyIntegrityError(
                f"the data key wrapped under key {self._key_id!r} failed authentication"
            ) from None

    def __repr__(self) -> str:
        return f"LocalKey({self._key_id!r})"


class AwsKmsKey:
    """A KMS key used through an injected boto3 KMS client; the secret never leaves KMS."""

    __slots__ = ("_client", "_key_id")

    def __init__(self, key_id: str, client: Any) -> None:
        if not key_id.strip():
            raise KeyringError("AWS KMS key: key_id must be a key id, key ARN or alias")
        self._key_id = key_id
        self._client = client

    @property
    def key_id(self) -> str:
        return self._key_id

    def wrap(self, data_key: bytes, context: Mapping[str, str]) -> bytes:
        try:
            response = self._client.encrypt(
                KeyId=self._key_id, Plaintext=data_key, EncryptionContext=dict(context)
            )
        except Exception as exc:
            mapped = self._translate(exc, "wrap")
            if mapped is None:
                raise
            raise mapped from None
        return bytes(response["CiphertextBlob"])

    def unwrap(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        try:
            response = self._client.decrypt(
                CiphertextBlob=wrapped, EncryptionContext=dict(context), KeyId=self._key_id
            )
        except Exception as exc:
            mapped = self._translate(exc, "unwrap")
            if mapped is None:
                raise
            raise mapped from None
        return bytes(response["Plaintext"])

    def _translate(self, exc: Exception, action: str) -> SessionStoreError | None:
        """Our error for a botocore failure; None for anything else (a bug: let it raise).

        Only the error code is kept (chaining is suppressed by the caller): botocore's
        parameter errors quote the request, which holds the data key.
        """
        response = getattr(exc, "response", None)
        error = response.get("Error") if isinstance(response, dict) else None
        code = error.get("Code") if isinstance(error, dict) else None
        if isinstance(code, str) and code in _KMS_INTEGRITY_CODES:
            return KeyIntegrityError(
                f"AWS KMS rejected the data key wrapped under {self._key_id!r} ({code})"
            )
        if not isinstance(code, str):
            if not any(cls.__module__.startswith("botocore") for cls in type(exc).__mro__):
                return None
            code = type(exc).__name__
        return KeyUnavailableError(
            f"AWS KMS key {self._key_id!r} cannot {action} ({code}): check that the key exists"
            " and is enabled, and that this process's AWS credentials and region may use it"
        )

    def __repr__(self) -> str:
        return f"AwsKmsKey({self._key_id!r})"


class Keyring:
    """KEKs by id, exactly one of them active (the one new data is sealed under)."""

    __slots__ = ("_active", "_keys")

    def __init__(self, keys: Iterable[KeyEncryptionKey], active: str | None = None) -> None:
        by_id: dict[str, KeyEncryptionKey] = {}
        for key in keys:
            if key.key_id in by_id:
                raise KeyringError(f"key id {key.key_id!r} appears twice; key ids must be unique")
            by_id[key.key_id] = key
        if not by_id:
            raise KeyringError(f"a keyring needs at least one key ({_HOW_TO_MAKE})")
        active = list(by_id)[-1] if active is None else active
        if active not in by_id:
            raise KeyringError(
                f"active key {active!r} is not in the keyring (it holds {', '.join(by_id)})"
            )
        self._keys = by_id
        self._active = by_id[active]

    @property
    def active(self) -> KeyEncryptionKey:
        return self._active

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def get(self, key_id: str) -> KeyEncryptionKey:
        try:
            return self._keys[key_id]
        except KeyError:
            raise MissingKeyError(key_id) from None

    def with_active(self, key_id: str) -> Keyring:
        """The same keys with `key_id` active, e.g. to rotate to a newly added key."""
        self.get(key_id)
        return Keyring(self._keys.values(), active=key_id)

    def __repr__(self) -> str:
        return f"Keyring(ids={list(self._keys)!r}, active={self._active.key_id!r})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Keyring:
        """`SESSIONSTORE_KEYS=id:base64,...`; `SESSIONSTORE_ACTIVE_KEY` or the last is active."""
        env = os.environ if environ is None else environ
        raw = env.get(KEYS_ENV, "").strip()
        if not raw:
            raise KeyringError(f"{KEYS_ENV} is not set; set it to id:base64secret[,...]")
        keys: list[KeyEncryptionKey] = []
        for n, entry in enumerate(raw.split(","), start=1):
            key_id, colon, secret = entry.strip().partition(":")
            if not colon:
                raise KeyringError(f"{KEYS_ENV} entry {n} is not in the form id:base64secret")
            keys.append(_local_key(key_id, secret, f"{KEYS_ENV} entry {n}"))
        return cls._checked(keys, env.get(ACTIVE_KEY_ENV, "").strip() or None, KEYS_ENV)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, check_permissions: bool = True) -> Keyring:
        """Keys from JSON `{"active": id, "keys": {id: base64}}`; must be chmod 600."""
        where = f"key file {os.fspath(path)}"
        try:
            with open(path, "rb") as handle:
                mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
                data = handle.read()
        except OSError as exc:
            raise KeyringError(f"{where}: cannot read it ({exc.strerror})") from None
        # POSIX only: elsewhere the mode bits do not describe who may read the file.
        if check_permissions and os.name == "posix" and mode & 0o077:
            raise KeyringError(
                f"{where} is accessible by group or others (mode {mode:04o});"
                f" run: chmod 600 {os.fspath(path)}"
            )
        try:
            document = json.loads(data, object_pairs_hook=_no_duplicates)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise KeyringError(f"{where} is not valid JSON ({_json_problem(exc)})") from None
        except KeyringError as exc:
            raise KeyringError(f"{where}: {exc}") from None
        if not isinstance(document, dict) or not isinstance(document.get("keys"), dict):
            raise KeyringError(f'{where}: expected {{"active": id, "keys": {{id: base64, ...}}}}')
        active = document.get("active")
        if active is not None and not isinstance(active, str):
            raise KeyringError(f'{where}: "active" must be a key id string')
        keys: list[KeyEncryptionKey] = []
        for key_id, secret in document["keys"].items():
            if not isinstance(secret, str):
                raise KeyringError(f"{where}: key {key_id!r} must map to a base64 string")
            keys.append(_local_key(key_id, secret, where))
        return cls._checked(keys, active, where)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Keyring | None:
        """`SESSIONSTORE_KEYS`, else `SESSIONSTORE_KEY_FILE`, else None (no keys configured)."""
        env = os.environ if environ is None else environ
        if env.get(KEYS_ENV, "").strip():
            return cls.from_env(env)
        key_file = env.get(KEY_FILE_ENV, "").strip()
        return cls.from_file(key_file) if key_file else None

    @staticmethod
    def write_file(path: str | os.PathLike[str], keyring: Keyring) -> None:
        """Create a new key file, mode 0600; never overwrites (old keys may still be needed)."""
        secrets: dict[str, str] = {}
        for key_id, key in keyring._keys.items():
            if not isinstance(key, LocalKey):
                raise KeyringError(f"key {key_id!r} is not a local key; only those go in a file")
            secrets[key_id] = base64.b64encode(key._secret).decode("ascii")
        text = json.dumps({"active": keyring.active.key_id, "keys": secrets}, indent=2) + "\n"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise KeyringError(
                f"key file {os.fspath(path)} already exists; refusing to overwrite keys"
                " that existing data may still need"
            ) from None
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise

    @classmethod
    def _checked(cls, keys: list[KeyEncryptionKey], active: str | None, where: str) -> Keyring:
        try:
            return cls(keys, active=active)
        except KeyringError as exc:
            raise KeyringError(f"{where}: {exc}") from None


def _local_key(key_id: str, secret_b64: str, where: str) -> LocalKey:
    _check_key_id(key_id, where)
    try:
        secret = base64.b64decode(secret_b64.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise KeyringError(
            f"{where}: the secret of key {key_id!r} is not valid base64 ({_HOW_TO_MAKE})"
        ) from None
    try:
        return LocalKey(key_id, secret)
    except KeyringError as exc:
        raise KeyringError(f"{where}: {exc}") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise KeyringError(f"{name!r} appears twice; each key id and field must be unique")
        result[name] = value
    return result


def _json_problem(exc: UnicodeDecodeError | json.JSONDecodeError) -> str:
    # JSONDecodeError's str() gives only the position; never quote the document itself.
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return "not UTF-8"


@dataclass(frozen=True, slots=True, repr=False)
class Sealed:
    """One sealed payload, as stored: every field goes in the row."""

    format_version: int
    kek_id: str
    wrapped_key: bytes
    nonce: bytes
    ciphertext: bytes

    def __repr__(self) -> str:
        return (
            f"Sealed(format_version={self.format_version}, kek_id={self.kek_id!r},"
            f" wrapped_key=<{len(self.wrapped_key)} bytes>, nonce=<{len(self.nonce)} bytes>,"
            f" ciphertext=<{len(self.ciphertext)} bytes>)"
        )


def seal(plaintext: bytes, keyring: Keyring, context: Mapping[str, str]) -> Sealed:
    """Encrypt under a fresh data key, bound to `context`, wrapped by the active KEK."""
    kek = keyring.active
    data_key = AESGCM.generate_key(bit_length=256)
    nonce = os.urandom(_NONCE_BYTES)
    ciphertext = AESGCM(data_key).encrypt(nonce, plaintext, _payload_aad(ENVELOPE_V1, context))
    return Sealed(ENVELOPE_V1, kek.key_id, kek.wrap(data_key, context), nonce, ciphertext)


def open_sealed(
    sealed: Sealed, keyring: Keyring, context: Mapping[str, str], *, label: str
) -> bytes:
    """The plaintext, or SealedDataError naming `label`: never wrong data."""
    _check_format(sealed, label)
    if len(sealed.nonce) != _NONCE_BYTES:
        raise SealedDataError(
            label,
            f"the nonce is {len(sealed.nonce)} bytes, expected {_NONCE_BYTES}:"
            " the stored row is truncated or corrupt",
        )
    if len(sealed.ciphertext) < _TAG_BYTES:
        raise SealedDataError(
            label,
            f"the ciphertext is {len(sealed.ciphertext)} bytes, shorter than its"
            f" {_TAG_BYTES}-byte authentication tag: the stored row is truncated",
        )
    data_key = _unwrap_data_key(sealed, keyring, context, label)
    try:
        return AESGCM(data_key).decrypt(
            sealed.nonce, sealed.ciphertext, _payload_aad(sealed.format_version, context)
        )
    except InvalidTag:
        raise SealedDataError(
            label,
            "the ciphertext failed authentication: the data, its nonce, or its binding to"
            " table/session/compaction/seq range was altered",
        ) from None


def rewrap(
    sealed: Sealed, keyring: Keyring, context: Mapping[str, str], *, label: str = "sealed data"
) -> Sealed:
    """Re-wrap the data key under the active KEK; the payload is never decrypted."""
    active = keyring.active
    if sealed.kek_id == active.key_id:
        return sealed
    _check_format(sealed, label)
    data_key = _unwrap_data_key(sealed, keyring, context, label)
    return replace(sealed, kek_id=active.key_id, wrapped_key=active.wrap(data_key, context))


def _check_format(sealed: Sealed, label: str) -> None:
    if sealed.format_version != ENVELOPE_V1:
        raise SealedDataError(
            label,
            f"unknown envelope format {sealed.format_version} (this sessionstore reads format"
            f" {ENVELOPE_V1}); upgrade sessionstore, or the row is corrupt",
        )


def _unwrap_data_key(
    sealed: Sealed, keyring: Keyring, context: Mapping[str, str], label: str
) -> bytes:
    try:
        kek = keyring.get(sealed.kek_id)
    except MissingKeyError as exc:
        raise SealedDataError(label, str(exc)) from exc
    try:
        data_key = kek.unwrap(sealed.wrapped_key, context)
    except KeyIntegrityError as exc:
        raise SealedDataError(
            label,
            f"{exc}: the wrapped key or the data's binding to table/session/compaction/seq range"
            f" was altered, or it was sealed under a different key that is also named"
            f" {sealed.kek_id!r}",
        ) from exc
    except KeyUnavailableError as exc:
        raise SealedDataError(label, str(exc)) from exc
    if len(data_key) != _KEY_BYTES:
        raise SealedDataError(
            label, f"key {sealed.kek_id!r} unwrapped a {len(data_key)}-byte data key, not 32"
        )
    return data_key
