"""Shared CLI pieces: consoles, the --url and --config options, exit codes, user errors."""

from __future__ import annotations

import base64
import os
import re
import sqlite3
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TextIO, cast

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._errors import (
    ArchiveSinkError,
    CompactionError,
    ConfigError,
    EncodingUnavailableError,
    HistoryTamperedError,
    KeyIntegrityError,
    KeyUnavailableError,
    QueryTooLargeError,
    SealedDataError,
    SessionStoreError,
    StoreError,
    StoreTimeoutError,
    StoreUnavailableError,
    SummarizerError,
)
from .._events import Event
from .._storage._urls import sqlite_url_of
from .._times import as_utc

if TYPE_CHECKING:  # loaded when a command opens a store: `sessions list` may never need them
    from .._config import SessionStoreConfig
    from .._store import SessionStore

from ._exit_codes import EXIT_FAILED, EXIT_USAGE
from ._text import json_text, shown, visible

_UNWRAPPED_WIDTH: Final = 1_000_000  # wide enough that no stored text is wrapped or cut


_OUTPUT_NOTE: Final = "sessionstore: writing the output failed"


class _Output:
    """stdout or stderr as rich writes to it, looked up at each write (tests swap them);
    a failed write is marked as the output's, so it is not reported as the database's."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    @property
    def _stream(self) -> TextIO:
        return sys.stderr if self._stderr else sys.stdout

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            error.add_note(_OUTPUT_NOTE)
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            error.add_note(_OUTPUT_NOTE)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


TERMINAL_ENV: Final = "SESSIONSTORE_TERMINAL"


def is_terminal(stderr: bool = False) -> bool:
    """Whether output goes to a person: stdout (stderr) is a terminal, unless
    $SESSIONSTORE_TERMINAL says otherwise (1: draw tables and colours even into a pipe,
    0: plain records even on a terminal)."""
    forced = os.environ.get(TERMINAL_ENV, "").strip().lower()
    if forced in ("1", "true", "yes", "on"):
        return True
    if forced in ("0", "false", "no", "off"):
        return False
    stream = sys.stderr if stderr else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or odd stream is no terminal
        return False


def _flat(text: str) -> str:
    """One cell on one line: its newlines and tabs written as escapes."""
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def plain_table(table: Table) -> str:
    """A table as a pipe reads it: a header line, then one line per row, cells separated by
    tabs, nothing wrapped, cut, boxed or coloured (the title is decoration: left out)."""

    def plain(cell: object) -> str:  # control characters escaped, whoever made the cell
        if isinstance(cell, Text):
            return visible(cell.plain)
        if isinstance(cell, str):  # what rich would show for it (markup applied)
            return visible(Text.from_markup(cell).plain)
        return visible(str(cell))

    lines = []
    if table.show_header:
        lines.append("\t".join(_flat(plain(column.header)) for column in table.columns))
    cells = [list(column.cells) for column in table.columns]
    for index in range(table.row_count):
        lines.append("\t".join(_flat(plain(column[index])) for column in cells))
    return "\n".join(lines)


class _PipeConsole(Console):
    """Rich's console, except that a reader gone away (`| head -1`) is a BrokenPipeError
    for quiet_on_closed_pipe to end with exit 0, not rich's own exit 1 (read as "failed");
    and, when it writes for a pipe, a table comes out as plain lines (`plain_table`)."""

    def __init__(self, *args: Any, plain: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plain = plain

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.plain or not any(isinstance(o, Table) for o in objects):
            super().print(*objects, **kwargs)
            return
        for o in objects:  # written as is: rich would turn the tabs into spaces
            if isinstance(o, Table):
                self.file.write(plain_table(o) + "\n")
            else:
                super().print(o, **kwargs)


def _console(stderr: bool, terminal: bool) -> Console:
    """The terminal's console; for a pipe or a file, one that never wraps, cuts, boxes or
    colours (`events | grep` must see whole events). Nothing is auto-highlighted: output
    is data."""
    if terminal:
        return _PipeConsole(
            file=_Output(stderr),
            highlight=False,
            force_terminal=True,
        )
    return _PipeConsole(
        file=_Output(stderr),
        width=_UNWRAPPED_WIDTH,
        color_system=None,
        highlight=False,
        soft_wrap=True,
        plain=True,
    )


class _ConsoleSwitch:
    """The console for where the output goes at the moment of writing (tests swap stdout,
    $SESSIONSTORE_TERMINAL forces a side): every attribute is the current console's."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._made: dict[bool, Console] = {}

    def current(self) -> Console:
        terminal = is_terminal(self._stderr)
        made = self._made.get(terminal)
        if made is None:
            made = self._made[terminal] = _console(self._stderr, terminal)
        return made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)

    def __enter__(self) -> Console:  # rich's Live buffers output with `with console:`
        return self.current().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self.current().__exit__(*exc_info)


