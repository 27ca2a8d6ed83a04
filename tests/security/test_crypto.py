"""Envelope encryption: round trips, every tamper case, rotation, key loading, and AWS KMS.

KMS runs against a real moto server on 127.0.0.1 spoken to by a real boto3 client.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import socket
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.config import Config
from hypothesis import given
from hypothesis import strategies as st

from sessionstore._errors import (
    KeyIntegrityError,
    KeyringError,
    KeyUnavailableError,
    MissingKeyError,
    SealedDataError,
    SessionStoreError,
)
from sessionstore._security._crypto import (
    ENVELOPE_V1,
    AwsKmsKey,
    Keyring,
    LocalKey,
    Sealed,
    canonical_context,
    open_sealed,
    rewrap,
    seal,
)

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient

SECRET1 = bytes(range(32))
SECRET2 = bytes(range(100, 132))
B64_1 = base64.b64encode(SECRET1).decode()
B64_2 = base64.b64encode(SECRET2).decode()
K1 = LocalKey("k1", SECRET1)
K2 = LocalKey("k2", SECRET2)
KEYRING = Keyring([K1, K2], active="k1")
CONTEXT = {"table": "archives", "session": "abc", "compaction": "7", "seq": "1-40"}
LABEL = "archive 17 of session 'abc'"
PLAINTEXT = b'{"seq":1,"item":{"role":"user","content":"TOP-SECRET-PLAINTEXT my password"}}\n'
TAMPERED = "binding to table/session/compaction/seq range"

contexts = st.dictionaries(st.text(max_size=12), st.text(max_size=24), max_size=5)


def flip(data: bytes, index: int = 0) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def open_error(
    sealed: Sealed, keyring: Keyring = KEYRING, context: dict[str, str] = CONTEXT
) -> SealedDataError:
    with pytest.raises(SealedDataError) as info:
        open_sealed(sealed, keyring, context, label=LABEL)
    assert info.value.label == LABEL
    assert str(info.value).startswith(f"cannot open {LABEL}: ")
    return info.value


# --- sealing -------------------------------------------------------------------------------


@given(plaintext=st.binary(max_size=4096), context=contexts)
def test_round_trip(plaintext: bytes, context: dict[str, str]) -> None:
    sealed = seal(plaintext, KEYRING, context)
    assert (sealed.format_version, sealed.kek_id) == (ENVELOPE_V1, "k1")
    assert len(sealed.nonce) == 12
    assert len(sealed.ciphertext) == len(plaintext) + 16
    assert open_sealed(sealed, KEYRING, dict(reversed(context.items())), label=LABEL) == plaintext


@given(context=contexts, key=st.text(max_size=12), value=st.text(max_size=24))
def test_any_context_change_fails(context: dict[str, str], key: str, value: str) -> None:
    changed = {**context, key: value}
    if changed == context:
        changed.pop(key)
    sealed = seal(b"payload", KEYRING, context)
    assert TAMPERED in open_error(sealed, context=changed).reason


@given(context=contexts)
def test_canonical_context_ignores_insertion_order(context: dict[str, str]) -> None:
    assert canonical_context(context) == canonical_context(dict(reversed(context.items())))


def test_canonical_context_format_is_pinned() -> None:
    # Stored rows depend on these exact bytes: changing them breaks every existing archive.
    encoded = canonical_context({"session": "abc", "seq": "1-40", "note": "é\U0001f600"})
    assert encoded == b'{"note":"\\u00e9\\ud83d\\ude00","seq":"1-40","session":"abc"}'


def test_context_values_must_be_strings() -> None:
    with pytest.raises(TypeError, match="must all be str"):
        seal(b"x", KEYRING, {"seq": 1})  # type: ignore[dict-item]


def test_each_seal_uses_a_fresh_data_key_and_nonce() -> None:
    first, second = seal(PLAINTEXT, KEYRING, CONTEXT), seal(PLAINTEXT, KEYRING, CONTEXT)
    assert first.nonce != second.nonce
    assert first.wrapped_key != second.wrapped_key
    assert first.ciphertext != second.ciphertext
    assert K1.unwrap(first.wrapped_key, CONTEXT) != K1.unwrap(second.wrapped_key, CONTEXT)


TAMPERS: dict[str, tuple[Callable[[Sealed], Sealed], str]] = {
    "ciphertext byte": (
        lambda s: dataclasses.replace(s, ciphertext=flip(s.ciphertext, 5)),
        f"the ciphertext failed authentication: the data, its nonce, or its {TAMPERED}",
    ),
    "tag byte": (
        lambda s: dataclasses.replace(s, ciphertext=flip(s.ciphertext, -1)),
        "the ciphertext failed authentication",
    ),
    "nonce byte": (
        lambda s: dataclasses.replace(s, nonce=flip(s.nonce, 3)),
        "the ciphertext failed authentication",
    ),
    "wrapped key byte": (
        lambda s: dataclasses.replace(s, wrapped_key=flip(s.wrapped_key, 20)),
        f"the data key wrapped under key 'k1' failed authentication: the wrapped key or the"
        f" data's {TAMPERED} was altered",
    ),
    "wrapped key truncated": (
        lambda s: dataclasses.replace(s, wrapped_key=s.wrapped_key[:20]),
        "the data key wrapped under key 'k1' is truncated (20 bytes)",
    ),
    "ciphertext truncated by one byte": (
        lambda s: dataclasses.replace(s, ciphertext=s.ciphertext[:-1]),
        "the ciphertext failed authentication",
    ),
    "ciphertext shorter than the tag": (
        lambda s: dataclasses.replace(s, ciphertext=s.ciphertext[:10]),
        "the ciphertext is 10 bytes, shorter than its 16-byte authentication tag",
    ),
    "nonce truncated": (
        lambda s: dataclasses.replace(s, nonce=s.nonce[:11]),
        "the nonce is 11 bytes, expected 12",
    ),
    "unknown format": (
        lambda s: dataclasses.replace(s, format_version=2),
        "unknown envelope format 2 (this sessionstore reads format 1)",
    ),
    "kek id swapped": (
        lambda s: dataclasses.replace(s, kek_id="k2"),
        "the data key wrapped under key 'k2' failed authentication",
    ),
}


@pytest.mark.parametrize("case", TAMPERS)
def test_tampering_is_detected(case: str) -> None:
    tamper, reason = TAMPERS[case]
    error = open_error(tamper(seal(PLAINTEXT, KEYRING, CONTEXT)))
    assert reason in error.reason
    assert reason in str(error)


@pytest.mark.parametrize(
    "changed",
    [
        {**CONTEXT, "session": "abd"},
        {**CONTEXT, "compaction": "8"},
        {**CONTEXT, "seq": "1-41"},
        {**CONTEXT, "table": "messages"},
        {k: v for k, v in CONTEXT.items() if k != "seq"},
        {**CONTEXT, "extra": ""},
    ],
    ids=["session", "compaction", "seq range", "table", "dropped field", "added field"],
)
def test_context_change_is_detected(changed: dict[str, str]) -> None:
    error = open_error(seal(PLAINTEXT, KEYRING, CONTEXT), context=changed)
    assert TAMPERED in error.reason


class ContextBlindKey:
    """A KEK that ignores the context, as a careless third-party one might."""

    key_id = "blind"

    def wrap(self, data_key: bytes, context: Mapping[str, str]) -> bytes:
        return K1.wrap(data_key, {})

    def unwrap(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        return K1.unwrap(wrapped, {})


def test_payload_is_bound_to_its_context_whatever_the_kek_does() -> None:
    blind = Keyring([ContextBlindKey()])
    sealed = seal(PLAINTEXT, blind, CONTEXT)
    assert open_sealed(sealed, blind, CONTEXT, label=LABEL) == PLAINTEXT
    error = open_error(sealed, blind, {**CONTEXT, "session": "xyz"})
    assert error.reason.startswith("the ciphertext failed authentication")


class ShortKeyKek(ContextBlindKey):
    """A broken KEK that hands back a 16-byte data key."""

    def unwrap(self, wrapped: bytes, context: Mapping[str, str]) -> bytes:
        return super().unwrap(wrapped, context)[:16]


def test_a_data_key_of_the_wrong_size_is_refused() -> None:
    sealed = seal(PLAINTEXT, Keyring([ContextBlindKey()]), CONTEXT)
    error = open_error(sealed, Keyring([ShortKeyKek()]))
    assert error.reason == "key 'blind' unwrapped a 16-byte data key, not 32"


def test_wrong_kek_with_the_same_id_is_detected() -> None:
    impostor = Keyring([LocalKey("k1", SECRET2)])
    error = open_error(seal(PLAINTEXT, KEYRING, CONTEXT), keyring=impostor)
    assert "sealed under a different key that is also named 'k1'" in error.reason


def test_missing_kek_names_the_id_and_the_fix() -> None:
    error = open_error(seal(PLAINTEXT, KEYRING, CONTEXT), keyring=Keyring([K2]))
    assert error.reason == (
        "key 'k1' is not in the keyring: add it to SESSIONSTORE_KEYS or the key file"
    )
    assert isinstance(error.__cause__, MissingKeyError)
    assert error.__cause__.key_id == "k1"


def test_sealed_repr_shows_sizes_only() -> None:
    sealed = seal(PLAINTEXT, KEYRING, CONTEXT)
    assert repr(sealed) == (
        f"Sealed(format_version=1, kek_id='k1', wrapped_key=<60 bytes>, nonce=<12 bytes>,"
        f" ciphertext=<{len(PLAINTEXT) + 16} bytes>)"
    )


# --- rotation ------------------------------------------------------------------------------


def test_rewrap_moves_to_the_active_key_without_touching_the_payload() -> None:
    sealed = seal(PLAINTEXT, KEYRING, CONTEXT)
    rotated = rewrap(sealed, KEYRING.with_active("k2"), CONTEXT)
    assert rotated.kek_id == "k2"
    assert rotated.wrapped_key != sealed.wrapped_key
    assert (rotated.nonce, rotated.ciphertext) == (sealed.nonce, sealed.ciphertext)
    only_k2 = Keyring([K2])
    assert open_sealed(rotated, only_k2, CONTEXT, label=LABEL) == PLAINTEXT
    assert "key 'k1' is not in the keyring" in open_error(sealed, keyring=only_k2).reason


def test_rewrap_under_the_active_key_is_a_no_op() -> None:
    sealed = seal(PLAINTEXT, KEYRING, CONTEXT)
    assert rewrap(sealed, KEYRING, CONTEXT) is sealed


def test_rewrap_refuses_what_it_cannot_verify() -> None:
    sealed = seal(PLAINTEXT, KEYRING, CONTEXT)
    to_k2 = KEYRING.with_active("k2")
    with pytest.raises(SealedDataError, match=f"cannot open archive 3: .*{TAMPERED}"):
        rewrap(sealed, to_k2, {**CONTEXT, "seq": "2-40"}, label="archive 3")
    with pytest.raises(SealedDataError, match="unknown envelope format 9"):
        rewrap(dataclasses.replace(sealed, format_version=9), to_k2, CONTEXT)
    with pytest.raises(SealedDataError, match="key 'k1' is not in the keyring"):
        rewrap(sealed, Keyring([K2]), CONTEXT)


# --- keys and keyrings ---------------------------------------------------------------------


@pytest.mark.parametrize("key_id", ["", "has space", "a" * 65, "k1:x", "ключ"])
def test_local_key_rejects_bad_ids(key_id: str) -> None:
    with pytest.raises(KeyringError, match=r"invalid key id .*1-64 characters from A-Z"):
        LocalKey(key_id, SECRET1)


def test_local_key_rejects_bad_secrets() -> None:
    with pytest.raises(KeyringError, match="key 'k1': secret is 16 bytes, need exactly 32"):
        LocalKey("k1", SECRET1[:16])
    with pytest.raises(KeyringError, match="secret must be bytes"):
        LocalKey("k1", B64_1)  # type: ignore[arg-type]


def test_generated_keys_are_distinct_and_repr_shows_only_the_id() -> None:
    one, two = LocalKey.generate("a.b_c-1"), LocalKey.generate("a.b_c-1")
    wrapped = one.wrap(b"k" * 32, CONTEXT)
    assert one.unwrap(wrapped, CONTEXT) == b"k" * 32
    with pytest.raises(KeyIntegrityError, match="failed authentication"):
        two.unwrap(wrapped, CONTEXT)
    assert repr(one) == "LocalKey('a.b_c-1')"


def test_local_key_binds_the_wrapped_key_to_its_context() -> None:
    wrapped = K1.wrap(b"k" * 32, CONTEXT)
    assert K1.unwrap(wrapped, dict(reversed(CONTEXT.items()))) == b"k" * 32
    with pytest.raises(KeyIntegrityError, match="wrapped under key 'k1' failed authentication"):
        K1.unwrap(wrapped, {**CONTEXT, "table": "messages"})


def test_keyring_basics() -> None:
    keyring = Keyring([K1, K2])
    assert keyring.ids == ("k1", "k2")
    assert keyring.active is K2
    assert keyring.with_active("k1").active is K1
    assert keyring.get("k1") is K1
    assert repr(keyring) == "Keyring(ids=['k1', 'k2'], active='k2')"
    with pytest.raises(MissingKeyError, match="key 'k9' is not in the keyring: add it to"):
        keyring.with_active("k9")


@pytest.mark.parametrize(
    ("keys", "active", "message"),
    [
        ([K1, LocalKey("k1", SECRET2)], None, "key id 'k1' appears twice"),
        ([K1, K2], "k3", r"active key 'k3' is not in the keyring \(it holds k1, k2\)"),
        ([], None, "a keyring needs at least one key"),
    ],
)
def test_keyring_rejects_bad_configurations(
    keys: list[LocalKey], active: str | None, message: str
) -> None:
    with pytest.raises(KeyringError, match=message):
        Keyring(keys, active=active)


def test_from_env() -> None:
    keyring = Keyring.from_env({"SESSIONSTORE_KEYS": f" k1:{B64_1} , k2:{B64_2} "})
    assert (keyring.ids, keyring.active.key_id) == (("k1", "k2"), "k2")
    chosen = Keyring.from_env(
        {"SESSIONSTORE_KEYS": f"k1:{B64_1},k2:{B64_2}", "SESSIONSTORE_ACTIVE_KEY": "k1"}
    )
    assert chosen.active.key_id == "k1"
    sealed = seal(PLAINTEXT, chosen, CONTEXT)
    assert open_sealed(sealed, KEYRING, CONTEXT, label=LABEL) == PLAINTEXT


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "SESSIONSTORE_KEYS is not set"),
        ({"SESSIONSTORE_KEYS": B64_1}, "SESSIONSTORE_KEYS entry 1 is not in the form id:base64"),
        (
            {"SESSIONSTORE_KEYS": f"k1:{B64_1},k2:not*base64"},
            "SESSIONSTORE_KEYS entry 2: the secret of key 'k2' is not valid base64",
        ),
        (
            {"SESSIONSTORE_KEYS": f"k1:{base64.b64encode(b'short').decode()}"},
            "SESSIONSTORE_KEYS entry 1: key 'k1': secret is 5 bytes, need exactly 32",
        ),
        (
            {"SESSIONSTORE_KEYS": f"k1:{B64_1}", "SESSIONSTORE_ACTIVE_KEY": "k2"},
            "SESSIONSTORE_KEYS: active key 'k2' is not in the keyring",
        ),
        (
            {"SESSIONSTORE_KEYS": f"k1:{B64_1},k1:{B64_2}"},
            "SESSIONSTORE_KEYS: key id 'k1' appears twice",
        ),
        ({"SESSIONSTORE_KEYS": f"{B64_1}:k1"}, "SESSIONSTORE_KEYS entry 1: invalid key id"),
    ],
    ids=["unset", "no colon", "bad base64", "wrong length", "unknown active", "dup", "swapped"],
)
def test_from_env_errors(environ: dict[str, str], message: str) -> None:
    with pytest.raises(KeyringError) as info:
        Keyring.from_env(environ)
    assert message in str(info.value)
    assert B64_1 not in str(info.value)
    assert B64_1 not in repr(info.value)


def write_json(path: Path, document: object, mode: int = 0o600) -> Path:
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    path.chmod(mode)
    return path


def test_from_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "keys.json", {"active": "k1", "keys": {"k1": B64_1, "k2": B64_2}})
    keyring = Keyring.from_file(path)
    assert (keyring.ids, keyring.active.key_id) == (("k1", "k2"), "k1")
    assert (
        open_sealed(seal(PLAINTEXT, keyring, CONTEXT), KEYRING, CONTEXT, label=LABEL) == PLAINTEXT
    )


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_from_file_refuses_a_file_others_can_read(tmp_path: Path, mode: int) -> None:
    path = write_json(tmp_path / "keys.json", {"keys": {"k1": B64_1}}, mode)
    with pytest.raises(KeyringError) as info:
        Keyring.from_file(path)
    assert str(info.value) == (
        f"key file {path} is accessible by group or others (mode {mode:04o}); run: chmod 600 {path}"
    )
    assert Keyring.from_file(path, check_permissions=False).ids == ("k1",)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON (Expecting property name enclosed in double quotes"),
        ('["k1"]', 'expected {"active": id, "keys": {id: base64, ...}}'),
        ({"keys": {"k1": 7}}, "key 'k1' must map to a base64 string"),
        ({"active": 1, "keys": {"k1": B64_1}}, '"active" must be a key id string'),
        ({"keys": {"k1": "***"}}, "the secret of key 'k1' is not valid base64"),
        ({"keys": {"k1": B64_1[:8]}}, "key 'k1': secret is 6 bytes, need exactly 32"),
        ({"active": "k3", "keys": {"k1": B64_1}}, "active key 'k3' is not in the keyring"),
        ({"keys": {}}, "a keyring needs at least one key"),
        (f'{{"keys": {{"k1": "{B64_1}", "k1": "{B64_2}"}}}}', "'k1' appears twice"),
    ],
    ids=["json", "shape", "non-str", "active", "base64", "length", "unknown", "empty", "dup"],
)
def test_from_file_errors(tmp_path: Path, content: object, message: str) -> None:
    path = write_json(tmp_path / "keys.json", content)
    with pytest.raises(KeyringError) as info:
        Keyring.from_file(path)
    assert str(info.value).startswith(f"key file {path}")
    assert message in str(info.value)
    assert B64_1 not in str(info.value)


def test_from_file_missing(tmp_path: Path) -> None:
    with pytest.raises(KeyringError, match=r"nope\.json: cannot read it \(No such file"):
        Keyring.from_file(tmp_path / "nope.json")


def test_write_file_creates_0600_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    old_umask = os.umask(0)
    try:
        Keyring.write_file(path, KEYRING)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = Keyring.from_file(path)
    assert (loaded.ids, loaded.active.key_id) == (KEYRING.ids, "k1")
    assert open_sealed(seal(PLAINTEXT, KEYRING, CONTEXT), loaded, CONTEXT, label=LABEL) == PLAINTEXT
    with pytest.raises(KeyringError, match="already exists; refusing to overwrite"):
        Keyring.write_file(path, Keyring([K2]))
    assert Keyring.from_file(path).ids == ("k1", "k2")


def test_load_prefers_env_then_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "keys.json", {"keys": {"k2": B64_2}})
    env_and_file = {"SESSIONSTORE_KEYS": f"k1:{B64_1}", "SESSIONSTORE_KEY_FILE": str(path)}
    from_env = Keyring.load(env_and_file)
    from_file = Keyring.load({"SESSIONSTORE_KEY_FILE": str(path)})
    assert from_env is not None and from_env.ids == ("k1",)
    assert from_file is not None and from_file.ids == ("k2",)
    assert Keyring.load({"SESSIONSTORE_KEYS": " ", "SESSIONSTORE_KEY_FILE": ""}) is None


def test_load_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONSTORE_KEYS", f"k2:{B64_2}")
    keyring = Keyring.load()
    assert keyring is not None and keyring.ids == ("k2",)


def test_no_secret_or_plaintext_in_any_message_or_repr(tmp_path: Path) -> None:
    sealed = seal(PLAINTEXT, KEYRING, CONTEXT)
    loose = write_json(tmp_path / "loose.json", {"keys": {"k1": B64_1}}, 0o644)
    attempts: list[Callable[[], object]] = [
        lambda: open_sealed(
            dataclasses.replace(sealed, ciphertext=flip(sealed.ciphertext)),
            KEYRING,
            CONTEXT,
            label=LABEL,
        ),
        lambda: open_sealed(sealed, Keyring([LocalKey("k1", SECRET2)]), CONTEXT, label=LABEL),
        lambda: open_sealed(sealed, KEYRING, {**CONTEXT, "seq": "0-0"}, label=LABEL),
        lambda: Keyring.from_env({"SESSIONSTORE_KEYS": f"{B64_1}:k1"}),
        lambda: Keyring.from_env({"SESSIONSTORE_KEYS": f"k1:{B64_1[:-4]}"}),
        lambda: Keyring.from_env({"SESSIONSTORE_KEYS": B64_1}),
        lambda: Keyring.from_file(loose),
        lambda: LocalKey("k1", SECRET1[:31]),
    ]
    texts = [repr(K1), repr(KEYRING), repr(sealed)]
    for attempt in attempts:
        with pytest.raises(SessionStoreError) as info:
            attempt()
        texts += [str(info.value), repr(info.value)]
    assert len(texts) == 3 + 2 * len(attempts)
    for text in texts:
        for secret in (B64_1, B64_1[:-4], B64_2, repr(SECRET1), SECRET1.hex()):
            assert secret not in text
        assert "TOP-SECRET" not in text
        assert repr(PLAINTEXT) not in text


# --- AWS KMS, against a real moto server ---------------------------------------------------


def kms_client(endpoint: str) -> KMSClient:
    # Dummy credentials for the local moto server only; real code injects a configured client.
    return boto3.client(
        "kms",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5),
    )


@pytest.fixture
def kms(aws_endpoint: str) -> KMSClient:
    return kms_client(aws_endpoint)


def kms_key(kms: KMSClient) -> AwsKmsKey:
    return AwsKmsKey(kms.create_key()["KeyMetadata"]["Arn"], kms)


def test_kms_seal_open_and_rewrap_both_ways(kms: KMSClient) -> None:
    remote = kms_key(kms)
    assert repr(remote) == f"AwsKmsKey({remote.key_id!r})"
    mixed = Keyring([K1, remote], active=remote.key_id)
    under_kms = seal(PLAINTEXT, mixed, CONTEXT)
    assert under_kms.kek_id == remote.key_id
    assert open_sealed(under_kms, Keyring([remote]), CONTEXT, label=LABEL) == PLAINTEXT

    to_local = rewrap(under_kms, mixed.with_active("k1"), CONTEXT)
    assert (to_local.kek_id, to_local.ciphertext) == ("k1", under_kms.ciphertext)
    assert open_sealed(to_local, Keyring([K1]), CONTEXT, label=LABEL) == PLAINTEXT

    back = rewrap(seal(PLAINTEXT, Keyring([K1]), CONTEXT), mixed, CONTEXT)
    assert back.kek_id == remote.key_id
    assert open_sealed(back, Keyring([remote]), CONTEXT, label=LABEL) == PLAINTEXT


def test_kms_wrong_encryption_context_fails(kms: KMSClient) -> None:
    remote = kms_key(kms)
    keyring = Keyring([remote])
    error = open_error(seal(PLAINTEXT, keyring, CONTEXT), keyring, {**CONTEXT, "session": "x"})
    assert "AWS KMS rejected the data key" in error.reason
    assert "(InvalidCiphertextException)" in error.reason
    assert TAMPERED in error.reason
    assert isinstance(error.__cause__, KeyIntegrityError)


def test_kms_other_key_under_the_same_id_fails(kms: KMSClient) -> None:
    first, second = kms_key(kms), kms_key(kms)
    sealed = seal(PLAINTEXT, Keyring([first]), CONTEXT)
    swapped = dataclasses.replace(sealed, kek_id=second.key_id)
    error = open_error(swapped, Keyring([second]))
    # Real KMS says IncorrectKeyException (integrity); moto says AccessDeniedException.
    assert isinstance(error.__cause__, KeyIntegrityError | KeyUnavailableError)
    assert second.key_id in error.reason


def test_kms_unknown_key_is_unavailable(kms: KMSClient) -> None:
    missing = AwsKmsKey("alias/does-not-exist", kms)
    with pytest.raises(KeyUnavailableError) as info:
        seal(PLAINTEXT, Keyring([missing]), CONTEXT)
    assert str(info.value).startswith(
        "AWS KMS key 'alias/does-not-exist' cannot wrap (NotFoundException): check that the key"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_kms_unreachable_endpoint_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    remote = AwsKmsKey("alias/any", kms_client(f"http://127.0.0.1:{port}"))
    with pytest.raises(KeyUnavailableError, match=r"cannot unwrap \(EndpointConnectionError\)"):
        remote.unwrap(b"blob", CONTEXT)


def test_kms_non_botocore_errors_are_not_disguised() -> None:
    class Broken:
        def encrypt(self, **kwargs: object) -> object:
            raise RuntimeError("bug")

    with pytest.raises(RuntimeError, match="bug"):
        AwsKmsKey("alias/any", Broken()).wrap(b"k" * 32, CONTEXT)
