"""SQLSession behaves like the SDK's own session stores, from the Runner's point of view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest
from agents import SQLiteSession
from agents.extensions.memory import SQLAlchemySession
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message

from sessionstore import HistoryPoint, SessionStore, SQLSession
from tests.support.sdk_runs import run_three_turns, side_by_side


def _normalize(items: list[Any]) -> list[Any]:
    return [dict(item) for item in items]


async def test_sqlsession_is_an_sdk_session(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        assert isinstance(SQLSession("s", store), Session)


async def test_runner_sees_identical_history_as_with_sdk_sqlite_session(
    db_url: str, tmp_path: Path
) -> None:
    sdk_session = SQLiteSession("conv", str(tmp_path / "sdk.db"))
    sdk_outputs, sdk_inputs = await run_three_turns(sdk_session)
    async with SessionStore(db_url, create_tables=True) as store:
        ours = SQLSession("conv", store)
        our_outputs, our_inputs = await run_three_turns(ours)
        assert our_outputs == sdk_outputs
        assert our_inputs == sdk_inputs  # the model saw exactly the same input every call
        assert _normalize(await ours.get_items()) == _normalize(await sdk_session.get_items())
        for limit in (1, 2, 5, 100):
            assert await ours.get_items(limit) == await sdk_session.get_items(limit)
        # A fresh store (as after a restart) replays the same conversation to the Runner.
    async with SessionStore(db_url) as reopened:
        assert await SQLSession("conv", reopened).get_items() == await sdk_session.get_items()
    sdk_session.close()


async def test_pop_and_clear_match_sdk_semantics(sqlite_url: str, tmp_path: Path) -> None:
    sdk = SQLiteSession("s", str(tmp_path / "sdk.db"))
    items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    async with SessionStore(sqlite_url) as store:
        ours = SQLSession("s", store)
        for session in (sdk, ours):
            await session.add_items(items)
        assert await ours.pop_item() == await sdk.pop_item()
        assert await ours.get_items() == await sdk.get_items()
        await ours.clear_session()
        await sdk.clear_session()
        assert await ours.get_items() == await sdk.get_items() == []
        assert await ours.pop_item() is await sdk.pop_item() is None
        await ours.add_items([])
        assert await ours.get_items() == []
    sdk.close()


async def test_session_settings_limit_applies_when_no_limit_is_given(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        session = SQLSession("s", store, session_settings={"limit": 2})
        items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(4)]
        await session.add_items(items)
        assert await session.get_items() == items[2:]
        assert await session.get_items(limit=3) == items[1:]


async def test_from_url_is_a_drop_in_for_sqlalchemy_session(db_url: str) -> None:
    ours = SQLSession.from_url("conv", url=db_url, create_tables=True)
    sdk = SQLAlchemySession.from_url(
        "conv",
        url=db_url.replace("sqlite:///", "sqlite+aiosqlite:///"),
        create_tables=True,
    )
    try:
        our_outputs, _ = await run_three_turns(ours)
        sdk_outputs, _ = await run_three_turns(sdk)
        assert our_outputs == sdk_outputs
        assert await ours.get_items() == await sdk.get_items()
    finally:
        await ours.close()
        await sdk.engine.dispose()


async def test_concurrent_sessions_through_one_store(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        sessions = [SQLSession(f"user-{n}", store) for n in range(20)]

        async def chat(session: SQLSession, n: int) -> None:
            for k in range(3):
                await session.add_items([{"role": "user", "content": f"{n}:{k}"}])

        await asyncio.gather(*(chat(s, n) for n, s in enumerate(sessions)))
        for n, session in enumerate(sessions):
            assert [cast(dict[str, Any], i)["content"] for i in await session.get_items()] == [
                f"{n}:{k}" for k in range(3)
            ]


def test_session_id_must_be_a_string(sqlite_url: str) -> None:
    with pytest.raises(TypeError, match="session_id must be a str"):
        SQLSession(7, SessionStore(sqlite_url))  # type: ignore[arg-type]


# ------------------------------------------------ constructed like the SDK's stores

# A program written for the SDK's SQLAlchemySession, copied verbatim; only the class name
# is filled in (SQLAlchemySession for the reference run, SQLSession for ours).
SDK_PROGRAM = """
from agents import Agent, Runner
from sqlalchemy.ext.asyncio import create_async_engine