console = cast(Console, _ConsoleSwitch(stderr=False))
err_console = cast(Console, _ConsoleSwitch(stderr=True))

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def url_or_path(value: str | None) -> str | None:
    """--url as given: a database URL (`postgresql://...`, `sqlite:///file.db`), or a plain
    file path (`./sessions.db`, `/srv/sessions.db`, `~/s.db`), which names that SQLite
    file. Anything with a scheme is a URL, so a mistyped scheme is still an error. A path's
    `%`, `?` and `#` are escaped: in a URL they would start an escape, a query, a fragment."""
    if value is not None and value.strip() and not _SCHEME.match(value):
        value = sqlite_url_of(os.path.expanduser(value))  # `~user` unknown: left as it is
    _GIVEN_URL[0] = value
    return value


_GIVEN_URL: list[str | None] = [None]  # the --url of this run, for the unreachable hint


UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="SESSIONSTORE_URL",
        callback=url_or_path,
        help="Database URL (postgresql://user@host/db, sqlite:///file.db) or the path of a "
        "SQLite file (default: sqlite:///sessionstore.db in the working directory).",
    ),
]


RedactOption = Annotated[
    bool, typer.Option("--redact/--no-redact", help="Redact secrets (on by default).")
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        envvar="SESSIONSTORE_CONFIG",
        dir_okay=False,
        help="A compact.yaml/.json (docs/CONFIGURATION.md): store, keys, redaction, exporters.",
    ),
]


def shown_url(url: str | None) -> str:
    """The URL as it may be printed (password masked)."""
    from .._storage._urls import resolve_url

    return resolve_url(url).render_as_string(hide_password=True)


def load_settings(url: str | None, config: Path | None) -> SessionStoreConfig | None:
    """The --config file's settings with --url (when given) winning over `store.url`."""
    if config is None:
        return None
    from .._config import load_config  # pydantic's models: only for a config file

    settings = load_config(config)
    if url is None:
        return settings
    return settings.model_copy(update={"store": settings.store.model_copy(update={"url": url})})


def target_url(url: str | None, config: Path | None) -> str | None:
    """The database a command works on: --url, else the config's `store.url`, else the default."""
    settings = load_settings(url, config)
    return url if settings is None else settings.store.url


def open_store(
    url: str | None,
    config: Path | None,
    *,
    read_only: bool = False,
    create_tables: bool | None = None,
) -> SessionStore:
    """A store from --config (keys, redaction, exporters) or, without one, from --url alone.

    `read_only` for commands that only read: a missing SQLite file is an error naming
    the path (never a new empty database), an old schema is refused (never migrated).
    `create_tables` overrides the default (and the config's `store.create_tables`).
    """
    from .._store import SessionStore

    settings = load_settings(url, config)
    if settings is None:
        return SessionStore(url, read_only=read_only, create_tables=create_tables)
    if create_tables is not None:
        store_settings = settings.store.model_copy(update={"create_tables": create_tables})
        settings = settings.model_copy(update={"store": store_settings})
    from .._builders import build_store

    return build_store(settings, read_only=read_only)


async def record_audit(url: str | None, config: Path | None, events: Sequence[Event]) -> None:
    """Record audit events (e.g. --no-redact) where the database allows it; a read never
    fails for its audit trail (a read-only file, a replica): it says so on stderr instead."""
    from sqlalchemy.exc import DBAPIError

    try:
        async with open_store(url, config, create_tables=False) as store:
            await store.record_events(events)
    except (SessionStoreError, OSError, sqlite3.Error, DBAPIError) as error:
        err_console.print(
            shown(f"note: the audit event was not recorded ({_first_line(error)})", "yellow")
        )


def iso_utc(moment: datetime) -> str:
    """ISO 8601 with its zone; SQLite hands back naive UTC timestamps, PostgreSQL aware ones."""
    return as_utc(moment).isoformat()


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def emit_json(data: object) -> None:
    """`--json` output: valid JSON, timestamps in ISO 8601 with zone; coloured on a TTY,
    plain text otherwise."""
    text = json_text(data, indent=2, default=_json_value)
    if is_terminal():
        console.print_json(text)
    else:
        sys.stdout.write(text + "\n")


