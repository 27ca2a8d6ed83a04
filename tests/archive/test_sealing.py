"""Sealed archives on real databases: round trip, tamper evidence, and key rotation."""

from __future__ import annotations

from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore._errors import KeyInUseError, SessionStoreError
from sessionstore._jobs._key_rotation import check_retirable, key_usage, rotate_keys
from sessionstore._security._crypto import Keyring, LocalKey
from sessionstore.archive import read_archives
from tests.support.archives import compacted, raw_archive, update_archive

K1 = LocalKey.generate("k1")
K2 = LocalKey.generate("k2")


async def test_archives_are_sealed_and_read_back(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=Keyring([K1])) as store:
        replaced = await compacted(store, "s")
        row = await raw_archive(store, "s")
        assert (row["format_version"], row["kek_id"]) == (1, "k1")
        assert len(row["nonce"]) == 12 and row["wrapped_key"]
        assert b"coding" not in bytes(row["body"]) and b"step" not in bytes(row["body"])
        (opened,) = await read_archives(store, "s")
        assert [record["item"] for record in opened.records] == replaced


async def test_without_a_keyring_archives_are_plain_but_verified(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=None) as store:
        replaced = await compacted(store, "s")
        row = await raw_archive(store, "s")
        assert row["format_version"] == 0 and row["kek_id"] is None
        (opened,) = await read_archives(store, "s")
        assert [record["item"] for record in opened.records] == replaced


def _flip(data: bytes, index: int = 20) -> bytes:
    return data[:index] + bytes([data[index] ^ 1]) + data[index + 1 :]


@pytest.mark.parametrize(
    ("column", "damage", "reason"),
    [
        ("body", _flip, "altered"),
        ("nonce", lambda b: _flip(b, 3), "altered"),
        ("wrapped_key", _flip, ""),
        ("body", lambda b: b[:10], ""),
        ("nonce", lambda b: b[:5], ""),
    ],
)
async def test_tampered_rows_fail_loudly(
    db_url: str, column: str, damage: Any, reason: str
) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=Keyring([K1])) as store:
        await compacted(store, "s")
        row = await raw_archive(store, "s")
        await update_archive(store, row["id"], **{column: damage(bytes(row[column]))})
        with pytest.raises(SessionStoreError) as caught:
            await read_archives(store, "s")
        message = str(caught.value)
        assert f"archive {row['id']} of session 's'" in message and reason in message


async def test_rows_swapped_between_sessions_do_not_open(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=Keyring([K1])) as store:
        await compacted(store, "alice", seed=1)
        await compacted(store, "bob", seed=2)
        alice, bob = await raw_archive(store, "alice"), await raw_archive(store, "bob")
        sealed = ("kek_id", "wrapped_key", "nonce", "body", "content_sha256", "from_seq", "to_seq")
        await update_archive(store, alice["id"], **{k: bob[k] for k in sealed})
        with pytest.raises(SessionStoreError, match="of session 'alice'"):
            await read_archives(store, "alice")


async def test_wrong_or_missing_key_is_named(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=Keyring([K1])) as store:
        await compacted(store, "s")
    impostor = LocalKey("k1", b"\x00" * 32)
    async with SessionStore(db_url, keyring=Keyring([impostor])) as wrong:
        with pytest.raises(SessionStoreError, match="of session 's'"):
            await read_archives(wrong, "s")
    async with SessionStore(db_url, keyring=Keyring([K2])) as missing:
        with pytest.raises(SessionStoreError, match="k1"):
            await read_archives(missing, "s")
    async with SessionStore(db_url, keyring=None) as none:
        with pytest.raises(SessionStoreError, match="no keyring is configured"):
            await read_archives(none, "s")


async def test_rotation_rewraps_then_the_old_key_can_go(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=Keyring([K1])) as store:
        expected = {sid: await compacted(store, sid, seed=n) for n, sid in enumerate("abc")}
        bodies = {sid: bytes((await raw_archive(store, sid))["body"]) for sid in expected}
    both = Keyring([K1, K2], active="k2")
    async with SessionStore(db_url, keyring=both) as store:
        # Three sealed archives and the three sessions' history-chain keys.
        with pytest.raises(KeyInUseError, match="6 archive"):
            await check_retirable(store, "k1")
        partial = await rotate_keys(store, batch_size=1, max_batches=1)  # interrupted
        assert partial.rewrapped == 1 and partial.usage == {"k1": 5, "k2": 1}
        resumed = await rotate_keys(store, batch_size=1)
        assert resumed.rewrapped == 5 and resumed.usage == {"k2": 6}
        await check_retirable(store, "k1")
        assert await key_usage(store) == {"k2": 6}
        for sid in expected:  # payloads were never re-encrypted
            assert bytes((await raw_archive(store, sid))["body"]) == bodies[sid]
    async with SessionStore(db_url, keyring=Keyring([K2])) as retired:
        for sid, items in expected.items():
            (opened,) = await read_archives(retired, sid)
            assert [record["item"] for record in opened.records] == items
