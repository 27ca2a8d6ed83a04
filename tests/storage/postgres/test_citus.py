"""Citus: the tables distributed by session, a session's rows on one worker, its reads and
appends routed to that worker, and an existing single-node database distributed in place.

These run only against a Citus coordinator (`SESSIONSTORE_TEST_CITUS_URL`, as the second
pytest run of .ci/run does); the rest of the PostgreSQL suite runs there too (a subset in
CI, the whole suite by hand), which is what shows every feature works distributed.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, make_url

from sessionstore import SessionStore
from sessionstore._storage._append_rows import PG_ACTIVE_SQL
from sessionstore._storage._database import open_database
from sessionstore._storage._migrations import current_revision, distribute_tables
from sessionstore._storage._postgres._citus import (
    APPEND_SIGNATURE,
    APPEND_SQL,
    COORDINATOR_ONLY,
    DISTRIBUTED,
    LEVEL_SQL,
    RANGE_SQL,
    REFERENCE,
)
from sessionstore._storage._postgres._database import PostgresDatabase
from sessionstore._storage._revisions import head_revision
from sessionstore._storage._urls import resolve_url
from tests.conftest import CITUS_URL
from tests.support.citus import create_citus_database, drop_citus_database, enable_citus
from tests.support.cli import run
from tests.support.histories import coding_session
from tests.support.managers import small_window_manager

pytestmark = pytest.mark.skipif(
    not CITUS_URL, reason="needs a Citus coordinator: SESSIONSTORE_TEST_CITUS_URL"
)


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(_dsn(url))
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


async def _written(store: SessionStore, session_id: str) -> None:
    """A session with rows in every per-session table: messages, a compaction and its
    archive and ranges, a model call."""
    manager = small_window_manager(store)
    await manager.append(session_id, coding_session(10))
    outcome = await manager.compact(session_id)
    assert outcome.result is not None
    await store.record_model_call(session_id, await store.load_context(session_id), model="m")


def _placements(url: str, session_id: str) -> dict[str, tuple[int, str, int]]:
    """For each distributed table: the shard holding `session_id` and that shard's node."""
    sql = (
        "SELECT s.shardid, s.nodename, s.nodeport FROM citus_shards s "
        "WHERE s.shardid = get_shard_id_for_distribution_column($1::regclass, $2::text)"
    )

    async def read() -> dict[str, tuple[int, str, int]]:
        found = {}
        for table in DISTRIBUTED:
            [row] = await _fetch(url, sql, table, session_id)
            found[table] = (int(row[0]), str(row[1]), int(row[2]))
        return found

    return asyncio.run(read())


def test_every_table_is_distributed_by_session_and_colocated(pg_url: str) -> None:
    rows = asyncio.run(
        _fetch(
            pg_url,
            "SELECT logicalrelid::text, partmethod::text, colocationid,"
            " column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition",
        )
    )
    kinds = {str(row[0]): (str(row[1]), int(row[2]), row[3]) for row in rows}
    assert {name: kinds[name][0] for name in DISTRIBUTED} == dict.fromkeys(DISTRIBUTED, "h")
    assert {kinds[name][2] for name in DISTRIBUTED} == {"session_id"}
    assert len({kinds[name][1] for name in DISTRIBUTED}) == 1  # one colocation group
    assert {name: kinds[name][0] for name in REFERENCE} == dict.fromkeys(REFERENCE, "n")
    assert not set(COORDINATOR_ONLY) & set(kinds)
    [function] = asyncio.run(
        _fetch(
            pg_url,
            "SELECT distribution_argument_index, colocationid FROM pg_dist_object"
            " WHERE objid = $1::regprocedure",
            APPEND_SIGNATURE,
        )
    )
    assert (function[0], function[1]) == (0, kinds["sessions"][1])  # routed by the session id


async def test_a_sessions_rows_land_on_one_worker(store: SessionStore, pg_url: str) -> None:
    await _written(store, "alpha")
    placements = await asyncio.to_thread(_placements, pg_url, "alpha")
    nodes = {(host, port) for _, host, port in placements.values()}
    assert len(nodes) == 1, placements
    [(host, port)] = nodes
    assert port != make_url(pg_url).port  # a worker, not the coordinator
    worker = make_url(pg_url).set(host=host, port=port).render_as_string(hide_password=False)
    counted = {}
    for table, (shard, _, _) in placements.items():  # the rows themselves, on that worker
        [row] = await _fetch(
            worker, f"SELECT count(*) FROM {table}_{shard} WHERE session_id = $1", "alpha"
        )
        counted[table] = int(row[0])
    assert counted["sessions"] == 1
    assert counted["messages"] >= 40 and counted["compactions"] == 1
    assert counted["archives"] >= 1 and counted["archive_ranges"] >= 1
    assert counted["model_calls"] == 1
    everywhere = await _fetch(pg_url, "SELECT count(*) FROM messages WHERE session_id = 'alpha'")
    assert everywhere[0][0] == counted["messages"]


