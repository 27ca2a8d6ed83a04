"""Bad input through every public door: the same mistakes, the same clear errors.

Each bad batch goes through the store, the Agents SDK session, the compaction manager
and the command line (`sessionstore import` of an SDK file holding it). Every door must
refuse it before anything is written, with an error that says what was wrong and where,
and leave every table exactly as it was (rows compared column by column, not counted).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from sessionstore import InvalidItemError, SessionStore, SQLSession
from sessionstore._schema import metadata as schema
from sessionstore.compaction import CompactionConfig, CompactionManager
from tests.support.cli import NO_KEYS, run

MAX_ITEM_BYTES = 4_096
BEFORE = [{"role": "user", "content": "before"}, {"role": "assistant", "content": "kept"}]


def _deep(depth: int) -> dict[str, Any]:
    item: dict[str, Any] = {"role": "user"}
    for _ in range(depth):
        item = {"content": item}
    return item


class _Opaque:
    """A value JSON cannot hold."""


def _cyclic() -> dict[str, Any]:
    """An item that holds itself: infinitely deep (the encoder keeps no cycle check)."""
    item: dict[str, Any] = {"role": "user", "content": []}
    item["content"].append(item)
    return item


# (case, the batch, what is raised, what its text must say)
ITEM_CASES: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("one item, not a list", lambda: {"role": "user"}, TypeError, "wrap a single item in a list"),
    ("a string", lambda: "hello", TypeError, "items must be a list of items, got a str"),
    ("not a mapping", lambda: [[1, 2]], InvalidItemError, "not a mapping"),
    ("nested 2,000 deep", lambda: [_deep(2000)], InvalidItemError, "nested more than 256"),
    ("holding itself", lambda: [_cyclic()], InvalidItemError, "nested more than 256"),
    (
        "an int dict key",
        lambda: [{"role": "user", "meta": {7: "x"}}],
        InvalidItemError,
        "key of type int",
    ),
    ("a set", lambda: [{"role": "user", "content": {1}}], InvalidItemError, "content is a set"),
    ("an object", lambda: [{"role": "user", "x": _Opaque()}], InvalidItemError, "field x"),
    ("NaN", lambda: [{"role": "user", "content": float("nan")}], InvalidItemError, "JSON"),
    ("NUL in a typed field", lambda: [{"role": "us\x00er"}], InvalidItemError, "field role"),
    ("a typed field too long", lambda: [{"role": "u" * 33}], InvalidItemError, "more than its"),
    (
        "a lone surrogate in a typed field",
        lambda: [{"type": "function_call", "call_id": "c", "name": "x\udc00"}],
        InvalidItemError,
        "field name contains a lone surrogate",
    ),
    (
        "above max_item_bytes",
        lambda: [{"role": "user", "content": "ok"}, {"role": "tool", "content": "x" * 50_000}],
        InvalidItemError,
        "item #1 is 50,",
    ),
]

Door = Callable[[SessionStore, Any], Awaitable[Any]]
DOORS: dict[str, Door] = {
    "store.append": lambda store, items: store.append("s", items),
    "SQLSession.add_items": lambda store, items: SQLSession("s", store).add_items(items),
    "CompactionManager.append": lambda store, items: CompactionManager(
        CompactionConfig(store=store)
    ).append("s", items),
}


async def _snapshot(store: SessionStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in a stable order: equal before and after means unchanged."""
    async with store.engine.connect() as conn:
        tables = {}
        for table in schema.sorted_tables:
            order = list(table.primary_key.columns) or list(table.columns)
            rows = await conn.execute(sa.select(table).order_by(*order))
            tables[table.name] = [tuple(row) for row in rows]
        return tables


@pytest.fixture
async def small_store(db_url: str) -> Any:
    async with SessionStore(db_url, create_tables=True, max_item_bytes=MAX_ITEM_BYTES) as store:
        await store.append("s", BEFORE)
        yield store


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(("case", "batch", "error", "fragment"), ITEM_CASES, ids=lambda v: v)
async def test_every_door_refuses_a_bad_batch_before_writing(
    small_store: SessionStore,
    door: str,
    case: str,
    batch: Callable[[], Any],
    error: type[Exception],
    fragment: str,
) -> None:
    before = await _snapshot(small_store)
    with pytest.raises(error) as caught:
        await DOORS[door](small_store, batch())
    assert fragment in str(caught.value), f"{case} via {door}: {caught.value}"
    assert not isinstance(caught.value, RecursionError | sa.exc.SQLAlchemyError)
    assert await _snapshot(small_store) == before
    assert await small_store.load_context("s") == BEFORE