async def main(url, model):
    engine = create_async_engine(url)
    session = {Session}("user-123", engine=engine, create_tables=True)
    agent = Agent(name="Assistant", instructions="Reply very concisely.", model=model)
    result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
    first = result.final_output
    result = await Runner.run(agent, "What state is it in?", session=session)
    items = await session.get_items()
    await session.engine.dispose()
    return first, result.final_output, items
"""


async def _run_sdk_program(session_class: type, url: str) -> tuple[Any, Any, list[Any]]:
    namespace: dict[str, Any] = {session_class.__name__: session_class}
    exec(SDK_PROGRAM.replace("{Session}", session_class.__name__), namespace)
    model = ScriptedModel(
        [[assistant_message("San Francisco.")], [assistant_message("California.")]]
    )
    result: tuple[Any, Any, list[Any]] = await namespace["main"](url, model)
    model.assert_complete()
    return result


def _async_url(url: str) -> str:
    return url.replace("sqlite:///", "sqlite+aiosqlite:///")


async def test_a_program_written_for_sqlalchemy_session_runs_unchanged(
    db_url: str, tmp_path: Path
) -> None:
    reference = await _run_sdk_program(SQLAlchemySession, _async_url(f"sqlite:///{tmp_path}/x.db"))
    ours = await _run_sdk_program(SQLSession, _async_url(db_url))
    assert ours == reference
    async with SessionStore(db_url) as store:  # it wrote our schema, readable by a new store
        assert await store.load_context("user-123") == reference[2]


async def test_engine_is_the_users_engine_and_tables_are_created_only_when_asked(
    tmp_path: Path,
) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    from sessionstore import SchemaMissingError

    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/e.db")
    session = SQLSession("e", engine=engine)  # SQLAlchemySession's default: no tables
    assert session.engine is engine
    with pytest.raises(SchemaMissingError, match="create_tables=True"):
        await session.get_items()
    await session.close()
    await engine.dispose()


@pytest.mark.parametrize("where", ["conversations.db", ":memory:"])
async def test_a_path_opens_sqlite_like_the_sdks_sqlite_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    session = SQLSession("u", where)
    await session.add_items([{"role": "user", "content": "hi"}])
    assert await session.get_items() == [{"role": "user", "content": "hi"}]
    await session.close()
    assert (tmp_path / "conversations.db").exists() == (where == "conversations.db")
    reopened = SQLSession("u", tmp_path / "conversations.db")  # os.PathLike too
    expected = [{"role": "user", "content": "hi"}] if where == "conversations.db" else []
    assert await reopened.get_items() == expected
    await reopened.close()


def test_construction_mistakes_fail_at_once_with_the_fix(sqlite_url: str) -> None:
    store = SessionStore(sqlite_url)
    with pytest.raises(TypeError, match="store must be a SessionStore or a SQLite file path"):
        SQLSession("u", 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="create_tables applies when the session opens"):
        SQLSession("u", store, create_tables=True)


async def test_no_database_is_an_in_memory_one_as_for_sqlitesession() -> None:
    """`SQLiteSession(id)` keeps its items in memory; so does `SQLSession(id)`."""
    session = SQLSession("u")
    await session.add_items([{"role": "user", "content": "hi"}])
    assert await session.get_items() == [{"role": "user", "content": "hi"}]
    assert session.store.url.get_backend_name() == "sqlite" and session.store.url.database in (
        None,
        "",
        ":memory:",
    )
    await session.close()


async def test_run_compaction_is_the_runners_post_turn_hook_into_our_manager(
    db_url: str,
) -> None:
    from agents.memory.session import is_openai_responses_compaction_aware_session

    from sessionstore.compaction import CompactionConfig, CompactionManager
    from sessionstore.compaction._policy import CompactionPolicy

    class Recording(SQLSession):
        calls: ClassVar[list[Any]] = []

        async def run_compaction(self, args: Any = None, *, wrapper: Any = None) -> None:
            self.calls.append(args)
            await super().run_compaction(args, wrapper=wrapper)

    async with SessionStore(db_url, create_tables=True) as store:
        policy = CompactionPolicy(keep_recent_turns=1, keep_tool_io_pairs=0)
        manager = CompactionManager(CompactionConfig(store=store, policy=policy))
        session = Recording("rc", store, manager=manager)
        assert is_openai_responses_compaction_aware_session(session)
        outputs, _ = await run_three_turns(session)
        assert len(Recording.calls) == 3  # the Runner called it after every turn
        assert all(call["response_id"] == "resp-789" for call in Recording.calls)
        info = await store.session_info("rc")
        assert info is not None and info.compaction_count == 0  # far below the trigger
        await session.run_compaction({"force": True})
        info = await store.session_info("rc")
        assert info is not None and info.compaction_count == 1
        assert outputs[-1] == "You asked about Paris."


async def test_run_compaction_without_a_manager_changes_nothing(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        session = SQLSession("plain", store)
        await session.add_items([{"role": "user", "content": "x"}])
        await session.run_compaction({"force": True})
        assert [row.kind for row in await store.history("plain")] == ["item"]


async def test_the_sdks_encrypted_session_wraps_sqlsession_unchanged(db_url: str) -> None:
    from agents.extensions.memory import EncryptedSession

    async with SessionStore(db_url, create_tables=True) as store:
        inner = SQLSession("enc", store)
        wrapped = EncryptedSession("enc", cast(Any, inner), encryption_key="k" * 32, ttl=600)
        outputs, _ = await run_three_turns(wrapped)
        assert outputs[-1] == "You asked about Paris."
        plain = await wrapped.get_items()
        assert [item.get("content") for item in plain][:1] == ["hi"]
        stored = await store.load_context("enc")
        assert len(stored) == len(plain)
        assert all(item.get("__enc__") == 1 for item in stored)  # sealed rows in our table
        assert "Paris" not in str(stored)


async def test_the_sdks_responses_compaction_session_wraps_sqlsession_unchanged(
    db_url: str,
) -> None:
    import openai
    from agents.memory import OpenAIResponsesCompactionSession

    from tests.support.openai_server import OpenAIServer, ok

    with OpenAIServer() as server:
        server.enqueue(ok("the summary"))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
        async with client, SessionStore(db_url, create_tables=True) as store:
            inner = SQLSession("cmp", store)
            wrapped = OpenAIResponsesCompactionSession("cmp", inner, client=client)
            outputs, _ = await run_three_turns(wrapped)
            assert outputs[-1] == "You asked about Paris."
            await wrapped.run_compaction({"force": True, "compaction_mode": "input"})
            assert [r.path for r in server.requests] == ["/v1/responses/compact"]
            context = await store.load_context("cmp")
            assert context[-1] == {
                "type": "compaction",
                "id": "cmp_1",
                "encrypted_content": "opaque:the summary",
            }
            assert [item.get("content") for item in context[:-1]] == [
                "hi",
                "weather in Paris?",
                "what did I ask?",
            ]
            kinds = [row.kind for row in await store.history("cmp")]
            assert "clear" in kinds  # replaced through clear + add: history kept for audit


async def test_turn_queries_match_advanced_sqlite_session(db_url: str, tmp_path: Path) -> None:
    """The same Runner conversation through AdvancedSQLiteSession and SQLSession: the same
    user turns, contents, matches and tool usage."""
    prompts = ["hi", "what is the weather in Paris?", "thanks, and the WEATHER tomorrow?"]
    async with side_by_side(db_url, tmp_path, prompts) as (theirs, ours, _store):
        keys = ("turn", "content", "full_content")
        expected = [{key: t[key] for key in keys} for t in await theirs.get_conversation_turns()]
        got = await ours.get_conversation_turns()
        assert [{key: t[key] for key in keys} for t in got] == expected
        assert len(expected) == 3
        matches = await ours.find_turns_by_content("weather")
        assert [t["turn"] for t in matches] == [
            t["turn"] for t in await theirs.find_turns_by_content("weather")
        ]
        assert [t["turn"] for t in matches] == [2, 3]
        assert sorted(await ours.get_tool_usage()) == sorted(await theirs.get_tool_usage())
        await ours.rewind(HistoryPoint.before_turn(3))
        assert await ours.get_items() == await ours.get_items_as_of(HistoryPoint.before_turn(3))
        assert [t["turn"] for t in await ours.get_conversation_turns()] == [1, 2, 3]
