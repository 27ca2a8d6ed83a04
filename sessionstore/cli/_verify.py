"""`sessionstore verify [SESSION]`: prove histories against their hash chains.

Reads only. Exit 0 when every checked session is intact, 1 when any row was edited,
moved, injected or deleted, or a context start or an encrypted row was tampered with.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Annotated

import typer

from .._history._verify import ChainReport
from .._store import SessionStore
from ._common import ConfigOption, UrlOption, console, emit_json, open_store
from ._exit_codes import EXIT_FAILED
from ._sessions import JsonOption, require_session
from ._text import shown

_PAGE = 1000


async def _all_reports(store: SessionStore) -> list[ChainReport]:
    reports: list[ChainReport] = []
    offset = 0
    while True:
        page = await store.list_sessions(limit=_PAGE, offset=offset)
        reports += [await store.verify_history(info.session_id) for info in page]
        if len(page) < _PAGE:
            return reports
        offset += _PAGE


def _summary(report: ChainReport) -> str:
    chain = (
        "no chain"
        if report.chain_start_seq is None
        else f"chained from seq {report.chain_start_seq}"
    )
    keyed = "keyed" if report.keyed else "unkeyed"
    extra = f", {report.purged} purged" if report.purged else ""
    return f"{report.rows} rows, {chain}, {keyed}{extra}"


def verify(
    session_id: Annotated[
        str | None, typer.Argument(help="One session; every session when omitted.")
    ] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check sessions' histories against their hash chains (reads only).

    Finds rows edited, moved, injected or deleted, a moved context start, and plain rows
    in an encrypted session. Exit 1 when anything was found.
    """

    async def go() -> list[ChainReport]:
        async with open_store(url, config, read_only=True) as store:
            if session_id is None:
                return await _all_reports(store)
            await require_session(store, session_id)
            return [await store.verify_history(session_id)]

    reports = asyncio.run(go())
    if as_json:
        emit_json([{**asdict(report), "ok": report.ok} for report in reports])
    else:
        for report in reports:
            status = shown("ok      ", "green") if report.ok else shown("TAMPERED", "bold red")
            line = status + shown(f"  {report.session_id}  ") + shown(_summary(report), "dim")
            console.print(line)
            for problem in report.problems:
                console.print(shown(f"    problem: {problem}", "red"))
            for warning in report.warnings:
                console.print(shown(f"    note: {warning}", "yellow"))
        bad = sum(not report.ok for report in reports)
        console.print(shown(f"{len(reports)} session(s) checked, {bad} with problems"))
    if any(not report.ok for report in reports):
        raise typer.Exit(EXIT_FAILED)
