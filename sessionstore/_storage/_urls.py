"""Which database a URL names: the argument, then $SESSIONSTORE_URL, then ./sessionstore.db.

Every entry point (the store, the CLI, the importer, the migrations) resolves a URL here, so
each one refuses the same typos with the same message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._errors import (
    UnsupportedURLError,
)

if TYPE_CHECKING:  # SQLAlchemy loads when a URL is parsed, not to read a plain file's path
    from sqlalchemy.engine import URL

DEFAULT_URL: Final = "sqlite:///sessionstore.db"
URL_ENV: Final = "SESSIONSTORE_URL"
_SQLITE_DRIVERS: Final = {"sqlite", "sqlite+aiosqlite", "sqlite+pysqlite"}
_POSTGRES_DRIVERS: Final = {
    "postgres",
    "postgresql",
    "postgresql+asyncpg",
    "postgresql+psycopg",
    "postgresql+psycopg2",
}
_SUPPORTED: Final = (
    "sqlite:///path/to/file.db (embedded default) or postgresql+asyncpg://user@host:5432/dbname"
)


_IN_A_URL: Final = str.maketrans({"%": "%25", "?": "%3F", "#": "%23"})


def sqlite_url_of(path: str | os.PathLike[str]) -> str:
    """The URL naming the SQLite file `path` as it is: its `%`, `?` and `#` escaped (in a URL
    they would start an escape, a query, a fragment)."""
    return f"sqlite:///{os.fspath(path).translate(_IN_A_URL)}"


def _from_environment() -> str:
    """$SESSIONSTORE_URL, else the default: the URL when none was given."""
    return os.environ.get(URL_ENV) or DEFAULT_URL


def plain_sqlite_file(url: str | None = None) -> Path | None:
    """The file a plain SQLite URL names (`sqlite:///file.db`, `sqlite:////abs/file.db`: no
    query, escape or in-memory name), read without SQLAlchemy; None for any other URL,
    which only resolve_url reads (and refuses with its message when it is wrong)."""
    raw = url if url is not None else _from_environment()
    scheme, slashes, database = raw.partition(":///")
    if not slashes or scheme not in _SQLITE_DRIVERS or not database:
        return None
    if any(mark in database for mark in "?%#") or database.startswith(":"):
        return None
    return Path(database)


def resolve_url(url: str | URL | None = None) -> URL:
    """Pick the URL (argument, then $SESSIONSTORE_URL, then ./sessionstore.db), normalized."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    raw = url if url is not None else _from_environment()
    try:
        parsed = make_url(raw)
    except ArgumentError:
        raise UnsupportedURLError(  # the text is not quoted: it may hold a password
            f"could not parse the database URL; expected {_SUPPORTED}"
        ) from None
    except ValueError:  # SQLAlchemy reads the port as it parses
        raise UnsupportedURLError(
            f"the port in the database URL is not a number; expected {_SUPPORTED}"
        ) from None
    driver = parsed.drivername
    if driver in _SQLITE_DRIVERS:
        if parsed.host or parsed.username or parsed.port:
            name = parsed.host or "the file"
            raise UnsupportedURLError(
                f"a SQLite URL names a file after three slashes: sqlite:///{name} (relative to "
                f"the working directory) or sqlite:////absolute/path/{name}; this one has "
                "only two, so the file name was read as a host"
            )
        return parsed.set(drivername="sqlite")
    if driver in _POSTGRES_DRIVERS:
        from ._postgres._url import checked_url  # loads asyncpg: PostgreSQL URLs only

        return checked_url(parsed.set(drivername="postgresql+asyncpg"))
    raise UnsupportedURLError(
        f"unsupported database URL scheme {driver!r}: sessionstore supports {_SUPPORTED}"
    )


def is_memory_sqlite(url: URL) -> bool:
    """True for an in-memory SQLite database (one shared connection, gone on exit)."""
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")
