"""SQLite's append statement binds only values its driver takes as they are (0 standing for
NULL, bytearrays for bytes, an int flag): rows, plain or sealed, must be stored exactly as the
general write path stores them, value and type, or loads, searches and the chain would see
other rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sessionstore import SessionStore
from sessionstore._schema import messages
from sessionstore._security._crypto import Keyring, LocalKey
from tests.support.histories import EDGE_ITEMS

# Every column but those that differ between the two sessions by design: the id, the digest
# (it covers the id), the batch token, the time written, and the archive the general path's
# original went to.
_COLUMNS = tuple(
    column.name
    for column in messages.c
    if column.name not in {"session_id", "digest", "append_token", "created_at", "archive_id"}
)


def _stored(path: Path, session_id: str) -> list[tuple[Any, ...]]:
    """Each row's columns with SQLite's type of each value."""
    selected = ", ".join(f"{name}, typeof({name})" for name in _COLUMNS)
    with sqlite3.connect(path) as conn:
        return conn.execute(
            f"SELECT {selected}, typeof(digest), length(digest), "
            "append_token IS NOT NULL FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()


async def test_plain_rows_are_stored_as_the_general_path_stores_them(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with SessionStore(f"sqlite:///{path}", create_tables=True) as store:
        for protected in (False, True):
            for agent in (None, "planner"):
                hot, general = f"hot-{protected}-{agent}", f"general-{protected}-{agent}"
                await store.append(hot, EDGE_ITEMS, protected=protected, agent=agent)
                # An archived original sends an append down the general write path.
                await store.append(
                    general,
                    EDGE_ITEMS,
                    protected=protected,
                    agent=agent,
                    originals={0: EDGE_ITEMS[0]},
                )
                assert _stored(path, hot) == _stored(path, general)
                assert (await store.verify_history(hot)).problems == []
        rows = _stored(path, "hot-False-None")
    by_name = [dict(zip(_COLUMNS, row[0 : 2 * len(_COLUMNS) : 2], strict=True)) for row in rows]
    assert [(row["tool_name"], row["call_id"]) for row in by_name[:3]] == [
        (None, None),
        ("0", "0"),
        ("0", "0"),
    ]
    types = [dict(zip(_COLUMNS, row[1 : 2 * len(_COLUMNS) : 2], strict=True)) for row in rows]
    assert types[0]["tool_name"] == "null" and types[1]["tool_name"] == "text"
    assert {row["protected"] for row in types} == {"integer"}
    assert {row["payload_digest"] for row in types} == {"blob"}
    assert [row[-1] for row in rows] == [1, 0, 0, 0, 0, 0]  # the batch token: first row only


async def test_sealed_rows_are_stored_as_the_general_path_stores_them(tmp_path: Path) -> None:
    """A session sealed earlier and appended to by a store that seals nothing new: its rows
    take the append statement, sealed; each column as the general path writes it (the sealed
    bytes and their digest differ by their random nonce: their type and size must not)."""
    path = tmp_path / "sessions.db"
    url = f"sqlite:///{path}"
    keyring = Keyring([LocalKey("k1", bytes(range(32)))])
    async with SessionStore(url, create_tables=True, keyring=keyring, encrypt_payloads=True) as s:
        for session in ("hot", "general"):
            await s.append(session, [{"role": "user", "content": "sealed from the start"}])
        await s.append("general", EDGE_ITEMS)  # an encrypting store: the general path
    async with SessionStore(url, keyring=keyring) as store:
        await store.append("hot", EDGE_ITEMS)  # seals nothing new: the append statement
        assert (await store.verify_history("hot")).problems == []
        assert (await store.load_context("hot"))[1:] == EDGE_ITEMS
    hot, general = _stored(path, "hot"), _stored(path, "general")
    sealed_at = 2 * _COLUMNS.index("payload_sealed")
    digest_at = 2 * _COLUMNS.index("payload_digest")
    assert {row[sealed_at + 1] for row in hot} == {"blob"}
    assert {row[2 * _COLUMNS.index("payload") + 1] for row in hot} == {"null"}

    def comparable(row: tuple[Any, ...]) -> tuple[Any, ...]:
        values = list(row)
        values[sealed_at] = len(values[sealed_at])
        values[digest_at] = len(values[digest_at])
        return tuple(values)

    assert [comparable(row) for row in hot] == [comparable(row) for row in general]
