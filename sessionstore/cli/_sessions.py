"""`sessionstore sessions show`, `rewind`, `fork`, and export and delete of one session.

What is printed is the stored data: redacted unless --no-redact, never read as markup,
and, on a pipe, neither wrapped nor cut. Only `rewind` and `delete` write.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.table import Table

from .._arguments import check_agent_name
from .._history._branches import Fork, has_branches_error
from .._history._time_travel import Rewind
from .._items import text_of
from .._jobs._sdk_source import sdk_tables_holding
from .._opaque import is_opaque, opaque_view
from .._redaction import Redactor, redaction_disabled_event
from .._rows import SessionInfo, StoredRow, visible_rows
from .._store import SessionStore
from ..compaction._summarizers._provider_marker import Bindings, bindings_of
from ._call_masking import CallMasking, call_masking
from ._common import (
    ConfigOption,
    RedactOption,
    UrlOption,
    console,
    err_console,
    is_terminal,
    iso_utc,
    open_store,
    record_audit,
)
from ._exit_codes import EXIT_FAILED
from ._output import (
    CsvFlag,
    JsonFlag,
    NlFlag,
    TsvFlag,
    chosen_format,
    emit_records,
)
from ._points import parse_point
from ._text import json_text, shown

JsonOption = JsonFlag  # what `verify` imports
HistoryOption = Annotated[
    bool, typer.Option("--history", help="Every row ever written, not just the active context.")
]
AsOfOption = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="The active context as it stood then: a seq (120), after a compaction (v3), "
        "before a turn (turn:5) or a time (2026-11-25T14:00:00Z).",
    ),
]
PREVIEW_CHARS = 80
MASKED_MARK: Final = "[sent masked] "


async def require_session(store: SessionStore, session_id: str) -> SessionInfo:
    """The session's row; an unknown id ends the command (exit 1) before anything is written."""
    info = await store.session_info(session_id)
    if info is None:
        held = await store.read_snapshot(sdk_tables_holding, session_id)
        where = store.safe_url
        hint = (
            f"the Agents SDK's {', '.join(held)} holds it: `sessionstore import '{where}' "
            f"--url '{where}'` brings it over (SQLSession imports it when it first opens it)"
            if held
            else "`sessionstore sessions list` shows the sessions there"
        )
        err_console.print(shown(f"no session {session_id!r} in {where}; {hint}"))
        raise typer.Exit(EXIT_FAILED)
    return info


def _in_range(row: StoredRow, seqs: str | None) -> bool:
    if seqs is None:
        return True
    start, _, end = seqs.partition("..")
    return (not start or row.seq >= int(start)) and (not end or row.seq <= int(end))


def _check_seqs(seqs: str | None) -> str | None:
    """`--seq 10..20`, `10..` or `..20`; anything else is a usage error."""
    if seqs is None:
        return None
    start, dots, end = seqs.partition("..")
    if not dots or not all(part.isdigit() for part in (start, end) if part):
        raise typer.BadParameter(
            f"{seqs!r} is not a range: use 10..20, 10.. or ..20", param_hint="--seq"
        )
    return seqs


def _rows(
    url: str | None,
    config: Path | None,
    session_id: str,
    history: bool,
    redact: bool,
    as_of: str | None = None,
    call: int | None = None,
    tail: int | None = None,
) -> tuple[list[StoredRow], Redactor, Bindings, CallMasking | None]:
    """The session's rows (with `tail`, the active context's last rows, read alone), the
    redactor to print them with (the config's patterns), the bindings of the opaque markers
    among them and (with `call`) what that call was sent masked."""
    if sum((history, as_of is not None, call is not None)) > 1:
        raise typer.BadParameter(
            "--history, --as-of and --call each choose the rows; give one of them",
            param_hint="--as-of",
        )
    point = None if as_of is None else parse_point(as_of, "--as-of")

    async def go() -> tuple[list[StoredRow], Redactor, SessionInfo, Bindings, CallMasking | None]:
        masking = None
        async with open_store(url, config, read_only=True) as store:
            info = await require_session(store, session_id)
            if call is not None:
                found, masking = await _call_input(store, session_id, call)
            elif point is not None:
                _, found = await store.rows_as_of(session_id, point)
            elif history:
                found = await store.history(session_id)
            else:
                found = await store.context_rows(session_id, tail)
            redactor = store.redactor if redact else Redactor(enabled=False)
            bindings = await bindings_of(store, found)
        if not redact:
            await record_audit(url, config, [redaction_disabled_event(session_id)])
        return found, redactor, info, bindings, masking

    rows, redactor, info, bindings, masking = asyncio.run(go())
    if not redact:
        err_console.print(shown("warning: redaction is off; secrets are printed as stored", "red"))
    if not rows:
        if history:  # only a branch that wrote nothing yet has no rows of its own
            why = (
                f"session {session_id!r} has no rows of its own yet: it shares "
                f"{info.parent_session_id!r}'s up to seq {info.fork_seq} (show that session "
                f"with --seq ..{info.fork_seq})"
            )
        else:
            when = "then" if as_of is not None else "(it was cleared)"
            why = (
                f"session {session_id!r} had no rows in its active context {when}; "
                "--history shows every row"
            )
        err_console.print(shown(why))
        raise typer.Exit(EXIT_FAILED)
    return rows, redactor, bindings, masking


