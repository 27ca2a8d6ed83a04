"""The Agents SDK's session tables as an import reads them: located, checked, opened read-only
and read a page at a time, never written."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from shlex import quote as quote_arg
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from .._errors import ImportSourceError, InvalidItemError, UnsupportedURLError
from .._items import check_typed_columns, describe, encode_payload
from .._storage._urls import is_memory_sqlite, resolve_url

DEFAULT_SESSIONS_TABLE: Final = "agent_sessions"


DEFAULT_MESSAGES_TABLE: Final = "agent_messages"


# AdvancedSQLiteSession's map of which message is on which branch (one per database file);
# its branches share message rows, so only the rows it places on "main" are the session.
STRUCTURE_TABLE: Final = "message_structure"


MAIN_BRANCH: Final = "main"


IMPORT_KEY: Final = "sessionstore_import"  # the key of the import record in sessions.metadata


PAGE_ROWS: Final = 500  # source rows read, appended and recorded per step


MESSAGE_COLUMNS: Final = ("id", "session_id", "message_data", "created_at")


# The order the SDK itself reads: SQLiteSession by id, SQLAlchemySession by (created_at, id).
SourceOrder: TypeAlias = Literal["id", "created_at"]


Status: TypeAlias = Literal[
    "imported", "would_import", "up_to_date", "empty", "refused", "not_found"
]


@dataclass(frozen=True, slots=True)
class RowProblem:
    """A source message that could not be imported (its payload is never quoted)."""

    message_id: int
    reason: str


# An append's error ends by saying nothing was stored; an import stores the other rows.
@dataclass(frozen=True, slots=True)
class SourceRow:
    """One SDK message: its parsed item, or why it cannot be imported."""

    message_id: int
    item: dict[str, Any] | None
    problem: str | None = None


_NOTHING_STORED: Final = re.compile(r"[;.]? [Nn]othing was stored\.?$")


def parse_message(message_id: int, message_data: object, max_bytes: int | None = None) -> SourceRow:
    """Decode `message_data` as the SDK does, and check the store can keep the item as is
    (JSON, typed columns, and size under the target's `max_bytes`)."""
    if not isinstance(message_data, str | bytes):
        kind = type(message_data).__name__
        return SourceRow(message_id, None, f"message_data is a {kind}, not JSON text")
    try:
        item = json.loads(message_data)
    except json.JSONDecodeError as exc:
        return SourceRow(message_id, None, f"message_data is not valid JSON: {exc}")
    except RecursionError:
        return SourceRow(message_id, None, "message_data is JSON nested too deep to decode")
    if not isinstance(item, dict):
        kind = type(item).__name__
        return SourceRow(message_id, None, f"message_data is a JSON {kind}, not an object")
    try:
        encode_payload(item, 0, max_bytes)
        check_typed_columns(describe(item, {}), 0)
    except InvalidItemError as exc:
        reason = _NOTHING_STORED.sub("", str(exc).replace("item #0 ", "", 1))
        return SourceRow(message_id, None, f"the item cannot be stored: {reason}")
    return SourceRow(message_id, item)


@dataclass(frozen=True, slots=True)
class SdkSource:
    """The SDK's two tables, opened read-only."""

    location: str  # the database, without credentials (what reports show)
    engine: AsyncEngine
    sessions: sa.TableClause
    messages: sa.TableClause
    order: SourceOrder
    structure: sa.TableClause | None = None  # AdvancedSQLiteSession's branch map, if any

    @property
    def identity(self) -> str:
        """Database and messages table: what the record on an imported session names."""
        return f"{self.location}#{self.messages.name}"

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncConnection]:
        """A connection that cannot write (SQLite opened mode=ro, PostgreSQL READ ONLY)."""
        async with self.engine.connect() as conn:
            if self.engine.dialect.name == "postgresql":
                conn = await conn.execution_options(postgresql_readonly=True)
            yield conn

    async def session_ids(self) -> list[str]:
        """Every session the SDK knows: registered ones and any with messages."""
        async with self.reading() as conn:
            known = (await conn.execute(sa.select(self.sessions.c.session_id))).scalars()
            with_messages = await conn.execute(sa.select(self.messages.c.session_id).distinct())
            return sorted({*known, *with_messages.scalars()})

    async def message_counts(self) -> dict[str, int]:
        """Messages per session (the progress total)."""
        m = self.messages
        query = sa.select(m.c.session_id, sa.func.count()).group_by(m.c.session_id)
        async with self.reading() as conn:
            return {session_id: count for session_id, count in await conn.execute(query)}

    def _processed(self, marker: ImportMarker) -> sa.ColumnElement[bool]:
        m = self.messages
        return sa.or_(m.c.id <= marker.last_message_id, m.c.id.in_(marker.also))

    async def _scope(self, conn: AsyncConnection, session_id: str) -> SessionScope:
        return await conn.run_sync(session_scope, self.messages, self.structure, session_id)

    async def processed_count(self, session_id: str, marker: ImportMarker) -> int:
        """How many of the messages the record covers are still in the source."""
        async with self.reading() as conn:
            scope = await self._scope(conn, session_id)
            query = scope.select(sa.func.count()).where(self._processed(marker))
            return int((await conn.execute(query)).scalar_one())

    async def new_ids(self, session_id: str, marker: ImportMarker) -> list[int]:
        """Ids of the messages the record does not cover, in the SDK's own order."""
        async with self.reading() as conn:
            scope = await self._scope(conn, session_id)
            query = scope.ordered(self.messages.c.id, order=self.order).where(
                sa.not_(self._processed(marker))
            )
            return [int(message_id) for message_id in (await conn.execute(query)).scalars()]

    async def read(
        self, session_id: str, ids: Sequence[int], max_bytes: int | None = None
    ) -> list[SourceRow]:
        """The messages `ids` (one page), parsed, in the order given; vanished ones are left
        out; items above `max_bytes` are refused like unparseable ones."""
        m = self.messages
        query = sa.select(m.c.id, m.c.message_data).where(
            m.c.session_id == session_id, m.c.id.in_(list(ids))
        )
        async with self.reading() as conn:
            data = {int(message_id): value for message_id, value in await conn.execute(query)}
        return [
            parse_message(message_id, data[message_id], max_bytes)
            for message_id in ids
            if message_id in data
        ]

    async def pages(
        self, session_id: str, ids: Sequence[int], max_bytes: int | None = None
    ) -> AsyncIterator[Page]:
        """The messages `ids`, PAGE_ROWS at a time, each with the ids still to come."""
        for start in range(0, len(ids), PAGE_ROWS):
            end = start + PAGE_ROWS
            yield Page(await self.read(session_id, ids[start:end], max_bytes), ids[end:])


