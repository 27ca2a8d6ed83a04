"""The root command group: a command's module is imported when that command runs.

Every command's module imported up front (and with them SQLAlchemy, sqlglot and the
compaction package) made `sessionstore --help` take 1.0-1.6 s and `sessions list` 1.4-2.0 s.
Here the root's help lists the commands from a table, importing none of them, and a command
is built from its module when the command line names it. tests/cli/test_startup.py checks
the table against the commands' own help, so the two cannot drift apart.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, ClassVar, Final, NamedTuple

import typer
from typer.core import TyperGroup

from ._guard import CLI_SETTINGS, GuardedGroup


class Entry(NamedTuple):
    """Where a command lives (a module of this package, and a Typer app or a function in
    it) and the line the root's help shows for it."""

    module: str
    attribute: str
    summary: str


# The root's help shows each summary: the start of the command's own first paragraph.
COMMANDS: Final[dict[str, Entry]] = {
    "migrate": Entry(
        "._migrate",
        "migrate",
        "Create or upgrade the sessionstore tables (Alembic) to REVISION (default: newest).",
    ),
    "demo": Entry(
        "._demo",
        "demo",
        "Run a scripted agent session, restart the store, then a long session through compaction.",
    ),
    "compact": Entry("._compact", "compact", "Compact sessions now (manual trigger)"),
    "retention": Entry(
        "._retention", "retention_app", "Retention: policies, and the job that applies them."
    ),
    "archive": Entry("._archive", "archive_app", "Archived originals (compaction, truncation)."),
    "keys": Entry(
        "._keys", "keys_app", "Archive encryption keys: generate, status, rotate, retire."
    ),
    "sessions": Entry(
        "._sessions_group", "sessions_app", "List, show, export, import and delete sessions."
    ),
    "events": Entry(
        "._events",
        "events",
        "Print stored events (the source of truth every exporter reads), newest last",
    ),
    "query": Entry(
        "._query", "query", "Run read-only SQL (SELECT ...) against the store; writes are refused."
    ),
    "search": Entry(
        "._search", "search", "Rows of any session's history holding every word, best match first"
    ),
    "usage": Entry(
        "._usage", "usage", "What the model calls recorded by the Agents SDK adapter used and cost"
    ),
    "schema": Entry(
        "._schema",
        "schema",
        "The tables `sessionstore query` reads (docs/SCHEMA.md), with columns and row counts.",
    ),
    "doctor": Entry(
        "._doctor",
        "doctor",
        "Check the config, database, migrations, offline tokenizer, keys and exporter endpoints.",
    ),
    "verify": Entry(
        "._verify", "verify", "Check sessions' histories against their hash chains (reads only)."
    ),
    "import": Entry(
        "._import",
        "import_sessions",
        "Import Agents SDK sessions (SQLiteSession / SQLAlchemySession tables) into sessionstore.",
    ),
    "serve": Entry("._serve", "serve", "Browse sessions in a local, read-only web viewer"),
}


# `sessions`' own commands, loaded the same way: `sessions list` imports no SQLAlchemy.
SESSIONS_COMMANDS: Final[dict[str, Entry]] = {
    "list": Entry("._sessions_list", "list_", "Sessions, most recently updated first."),
    "show": Entry(
        "._sessions",
        "show",
        "The rows of a session: seq, kind, role/type, agent, tool, tokens and its text",
    ),
    "rewind": Entry(
        "._sessions",
        "rewind",
        "Make the active context what it was at a point of the session's history.",
    ),
    "fork": Entry(
        "._sessions",
        "fork",
        "Start a new session as a branch of another at a point of its history.",
    ),
    "export": Entry(
        "._sessions_bulk", "export", "JSON lines: one session's active context as the model sees it"
    ),
    "delete": Entry("._sessions_bulk", "delete", "Delete sessions: their rows and events"),
    "import": Entry(
        "._sessions_bulk",
        "import_export",
        "Import sessions from a `sessions export` file, items in order, into this store.",
    ),
}


def load_command(name: str, table: Mapping[str, Entry] = COMMANDS) -> Any:
    """The click command `name` of `table` stands for, built from its module (imported now)."""
    entry = table[name]
    target = getattr(importlib.import_module(entry.module, __package__), entry.attribute)
    if not isinstance(target, typer.Typer):  # a function: a Typer of that one command
        single = typer.Typer(add_completion=False, **CLI_SETTINGS)
        single.command(name=name)(target)
        target = single
    command = typer.main.get_command(target)
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands load on first use (see the module's docstring)."""

    table: ClassVar[Mapping[str, Entry]] = COMMANDS

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.table)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return load_command(cmd_name, self.table) if cmd_name in self.table else None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The commands and their lines from the table: help imports no command."""
        rows = [(name, entry.summary) for name, entry in self.table.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class RootGroup(GuardedGroup, LazyGroup):
    """The `sessionstore` group: commands loaded on use, errors mapped as everywhere."""


class SessionsGroup(LazyGroup):
    """The `sessions` group: its commands loaded on use (errors mapped by the root's)."""

    table = SESSIONS_COMMANDS