async def _call_input(
    store: SessionStore, session_id: str, number: int
) -> tuple[list[StoredRow], CallMasking]:
    """The rows model call `number` was sent: the stored context then, and the items the
    run had not stored yet (stored right after); and which of them it was sent masked."""
    calls = await store.model_calls(session_id)
    found = [call for call in calls if call.call == number]
    if not found:
        err_console.print(shown(f"session {session_id!r} has no model call {number}"))
        raise typer.Exit(EXIT_FAILED)
    [call] = found
    if call.context_to_seq is None or call.unsaved_items is None:
        err_console.print(
            shown(
                f"model call {number} was recorded from its usage alone (no input_filter in "
                "the run), so what it was sent is unknown"
            )
        )
        raise typer.Exit(EXIT_FAILED)
    _, stored = await store.rows_as_of(session_id, call.context_to_seq)
    last = call.context_to_seq + call.unsaved_items
    after = [] if last == call.context_to_seq else (await store.rows_as_of(session_id, last))[1]
    unsaved = [row for row in after if call.context_to_seq < row.seq <= last]  # no history walk
    rows = [*visible_rows(stored), *unsaved]
    return rows, await call_masking(store, calls, number, rows)


def _check_agent(agent: str | None) -> None:
    """`--agent NAME`: a name the store could have stored, or a usage error saying why."""
    try:
        check_agent_name(agent)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agent") from None


def _of_agent(
    rows: list[StoredRow], agent: str, session_id: str, redactor: Redactor
) -> list[StoredRow]:
    """The rows `agent` produced (`WHERE agent = ...`); none ends the command (exit 1)."""
    chosen = [row for row in rows if row.agent == agent]
    if not chosen:
        named = sorted({redactor.text(row.agent) for row in rows if row.agent is not None})
        known = ", ".join(repr(name) for name in named) if named else "none"
        err_console.print(
            shown(
                f"no rows of session {session_id!r} here were produced by agent "
                f"{redactor.text(agent)!r} "
                f"(agents in these rows: {known}; --history reads every row)"
            )
        )
        raise typer.Exit(EXIT_FAILED)
    return chosen


def _window(rows: list[StoredRow], seqs: str | None, limit: int | None, tail: int | None) -> Any:
    """The rows asked for: a seq range, then the first `limit` or the last `tail`."""
    chosen = [row for row in rows if _in_range(row, seqs)]
    if tail is not None:
        chosen = chosen[-tail:]
    if limit is not None:
        chosen = chosen[:limit]
    if len(chosen) < len(rows):
        err_console.print(
            shown(f"note: {len(chosen)} of {len(rows)} rows shown (--seq/--limit/--tail)")
        )
    return chosen


