"""A database of its own on a Citus cluster (a coordinator and its workers), for the
PostgreSQL tests run against Citus (`SESSIONSTORE_TEST_CITUS_URL`, see .ci/run).

Citus does not create a database on the workers by itself: each test database is created on
every node, given the extension there, and its workers registered with its coordinator.
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url


@contextmanager
def one_ddl_at_a_time(coordinator: str) -> Iterator[None]:
    """Cluster-wide DDL takes turns across test processes, through a lock file: registering
    workers with a new database's coordinator from two processes at once failed on a worker
    with "tuple concurrently updated", and a role created (which Citus propagates to every
    node) while another process registered workers, with "tuple concurrently deleted"."""
    port = make_url(coordinator).port or 5432
    lock = Path(tempfile.gettempdir()) / f"sessionstore-citus-{port}.lock"
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _on(dsn: str, host: str, port: int, database: str) -> str:
    return (
        make_url(dsn)
        .set(host=host, port=port, database=database)
        .render_as_string(hide_password=False)
    )


async def _workers(dsn: str) -> list[tuple[str, int]]:
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        rows = await conn.fetch(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid"
        )
    finally:
        await conn.close()
    return [(str(row[0]), int(row[1])) for row in rows]


async def _run(dsn: str, *statements: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def create_citus_database(coordinator: str, name: str, *, citus: bool = True) -> None:
    """`name` on the coordinator at `coordinator` (a DSN) and on each of its workers, with
    the workers added to the new database's coordinator; `citus=False`: the coordinator's
    database stays plain PostgreSQL (a single-node database), until `enable_citus`."""
    url = make_url(coordinator)
    host, port = url.host or "127.0.0.1", url.port or 5432
    workers = await _workers(coordinator)
    for node_host, node_port in [(host, port), *workers]:
        admin = _on(coordinator, node_host, node_port, url.database or "postgres")
        await _run(admin, f'CREATE DATABASE "{name}"')
        if citus or (node_host, node_port) != (host, port):
            await _run(_on(coordinator, node_host, node_port, name), "CREATE EXTENSION citus")
    if citus:
        await enable_citus(coordinator, name, extension=False)


async def enable_citus(coordinator: str, name: str, *, extension: bool = True) -> None:
    """Make the coordinator's database `name` a Citus coordinator of the cluster's workers."""
    url = make_url(coordinator)
    host, port = url.host or "127.0.0.1", url.port or 5432
    workers = await _workers(coordinator)
    if extension:
        await _run(_on(coordinator, host, port, name), "CREATE EXTENSION citus")
    with one_ddl_at_a_time(coordinator):
        await _run(
            _on(coordinator, host, port, name),
            # 4 shards, not 32: each test empties every table, on every shard.
            f'ALTER DATABASE "{name}" SET citus.shard_count = 4',
            f"SELECT citus_set_coordinator_host('{host}', {port})",
            *(f"SELECT citus_add_node('{h}', {p})" for h, p in workers),
        )


async def drop_citus_database(coordinator: str, name: str) -> None:
    """Drop `name` on the coordinator and its workers."""
    url = make_url(coordinator)
    host, port = url.host or "127.0.0.1", url.port or 5432
    for node_host, node_port in [(host, port), *await _workers(coordinator)]:
        admin = _on(coordinator, node_host, node_port, url.database or "postgres")
        await _run(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
