"""A scratch PostgreSQL database for one benchmark run, created and dropped around it.

The server is $SESSIONSTORE_BENCH_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator

import asyncpg
from sqlalchemy.engine import make_url

ADMIN_URL = os.environ.get(
    "SESSIONSTORE_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


async def _admin(sql: str) -> None:
    dsn = make_url(ADMIN_URL).set(drivername="postgresql").render_as_string(False)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def scratch_database() -> AsyncIterator[str]:
    """Yield the postgresql+asyncpg URL of a new, empty database; drop it afterwards."""
    name = f"sessionstore_bench_{uuid.uuid4().hex[:8]}"
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        url = make_url(ADMIN_URL).set(drivername="postgresql+asyncpg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
