"""The file a plain SQLite URL names, read without SQLAlchemy, is the one resolve_url reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore._storage._urls import plain_sqlite_file, resolve_url

_NAME = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_characters="?%#\x00/", exclude_categories=("Cs", "Cc")
    ),
    min_size=1,
    max_size=12,
).filter(lambda name: not name.startswith(":"))


@given(
    scheme=st.sampled_from(["sqlite", "sqlite+aiosqlite", "sqlite+pysqlite"]),
    absolute=st.booleans(),
    parts=st.lists(_NAME, min_size=1, max_size=3),
)
def test_a_plain_url_names_the_file_resolve_url_reads(
    scheme: str, absolute: bool, parts: list[str]
) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    url = f"{scheme}:///{path}"
    assert plain_sqlite_file(url) == Path(resolve_url(url).database or "")


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///a%20b.db",  # an escape: only SQLAlchemy decodes it
        "sqlite:///x.db?mode=ro",
        "sqlite:///x.db#part",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite://host/x.db",  # two slashes: resolve_url explains the mistake
        "sqlit:///x.db",
        "postgresql://postgres@127.0.0.1/db",
    ],
)
def test_any_other_url_is_left_to_resolve_url(url: str) -> None:
    assert plain_sqlite_file(url) is None


def test_no_url_is_the_environments_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    assert plain_sqlite_file() == Path("sessionstore.db")
    monkeypatch.setenv("SESSIONSTORE_URL", "sqlite:////srv/agents.db")
    assert plain_sqlite_file() == Path("/srv/agents.db")
    monkeypatch.setenv("SESSIONSTORE_URL", "postgresql://postgres@127.0.0.1/db")
    assert plain_sqlite_file() is None
