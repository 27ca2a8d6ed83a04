"""Every public method and property of the SDK's SQL sessions exists on SQLSession, with the
same signature: a ported program never meets an AttributeError or a TypeError over a call
the SDK accepts. Read from the installed SDK, so a new SDK version's additions fail here."""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any, Final

import pytest
from agents import SQLiteSession
from agents.extensions.memory import AdvancedSQLiteSession, SQLAlchemySession

from sessionstore import SQLSession

SDK_CLASSES: Final = (SQLiteSession, SQLAlchemySession, AdvancedSQLiteSession)


def _public(cls: type) -> dict[str, Any]:
    """Public names of `cls`, inherited ones included (SessionABC's, SQLiteSession's)."""
    return {
        name: inspect.getattr_static(cls, name)
        for name, _ in inspect.getmembers(cls)
        if not name.startswith("_")
    }


def _sdk_names() -> list[tuple[str, str]]:
    return sorted({(cls.__name__, name) for cls in SDK_CLASSES for name in _public(cls)})


def _kind(member: Any) -> str:
    if isinstance(member, property):
        return "property"
    if isinstance(member, classmethod):
        return "classmethod"
    if isinstance(member, staticmethod):
        return "staticmethod"
    if callable(member):
        return "method"
    return "attribute"


def test_the_sdk_classes_have_a_public_surface_to_compare() -> None:
    """The introspection finds what it must: a broken one would pass everything below."""
    names = {name for _, name in _sdk_names()}
    assert {"get_items", "add_items", "store_run_usage", "engine", "from_url"} <= names
    assert "get_conversation_by_turns" in names and "session_settings" in names


def _problems(cls: type, name: str, ours_cls: type = SQLSession) -> list[str]:
    """How `ours_cls.name` differs from `cls.name`: missing, another kind of member, or a
    signature a caller of the SDK's could trip on. Each SDK parameter must be ours too, in
    the same place, of the same kind and default; ours may add parameters after them only if
    a caller may leave them out. `**kwargs`' own name is not compared (no caller uses it)."""
    if not hasattr(ours_cls, name):
        return [f"{name} is missing"]
    theirs_kind = _kind(inspect.getattr_static(cls, name))
    ours_kind = _kind(inspect.getattr_static(ours_cls, name))
    if ours_kind != theirs_kind:
        return [f"{name}: the SDK's is a {theirs_kind}, ours a {ours_kind}"]
    if theirs_kind in ("property", "attribute"):
        return []
    theirs_member, ours_member = getattr(cls, name), getattr(ours_cls, name)
    theirs = list(inspect.signature(theirs_member).parameters.values())
    ours = list(inspect.signature(ours_member).parameters.values())
    problems: list[str] = []
    for index, param in enumerate(theirs):
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            if not ours or ours[-1].kind is not inspect.Parameter.VAR_KEYWORD:
                problems.append(f"{name}: no **kwargs")
            continue
        mine = ours[index] if index < len(ours) else None
        if mine is None or (mine.name, mine.kind, mine.default) != (
            param.name,
            param.kind,
            param.default,
        ):
            problems.append(f"{name}: parameter {index} is {mine} here, {param} in the SDK")
    problems += [
        f"{name}: our extra parameter {extra.name!r} is required"
        for extra in ours[len(theirs) :]
        if extra.default is inspect.Parameter.empty
        and extra.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    ]
    sdk_async = inspect.iscoroutinefunction(theirs_member)
    ours_async = inspect.iscoroutinefunction(ours_member)
    if ours_async != sdk_async:
        problems.append(f"{name}: async here {ours_async}, in the SDK {sdk_async}")
    return problems


def _sdk_class(name: str) -> type:
    return next(cls for cls in SDK_CLASSES if cls.__name__ == name)


@pytest.mark.parametrize(("sdk_class", "name"), _sdk_names())
def test_sqlsession_has_every_public_sdk_name_with_its_signature(sdk_class: str, name: str) -> None:
    assert _problems(_sdk_class(sdk_class), name) == []


def test_the_comparison_catches_a_missing_name_and_a_changed_signature() -> None:
    """The check fails on what it is for: a lacking name, reordered parameters, a required
    extra parameter, a coroutine turned plain."""

    class Broken(SQLSession):
        async def get_turn_usage(  # type: ignore[override]
            self, branch_id: str | None = None, user_turn_number: int | None = None
        ) -> list[dict[str, Any]] | dict[str, Any]:
            return []

        async def get_tool_usage(  # type: ignore[override]
            self, branch_id: str | None, verbose: bool
        ) -> list[tuple[str, int, int]]:
            return []

        def list_branches(self) -> list[dict[str, Any]]:  # type: ignore[override]
            return []

    advanced = AdvancedSQLiteSession
    assert _problems(advanced, "get_turn_usage", Broken)
    assert any("required" in p for p in _problems(advanced, "get_tool_usage", Broken))
    assert any("async" in p for p in _problems(advanced, "list_branches", Broken))
    assert _problems(advanced, "get_turn_usage") == []  # SQLSession's own passes
    assert _problems(advanced, "no_such_method") == ["no_such_method is missing"]


def _store_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("sessionstore-sqlite")}


