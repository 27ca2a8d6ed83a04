"""`SQLSession.from_url` on an in-memory SQLite URL gives a working `engine`, as the SDK's
`SQLAlchemySession.from_url` does; each such session has a database of its own, gone after."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import sqlalchemy as sa

from sessionstore import SQLSession


@pytest.mark.parametrize("url", ["sqlite+aiosqlite:///:memory:", "sqlite://"])
async def test_an_in_memory_url_has_an_engine_on_a_private_database(url: str) -> None:
    first = SQLSession.from_url("a", url=url, create_tables=True)
    second = SQLSession.from_url("a", url=url, create_tables=True)
    await first.add_items([{"role": "user", "content": "hi"}])
    async with first.engine.connect() as conn:
        count = await conn.execute(sa.text("SELECT count(*) FROM messages"))
        assert count.scalar_one() == 1
    assert await second.get_items() == []  # not shared: each has its own database
    where = Path(first.store.safe_url.removeprefix("sqlite:///")).parent
    assert where.exists()
    await first.close()
    await second.close()
    del first
    gc.collect()
    assert not where.exists()  # throwaway, like the SDK's in-memory database
