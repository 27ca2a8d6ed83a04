"""Driver errors become the store's own: no driver types, SQL text or parameters escape.

SQLAlchemy's errors quote the statement and its bound parameters (item payloads,
metadata: possibly secrets), and asyncpg's name internal states. Callers get a
`StoreUnavailableError` that says whether a write's outcome is known, or a
`StoreError` that names the kind of failure; `DuplicateAppendError` marks a replayed
append batch. Anything that is not a database error passes through unchanged.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from typing import Any, Final

from sqlalchemy import exc as sa_exc

from .._errors import (
    DatabaseNotFoundError,
    DuplicateAppendError,
    SessionStoreError,
    StoreError,
    StoreUnavailableError,
    UnavailableReason,
)
from .._redaction import default_redactor

_TOKEN_INDEX: Final = ("ux_messages_append_token", "messages.append_token")


# The asyncpg errors below are looked up only once asyncpg is loaded: before that, no error
# can be one of them, and a SQLite program never loads the PostgreSQL driver.
def _asyncpg() -> Any | None:
    return sys.modules.get("asyncpg")


def _lost() -> tuple[type[BaseException], ...]:
    """What asyncpg raises when the server ends the session or the socket breaks."""
    asyncpg = _asyncpg()
    if asyncpg is None:
        return (OSError,)
    return (
        OSError,
        asyncpg.PostgresConnectionError,
        asyncpg.exceptions.OperatorInterventionError,  # pg_terminate_backend, shutdowns
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
    )


# No host answered as a writable primary: every host a `target_session_attrs=read-write` URL
# lists is a standby (asyncpg checks at connect, TargetServerAttributeNotMatched), or the
# server refused a write as read-only (a primary demoted under a live connection, a URL naming
# a standby). Refused before any row was written: the outcome is known. SQLSTATE 25006 is
# read_only_sql_transaction.
_READ_ONLY_SQLSTATE: Final = "25006"
# SQLite's words for a file that cannot be reached (a missing directory, a dead disk).
_SQLITE_LOST: Final = ("unable to open database file", "disk I/O error")


def driver_error(error: BaseException) -> BaseException:
    """The driver's own exception inside a SQLAlchemy wrapper (or the error itself)."""
    if isinstance(error, sa_exc.DBAPIError) and error.orig is not None:
        inner = error.orig
        # SQLAlchemy's asyncpg adapter wraps again; its __cause__ is asyncpg's error.
        return inner.__cause__ if inner.__cause__ is not None else inner
    return error


def is_connection_lost(error: BaseException) -> bool:
    """The connection is gone (refused, closed, terminated, broken mid-statement)."""
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    inner = driver_error(error)
    if isinstance(inner, sqlite3.OperationalError):
        return any(words in str(inner) for words in _SQLITE_LOST)
    return isinstance(inner, _lost())


def is_not_primary(error: BaseException) -> bool:
    """The server that answered cannot take writes (a standby): see above."""
    inner = driver_error(error)
    asyncpg = _asyncpg()
    if asyncpg is not None and isinstance(
        inner, asyncpg.exceptions.TargetServerAttributeNotMatched
    ):
        return True
    return getattr(inner, "sqlstate", None) == _READ_ONLY_SQLSTATE


def is_postgres_error(error: BaseException) -> bool:
    """An error the PostgreSQL server sent through asyncpg (never one while it is unloaded)."""
    asyncpg = _asyncpg()
    return asyncpg is not None and isinstance(error, asyncpg.PostgresError)


def is_database_error(error: BaseException) -> bool:
    """Raised by the database or its driver (what `translate` rewrites); never one of ours
    (a StoreTimeoutError is a TimeoutError, and must not pass for a lost connection)."""
    if isinstance(error, SessionStoreError):
        return False
    return is_postgres_error(error) or isinstance(
        error, (sa_exc.SQLAlchemyError, sqlite3.Error, *_lost())
    )


