"""Through a real PgBouncer in transaction pooling mode (`?pgbouncer=transaction`): the CLI's
migrate, every feature of the store, a read-only store, and 64 client processes sharing a
few server connections. Without the option the first append fails as PgBouncer users saw
(asyncpg's per-connection statement names collide on a shared server connection)."""

from __future__ import annotations

import asyncio
import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sessionstore import (
    HistoryPoint,
    Keyring,
    LocalKey,
    ReadOnlyStoreError,
    SessionStore,
    StoreError,
)
from sessionstore._jobs._key_rotation import key_usage, rotate_keys
from sessionstore._jobs._retention import (
    RetentionAction,
    RetentionPolicy,
    run_retention,
    set_policy,
)
from tests.support.background import SlowSummarizer, background_manager, fill_between, prepare
from tests.support.pgbouncer import Bouncer, pgbouncer

pytestmark = pytest.mark.cluster

K1 = LocalKey.generate("k1")
K2 = LocalKey.generate("k2")
CLIENTS = 64
APPENDS_PER_CLIENT = 10


@pytest.fixture(scope="module")
def bouncer() -> Iterator[Bouncer]:
    from tests.conftest import PG_ADMIN_URL

    with pgbouncer(PG_ADMIN_URL, pool_size=8) as running:
        yield running


def _migrate(url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sessionstore.cli", "migrate", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


async def _create(url: str) -> None:
    async with SessionStore(url, create_tables=True):
        pass


def _item(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def test_without_the_option_the_first_append_fails(
    bouncer: Bouncer, fresh_pg_url: str
) -> None:
    """The report this fixes: asyncpg's statement names (`__asyncpg_stmt_N__`, numbered per
    client connection) collide on, or are missing from, the server connection PgBouncer
    hands the next transaction."""
    await _create(bouncer.url_for(fresh_pg_url))
    plain = bouncer.url_for(fresh_pg_url, mode=None)
    with pytest.raises(StoreError, match="prepared statement"):
        async with SessionStore(plain) as store:
            for n in range(5):
                await store.append("s", [_item(str(n))])
                await store.history("s")


async def test_every_feature_works_in_transaction_mode(bouncer: Bouncer, fresh_pg_url: str) -> None:
    url = bouncer.url_for(fresh_pg_url)
    _migrate(url)
    async with SessionStore(url, keyring=Keyring([K1]), encrypt_payloads=True) as sealing:
        await sealing.append("sealed", [_item("secret")])  # a session key for rotation
    async with SessionStore(url, keyring=Keyring([K1])) as store:
        # append, load, pop, clear
        assert await store.append("a", [_item("one"), _item("two")]) == [1, 2]
        assert await store.append("a", [_item("three")], token="t-3") == [3]
        assert await store.append("a", [_item("three")], token="t-3") == [3]  # a retry
        assert await store.load_context("a") == [_item("one"), _item("two"), _item("three")]
        assert await store.pop("a") == _item("three")
        await store.append("b", [_item("gone")])
        await store.clear("b")
        assert await store.load_context("b") == []
        # rewind, fork and branches
        await store.append("a", [_item("four"), _item("five")])
        await store.rewind("a", HistoryPoint.at_seq(2))
        assert await store.load_context("a") == [_item("one"), _item("two")]
        await store.fork("a", "a-branch")
        await store.append("a-branch", [_item("branched")])
        assert [info.session_id for info in await store.branches("a")] == ["a-branch"]
        assert await store.load_context("a-branch") == [
            _item("one"),
            _item("two"),
            _item("branched"),
        ]
        # search and verify
        hits = await store.search("branched")
        assert [hit.session_id for hit in hits] == ["a-branch"]
        assert (await store.verify_history("a")).ok and (await store.verify_history("a-branch")).ok

        # compaction with a summary prepared in the background under a lease
        slow = SlowSummarizer(store.estimator)
        manager = background_manager(store, slow)
        await fill_between(manager, "c")
        await prepare(manager, "c")
        assert slow.calls == 1
        outcome = await manager.compact("c", trigger="threshold")
        assert outcome.compacted and slow.calls == 1  # the prepared summary was used
        assert (await store.verify_history("c")).ok

        # retention: the compacted plaintext and old events go, the live context stays
        context_c = await store.load_context("c")
        policies = [
            RetentionPolicy("purge", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 1),
            RetentionPolicy("events", RetentionAction.DELETE_EVENTS, 1),
        ]
        for policy in policies:
            await set_policy(store, policy)
        later = datetime.now(UTC) + timedelta(days=3)
        report = await run_retention(store, now=later, policies=policies)
        assert report.counts["purge"] > 0 and report.counts["events"] > 0
        assert await store.load_context("c") == context_c
        # deletion
        await store.append("d", [_item("bye")])
        assert await store.delete_session("d") is True
        assert await store.load_context("d") == []

    # key rotation: every session key rewrapped under the new active key
    rotated = Keyring([K1, K2], active="k2")
    async with SessionStore(url, keyring=rotated) as store:
        rotation = await rotate_keys(store)
        assert rotation.rewrapped > 0 and set(rotation.usage) == {"k2"}
        assert set(await key_usage(store)) == {"k2"}
    async with SessionStore(url, keyring=Keyring([K2])) as store:
        assert await store.load_context("sealed") == [_item("secret")]


def _insert(conn: Connection) -> None:
    conn.execute(sa.text("INSERT INTO sessions (session_id) VALUES ('sneaky')"))


async def test_a_read_only_store_reads_and_the_server_refuses_its_writes(
    bouncer: Bouncer, fresh_pg_url: str
) -> None:
    url = bouncer.url_for(fresh_pg_url)
    async with SessionStore(url, create_tables=True) as store:
        await store.append("s", [_item("kept")])
    async with SessionStore(url, read_only=True) as reader:
        assert await reader.load_context("s") == [_item("kept")]
        assert [row.seq for row in await reader.history("s")] == [1]
        with pytest.raises(ReadOnlyStoreError):
            await reader.append("s", [_item("no")])
        with pytest.raises(StoreError, match=r"read-only|read only"):  # BEGIN READ ONLY
            await reader.read_snapshot(_insert)


def _client(url: str, number: int) -> None:
    async def work() -> None:
        async with SessionStore(url) as store:
            for n in range(APPENDS_PER_CLIENT):
                await store.append(f"client-{number}", [_item(f"{number}:{n}")], token=f"{n}")
                assert len(await store.load_context(f"client-{number}")) == n + 1

    asyncio.run(work())


async def test_64_client_processes_share_a_few_server_connections(
    bouncer: Bouncer, fresh_pg_url: str
) -> None:
    url = bouncer.url_for(fresh_pg_url)
    await _create(url)
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_client, args=(url, n)) for n in range(CLIENTS)]
    for process in processes:
        process.start()
    for process in processes:
        await asyncio.to_thread(process.join, 120)
    assert [process.exitcode for process in processes] == [0] * CLIENTS
    async with SessionStore(url) as store:
        for number in range(CLIENTS):
            context_items = await store.load_context(f"client-{number}")
            assert context_items == [_item(f"{number}:{n}") for n in range(APPENDS_PER_CLIENT)]
    assert "duplicate prepared statement" not in bouncer.log()
