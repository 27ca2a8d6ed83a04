"""Telemetry writes (a model call's usage) commit without waiting for the disk, on both
backends; every other write, and every write after one, commits as configured."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from sessionstore import CallUsage, SessionStore
from sessionstore._history._model_calls import tx_attach_usage
from sessionstore._storage._telemetry import is_telemetry, telemetry
from tests.support.histories import user


def _sqlite_level(conn: Connection) -> Any:
    return conn.exec_driver_sql("PRAGMA synchronous").scalar_one()


def _pg_level(conn: Connection) -> Any:
    return conn.exec_driver_sql("SHOW synchronous_commit").scalar_one()


async def test_usage_is_telemetry_and_conversation_writes_are_not() -> None:
    assert is_telemetry(tx_attach_usage)
    assert not is_telemetry(_sqlite_level)


async def test_a_sqlite_telemetry_write_commits_at_normal_and_the_next_write_at_full(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        write = store.database.write
        assert await write(_sqlite_level) == 2  # FULL: the conversation's level
        assert await write(telemetry(lambda conn: _sqlite_level(conn))) == 1  # NORMAL
        assert await write(_sqlite_level) == 2  # restored
        await store.append("s", [user("hi")])
        await store.record_usage("s", [CallUsage(100, 0, 20, 0)], model="gpt-4o")
        assert [call.output_tokens for call in await store.model_calls("s")] == [20]
        assert await write(_sqlite_level) == 2


async def test_a_postgresql_telemetry_write_waits_for_no_flush_and_leaves_none_behind(
    fresh_pg_url: str,
) -> None:
    async with SessionStore(fresh_pg_url, create_tables=True) as store:
        write = store.database.write
        assert await write(_pg_level) == "on"
        assert await write(telemetry(lambda conn: _pg_level(conn))) == "off"
        for _ in range(5):  # every pooled connection is back at the server's setting
            assert await write(_pg_level) == "on"
        await store.append("s", [user("hi")])
        await store.record_usage("s", [CallUsage(100, 0, 20, 0)], model="gpt-4o")
        assert [call.output_tokens for call in await store.model_calls("s")] == [20]