@dataclass(frozen=True, slots=True)
class SessionScope:
    """The messages that make up one SDK session as the SDK reads it back: every row with
    its session_id, or (AdvancedSQLiteSession with branches) the rows on the main branch."""

    messages: sa.TableClause
    session_id: str
    structure: sa.TableClause | None = None  # set: the main branch's rows, in its order

    def select(self, *columns: Any) -> sa.Select[Any]:
        """`columns` of the session's messages (unordered)."""
        m = self.messages
        query = sa.select(*columns).where(m.c.session_id == self.session_id)
        if self.structure is None:
            return query
        s = self.structure
        return query.join(s, s.c.message_id == m.c.id).where(
            s.c.session_id == self.session_id, s.c.branch_id == MAIN_BRANCH
        )

    def ordered(self, *columns: Any, order: SourceOrder) -> sa.Select[Any]:
        """`columns` of the session's messages in the order the SDK returns them."""
        m = self.messages
        if self.structure is not None:  # AdvancedSQLiteSession reads by sequence_number
            keys: tuple[Any, ...] = (self.structure.c.sequence_number, m.c.id)
        else:
            keys = (m.c.id,) if order == "id" else (m.c.created_at, m.c.id)
        return self.select(*columns).order_by(*keys)


def messages_table_clause(name: str) -> sa.TableClause:
    """An SDK messages table, the columns read here."""
    return sa.table(name, *(sa.column(column) for column in MESSAGE_COLUMNS))


def structure_table() -> sa.TableClause:
    """AdvancedSQLiteSession's message_structure, the columns read here."""
    columns = ("session_id", "message_id", "branch_id", "sequence_number")
    return sa.table(STRUCTURE_TABLE, *(sa.column(name) for name in columns))


def session_scope(
    conn: Connection, messages: sa.TableClause, structure: sa.TableClause | None, session_id: str
) -> SessionScope:
    """The scope of `session_id`: main-branch rows when AdvancedSQLiteSession mapped any of
    its messages (its reads join the map: unmapped rows are not part of its history)."""
    if structure is None:
        return SessionScope(messages, session_id)
    s = structure
    mapped = sa.select(s.c.message_id).where(s.c.session_id == session_id).limit(1)
    if conn.execute(mapped).first() is None:
        return SessionScope(messages, session_id)
    return SessionScope(messages, session_id, structure)


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[SourceRow]
    remaining: Sequence[int]

    @property
    def items(self) -> list[dict[str, Any]]:
        return [row.item for row in self.rows if row.item is not None]


