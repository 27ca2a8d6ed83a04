"""`sessionstore events`: the decision log, filtered, optionally followed as it grows."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import sqlalchemy as sa
import typer

from ..schema import events as events_table
from ..store import SessionStore
from .common import ConfigOption, UrlOption, console, err_console, open_store

_FIELDS = (
    "t_est",
    "max_tokens",
    "triggered",
    "pruned_count",
    "summary_tokens",
    "error_type",
    "fallback",
)


async def _fetch(
    store: SessionStore,
    *,
    after_id: int,
    session: str | None,
    kind: str | None,
    since: datetime | None,
    limit: int,
) -> list[dict[str, Any]]:
    query = sa.select(events_table).where(events_table.c.id > after_id).order_by(events_table.c.id)
    if session is not None:
        query = query.where(events_table.c.session_id == session)
    if kind is not None:
        query = query.where(events_table.c.event.like(kind.replace("*", "%")))
    if since is not None:
        query = query.where(events_table.c.ts >= _utc(since))
    async with store.engine.connect() as conn:
        rows = (await conn.execute(query.limit(limit))).all()
    return [dict(row._mapping) for row in rows]


def _utc(moment: datetime) -> datetime:
    """Events are stored in UTC (SQLite keeps no offset): compare in UTC; naive means UTC."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _line(row: dict[str, Any]) -> str:
    fields = " ".join(f"{name}={row[name]}" for name in _FIELDS if row.get(name) is not None)
    ts = row["ts"].isoformat(timespec="seconds") if isinstance(row["ts"], datetime) else row["ts"]
    session = row["session_id"] or "-"
    return f"{row['id']:>6} {ts} {row['severity']:<7} {row['event']:<26} {session} {fields}"


def _nothing_found(session: str | None, kind: str | None, since: datetime | None) -> str:
    """An empty answer that says which question it answered (a mistyped --type, say)."""
    given = [
        f"{option} {value!r}" if isinstance(value, str) else f"{option} {value}"
        for option, value in (("--session", session), ("--type", kind), ("--since", since))
        if value is not None
    ]
    return f"no events match {' '.join(given)}" if given else "no events recorded yet"


def events(
    url: UrlOption = None,
    config: ConfigOption = None,
    session: Annotated[str | None, typer.Option(help="Only this session.")] = None,
    kind: Annotated[
        str | None, typer.Option("--type", help="Event name; * wildcard (compact.*).")
    ] = None,
    since: Annotated[
        datetime | None,
        typer.Option(help="Only events at or after (ISO 8601; no offset means UTC)."),
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="At most this many (per poll).")
    ] = 200,
    follow: Annotated[bool, typer.Option("--follow", help="Keep printing new events.")] = False,
    follow_seconds: Annotated[
        float | None, typer.Option(min=0, help="With --follow: stop after this many seconds.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
) -> None:
    """Print stored events (the source of truth every exporter reads)."""

    def show(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if as_json:
                payload = (
                    row["payload"]
                    if isinstance(row["payload"], dict)
                    else json.loads(row["payload"])
                )
                print(json.dumps({"id": row["id"], **payload}, default=str), flush=True)
            else:
                console.print(_line(row), highlight=False)

    async def go() -> None:
        async with open_store(url, config) as store:
            last = 0
            deadline = None if follow_seconds is None else time.monotonic() + follow_seconds
            while True:
                rows = await _fetch(
                    store, after_id=last, session=session, kind=kind, since=since, limit=limit
                )
                show(rows)
                if not rows and not follow and not as_json:
                    err_console.print(_nothing_found(session, kind, since))
                last = rows[-1]["id"] if rows else last
                if not follow or (deadline is not None and time.monotonic() >= deadline):
                    return
                if len(rows) < limit:
                    await asyncio.sleep(0.5)

    try:
        asyncio.run(go())
    except KeyboardInterrupt:  # --follow ends with Ctrl-C
        return