def translate(
    error: BaseException, *, where: str, writing: bool, may_have_committed: bool
) -> BaseException:
    """The store's exception for a driver `error` raised while using the database `where`.

    `may_have_committed`: the error came at or after the point where a write could have
    committed (the statement of a one-statement write, or the COMMIT).
    """
    if not is_database_error(error):
        return error
    kind = type(driver_error(error)).__name__
    if is_not_primary(error):
        return StoreUnavailableError(
            f"no writable primary reachable at {where}: the server that answered is a "
            "read-only standby (a failover in progress, or a URL that names only standbys; "
            "list every node with target_session_attrs=read-write). Nothing was written; "
            "retrying is safe.",
            outcome_known=True,
            reason=UnavailableReason.NO_WRITABLE_PRIMARY,
        )
    if is_connection_lost(error):
        known = not (writing and may_have_committed)
        outcome = (
            "Nothing was written; retrying is safe."
            if known or not writing
            else "The write may or may not have been stored: retry with the same "
            "idempotency token and it is stored at most once."
        )
        lost = _lost_kind(error)
        # Refused: nothing listens there (a typo in the URL, a server that is down), which
        # "became unavailable" would misreport as a connection that was lost.
        what = "cannot be reached" if lost == "connection refused" else "became unavailable"
        reason = (
            UnavailableReason.UNREACHABLE
            if lost in ("connection refused", "timed out") and not may_have_committed
            else UnavailableReason.CONNECTION_LOST
        )
        return StoreUnavailableError(
            f"the database at {where} {what} ({lost}). {outcome}",
            outcome_known=known,
            reason=reason,
        )
    text = str(driver_error(error)).strip().splitlines()[0] if str(driver_error(error)) else ""
    if kind == "InvalidCatalogNameError":  # a typo in the URL's database name
        return DatabaseNotFoundError(
            f"the server at {where} has no such database ({default_redactor().text(text)}): "
            "fix the name in the URL, or create it (createdb NAME); nothing was changed."
        )
    if text == "file is not a database":  # SQLite's SQLITE_NOTADB: some other file
        return DatabaseNotFoundError(
            f"{where} is not a SQLite database (the file holds something else): check the "
            "path in --url / $SESSIONSTORE_URL; nothing was changed."
        )
    if text == "database disk image is malformed":  # SQLite's SQLITE_CORRUPT
        return StoreError(
            f"the SQLite file at {where} is damaged (database disk image is malformed): "
            "restore it from a backup (`sqlite3 FILE .recover` may save what is left); "
            "nothing was changed."
        )
    if any(name in text for name in _TOKEN_INDEX):
        return DuplicateAppendError("an append batch with this idempotency token is stored")
    return StoreError(
        f"the database at {where} refused the operation ({_error_class(kind)}: "
        f"{default_redactor().text(_valueless(text))[:200]}); nothing was changed."
    )


_ARGUMENT: Final = re.compile(r"(query argument \$\d+).*", re.DOTALL)
_QUOTED: Final = re.compile(r"\"([^\"]*)\"|'([^']*)'")
_IDENTIFIER: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _valueless(text: str) -> str:
    """A driver message without the values it quotes (a bound parameter, a literal): only
    what names a kind of failure and lower-case SQL identifiers (constraints, tables) stay."""
    text = _ARGUMENT.sub(r"\1", text)

    def quoted(match: re.Match[str]) -> str:
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        return match.group(0) if _IDENTIFIER.fullmatch(inner) else "…"

    return _QUOTED.sub(quoted, text)


def _lost_kind(error: BaseException) -> str:
    inner = driver_error(error)
    if isinstance(inner, ConnectionRefusedError):
        return "connection refused"
    if isinstance(inner, TimeoutError):
        return "timed out"
    asyncpg = _asyncpg()
    if asyncpg is not None and isinstance(inner, asyncpg.exceptions.OperatorInterventionError):
        return "the server ended the connection"
    if isinstance(inner, sqlite3.OperationalError):
        return str(inner).splitlines()[0]  # SQLite's own words, from _SQLITE_LOST
    return "the connection was lost"


def _error_class(kind: str) -> str:
    """A driver class name as a plain kind: 'UniqueViolationError' -> 'unique violation'."""
    words = kind.removesuffix("Error").removesuffix("Exception")
    spaced = "".join(f" {char.lower()}" if char.isupper() else char for char in words)
    return spaced.strip() or "database error"