@contextmanager
def quiet_on_closed_pipe() -> Iterator[None]:
    """A reader that went away (`| head -1`) ends the command quietly with exit 0."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no noise at exit
        raise typer.Exit(0) from None


@dataclass(frozen=True, slots=True)
class ErrorOutcome:
    """How the CLI reports one kind of error: a label, an exit code, an optional next step."""

    label: str
    code: int
    hint: str | None = None


_UNREACHABLE_HINT: Final = "check --url / $SESSIONSTORE_URL; `sessionstore doctor` tests it"

# Keyed by class; an error takes the entry of its nearest class in its MRO, so the order
# here does not matter. Exit 2: the input or configuration was wrong, nothing was done.
# Exit 1: the command was fine but something it needed failed (database, keys, summarizer).
ERROR_OUTCOMES: Final[Mapping[type[BaseException], ErrorOutcome]] = {
    SessionStoreError: ErrorOutcome("error", EXIT_USAGE),
    StoreError: ErrorOutcome("database error", EXIT_FAILED),
    StoreUnavailableError: ErrorOutcome("database unavailable", EXIT_FAILED, _UNREACHABLE_HINT),
    StoreTimeoutError: ErrorOutcome("timed out", EXIT_FAILED),
    QueryTooLargeError: ErrorOutcome("too large", EXIT_FAILED),
    CompactionError: ErrorOutcome("compaction failed", EXIT_FAILED),
    SummarizerError: ErrorOutcome("summarizer failed", EXIT_FAILED),
    KeyUnavailableError: ErrorOutcome("key unavailable", EXIT_FAILED),
    KeyIntegrityError: ErrorOutcome("cannot open sealed data", EXIT_FAILED),
    SealedDataError: ErrorOutcome("cannot open sealed data", EXIT_FAILED),
    HistoryTamperedError: ErrorOutcome("tampered history", EXIT_FAILED),
    ArchiveSinkError: ErrorOutcome("archive copy failed", EXIT_FAILED),
    EncodingUnavailableError: ErrorOutcome("tokenizer unavailable", EXIT_FAILED),
    OSError: ErrorOutcome("database unavailable", EXIT_FAILED, _UNREACHABLE_HINT),
    sqlite3.Error: ErrorOutcome("database unavailable", EXIT_FAILED, _UNREACHABLE_HINT),
}
_DRIVER_FAILED: Final = ErrorOutcome("database unavailable", EXIT_FAILED, _UNREACHABLE_HINT)


def outcome_of(error: BaseException) -> ErrorOutcome | None:
    """The entry of the error's nearest class in ERROR_OUTCOMES, or None (a bug: re-raise).
    A driver's own error (SQLAlchemy's, asyncpg's) counts as an unreachable database; one
    can only exist once a command loaded SQLAlchemy, which `sessions list` on a SQLite
    file never does, so the check costs it nothing."""
    found = next((ERROR_OUTCOMES[c] for c in type(error).__mro__ if c in ERROR_OUTCOMES), None)
    if found is None and "sqlalchemy" in sys.modules:
        from sqlalchemy.exc import DBAPIError

        from .._storage._driver_errors import is_postgres_error

        if isinstance(error, DBAPIError) or is_postgres_error(error):
            return _DRIVER_FAILED
    return found


def _first_line(error: BaseException) -> str:
    if isinstance(error, ConfigError):
        return error.one_line  # its problems on one line
    if isinstance(error, SessionStoreError):
        return str(error)  # ours: written for people
    reason = getattr(error, "orig", None) or error  # a driver's: its first line, named
    return f"{type(reason).__name__}: {reason}".splitlines()[0]


def _hint(outcome: ErrorOutcome) -> str:
    """The outcome's next step; for an unreachable database, naming the one tried."""
    if outcome.hint != _UNREACHABLE_HINT or _GIVEN_URL[0] is None:
        return outcome.hint or ""
    try:
        where = shown_url(_GIVEN_URL[0])
    except SessionStoreError:
        return outcome.hint
    return (
        f"is {where} the database, and is it up? fix --url / $SESSIONSTORE_URL if not; "
        "`sessionstore doctor` tests the connection"
    )


@contextmanager
def user_errors() -> Iterator[None]:
    """User errors print one clear message and a dependable exit code, not a traceback.

    The message is data: printed verbatim, never read as markup (it may quote stored text).
    """
    try:
        with quiet_on_closed_pipe():
            yield
    except Exception as error:
        if _OUTPUT_NOTE in getattr(error, "__notes__", ()):
            reason = getattr(error, "strerror", None) or type(error).__name__
            with suppress(OSError):
                print(f"error: cannot write the output: {reason}", file=sys.stderr)
            raise typer.Exit(EXIT_FAILED) from None
        outcome = outcome_of(error)
        if outcome is None:
            raise
        err_console.print(
            Text.assemble((f"{outcome.label}:", "red"), " ", shown(_first_line(error)))
        )
        if outcome.hint:
            err_console.print(shown(_hint(outcome)))
        raise typer.Exit(outcome.code) from None
