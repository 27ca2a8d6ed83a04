"""Citus: a session's appends go straight to the worker holding its shard, and to the
coordinator whenever that worker cannot be reached or routing cannot be trusted."""

from __future__ import annotations

import socket
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from sessionstore import SessionStore
from sessionstore._storage._known_totals import KNOWN_SESSIONS
from sessionstore._storage._postgres._database import PostgresDatabase
from sessionstore._storage._postgres._worker_routes import WorkerRoutes
from tests.conftest import CITUS_URL
from tests.support.histories import user

_citus = pytest.mark.skipif(
    not CITUS_URL, reason="needs a Citus coordinator: SESSIONSTORE_TEST_CITUS_URL"
)


def _routes(store: SessionStore) -> WorkerRoutes:
    database = store.database
    assert isinstance(database, PostgresDatabase) and database._routes is not None
    return database._routes


async def _shard_node(url: str, session_id: str) -> tuple[str, int]:
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    try:
        row = await conn.fetchrow(
            "SELECT nodename, nodeport FROM citus_shards WHERE table_name = 'sessions'::regclass"
            " AND shardid = get_shard_id_for_distribution_column('sessions', $1::text)",
            session_id,
        )
    finally:
        await conn.close()
    assert row is not None
    return str(row[0]), int(row[1])


@_citus
async def test_a_sessions_appends_go_to_the_worker_holding_it(pg_url: str) -> None:
    async with SessionStore(pg_url) as store:
        for session_id in ("gamma", "delta", "epsilon"):
            for turn in range(3):
                await store.append(session_id, [user(f"{session_id} {turn}")])
            node = await _shard_node(pg_url, session_id)
            assert _routes(store).node(session_id) == node
            assert node[1] != make_url(pg_url).port  # a worker, not the coordinator
            assert [item["content"] for item in await store.load_context(session_id)] == [
                f"{session_id} {turn}" for turn in range(3)
            ]
        database = store.database
        assert isinstance(database, PostgresDatabase)
        pools: dict[Any, Any] = database._loops.current()._worker_pools
        assert set(pools) == {_routes(store).node(sid) for sid in ("gamma", "delta", "epsilon")}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@_citus
async def test_an_unreachable_worker_leaves_the_append_to_the_coordinator(pg_url: str) -> None:
    """Nothing was sent to a worker no connection reached: the same batch goes through the
    coordinator, once, and the worker is not tried again for a while."""
    async with SessionStore(pg_url) as store:
        await store.append("zeta", [user("first")])
        gone = ("127.0.0.1", _closed_port())
        _routes(store).remember("zeta", gone)
        seqs = await store.append("zeta", [user("second")])
        assert seqs == [2]
        assert _routes(store).node("zeta") is None  # marked unreachable: the coordinator
        assert [item["content"] for item in await store.load_context("zeta")] == [
            "first",
            "second",
        ]


@pytest.mark.parametrize(
    ("url", "possible"),
    [
        ("postgresql+asyncpg://u:pw@coordinator:5432/db", True),
        ("postgresql+asyncpg://u@coordinator/db?pgbouncer=transaction", False),
        ("postgresql+asyncpg://u@/db?host=h1:5432&host=h2:5432", False),
    ],
)
def test_routing_needs_a_direct_single_host_url(url: str, possible: bool) -> None:
    parsed = make_url(url)
    assert WorkerRoutes.possible(parsed, pooled="pgbouncer" in parsed.query) is possible


def test_a_workers_dsn_is_the_stores_with_its_host_and_port() -> None:
    routes = WorkerRoutes(make_url("postgresql+asyncpg://u:pw@coordinator:5432/db?ssl=require"))
    dsn = make_url(routes.dsn(("worker-2", 9702)))
    assert (dsn.host, dsn.port, dsn.username, dsn.password, dsn.database) == (
        "worker-2",
        9702,
        "u",
        "pw",
        "db",
    )
    assert dsn.query.get("sslmode") == "require"


def test_what_it_remembers_is_bounded() -> None:
    routes = WorkerRoutes(make_url("postgresql+asyncpg://u@coordinator/db"))
    for number in range(KNOWN_SESSIONS + 1):
        routes.remember(f"s{number}", ("worker", 1))
    assert routes.known(f"s{KNOWN_SESSIONS}") and not routes.known("s0")


async def test_only_a_distributed_database_asks_for_a_route(pg_url: str) -> None:
    async with SessionStore(pg_url) as store:
        await store.append("eta", [user("hi")])
        assert _routes(store).known("eta") == bool(CITUS_URL)
