"""Which sessions a bulk command works on: ids given, ids read from stdin (`-`), --all, or
--where CONDITION. One way of choosing per run, so a typo cannot widen the choice."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Final, TextIO

import typer

from .._errors import QueryRejectedError
from .._store import SessionStore
from ._common import err_console, open_store
from ._exit_codes import EXIT_FAILED
from ._text import shown

STDIN: Final = "-"
# The most ids --where may choose (the runner of `query` also caps the bytes it holds).
MAX_CHOSEN: Final = 10_000_000

IdsArgument = Annotated[
    list[str] | None,
    typer.Argument(
        help="Session ids; `-` reads ids from stdin, one per line "
        "(`sessions list --json | jq -r '.[].session_id' | ... -`).",
        metavar="SESSION_IDS",
        show_default=False,
    ),
]
AllOption = Annotated[bool, typer.Option("--all", help="Every session in the store.")]
WhereOption = Annotated[
    str | None,
    typer.Option(
        "--where",
        metavar="CONDITION",
        help="The sessions matching an SQL condition over the sessions table's columns, "
        "e.g. 'context_tokens > 50000' (read-only: checked and run as `query` runs SQL).",
    ),
]


@dataclass(frozen=True, slots=True)
class Selection:
    """What the command line chose: ids (stdin already read), every session, or a condition."""

    ids: tuple[str, ...]
    every: bool
    where: str | None
    from_stdin: bool

    @property
    def bulk(self) -> bool:
        """Chosen as a set (--all, --where, `-`, several ids): output is per session."""
        return self.every or self.where is not None or self.from_stdin or len(self.ids) > 1


def read_ids(lines: Iterable[str]) -> list[str]:
    """One id per line, line endings stripped; blank lines skipped, repeats dropped."""
    ids = (line.rstrip("\r\n") for line in lines)
    return list(dict.fromkeys(i for i in ids if i.strip()))


def selection(
    ids: list[str] | None, every: bool, where: str | None, stdin: TextIO | None = None
) -> Selection:
    """The choice made on the command line, or a usage error (exit 2) when it is none or
    more than one of ids, --all and --where."""
    given = [
        name
        for name, on in (("ids", bool(ids)), ("--all", every), ("--where", where is not None))
        if on
    ]
    if len(given) != 1:
        raise typer.BadParameter(
            "choose the sessions one way: ids (`-` reads them from stdin), --all or --where"
            + (f", not {' and '.join(given)}" if given else ""),
            param_hint="SESSION_IDS",
        )
    from_stdin = STDIN in (ids or [])
    chosen = [session_id for session_id in ids or [] if session_id != STDIN]
    if from_stdin:  # read once, wherever `-` stands; empty stdin chooses no session
        chosen += read_ids(stdin or sys.stdin)
    return Selection(
        ids=tuple(dict.fromkeys(chosen)), every=every, where=where, from_stdin=from_stdin
    )


async def chosen_ids(store: SessionStore, chosen: Selection) -> tuple[list[str], list[str]]:
    """The ids of the chosen sessions that exist, and the given ids that do not."""
    if chosen.every:
        return [info.session_id for info in await store.list_sessions()], []
    if chosen.where is not None:
        return await _matching(store, chosen.where), []
    found: list[str] = []
    missing: list[str] = []
    for session_id in chosen.ids:
        (found if await store.session_info(session_id) is not None else missing).append(session_id)
    return found, missing


async def _matching(store: SessionStore, condition: str) -> list[str]:
    """The ids --where chooses, read as `query` reads (guard, read-only, timeout); a bad
    condition is a usage error (exit 2) naming why."""
    from ._query import DEFAULT_TIMEOUT_S, _select  # sqlglot: only for a condition
    from ._where import where_statement

    try:
        statement = where_statement(condition, store.engine.dialect.name)
        _, rows = await store.read_snapshot(_select, statement, MAX_CHOSEN, DEFAULT_TIMEOUT_S, None)
    except QueryRejectedError as error:
        raise typer.BadParameter(str(error), param_hint="--where") from None
    return [str(row[0]) for row in rows[:MAX_CHOSEN]]


def resolve(url: str | None, config: Path | None, chosen: Selection, verb: str) -> list[str]:
    """The ids of the chosen sessions, read from a read-only store (a mistyped --url creates
    no file); a given id that does not exist ends the command (exit 1) before anything is
    done, naming it (`verb`: what would have been done, e.g. "compacted")."""

    async def go() -> tuple[list[str], list[str], str]:
        async with open_store(url, config, read_only=True) as store:
            found, missing = await chosen_ids(store, chosen)
            return found, missing, store.safe_url

    found, missing, where = asyncio.run(go())
    if missing:
        named = ", ".join(repr(session_id) for session_id in missing)
        err_console.print(
            shown(
                f"no session {named} in {where}; nothing was {verb} "
                "(`sessionstore sessions list` shows the sessions there)"
            )
        )
        raise typer.Exit(EXIT_FAILED)
    if not found:
        err_console.print(shown(f"no sessions were chosen; nothing was {verb}"))
    return found
