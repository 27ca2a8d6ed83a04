"""Every class of the exception tree, provoked for real with a secret and SQL text in reach
(issue #34): neither shows in `str(exc)`, in the chain a traceback prints, or in the one line
the CLI prints for it. Classes that cannot be provoked are listed with the reason.

Real parts only: a SQLite file, a PostgreSQL port nobody listens on, the OpenAI-compatible
HTTP server on 127.0.0.1, a moto KMS, subprocess-free CLI runs through typer's runner.
"""

from __future__ import annotations

import inspect
import json
import socket
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import boto3
import pytest
import sqlalchemy as sa

import sessionstore._errors as errors_module
from sessionstore import SessionStore
from sessionstore._config import load_config
from sessionstore._errors import SessionStoreError
from sessionstore._jobs._importer import import_sdk_sessions
from sessionstore._jobs._key_rotation import check_retirable
from sessionstore._schema import archives, messages
from sessionstore._security._crypto import AwsKmsKey, Keyring, LocalKey
from sessionstore.archive import ArchiveDelivery, FilesystemSink, read_archives
from sessionstore.cli._common import _first_line, outcome_of
from sessionstore.cli._query import _run as run_query  # the command's own runner
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from sessionstore.compaction._summarizers._openai import OpenAISummarizer
from sessionstore.compaction._summarizers._summarizer import SummaryRequest
from tests.support.archives import CLIENT_OPTIONS, compacted
from tests.support.cli import run
from tests.support.database import edit_rows, write_lock_held
from tests.support.openai_server import (
    Behaviour,
    OpenAIServer,
    context_length_error,
    length,
    refusal,
    status,
    tool_call,
)

KEY = "sk-proj-Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0"
PASSWORD = "Tr0ub4dor-and-3"
SQL = "SELECT secret_column FROM sessions WHERE session_id = 'x'"  # planted in content
SECRETS = (KEY, PASSWORD, KEY.removeprefix("sk-proj-"))
# What a leaked statement would show: the planted SQL, ours, what a driver quotes.
SQL_MARKS = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "[SQL:", "[parameters:")
# Ids and config values are the caller's words and may be quoted back (redacted); a key in
# them stands apart as keys do (the redactor leaves `x-sk-...`, glued to a word, alone).
HOSTILE_ID = f"user {KEY}"

# Classes no real input reaches, each with the reason.
NOT_PROVOKED: dict[str, str] = {
    "SessionStoreError": "the base class; every subclass below is provoked",
    "SchemaError": "a base class; its three subclasses are provoked",
    "SummarizerError": "a base class; its five subclasses are provoked",
    "DuplicateAppendError": (
        "never reaches a caller: the store catches it and replays the stored batch"
    ),
    "EncodingUnavailableError": (
        "needs every vocabulary source (bundled files, cache, download) to fail at once; "
        "its text names sources and their errors, tested in tests/test_tokens.py"
    ),
}


def tree() -> list[type[SessionStoreError]]:
    """Every exception class `_errors.py` defines."""
    return [
        cls
        for _, cls in inspect.getmembers(errors_module, inspect.isclass)
        if issubclass(cls, SessionStoreError) and cls.__module__ == errors_module.__name__
    ]


def chain_text(error: BaseException) -> str:
    parts: list[str] = []
    seen: BaseException | None = error
    while seen is not None:
        parts += [str(seen), repr(seen), *map(str, seen.args)]
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return "\n".join(parts)


def cli_line(error: BaseException) -> str:
    """The one line the CLI prints for `error` (`user_errors`)."""
    outcome = outcome_of(error)
    assert outcome is not None, type(error).__name__
    return f"{outcome.label}: {_first_line(error)}"