def _sqlite_source(path: Path) -> tuple[URL, str]:
    path = Path(os.path.expanduser(path)).resolve()  # `~user` unknown: left as it is
    if not path.is_file():
        raise ImportSourceError(
            f"source database {path} does not exist; expected the file your SQLiteSession "
            "wrote (SQLiteSession('user', 'conversations.db')) or a SQLAlchemy URL such as "
            "sqlite:///conversations.db or postgresql+asyncpg://user@host/dbname"
        )
    read_only = URL.create(
        "sqlite+aiosqlite",
        database=f"file:{quote(str(path))}",
        query={"mode": "ro", "uri": "true"},
    )
    return read_only, f"sqlite:///{path}"


def location_of(url: URL) -> str:
    """A database as reports and import records name it: no driver, no credentials, a
    SQLite file by its absolute path (the same file reached two ways is one source)."""
    if url.get_backend_name() == "sqlite":
        if is_memory_sqlite(url):
            return "sqlite://"
        assert url.database is not None
        return f"sqlite:///{Path(os.path.expanduser(url.database)).resolve()}"
    return URL.create(
        "postgresql", host=url.host, port=url.port, database=url.database
    ).render_as_string()


def source_url(source: str) -> tuple[URL, str]:
    """The URL to read the source with, and its location (no credentials) for messages."""
    if "://" not in source:  # a file path, as handed to SQLiteSession(db_path=...)
        return _sqlite_source(Path(source))
    try:
        url = resolve_url(source)
    except UnsupportedURLError as exc:
        raise ImportSourceError(f"bad source URL: {exc}") from None
    if url.get_backend_name() == "sqlite":
        if is_memory_sqlite(url):
            raise ImportSourceError(
                "the source is an in-memory SQLite database, which is gone once its process "
                "exits; pass the database file your SQLiteSession wrote"
            )
        assert url.database is not None
        return _sqlite_source(Path(url.database))
    return url, location_of(url)


def sdk_table_pairs(conn: Connection) -> list[tuple[str, str]]:
    """Every (sessions table, messages table) of the Agents SDK's shape in the database,
    whatever their names: a table with the SDK's message columns (never our `messages`),
    and the table its session_id refers to (the SDK's default name when none)."""
    inspector = sa.inspect(conn)
    found = []
    for name in sorted(set(inspector.get_table_names()) - {"messages"}):
        columns = {column["name"] for column in inspector.get_columns(name)}
        if not set(MESSAGE_COLUMNS) <= columns:
            continue
        referred = [
            key["referred_table"]
            for key in inspector.get_foreign_keys(name)
            if key.get("constrained_columns") == ["session_id"]
        ]
        found.append((referred[0] if referred else DEFAULT_SESSIONS_TABLE, name))
    return found


def sdk_tables_holding(conn: Connection, session_id: str) -> list[str]:
    """The Agents SDK messages tables (`sdk_table_pairs`) that hold rows of `session_id`."""
    held = []
    for _, name in sdk_table_pairs(conn):
        table = messages_table_clause(name)
        query = sa.select(sa.literal(1)).where(table.c.session_id == session_id).limit(1)
        if conn.execute(query).first() is not None:
            held.append(name)
    return held


def _check_tables(
    conn: Connection, location: str, sessions_table: str, messages_table: str
) -> bool:
    """Raise unless the SDK's tables are there; whether AdvancedSQLiteSession's branch map is."""
    inspector = sa.inspect(conn)
    tables = set(inspector.get_table_names())
    if not {sessions_table, messages_table} <= tables:
        pairs = sdk_table_pairs(conn)
        if pairs:  # the SDK's tables under other names: the flags that name them
            named = "; ".join(
                f"--sessions-table {quote_arg(s)} --messages-table {quote_arg(m)}" for s, m in pairs
            )
            fix = f"it holds SDK tables under other names: pass {named}"
        else:
            found = ", ".join(sorted(tables)) or "no tables at all"
            fix = (
                f"found {found}. If your SDK sessions used other names, pass them with "
                "--sessions-table/--messages-table (sessions_table=/messages_table=)"
            )
        raise ImportSourceError(
            f"{location} has no Agents SDK session tables named {sessions_table!r} and "
            f"{messages_table!r} (SQLiteSession's and SQLAlchemySession's defaults); {fix}"
        )
    columns = {column["name"] for column in inspector.get_columns(messages_table)}
    missing = [name for name in MESSAGE_COLUMNS if name not in columns]
    if missing:
        raise ImportSourceError(
            f"table {messages_table!r} in {location} lacks column(s) {', '.join(missing)}; "
            f"an Agents SDK messages table has {', '.join(MESSAGE_COLUMNS)}"
        )
    return STRUCTURE_TABLE in tables


