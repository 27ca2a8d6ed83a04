"""No secret in any exception text: a secret planted in every field of bad input never shows.

Exception texts reach logs, tracebacks and terminals. Each public call below gets bad
input with a secret in the field that is wrong (and in its neighbours); the text of
whatever it raises, and of every exception chained to it, must not contain the secret.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore, SQLSession
from sessionstore._config import load_config
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy

KEY = "sk-proj-Z9y8X7w6V5u4T3s2R1q0P9o8"  # an OpenAI-style key
PASSWORD = "hunter2-Correct-Horse"
SECRETS = (KEY, PASSWORD, "Z9y8X7w6V5u4T3s2R1q0P9o8")


def _texts(error: BaseException) -> str:
    """Everything a traceback would print: the texts and reprs of the chain it shows."""
    parts = []
    seen: BaseException | None = error
    while seen is not None:
        parts += [str(seen), repr(seen), *map(str, seen.args)]
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return "\n".join(parts)


def _assert_clean(error: BaseException) -> None:
    text = _texts(error)
    for secret in SECRETS:
        assert secret not in text, f"{type(error).__name__} leaks a secret: {text[:300]}"


class Unserializable:
    def __repr__(self) -> str:
        return f"Unserializable({KEY})"


BAD_ITEMS: list[dict[str, Any]] = [
    {"type": KEY, "content": Unserializable()},  # the type value was quoted before
    {"type": KEY, "role": KEY, "content": math.nan},
    {KEY: {1: KEY}},  # a secret key (the field path) with an int key below it
    {"role": "user", "content": [{"text": KEY, "extra": {KEY}}]},
    {"role": "user", f"password={PASSWORD}": Unserializable()},
    {"role": f"u\udc00{KEY}", "content": "x"},  # PostgreSQL quoted the bound value
    {"type": "function_call", "call_id": KEY, "name": f"x\ud800{KEY}"},
]


@pytest.mark.parametrize("item", BAD_ITEMS, ids=range(len(BAD_ITEMS)))
async def test_bad_items_never_quote_a_secret(store: SessionStore, item: dict[str, Any]) -> None:
    with pytest.raises(Exception) as caught:
        await store.append("s", [{"role": "user", "content": "fine"}, item])
    _assert_clean(caught.value)
    session = SQLSession("s", store)
    with pytest.raises(Exception) as caught:
        await session.add_items([item])  # type: ignore[list-item]
    _assert_clean(caught.value)
    assert await store.load_context("s") == []


def _calls(store: SessionStore) -> list[Callable[[], Awaitable[Any]]]:
    item = {"role": "user", "content": KEY}
    return [
        lambda: store.append(KEY, [item], token=KEY * 10),  # too long a token
        lambda: store.append("s", [item], protected=KEY),  # type: ignore[arg-type]
        lambda: store.append("s", KEY),  # type: ignore[arg-type]
        lambda: store.append("s", {"content": KEY}),  # type: ignore[arg-type]
        lambda: store.load_context("s", limit=KEY),  # type: ignore[arg-type]
        lambda: store.list_sessions(limit=KEY),  # type: ignore[arg-type]
        lambda: store.list_sessions(offset=KEY),  # type: ignore[arg-type]
        lambda: store.merge_session_metadata("s", {"api_key": Unserializable()}),
        lambda: store.merge_session_metadata("s", {KEY: {KEY}}),
        lambda: store.merge_session_metadata("s", KEY),  # type: ignore[arg-type]
        lambda: store.session_info(Unserializable()),  # type: ignore[arg-type]
        lambda: CompactionManager(CompactionConfig(store=store)).compact("s", strategy=KEY),
    ]


async def test_every_public_call_keeps_secrets_out_of_its_errors(store: SessionStore) -> None:
    await store.append("s", [{"role": "user", "content": "x"}])
    for index, call in enumerate(_calls(store)):
        with pytest.raises(Exception) as caught:
            await call()
            pytest.fail(f"call #{index} accepted its bad input")
        _assert_clean(caught.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda: SessionStore(f"mysql://app:{PASSWORD}@db.example.com/x"),
        lambda: SessionStore(f"nonsense:{PASSWORD}"),
        lambda: SessionStore("sqlite:///x.db", timeout_s=KEY),  # type: ignore[arg-type]
        lambda: SessionStore("sqlite:///x.db", max_item_bytes=KEY),  # type: ignore[arg-type]
        lambda: SessionStore("sqlite:///x.db", sqlite_synchronous=KEY),
        lambda: SQLSession(KEY, 42),  # type: ignore[arg-type]
        lambda: CompactionManager(CompactionConfig(policy=CompactionPolicy(strategy=KEY))),
    ],
)
def test_constructors_keep_secrets_out_of_their_errors(build: Callable[[], Any]) -> None:
    with pytest.raises(Exception) as caught:
        build()
    _assert_clean(caught.value)


def test_a_config_file_with_a_bad_secret_value_is_reported_without_it(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        f"store:\n  url: 'mysql://app:{PASSWORD}@db/x'\n  timeout_s: '{KEY}'\n"
        f"summarizer:\n  api_key_env: {{'x': '{KEY}'}}\n"
    )
    with pytest.raises(Exception) as caught:
        load_config(config)
    _assert_clean(caught.value)


async def test_an_unreachable_database_url_with_a_password_is_reported_without_it() -> None:
    store = SessionStore(f"postgresql+asyncpg://app:{PASSWORD}@127.0.0.1:1/x", timeout_s=5)
    with pytest.raises(Exception) as caught:
        await store.append("s", [{"role": "user", "content": "x"}])
    _assert_clean(caught.value)
    await asyncio.wait_for(store.close(), 10)
