"""`sessions export`, `sessions delete` of many sessions, and `sessions import` of an export.

The shape that round-trips is one JSON object per line, one line per item of a session's
active context, in order: {"session_id": ..., "item": {...}} (and "agent" when the row
names the agent that produced it). `sessions import FILE` appends each session's items in
that order, so `load_context` on the target returns what it returned on the source (with
--no-redact: a redacted export is a redacted copy). A session whose active context is empty
has no line. With one id and no `-`, export and delete do what they always did.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Final, TextIO

import typer

from .._errors import BranchError
from .._redaction import Redactor, redaction_disabled_event
from .._rows import visible_rows
from .._store import DEFAULT_MODEL
from ..compaction._summarizers._provider_marker import bindings_of
from ._bulk import STDIN, AllOption, IdsArgument, Selection, WhereOption, resolve, selection
from ._common import ConfigOption, RedactOption, UrlOption, err_console, open_store, record_audit
from ._exit_codes import EXIT_FAILED
from ._progress import progress_bar
from ._sessions import AsOfOption, HistoryOption, _shown_item
from ._sessions import delete as delete_one
from ._sessions import export as export_one
from ._text import json_text, shown, visible

__all__ = ["delete", "export", "import_export"]

_BATCH: Final = 500  # items appended per transaction by `sessions import`
_NAMED: Final = 20  # ids the delete prompt names before "and N more"


def export(
    session_ids: IdsArgument = None,
    url: UrlOption = None,
    config: ConfigOption = None,
    history: HistoryOption = False,
    output: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
    redact: RedactOption = True,
    as_of: AsOfOption = None,
    every: AllOption = False,
    where: WhereOption = None,
) -> None:
    """JSON lines: one session's active context as the model sees it (with --history: every
    row, markers included; with --as-of: the context as it stood then). Several sessions
    (several ids, `-`, --all, --where): one {"session_id", "item"} object per line, the
    file `sessions import` reads back (--no-redact for an exact copy)."""
    chosen = selection(session_ids, every, where)
    if not chosen.bulk:
        export_one(
            chosen.ids[0],
            url=url,
            config=config,
            history=history,
            output=output,
            redact=redact,
            as_of=as_of,
        )
        return
    if history or as_of is not None:
        raise typer.BadParameter(
            "--history and --as-of export one session; several are exported as their active "
            "contexts (what `sessions import` reads back)",
            param_hint="--history/--as-of",
        )
    ids = resolve(url, config, chosen, "exported")
    if not redact:
        err_console.print(shown("warning: redaction is off; secrets are written as stored", "red"))
    with _sink(output) as sink:
        lines = asyncio.run(_export(url, config, ids, redact, sink))
    if not redact:
        asyncio.run(record_audit(url, config, [redaction_disabled_event(i) for i in ids]))
    if output is not None:
        err_console.print(shown(f"wrote {lines} line(s) of {len(ids)} session(s) to {output}"))


@contextmanager
def _sink(output: Path | None) -> Iterator[TextIO]:
    """stdout, or the --output file (a file that cannot be written is a usage error)."""
    if output is None:
        yield sys.stdout
        return
    try:
        handle = output.open("w", encoding="utf-8", newline="\n")
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot write {output}: {exc.strerror}", param_hint="--output"
        ) from None
    with handle:
        yield handle


async def _export(
    url: str | None, config: Path | None, ids: list[str], redact: bool, sink: TextIO
) -> int:
    """Write each session's active context, a session at a time; the lines written."""
    written = 0
    async with open_store(url, config, read_only=True) as store:
        redactor = store.redactor if redact else Redactor(enabled=False)
        with progress_bar() as bar:
            task = bar.add_task("exporting", total=len(ids))
            for session_id in ids:
                rows = visible_rows(await store.context_rows(session_id))
                bindings = await bindings_of(store, rows)
                for row in rows:
                    record: dict[str, Any] = {
                        "session_id": session_id,
                        "item": _shown_item(row, redactor, bindings, redact),
                    }
                    if row.agent is not None:
                        record["agent"] = redactor.text(row.agent)
                    sink.write(json_text(record) + "\n")
                    written += 1
                bar.advance(task)
    return written


def delete(
    session_ids: IdsArgument = None,
    url: UrlOption = None,
    config: ConfigOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Delete without asking.")] = False,
    every: AllOption = False,
    where: WhereOption = None,
) -> None:
    """Delete sessions: their rows and events (their archives stay until retention removes
    them, and `archive show` still opens them). Several sessions are confirmed once."""
    chosen = selection(session_ids, every, where)
    if not chosen.bulk:
        delete_one(chosen.ids[0], url=url, config=config, yes=yes)
        return
    ids = resolve(url, config, chosen, "deleted")
    if not ids:
        return
    ordered, redactor = asyncio.run(_branches_first(url, config, ids))
    if not yes and not _confirmed(ordered, redactor, chosen):
        err_console.print(shown("nothing was deleted"))
        raise typer.Exit(EXIT_FAILED)

    async def go() -> int:
        deleted = 0
        async with open_store(url, config, create_tables=False) as store:
            with progress_bar() as bar:
                task = bar.add_task("deleting", total=len(ordered))
                for session_id in ordered:
                    deleted += await store.delete_session(session_id)
                    bar.advance(task)
        return deleted

    err_console.print(shown(f"deleted {asyncio.run(go())} session(s)"))