@pytest.mark.parametrize("door", DOORS)
async def test_a_generator_is_read_once_as_a_list_by_every_door(
    small_store: SessionStore, door: str
) -> None:
    items = ({"role": "user", "content": f"g{n}"} for n in range(3))
    await DOORS[door](small_store, items)
    assert [item["content"] for item in await small_store.load_context("s")][2:] == [
        "g0",
        "g1",
        "g2",
    ]


ARGUMENT_CASES: list[tuple[str, Callable[[SessionStore], Awaitable[Any]], type[Exception], str]] = [
    ("limit as str", lambda s: s.load_context("s", limit="5"), TypeError, "limit must be an int"),  # type: ignore[arg-type]
    ("limit as float", lambda s: s.load_context("s", limit=1.5), TypeError, "limit must be an int"),  # type: ignore[arg-type]
    ("limit as bool", lambda s: s.load_context("s", limit=True), TypeError, "limit must be an int"),
    (
        "session limit as str",
        lambda s: SQLSession("s", s).get_items(limit="5"),  # type: ignore[arg-type]
        TypeError,
        "limit must be an int",
    ),
    ("protected='no'", lambda s: s.append("s", BEFORE, protected="no"), TypeError, "protected"),  # type: ignore[arg-type]
    ("negative list limit", lambda s: s.list_sessions(limit=-1), ValueError, "limit must be >= 0"),
    ("NUL in a session id", lambda s: s.append("a\x00b", BEFORE), ValueError, "NUL character"),
    ("a lone surrogate in a session id", lambda s: s.append("a\ud800", BEFORE), ValueError, "lone"),
    (
        "an int metadata key",
        lambda s: s.merge_session_metadata("s", {3: "x"}),  # type: ignore[dict-item]
        InvalidItemError,
        "key of type int",
    ),
]


@pytest.mark.parametrize(("case", "call", "error", "fragment"), ARGUMENT_CASES, ids=lambda v: v)
async def test_bad_arguments_are_refused_before_anything_is_written(
    small_store: SessionStore,
    case: str,
    call: Callable[[SessionStore], Awaitable[Any]],
    error: type[Exception],
    fragment: str,
) -> None:
    before = await _snapshot(small_store)
    with pytest.raises(error, match=fragment):
        await call(small_store)
    assert await _snapshot(small_store) == before, case


# ------------------------------------------------------------------ the command line

# Each row as the SDK's SQLiteSession stores it (JSON text), and the reason import gives.
CLI_ROWS: list[tuple[str, str, str]] = [
    ("nested 2,000 deep", '{"content":' * 2000 + '{"role":"user"}' + "}" * 2000, "nested"),
    ("NUL in a typed field", '{"role": "us\\u0000er"}', "field role"),
    ("a typed field too long", json.dumps({"role": "u" * 33}), "more than its"),
    ("above max_item_bytes", json.dumps({"role": "tool", "content": "x" * 50_000}), "max_item"),
    ("not an object", "[1, 2]", "JSON list, not an object"),
    ("not JSON", "{broken", "not valid JSON"),
]


def _sdk_file(path: Path, message_data: str) -> Path:
    """An SDK SQLiteSession file whose session 's' holds one (bad) item."""
    with sqlite3.connect(path) as raw:
        raw.executescript(
            "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY,"
            " created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,"
            " updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);"
            "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " session_id TEXT NOT NULL, message_data TEXT NOT NULL,"
            " created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);"
            "INSERT INTO agent_sessions (session_id) VALUES ('s');"
        )
        raw.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            (message_data,),
        )
    raw.close()
    return path


@pytest.fixture
def target(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A SQLite target holding session 'kept', and a config that caps item size."""
    url = f"sqlite:///{tmp_path / 'target.db'}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"store": {"url": url, "max_item_bytes": MAX_ITEM_BYTES}}))

    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            await store.append("kept", BEFORE)

    asyncio.run(seed())
    yield url, config


@pytest.mark.parametrize(("case", "data", "reason"), CLI_ROWS, ids=lambda v: str(v)[:24])
def test_import_reports_each_bad_row_and_changes_nothing(
    tmp_path: Path, target: tuple[str, Path], case: str, data: str, reason: str
) -> None:
    url, config = target
    source = _sdk_file(tmp_path / "sdk.db", data)
    source_bytes = source.read_bytes()

    result = run("import", str(source), "--config", str(config), "--json", env=NO_KEYS)

    assert result.exit_code == 1, result.output
    (entry,) = json.loads(result.stdout)["sessions"]
    (problem,) = entry["problems"]
    assert reason in problem["reason"], f"{case}: {problem}"
    assert entry["imported"] == 0
    assert source.read_bytes() == source_bytes

    async def kept() -> tuple[list[Any], list[Any]]:
        async with SessionStore(url) as store:
            return await store.load_context("kept"), await store.load_context("s")

    assert asyncio.run(kept()) == (BEFORE, [])