def assert_clean(text: str, what: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{what} shows a secret: {text[:400]}"
    for mark in SQL_MARKS:
        assert mark not in text, f"{what} shows SQL: {text[:400]}"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sweep.db'}"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def local_keyring(key_id: str = "k1", byte: int = 7) -> Keyring:
    return Keyring([LocalKey(key_id, bytes([byte]) * 32)])


Provoker = Callable[[str, Path, OpenAIServer, str], Awaitable[None]]
PROVOKERS: dict[str, Provoker] = {}


def provokes(name: str) -> Callable[[Provoker], Provoker]:
    def register(fn: Provoker) -> Provoker:
        PROVOKERS[name] = fn
        return fn

    return register


@provokes("UnsupportedURLError")
async def _unsupported_url(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    SessionStore(f"mysql://admin:{PASSWORD}@db.internal/{KEY}?q={SQL}")


@provokes("ConfigError")
async def _config(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    path = tmp / "compact.yaml"
    path.write_text(
        json.dumps({"store": {"url": f"postgresql://u:{PASSWORD}@h/db", "timeout_s": KEY}})
    )
    load_config(path)


@provokes("SchemaMissingError")
async def _schema_missing(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    with sqlite3.connect(tmp / "other.db") as conn:
        conn.execute(f"CREATE TABLE other (x TEXT DEFAULT '{KEY}')")
    async with SessionStore(f"sqlite:///{tmp / 'other.db'}", create_tables=False) as store:
        await store.load_context(HOSTILE_ID)


async def _at_revision(url: str, revision: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append("s", [{"role": "user", "content": "hi"}])
        async with store.engine.begin() as conn:
            await conn.execute(
                sa.text("UPDATE alembic_version SET version_num = :v"), {"v": revision}
            )


@provokes("SchemaOutdatedError")
async def _schema_outdated(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    await _at_revision(url, "0001")
    async with SessionStore(url, create_tables=False) as store:
        await store.load_context(HOSTILE_ID)


@provokes("SchemaTooNewError")
async def _schema_too_new(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    await _at_revision(url, f"9999 {KEY}")
    async with SessionStore(url) as store:
        await store.load_context(HOSTILE_ID)


@provokes("DatabaseNotFoundError")
async def _database_not_found(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(f"sqlite:///{tmp / KEY / 'x.db'}", read_only=True) as store:
        await store.load_context("s")


@provokes("ReadOnlyStoreError")
async def _read_only(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True):
        pass
    async with SessionStore(url, read_only=True) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": KEY}])


@provokes("QueryRejectedError")
async def _query_rejected(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True):
        pass
    await run_query(url, None, f"SELECT '{KEY}', no_such_column FROM sessions", True, 10, 10.0)


@provokes("QueryTooLargeError")
async def _query_too_large(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True):
        pass
    doubling = f"WITH RECURSIVE r(s) AS (SELECT '{KEY}' UNION ALL SELECT s || s FROM r LIMIT 40) "
    await run_query(url, None, f"{doubling}SELECT s FROM r", True, 100, 30.0)


@provokes("InvalidItemError")
async def _invalid_item(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append("s", [{"role": "user", "content": {7: KEY, 8: SQL}}])


@provokes("UnserializableItemError")
async def _unserializable_item(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append("s", [{"role": "user", "content": {KEY, SQL}}])


@provokes("SessionClosedError")
async def _session_closed(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    from sessionstore import SQLSession

    session = SQLSession(HOSTILE_ID, str(tmp / "closed.db"))
    await session.close()
    await session.add_items([{"role": "user", "content": f"{KEY} {SQL}"}])


@provokes("InvalidSessionIdError")
async def _invalid_session_id(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append(f"{HOSTILE_ID}\x00", [{"role": "user", "content": KEY}])


@provokes("StoreTimeoutError")
async def _store_timeout(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True, timeout_s=0.3) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": "first"}])
        async with write_lock_held(store, HOSTILE_ID):
            await store.append(HOSTILE_ID, [{"role": "user", "content": KEY}])


@provokes("StoreError")
async def _store_error(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": "x"}])

        def duplicate(conn: sa.Connection) -> None:  # a constraint: same session, same seq
            conn.execute(
                messages.insert().values(
                    session_id=HOSTILE_ID, seq=1, kind="item", payload=json.dumps(KEY), tokens=1
                )
            )

        await store.write_transaction(duplicate)


@provokes("StoreUnavailableError")
async def _store_unavailable(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    target = f"postgresql+asyncpg://admin:{PASSWORD}@127.0.0.1:{closed_port()}/{KEY}"
    async with SessionStore(target, timeout_s=2) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": KEY}])


@provokes("KeyringError")
async def _keyring(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    Keyring.from_env({"SESSIONSTORE_KEYS": f"k1:{KEY},k2:{PASSWORD}"})


async def _sealed_session(url: str) -> None:
    async with SessionStore(url, create_tables=True, keyring=local_keyring()) as store:
        await compacted(store, HOSTILE_ID)


# Reading sealed data wraps these two in SealedDataError (which names the row); the
# keyring and the KEK interface raise them as themselves.
@provokes("MissingKeyError")
async def _missing_key(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    local_keyring("k1").get(KEY)


@provokes("KeyIntegrityError")
async def _key_integrity(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    context = {"table": "archives", "session_id": HOSTILE_ID, "note": SQL}
    wrapped = LocalKey("k1", bytes([7]) * 32).wrap(KEY.encode()[:32], context)
    LocalKey("k1", bytes([8]) * 32).unwrap(wrapped, context)  # another key also named k1


@provokes("SealedDataError")
async def _sealed_data(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    await _sealed_session(url)
    async with SessionStore(url, keyring=local_keyring()) as store:
        async with store.engine.begin() as conn:
            await conn.execute(archives.update().values(to_seq=archives.c.to_seq + 1))
        await read_archives(store, HOSTILE_ID)


@provokes("KeyUnavailableError")
async def _key_unavailable(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    kms = boto3.client("kms", endpoint_url=aws, **CLIENT_OPTIONS)
    missing = f"arn:aws:kms:us-east-1:123456789012:key/{KEY}"
    async with SessionStore(
        url, create_tables=True, keyring=Keyring([AwsKmsKey(missing, kms)])
    ) as store:
        await compacted(store, HOSTILE_ID)


@provokes("HistoryTamperedError")
async def _history_tampered(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True, verify_on_load=True) as store:
        await store.append(
            HOSTILE_ID, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        )
        await edit_rows(store, messages.update().where(messages.c.seq == 1).values(role=KEY[:30]))
        await store.load_context(HOSTILE_ID)


@provokes("CorruptRowError")
async def _corrupt_row(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": "a"}])
        await edit_rows(store, messages.update().values(payload=f"{SQL} {KEY}"))
        await store.load_context(HOSTILE_ID)


@provokes("HistoryPointError")
async def _history_point(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": KEY}])
        await store.load_context(HOSTILE_ID, as_of=99)


@provokes("BranchError")
async def _branch(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        await store.append(HOSTILE_ID, [{"role": "user", "content": KEY}])
        await store.append(f"branch {KEY}", [{"role": "user", "content": KEY}])
        await store.fork(HOSTILE_ID, f"branch {KEY}")


@provokes("KeyInUseError")
async def _key_in_use(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    await _sealed_session(url)
    async with SessionStore(url, keyring=local_keyring()) as store:
        await check_retirable(store, "k1")


@provokes("ArchiveSinkError")
async def _archive_sink(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    blocker = tmp / KEY
    blocker.write_text("a file where the root's parent should be")
    delivery = ArchiveDelivery(HOSTILE_ID, 1, [{"seq": 1, "item": {"content": KEY}}], None, [])
    FilesystemSink(blocker / "root").deliver(delivery)


@provokes("ImportSourceError")
async def _import_source(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    source = tmp / f"{KEY}.db"
    with sqlite3.connect(source) as conn:
        conn.execute(f"CREATE TABLE agent_sessions (x TEXT DEFAULT '{KEY}')")
    async with SessionStore(url, create_tables=True) as store:
        await import_sdk_sessions(f"sqlite:///{source}", store)


@provokes("CompactionError")
async def _compaction(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
    async with SessionStore(url, create_tables=True) as store:
        manager = CompactionManager(
            CompactionConfig(
                store=store, max_context_tokens=300, policy=CompactionPolicy(keep_recent_turns=1)
            )
        )
        text = f"{KEY} {SQL} " * 40
        await store.append(HOSTILE_ID, [{"role": "user", "content": text}], protected=True)
        await manager.compact(HOSTILE_ID)


def _summarizer_case(behaviour: Behaviour) -> Provoker:
    async def provoke(url: str, tmp: Path, server: OpenAIServer, aws: str) -> None:
        server.enqueue(behaviour)
        summarizer = OpenAISummarizer("gpt-4o-mini", base_url=server.base_url, api_key=KEY)
        try:
            await summarizer.summarize(
                SummaryRequest(
                    items=[{"role": "user", "content": f"{KEY} {SQL}"}],
                    prior_summary=None,
                    strategy="task_state",
                    instructions="Summarize.",
                    max_tokens=64,
                )
            )
        finally:
            await summarizer.aclose()

    return provoke


SERVER_ERROR = f"upstream said {SQL} with key {KEY}"
PROVOKERS["SummarizerUnavailableError"] = _summarizer_case(status(500, SERVER_ERROR))
PROVOKERS["SummaryTooLongError"] = _summarizer_case(length(f"{KEY} {SQL}"))
PROVOKERS["SummaryRefusedError"] = _summarizer_case(refusal(f"I won't: {KEY} {SQL}"))
PROVOKERS["SummaryToolCallError"] = _summarizer_case(tool_call(f"run_{SQL}", {"k": KEY}))
PROVOKERS["SummarizerInputTooLargeError"] = _summarizer_case(context_length_error())


def test_every_class_is_provoked_or_listed_with_a_reason() -> None:
    names = {cls.__name__ for cls in tree()}
    assert names == set(PROVOKERS) | set(NOT_PROVOKED)
    assert not set(PROVOKERS) & set(NOT_PROVOKED)


@pytest.mark.parametrize("name", sorted(PROVOKERS))
async def test_no_secret_and_no_sql_in_the_error_or_its_cli_line(
    name: str, url: str, tmp_path: Path, server: OpenAIServer, aws_endpoint: str
) -> None:
    expected = getattr(errors_module, name)
    with pytest.raises(SessionStoreError) as caught:
        await PROVOKERS[name](url, tmp_path, server, aws_endpoint)
    assert type(caught.value) is expected, f"{name}: got {type(caught.value).__name__}"
    assert_clean(chain_text(caught.value), name)
    assert_clean(cli_line(caught.value), f"the CLI line of {name}")


def test_the_cli_prints_one_clean_line_for_a_refused_query(url: str) -> None:
    """The same through the command: the database's refusal, one line, nothing planted."""
    run("migrate", "--url", url)
    result = run("query", f"SELECT '{KEY}', no_such_column FROM sessions", "--url", url)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert_clean(result.output, "sessionstore query")


async def test_a_refused_write_names_neither_values_nor_statement_on_either_backend(
    db_url: str,
) -> None:
    """PostgreSQL's own message quotes the row (`Key (session_id, seq)=(...)`): none of it
    reaches the StoreError or its CLI line."""
    with pytest.raises(SessionStoreError) as caught:
        await _store_error(db_url, Path(), None, "")  # type: ignore[arg-type]
    assert type(caught.value).__name__ == "StoreError"
    assert_clean(chain_text(caught.value), "StoreError")
    assert_clean(cli_line(caught.value), "the CLI line of StoreError")