async def open_source(
    source: str,
    *,
    sessions_table: str = DEFAULT_SESSIONS_TABLE,
    messages_table: str = DEFAULT_MESSAGES_TABLE,
    order: SourceOrder | None = None,
) -> SdkSource:
    """Open the SDK's database read-only and check its tables; dispose `.engine` when done.

    `order` defaults to the SDK's own: by id on SQLite (SQLiteSession), by
    (created_at, id) elsewhere (SQLAlchemySession).
    """
    url, location = source_url(source)
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            branched = await conn.run_sync(_check_tables, location, sessions_table, messages_table)
    except sa.exc.DBAPIError as exc:
        await engine.dispose()
        raise ImportSourceError(f"cannot read the source {location}: {exc.orig}") from None
    except OSError as exc:
        await engine.dispose()
        raise ImportSourceError(f"cannot connect to the source {location}: {exc}") from None
    except BaseException:
        await engine.dispose()
        raise
    default: SourceOrder = "id" if url.get_backend_name() == "sqlite" else "created_at"
    return SdkSource(
        location=location,
        engine=engine,
        sessions=sa.table(sessions_table, sa.column("session_id")),
        messages=messages_table_clause(messages_table),
        order=order or default,
        structure=structure_table() if branched else None,
    )


@dataclass(frozen=True, slots=True)
class ImportMarker:
    """What earlier runs took from one source, kept in the target session's metadata.

    Source ids are autoincrement keys, so "everything up to `last_message_id`"
    plus the few ids above it already taken (`also`: only when the SDK's order
    is not id order) says exactly which messages are done.
    """

    source: str
    last_message_id: int = 0  # every source message with id <= this was handled
    also: tuple[int, ...] = ()  # handled messages above last_message_id
    source_rows: int = 0  # messages handled (imported, recovered or skipped)
    target_seq: int = 0  # the target's last seq right after the last recorded step
    skipped: tuple[int, ...] = ()  # ids of messages that could not be imported

    @classmethod
    def recorded(cls, metadata: Mapping[str, Any] | None, source: str) -> ImportMarker | None:
        """The record for `source` in a session's metadata, if there is one."""
        record = (metadata or {}).get(IMPORT_KEY)
        if not isinstance(record, Mapping) or record.get("source") != source:
            return None
        try:
            return cls(
                source=source,
                last_message_id=int(record["last_message_id"]),
                also=tuple(int(message_id) for message_id in record.get("also", ())),
                source_rows=int(record["source_rows"]),
                target_seq=int(record["target_seq"]),
                skipped=tuple(int(message_id) for message_id in record.get("skipped", ())),
            )
        except (KeyError, TypeError, ValueError):  # edited by hand: trust the rows instead
            return None

    @classmethod
    def complete(cls, source: str, rows: Sequence[SourceRow], target_seq: int) -> ImportMarker:
        """The record of a session imported whole in one step: `rows` (every message it had,
        skipped ones included) became seqs 1..`target_seq`."""
        return cls(source).advanced(Page(list(rows), ()), target_seq)

    def as_json(self) -> dict[str, Any]:
        """The record as stored in sessions.metadata."""
        data = asdict(self)
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in data.items()
        }

    def advanced(self, page: Page, target_seq: int) -> ImportMarker:
        """The record once `page` is handled (`page.remaining` still to come)."""
        handled = {*self.also, *(row.message_id for row in page.rows)}
        # Everything below the lowest id still to come is done (ids still to come are new).
        last = min(page.remaining) - 1 if page.remaining else max([self.last_message_id, *handled])
        return replace(
            self,
            last_message_id=last,
            also=tuple(sorted(message_id for message_id in handled if message_id > last)),
            source_rows=self.source_rows + len(page.rows),
            target_seq=target_seq,
            skipped=self.skipped + tuple(row.message_id for row in page.rows if row.item is None),
        )