def test_close_closes_on_a_plain_call_and_can_be_awaited(tmp_path: Path) -> None:
    """SQLiteSession.close() is a plain call in ported code; ours closes then too (the
    store's threads are gone when it returns), and `await session.close()` inside a loop
    waits for the same work."""
    before = _store_threads()
    session = SQLSession("u", str(tmp_path / "plain.db"))
    asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
    assert _store_threads() - before  # the store's reader threads run
    session.close()
    assert _store_threads() == before

    async def inside_a_loop() -> set[str]:
        other = SQLSession("u", str(tmp_path / "awaited.db"))
        await other.add_items([{"role": "user", "content": "hi"}])
        await other.close()
        return _store_threads()

    assert asyncio.run(inside_a_loop()) == before


def _constructor_keywords(cls: type) -> set[str]:
    """What a ported program may pass by keyword to the SDK class (its __init__ and, for
    SQLAlchemySession, from_url), **kwargs aside."""
    members = [vars(cls)["__init__"], *([cls.from_url] if hasattr(cls, "from_url") else [])]
    return {
        param.name
        for member in members
        for param in inspect.signature(member).parameters.values()
        if param.name != "self"
        and param.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }


@pytest.mark.parametrize("sdk_class", SDK_CLASSES, ids=lambda cls: cls.__name__)
def test_every_sdk_constructor_keyword_is_accepted(sdk_class: type) -> None:
    ours = set(inspect.signature(SQLSession.__init__).parameters) | set(
        inspect.signature(SQLSession.from_url).parameters
    )
    assert _constructor_keywords(sdk_class) - ours == set()


async def test_the_sdk_stores_public_attributes_are_ours_too(tmp_path: Path) -> None:
    """`session.db_path`, `.sessions_table`, `.messages_table`, ...: what an SDK session sets
    on itself, a ported program may read from ours."""
    path = tmp_path / "attrs.db"
    sdk_objects: list[Any] = [
        SQLiteSession("a", path, sessions_table="s", messages_table="m"),
        AdvancedSQLiteSession(session_id="a", db_path=path, create_tables=True),
        SQLAlchemySession.from_url("a", url="sqlite+aiosqlite:///:memory:", ensure_ascii=False),
    ]
    ours = SQLSession("a", db_path=path, sessions_table="s", messages_table="m", ensure_ascii=False)
    try:
        for sdk in sdk_objects:
            public = {name for name in vars(sdk) if not name.startswith("_")}
            assert public - set(vars(ours)) == set(), type(sdk).__name__
        assert (ours.db_path, ours.sessions_table, ours.messages_table) == (path, "s", "m")
        assert SQLSession("a", ":memory:").db_path == ":memory:"
    finally:
        for sdk in sdk_objects[:2]:
            sdk.close()
        await sdk_objects[2].engine.dispose()
        await ours.close()


def test_db_path_and_store_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="store or as db_path, not both"):
        SQLSession("a", str(tmp_path / "x.db"), db_path=tmp_path / "y.db")


@pytest.mark.parametrize("call", ["add_items([])", "get_items()", "pop_item()", "clear_session()"])
def test_a_closed_session_says_so(tmp_path: Path, call: str) -> None:
    """The SDK's closed stores raise a RuntimeError; ours said 'cannot schedule new futures
    after shutdown' (the store's thread pool), even for add_items([])."""
    from sessionstore import SessionClosedError

    session = SQLSession("u", str(tmp_path / "closed.db"))
    asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
    session.close()
    # The SDK's text first ("SQLiteSession is closed", what its own tests match), then ours.
    with pytest.raises(
        SessionClosedError, match=r"^SQLiteSession is closed: SQLSession 'u'"
    ) as caught:
        asyncio.run(eval(f"session.{call}"))
    assert isinstance(caught.value, RuntimeError)


def test_the_history_methods_tell_the_runner_they_take_wrapper_without_recomputing() -> None:
    """The Runner checks `inspect.signature` of four methods on every call: the signature
    is computed once, and still says that each takes `wrapper` by keyword."""
    from agents.memory.session import _session_accepts_wrapper

    session = SQLSession.__new__(SQLSession)
    assert _session_accepts_wrapper(session)
    for name in ("get_items", "add_items", "pop_item", "clear_session"):
        method = getattr(SQLSession, name)
        fixed = method.__dict__.get("__signature__")
        assert fixed is not None and "wrapper" in fixed.parameters, name
        assert inspect.signature(getattr(session, name)).parameters.keys() == (
            fixed.parameters.keys() - {"self"}
        )


def test_the_constructor_takes_sqlitesessions_positional_arguments() -> None:
    """`SQLiteSession(id, path, sessions_table, messages_table, settings)` ported as
    `SQLSession(...)` with the same positional arguments: each lands where the SDK's does
    (the second, the SDK's db_path, is our `store`, which takes a path too)."""
    theirs = list(inspect.signature(SQLiteSession.__init__).parameters.values())[1:]
    ours = list(inspect.signature(SQLSession.__init__).parameters.values())[1:]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    assert [p.name for p in ours if p.kind in positional][2:] == [p.name for p in theirs][2:]
    assert [p.default for p in ours][2 : len(theirs)] == [p.default for p in theirs][2:]


async def test_a_positional_port_reads_the_sdks_custom_tables(tmp_path: Path) -> None:
    path = tmp_path / "custom.db"
    sdk = SQLiteSession("u7", path, "my_sess", "my_msgs")
    await sdk.add_items([{"role": "user", "content": "kept in my_msgs"}])
    sdk.close()
    ours = SQLSession("u7", str(path), "my_sess", "my_msgs", owns_store=True)
    try:
        assert await ours.get_items() == [{"role": "user", "content": "kept in my_msgs"}]
    finally:
        await ours.store.close()