def show(
    session_id: Annotated[str, typer.Argument(help="The session.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    history: HistoryOption = False,
    redact: RedactOption = True,
    seq: Annotated[
        str | None, typer.Option("--seq", help="Only rows in this seq range: 10..20, 10.., ..20.")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="The first N rows.")] = None,
    tail: Annotated[int | None, typer.Option(min=1, help="The last N rows.")] = None,
    as_of: AsOfOption = None,
    call: Annotated[
        int | None,
        typer.Option(
            "--call",
            min=1,
            help="The stored rows model call N was sent (see `usage`); outputs masking sent "
            "as a placeholder are marked.",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only the rows this agent produced (a multi-agent run)."),
    ] = None,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """The rows of a session: seq, kind, role/type, agent, tool, tokens and its text (a
    preview on a terminal; whole into a pipe)."""
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)
    seqs = _check_seqs(seq)
    _check_agent(agent)
    # A plain --tail of the active context reads only its tail (a 100,000-row session).
    plain = seqs is None and agent is None and not history and as_of is None and call is None
    alone = tail if plain else None
    found = _rows(url, config, session_id, history, redact, as_of, call, alone)
    rows, redactor, bindings, masking = found
    if agent is not None:
        rows = _of_agent(rows, agent, session_id, redactor)
    rows = _window(rows, seqs, limit, tail)
    if alone is not None and len(rows) == alone:
        err_console.print(shown(f"note: the last {alone} rows shown (--tail)"))
    marked = frozenset() if masking is None or masking.seqs is None else masking.seqs
    if masking is not None:
        _say_masking(masking, call)
    if fmt != "table":
        dicts = [_row_dict(row, redactor, bindings, opaque=True) for row in rows]
        if masking is not None:  # --call: whether the model got a placeholder for the row
            for row, shown_row in zip(rows, dicts, strict=True):
                shown_row["sent_masked"] = None if masking.seqs is None else row.seq in marked
        columns = [*_ROW_COLUMNS, *(["sent_masked"] if masking is not None else [])]
        emit_records(dicts, fmt, Table, columns=columns)
        return
    what = "history" if history else "active context"
    if call is not None:
        what = f"what model call {call} was sent"
    if agent is not None:
        what += f" of agent {redactor.text(agent)}"
    title = shown(f"{session_id}: {what}" + (f" as of {as_of}" if as_of else ""))
    preview = PREVIEW_CHARS if is_terminal() else None  # a pipe gets every word
    table = Table(title=title)
    for column in ("seq", "kind", "role/type", "agent", "tool", "tokens", "text"):
        table.add_column(column, justify="right" if column in ("seq", "tokens") else "left")
    for row in rows:
        text = " ".join(text_of(_shown_item(row, redactor, bindings, True)).split())
        if row.seq in marked:
            text = MASKED_MARK + text
        table.add_row(
            shown(row.seq),
            shown(row.kind),
            shown(row.role or row.item_type or ""),
            shown(redactor.text(row.agent or "")),
            shown(row.tool_name or ""),
            shown(row.tokens),
            shown(text[:preview]),
        )
    console.print(table)


def _say_masking(masking: CallMasking, call: int | None) -> None:
    """On stderr: which rows the call was sent as a placeholder (the original is shown)."""
    if masking.seqs is not None and not masking.seqs:
        return
    if masking.seqs is None:
        note = (
            f"note: the record of model call {call} does not say which rows, if any, it was "
            "sent as a masking placeholder (its estimate is under its rows' stored tokens); "
            "every row is shown as stored"
        )
    else:
        note = (
            f"note: model call {call} was sent {masking.outputs} tool output(s) as a masking "
            f"placeholder (seqs {', '.join(map(str, sorted(masking.seqs)))}, marked "
            f'{MASKED_MARK.strip()} / "sent_masked": true); the stored original is shown'
        )
    err_console.print(shown(note))


def _shown_item(
    row: StoredRow, redactor: Redactor, bindings: Bindings, opaque: bool
) -> dict[str, Any]:
    """The row's item as printed: an opaque provider item as what it is (type, id, provider,
    model, size) when `opaque` (always on screen; in exports unless redaction is off),
    anything else redacted."""
    if row.item is None:
        return {}
    if opaque and is_opaque(row.item):
        provider, model = bindings.get(row.compaction_id or 0, (None, None))
        return opaque_view(row.item, provider=provider, model=model)
    shown_item: dict[str, Any] = redactor.value(row.item)
    return shown_item


_ROW_COLUMNS: Final = (
    "seq",
    "kind",
    "role",
    "item_type",
    "agent",
    "tool_name",
    "call_id",
    "tokens",
    "ref_seq",
    "created_at",
    "item",
)


def _row_dict(
    row: StoredRow, redactor: Redactor, bindings: Bindings, *, opaque: bool
) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "kind": row.kind,
        "role": row.role,
        "item_type": row.item_type,
        "agent": None if row.agent is None else redactor.text(row.agent),
        "tool_name": row.tool_name,
        "call_id": row.call_id,
        "tokens": row.tokens,
        "ref_seq": row.ref_seq,
        "created_at": iso_utc(row.created_at),
        "item": _shown_item(row, redactor, bindings, opaque) if row.item else None,
    }


def export(
    session_id: Annotated[str, typer.Argument(help="The session.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    history: HistoryOption = False,
    output: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
    redact: RedactOption = True,
    as_of: AsOfOption = None,
) -> None:
    """JSON lines: the active context's items as the model sees them (with --history: every
    row, markers included; with --as-of: the context as it stood then)."""
    rows, redactor, bindings, _ = _rows(url, config, session_id, history, redact, as_of)
    if history:
        lines = [json_text(_row_dict(row, redactor, bindings, opaque=redact)) for row in rows]
    else:  # the active context's rows already hold what load_context would return
        context = visible_rows(rows)
        lines = [json_text(_shown_item(row, redactor, bindings, redact)) for row in context]
    text = "".join(line + "\n" for line in lines)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise typer.BadParameter(
                f"cannot write {output}: {exc.strerror}", param_hint="--output"
            ) from None
        err_console.print(shown(f"wrote {len(lines)} line(s) to {output}"))


def rewind(
    session_id: Annotated[str, typer.Argument(help="The session.")],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to go back to: a seq (120), after a compaction (v3), before a turn "
            "(turn:5) or a time (2026-11-25T14:00:00Z).",
        ),
    ],
    url: UrlOption = None,
    config: ConfigOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Rewind without asking.")] = False,
) -> None:
    """Make the active context what it was at a point of the session's history. Nothing is
    deleted: a marker row and copies of the items active then are appended."""
    point = parse_point(to, "--to")

    async def preview() -> tuple[int, int]:
        async with open_store(url, config, read_only=True) as store:
            await require_session(store, session_id)
            upto, rows = await store.rows_as_of(session_id, point)
            return upto, len(visible_rows(rows))

    upto, items = asyncio.run(preview())
    if not yes and not typer.confirm(
        f"rewind session {session_id!r} to seq {upto} ({items} items in context then)?"
    ):
        err_console.print(shown("nothing was changed"))
        raise typer.Exit(EXIT_FAILED)

    async def go() -> Rewind:
        async with open_store(url, config, create_tables=False) as store:
            return await store.rewind(session_id, point)

    done = asyncio.run(go())
    err_console.print(
        shown(
            f"rewound session {session_id!r} to seq {done.to_seq}: {done.items} items, "
            f"{done.tokens} tokens (marker row {done.marker_seq}; nothing was deleted)"
        )
    )


def fork(
    session_id: Annotated[str, typer.Argument(help="The session to branch from.")],
    to: Annotated[str, typer.Option("--to", help="The new branch's session id.")],
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Where to branch: a seq (120), after a compaction (v3), before a turn "
            "(turn:5) or a time (2026-11-25T14:00:00Z); default: the newest row.",
        ),
    ] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Start a new session as a branch of another at a point of its history. Nothing is
    copied: the branch shares its parent's rows up to that point."""
    point = None if at is None else parse_point(at, "--at")
    if not to.strip():
        raise typer.BadParameter("the new branch needs a session id", param_hint="--to")

    async def exists() -> None:  # read-only first: a mistyped --url creates no file
        async with open_store(url, config, read_only=True) as store:
            await require_session(store, session_id)

    async def go() -> Fork:
        async with open_store(url, config, create_tables=False) as store:
            return await store.fork(session_id, to, at=point)

    asyncio.run(exists())
    done = asyncio.run(go())
    err_console.print(
        shown(
            f"forked session {session_id!r} at seq {done.fork_seq} into {done.session_id!r}: "
            f"{done.items} items, {done.tokens} tokens shared (no rows copied)"
        )
    )


def delete(
    session_id: Annotated[str, typer.Argument(help="The session.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Delete without asking.")] = False,
) -> None:
    """Delete a session: its rows and events (its archives stay until retention removes
    them, and `archive show` still opens them)."""

    async def exists() -> tuple[SessionInfo, list[SessionInfo]]:
        async with open_store(url, config, read_only=True) as store:
            return await require_session(store, session_id), await store.branches(session_id)

    info, branches = asyncio.run(exists())
    if branches:  # refused before asking: the rows are shared
        raise has_branches_error(session_id, [branch.session_id for branch in branches])
    if not yes and not typer.confirm(
        f"delete session {session_id!r} ({info.context_items} items in context, "
        f"last seq {info.last_seq})?"
    ):
        err_console.print(shown("nothing was deleted"))
        raise typer.Exit(EXIT_FAILED)

    async def go() -> bool:
        async with open_store(url, config, create_tables=False) as store:
            return await store.delete_session(session_id)

    deleted = asyncio.run(go())
    err_console.print(shown(f"deleted session {session_id!r}" if deleted else "nothing to delete"))