def _plan(url: str, sql: str, *args: Any) -> str:
    """EXPLAIN of a statement with its parameters bound, as the coordinator plans it."""

    async def explain() -> str:
        conn = await asyncpg.connect(_dsn(url))
        try:
            await conn.execute("SET plan_cache_mode = force_custom_plan")
            rows = await conn.fetch(f"EXPLAIN {sql}", *args)
            return "\n".join(str(row[0]) for row in rows)
        finally:
            await conn.close()

    return asyncio.run(explain())


async def test_a_load_and_an_append_are_routed_to_one_worker(
    store: SessionStore, pg_url: str
) -> None:
    await store.append("beta", coding_session(3))
    await store.fork("beta", "beta-branch")
    await store.append("beta-branch", [{"role": "user", "content": "on the branch"}])
    args: list[Any] = [
        "beta",
        1,
        5,
        None,
        ["user"],
        [None],
        [None],
        [None],
        [5],
        [False],
        ['{"a": 1}'],
        None,
        999,
        None,
        None,
        None,
        None,
        None,
        [None],
        [None],
        [b"\x01"],
        None,
    ]
    statements: dict[str, tuple[str, list[Any]]] = {
        "load": (PG_ACTIVE_SQL, ["beta"]),
        "branch level": (LEVEL_SQL, ["beta-branch"]),
        "branch rows": (RANGE_SQL, ["beta", 1, 12]),
        "append": (
            APPEND_SQL,
            args,
        ),
    }
    [shard_node] = {
        (host, port)
        for _, host, port in (await asyncio.to_thread(_placements, pg_url, "beta")).values()
    }
    for name, (sql, params) in statements.items():
        plan = await asyncio.to_thread(_plan, pg_url, sql, *params)
        assert "Task Count: 1" in plan, (name, plan)
        assert f"port={shard_node[1]}" in plan, (name, plan)
    # What the store reads through those statements is the branch as it stands.
    context = await store.load_context("beta-branch")
    assert context[-1] == {"role": "user", "content": "on the branch"}
    assert context[:-1] == await store.load_context("beta")


@pytest.fixture
def single_node_url() -> Iterator[str]:
    """A database on the coordinator's server without the citus extension (a single-node
    PostgreSQL database, as before Citus), whose workers are ready to take it."""
    assert CITUS_URL is not None
    name = f"sessionstore_single_{uuid.uuid4().hex[:12]}"
    asyncio.run(create_citus_database(_dsn(CITUS_URL), name, citus=False))
    yield make_url(CITUS_URL).set(database=name).render_as_string(hide_password=False)
    asyncio.run(drop_citus_database(_dsn(CITUS_URL), name))


def _distributed(conn: Connection) -> set[str]:
    return set(conn.execute(sa.text("SELECT logicalrelid::text FROM pg_dist_partition")).scalars())


async def test_an_existing_database_is_distributed_by_migrate(single_node_url: str) -> None:
    async with SessionStore(single_node_url, create_tables=True) as store:
        await _written(store, "gamma")
        await store.fork("gamma", "gamma-branch")
        await store.append("gamma-branch", [{"role": "user", "content": "branch words"}])
        before = {sid: await store.load_context(sid) for sid in ("gamma", "gamma-branch")}
        found = await store.search("branch words")
        assert [hit.session_id for hit in found] == ["gamma-branch"]
    assert CITUS_URL is not None
    await enable_citus(_dsn(CITUS_URL), make_url(single_node_url).database or "")
    result = await asyncio.to_thread(run, "migrate", "--distribute", "--url", single_node_url)
    assert result.exit_code == 0, result.output
    assert "distributed by session_id" in result.output
    database = open_database(resolve_url(single_node_url))
    try:
        assert await database.read(_distributed) == {*DISTRIBUTED, *REFERENCE}
        assert await current_revision(database) == head_revision()
        assert await distribute_tables(database) is False  # a second run changes nothing
    finally:
        await database.dispose()
    async with SessionStore(single_node_url) as store:
        assert isinstance(store.database, PostgresDatabase) and store.database.citus
        for sid, context in before.items():
            assert await store.load_context(sid) == context
            assert (await store.verify_history(sid)).ok
        await store.append("gamma", [{"role": "user", "content": "after"}])
        assert (await store.load_context("gamma"))[-1]["content"] == "after"
        assert [hit.session_id for hit in await store.search("branch words")] == ["gamma-branch"]
    placed = await asyncio.to_thread(_placements, single_node_url, "gamma")
    assert len({(host, port) for _, host, port in placed.values()}) == 1