async def _branches_first(
    url: str | None, config: Path | None, ids: list[str]
) -> tuple[list[str], Redactor]:
    """`ids` ordered so a branch is deleted before the session it shares rows with; a
    session with a live branch that is not among them is refused before asking."""
    chosen = set(ids)
    async with open_store(url, config, read_only=True) as store:
        children = {i: [b.session_id for b in await store.branches(i)] for i in ids}
        redactor = store.redactor
    for session_id, branches in children.items():
        outside = [branch for branch in branches if branch not in chosen]
        if outside:
            raise BranchError(
                f"session {session_id!r} has {len(outside)} live branch(es) sharing its rows "
                f"that are not among those to delete ({', '.join(map(repr, outside[:3]))}); "
                "delete them too or first; nothing was deleted"
            )
    ordered: list[str] = []

    def visit(session_id: str) -> None:  # depth first: every branch before its parent
        if session_id in ordered:
            return
        for branch in children[session_id]:
            visit(branch)
        ordered.append(session_id)

    for session_id in ids:
        visit(session_id)
    return ordered, redactor


def _confirmed(ids: list[str], redactor: Redactor, chosen: Selection) -> bool:
    """One question for all of them: how many, and which (ids redacted and escaped)."""
    named = ", ".join(repr(visible(redactor.text(i))) for i in ids[:_NAMED])
    more = f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else ""
    question = f"delete {len(ids)} session(s): {named}{more}?"
    if not chosen.from_stdin:
        return typer.confirm(question)
    try:  # the ids came on stdin: the answer comes from the terminal
        with open("/dev/tty", encoding="utf-8") as tty:
            err_console.print(shown(f"{question} [y/N]: "), end="")
            return tty.readline().strip().lower() in ("y", "yes")
    except OSError:
        raise typer.BadParameter(
            "the ids came on stdin and there is no terminal to confirm on; give --yes",
            param_hint="--yes",
        ) from None


def import_export(
    source: Annotated[
        str,
        typer.Argument(
            help="A file `sessions export` wrote for several sessions (JSON lines of "
            '{"session_id", "item"}), or - for stdin.',
            metavar="FILE",
        ),
    ],
    url: UrlOption = None,
    config: ConfigOption = None,
    append_to_existing: Annotated[
        bool,
        typer.Option(
            "--append-to-existing",
            help="Append to sessions the store already has instead of refusing them.",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(help=f"Model whose tokenizer counts tokens (default: {DEFAULT_MODEL})."),
    ] = None,
) -> None:
    """Import sessions from a `sessions export` file, items in order, into this store.

    Not the Agents SDK's tables: `sessionstore import` reads those. The whole file is read
    and every line checked before anything is written; a session the store already has is
    refused unless --append-to-existing.
    """
    sessions = _read_export(source)
    total = sum(len(batch) for batch in sessions.values())

    async def go() -> list[str]:
        from ._import import _target as target_store  # the importer's modules: only here

        async with target_store(url, config, model, read_only=False) as store:
            present = [i for i in sessions if await store.session_info(i) is not None]
            if present and not append_to_existing:
                return present
            with progress_bar() as bar:
                task = bar.add_task("importing", total=total)
                for session_id, items in sessions.items():
                    for start in range(0, len(items), _BATCH):
                        for agent, run in _runs(items[start : start + _BATCH]):
                            await store.append(session_id, run, agent=agent)
                            bar.advance(task, len(run))
        return []

    refused = asyncio.run(go())
    if refused:
        err_console.print(
            shown(
                f"the store already has session(s) {', '.join(map(repr, refused[:_NAMED]))}; "
                "nothing was imported (--append-to-existing appends to them)"
            )
        )
        raise typer.Exit(EXIT_FAILED)
    err_console.print(shown(f"imported {total} item(s) into {len(sessions)} session(s)"))


_Item = tuple[str | None, dict[str, Any]]


def _runs(items: list[_Item]) -> Iterator[tuple[str | None, list[dict[str, Any]]]]:
    """Consecutive items of one agent, appended together (the store records one per batch)."""
    run: list[dict[str, Any]] = []
    agent: str | None = None
    for item_agent, item in items:
        if run and item_agent != agent:
            yield agent, run
            run = []
        agent = item_agent
        run.append(item)
    if run:
        yield agent, run


def _read_export(source: str) -> dict[str, list[_Item]]:
    """Each session's (agent, item) pairs in file order; a line that is not an export
    object is a usage error naming the line (nothing is written)."""
    if source == STDIN:
        return _sessions_of(sys.stdin)
    try:
        with open(source, encoding="utf-8") as stream:
            return _sessions_of(stream)
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot read {source}: {exc.strerror}", param_hint="FILE"
        ) from None


def _sessions_of(stream: TextIO) -> dict[str, list[_Item]]:
    sessions: dict[str, list[_Item]] = {}
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        record = _record(line, number)
        sessions.setdefault(record["session_id"], []).append((record.get("agent"), record["item"]))
    return sessions


def _record(line: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise typer.BadParameter(f"line {number} is not JSON ({exc})", param_hint="FILE") from None
    ok = (
        isinstance(record, dict)
        and isinstance(record.get("session_id"), str)
        and isinstance(record.get("item"), dict)
        and isinstance(record.get("agent"), str | None)
    )
    if not ok:
        raise typer.BadParameter(
            f'line {number} is not {{"session_id": "...", "item": {{...}}}} (what '
            "`sessions export` writes for several sessions)",
            param_hint="FILE",
        )
    return dict(record)
