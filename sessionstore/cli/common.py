"""Shared CLI pieces: consoles, the --url and --config options, exit codes, user errors."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Final

import asyncpg
import sqlalchemy as sa
import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

from ..builders import build_store
from ..compaction.errors import CompactionError
from ..config import SessionStoreConfig, load_config
from ..database import resolve_url
from ..errors import SessionStoreError, StoreUnavailableError
from ..store import SessionStore

console = Console()
err_console = Console(stderr=True)

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1  # the command ran and found a problem (e.g. a check failed)
EXIT_USAGE: Final = 2  # bad arguments or configuration: nothing was done

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="SESSIONSTORE_URL",
        help="Database URL (default: sqlite:///sessionstore.db in the working directory).",
    ),
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
    return resolve_url(url).render_as_string(hide_password=True)


def load_settings(url: str | None, config: Path | None) -> SessionStoreConfig | None:
    """The --config file's settings with --url (when given) winning over `store.url`."""
    if config is None:
        return None
    settings = load_config(config)
    if url is None:
        return settings
    return settings.model_copy(update={"store": settings.store.model_copy(update={"url": url})})


def target_url(url: str | None, config: Path | None) -> str | None:
    """The database a command works on: --url, else the config's `store.url`, else the default."""
    settings = load_settings(url, config)
    return url if settings is None else settings.store.url


def open_store(url: str | None, config: Path | None, **options: Any) -> SessionStore:
    """A store from --config (keys, redaction, exporters) or, without one, from --url alone."""
    settings = load_settings(url, config)
    return SessionStore(url, **options) if settings is None else build_store(settings)


@contextmanager
def user_errors() -> Iterator[None]:
    """User errors print one clear line and a dependable exit code, not a traceback."""
    try:
        yield
    except CompactionError as exc:
        err_console.print(f"[red]compaction failed:[/] {exc}")
        raise typer.Exit(EXIT_FAILED) from None
    except StoreUnavailableError as exc:
        err_console.print(f"[red]database unavailable:[/] {exc}")
        err_console.print("check --url / $SESSIONSTORE_URL; `sessionstore doctor` tests it")
        raise typer.Exit(EXIT_FAILED) from None
    except SessionStoreError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    except (OSError, sqlite3.Error, asyncpg.PostgresError, sa.exc.DBAPIError) as exc:
        # The database is unreachable or refused us: say which, not a driver traceback.
        reason = getattr(exc, "orig", None) or exc
        err_console.print(
            f"[red]database unavailable:[/] {type(reason).__name__}: {reason}".splitlines()[0]
        )
        err_console.print("check --url / $SESSIONSTORE_URL; `sessionstore doctor` tests it")
        raise typer.Exit(EXIT_FAILED) from None


class GuardedGroup(TyperGroup):
    """A command group whose every subcommand maps user errors to exit codes."""

    def invoke(self, ctx: Any) -> Any:
        with user_errors():
            return super().invoke(ctx)


class GuardedCommand(TyperCommand):
    """A single command (compactctl) with the same error mapping."""

    def invoke(self, ctx: Any) -> Any:
        with user_errors():
            return super().invoke(ctx)
