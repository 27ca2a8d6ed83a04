"""Key rotation: rewrap data keys (archives', sessions') under the active key, payloads untouched.

Each batch is one transaction that rewraps the oldest archives still under another
key, so an interrupted rotation resumes where it stopped: run it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._errors import KeyInUseError, SessionStoreError
from .._schema import archives, sessions
from .._security._archive_codec import PLAIN_FORMAT
from .._security._archive_sealing import label_of, row_context, sealed_columns, sealed_of
from .._security._chain import ChainKeys, chain_key_context
from .._security._crypto import ENVELOPE_V1, Keyring, rewrap
from .._security._payload_sealing import session_key_context, unwrap_session_key
from .._store import SessionStore

Progress = Callable[[int, int], None]  # (rewrapped so far, total to do)


@dataclass(frozen=True, slots=True)
class RotationReport:
    """What a rotation did and what still references each key."""

    active: str
    rewrapped: int
    usage: dict[str, int]


def _usage(conn: Connection) -> dict[str, int]:
    """Rows each KEK protects: sealed archives plus sessions' payload and chain keys."""
    usage: dict[str, int] = {}
    queries = [
        sa.select(archives.c.kek_id, sa.func.count())
        .where(archives.c.format_version == ENVELOPE_V1)
        .group_by(archives.c.kek_id)
    ]
    for kek_column in (sessions.c.payload_kek_id, sessions.c.chain_kek_id):
        queries.append(
            sa.select(kek_column, sa.func.count())
            .where(kek_column.is_not(None))
            .group_by(kek_column)
        )
    for query in queries:
        for kek_id, count in conn.execute(query):
            usage[str(kek_id)] = usage.get(str(kek_id), 0) + int(count)
    return usage


def _tx_rewrap_session_keys(conn: Connection, keyring: Keyring, batch: int) -> int:
    """Rewrap up to `batch` sessions' payload data keys under the active KEK (binding
    keys made before 0009 to their sealed-from boundary as they go)."""
    active = keyring.active
    rows = conn.execute(
        sa.select(
            sessions.c.session_id,
            sessions.c.payload_kek_id,
            sessions.c.payload_wrapped_key,
            sessions.c.sealed_from_seq,
        )
        .where(sessions.c.payload_kek_id.is_not(None), sessions.c.payload_kek_id != active.key_id)
        .order_by(sessions.c.session_id)
        .limit(batch)
    ).all()
    for session_id, kek_id, wrapped, sealed_from in rows:
        data_key = unwrap_session_key(keyring, session_id, kek_id, wrapped, sealed_from)
        context = session_key_context(session_id, sealed_from)
        conn.execute(
            sessions.update()
            .where(sessions.c.session_id == session_id)
            .values(
                payload_kek_id=active.key_id, payload_wrapped_key=active.wrap(data_key, context)
            )
        )
    return len(rows)


def _tx_rewrap_chain_keys(conn: Connection, keyring: Keyring, batch: int) -> int:
    """Rewrap up to `batch` sessions' history-chain keys under the active KEK."""
    active = keyring.active
    chains = ChainKeys(keyring)
    rows = conn.execute(
        sa.select(sessions.c.session_id, sessions.c.chain_kek_id, sessions.c.chain_wrapped_key)
        .where(sessions.c.chain_kek_id.is_not(None), sessions.c.chain_kek_id != active.key_id)
        .order_by(sessions.c.session_id)
        .limit(batch)
    ).all()
    for session_id, kek_id, wrapped in rows:
        chain_key = chains.key_of(session_id, kek_id, wrapped)
        conn.execute(
            sessions.update()
            .where(sessions.c.session_id == session_id)
            .values(
                chain_kek_id=active.key_id,
                chain_wrapped_key=active.wrap(chain_key, chain_key_context(session_id)),
            )
        )
    return len(rows)


def _tx_rewrap_batch(conn: Connection, keyring: Keyring, batch: int) -> int:
    active = keyring.active.key_id
    rows = [
        dict(row._mapping)
        for row in conn.execute(
            sa.select(archives)
            .where(archives.c.format_version == ENVELOPE_V1, archives.c.kek_id != active)
            .order_by(archives.c.id)
            .limit(batch)
        )
    ]
    for row in rows:
        fresh = rewrap(sealed_of(row), keyring, row_context(row), label=label_of(row))
        conn.execute(
            archives.update()
            .where(archives.c.id == row["id"])
            .values(kek_id=fresh.kek_id, wrapped_key=fresh.wrapped_key)
        )
    return len(rows)


def _count_plain_archives(conn: Connection) -> int:
    query = sa.select(sa.func.count()).where(archives.c.format_version == PLAIN_FORMAT)
    return int(conn.execute(query).scalar_one())


def _tx_seal_plain_archives(conn: Connection, keyring: Keyring, batch: int) -> int:
    """Seal up to `batch` archives written plain (before a keyring was configured)."""
    rows = [
        dict(row._mapping)
        for row in conn.execute(
            sa.select(archives)
            .where(archives.c.format_version == PLAIN_FORMAT)
            .order_by(archives.c.id)
            .limit(batch)
        )
    ]
    for row in rows:
        conn.execute(
            archives.update()
            .where(archives.c.id == row["id"])
            .values(**sealed_columns(row, keyring))
        )
    return len(rows)


async def key_usage(store: SessionStore) -> dict[str, int]:
    """How many sealed archives each key id protects."""
    return await store.read_snapshot(_usage)


async def plain_archives(store: SessionStore) -> int:
    """How many archives are stored unencrypted (written while no keyring was configured)."""
    return await store.read_snapshot(_count_plain_archives)


async def rotate_keys(
    store: SessionStore,
    keyring: Keyring | None = None,
    *,
    batch_size: int = 200,
    max_batches: int | None = None,
    progress: Progress | None = None,
) -> RotationReport:
    """Rewrap every archive and session key not under the active key, and seal archives
    written plain before the keyring existed; resumable, batch by batch."""
    ring = keyring or store.keyring
    if ring is None:
        raise SessionStoreError(
            "no keyring configured: set SESSIONSTORE_KEYS or SESSIONSTORE_KEY_FILE (with the new "
            "key active and the old keys still present), then rotate"
        )
    before = await key_usage(store)
    todo = sum(count for key, count in before.items() if key != ring.active.key_id)
    todo += await plain_archives(store)
    done = batches = 0
    while max_batches is None or batches < max_batches:
        count = await store.write_transaction(_tx_rewrap_batch, ring, batch_size)
        for more in (_tx_seal_plain_archives, _tx_rewrap_session_keys, _tx_rewrap_chain_keys):
            if count < batch_size:  # sealed archives done: the rest share the budget
                count += await store.write_transaction(more, ring, batch_size - count)
        done += count
        batches += 1
        if progress is not None:
            progress(done, todo)
        if count < batch_size:
            break
    return RotationReport(ring.active.key_id, done, await key_usage(store))


async def check_retirable(store: SessionStore, key_id: str) -> None:
    """Raise KeyInUseError unless no sealed row references `key_id` any more."""
    in_use = (await key_usage(store)).get(key_id, 0)
    if in_use:
        raise KeyInUseError(
            f"key {key_id!r} still protects {in_use} archive(s) or session key(s); run "
            "`sessionstore keys rotate` with another key active first, then retire it"
        )
