"""One append, two statements: a plain batch takes the backend's driver-level statement, a
batch with archived originals (or a store that seals new sessions) the general transaction.
On both backends they must store the same rows, or loads, searches and the chain would see
different sessions depending on how a batch happened to be written."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from sessionstore import SessionStore
from sessionstore._schema import messages
from tests.support.histories import EDGE_ITEMS

# What differs by design: the session, the digest (it covers the session), the batch token,
# the time written and the archive the general path's original went to.
_SAME = [
    column
    for column in messages.c
    if column.name not in {"session_id", "digest", "append_token", "created_at", "archive_id"}
]


def _rows(conn: Connection, session_id: str) -> list[tuple[Any, ...]]:
    query = sa.select(
        *_SAME, messages.c.append_token.is_not(None), sa.func.length(messages.c.digest)
    )
    query = query.where(messages.c.session_id == session_id).order_by(messages.c.seq)
    return [tuple(row) for row in conn.execute(query)]


async def test_both_statements_store_the_same_rows(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        for protected in (False, True):
            for agent in (None, "planner"):
                hot, general = f"hot-{protected}-{agent}", f"general-{protected}-{agent}"
                for session_id, originals in ((hot, None), (general, {0: EDGE_ITEMS[0]})):
                    await store.append(session_id, EDGE_ITEMS[:2], protected=protected, agent=agent)
                    await store.append(
                        session_id,
                        EDGE_ITEMS,
                        protected=protected,
                        agent=agent,
                        originals=originals,
                    )
                    assert (await store.verify_history(session_id)).problems == []
                    assert await store.load_context(session_id) == [*EDGE_ITEMS[:2], *EDGE_ITEMS]
                hot_rows = await store.read_snapshot(_rows, hot)
                assert hot_rows == await store.read_snapshot(_rows, general)
                assert len(hot_rows) == 8
                assert [row[-2] for row in hot_rows] == [True, False, True] + [False] * 5
                info_hot = await store.session_info(hot)
                info_general = await store.session_info(general)
                assert info_hot is not None and info_general is not None
                assert info_hot.context_tokens == info_general.context_tokens > 0
