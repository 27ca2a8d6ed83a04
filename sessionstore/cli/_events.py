"""`sessionstore events`: the decision log, newest first by default, optionally followed.

The pre-flight estimates that changed nothing (most rows of a busy database) are hidden
unless asked for (`--all`, or `--type` naming them). Warnings and errors show their
message and are coloured on a terminal. Stored text is printed verbatim, never as markup.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Final

import sqlalchemy as sa
import typer
from rich.text import Text

from .._redaction import Redactor
from .._schema import events as events_table
from .._store import SessionStore
from .._times import as_utc
from ._common import ConfigOption, UrlOption, console, err_console, iso_utc, open_store
from ._output import (
    CsvFlag,
    JsonFlag,
    NlFlag,
    TsvFlag,
    chosen_format,
    json_value,
    records_text,
    write_text,
)
from ._text import json_text, shown

_FIELDS: Final = (
    "t_est",
    "max_tokens",
    "triggered",
    "pruned_count",
    "summary_tokens",
    "error_type",
    "fallback",
)
_SEVERITY_STYLE: Final = {
    "warning": "yellow",
    "error": "red",
    "high": "bold red",  # redaction turned off (_redaction.redaction_disabled_event)
    "critical": "bold red",
}
IDLE_EVENTS: Final = ("compact.token_estimate", "compact.trigger_decision")
_IDLE: Final = sa.or_(
    events_table.c.event == "compact.token_estimate",
    sa.and_(
        events_table.c.event == "compact.trigger_decision",
        sa.func.coalesce(events_table.c.triggered, sa.false()) == sa.false(),
    ),
)


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events a listing answers for."""

    session: str | None
    kind: str | None
    since: datetime | None
    include_idle: bool

    def where(self, query: sa.Select[Any]) -> sa.Select[Any]:
        """`query` narrowed to these events."""
        if self.session is not None:
            query = query.where(events_table.c.session_id == self.session)
        if self.kind is not None:
            query = query.where(events_table.c.event.like(self.kind.replace("*", "%")))
        if self.since is not None:
            query = query.where(events_table.c.ts >= _utc(self.since))
        if not self.include_idle:
            query = query.where(sa.not_(_IDLE))
        return query

    def nothing_found(self) -> str:
        """An empty answer that says which question it answered (a mistyped --type, say)."""
        given = [
            f"{option} {value!r}" if isinstance(value, str) else f"{option} {value}"
            for option, value in (
                ("--session", self.session),
                ("--type", self.kind),
                ("--since", self.since),
            )
            if value is not None
        ]
        return f"no events match {' '.join(given)}" if given else "no events recorded yet"


async def _newest(
    store: SessionStore, chosen: EventFilter, limit: int
) -> tuple[list[dict[str, Any]], int, int]:
    """The newest `limit` matching events (oldest first), how many older ones match, and
    how many idle ones are hidden."""
    query = chosen.where(sa.select(events_table)).order_by(events_table.c.id.desc()).limit(limit)
    async with store.engine.connect() as conn:
        rows = [dict(row._mapping) for row in (await conn.execute(query)).all()][::-1]
        older = 0
        if rows:
            count = chosen.where(sa.select(sa.func.count()).select_from(events_table))
            older = (await conn.execute(count.where(events_table.c.id < rows[0]["id"]))).scalar()
        hidden = 0
        if not chosen.include_idle:
            everything = EventFilter(chosen.session, chosen.kind, chosen.since, True)
            idle = everything.where(sa.select(sa.func.count()).select_from(events_table))
            hidden = (await conn.execute(idle.where(_IDLE))).scalar()
    return rows, int(older or 0), int(hidden or 0)


async def _after(
    store: SessionStore, chosen: EventFilter, after_id: int, limit: int
) -> list[dict[str, Any]]:
    query = chosen.where(sa.select(events_table)).where(events_table.c.id > after_id)
    async with store.engine.connect() as conn:
        rows = (await conn.execute(query.order_by(events_table.c.id).limit(limit))).all()
    return [dict(row._mapping) for row in rows]


def _utc(moment: datetime) -> datetime:
    """Events are stored in UTC (SQLite keeps no offset): compare in UTC; naive means UTC."""
    return as_utc(moment).astimezone(UTC)


def _payload(row: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    payload = row["payload"]
    found = payload if isinstance(payload, dict) else json.loads(payload)
    shown_payload: dict[str, Any] = redactor.value(found)  # it may quote stored text
    return shown_payload


# Payload keys the line already shows (as columns or in front), not repeated in details.
_SHOWN_KEYS: Final = frozenset(
    {"ts", "session_id", "event", "severity", "reason", "message", "max", *_FIELDS}
)


def _details(payload: dict[str, Any]) -> dict[str, Any]:
    """What a warning or an error says besides its columns, reason and message."""
    return {k: v for k, v in payload.items() if k not in _SHOWN_KEYS and v is not None}


def _line(row: dict[str, Any], redactor: Redactor) -> Text:
    fields = " ".join(f"{name}={row[name]}" for name in _FIELDS if row.get(name) is not None)
    ts = iso_utc(row["ts"]) if isinstance(row["ts"], datetime) else str(row["ts"])
    session = row["session_id"] or "-"
    text = f"{row['id']:>6} {ts} {row['severity']:<7} {row['event']:<26} {session} {fields}"
    payload = _payload(row, redactor)
    if isinstance(payload.get("reason"), str):  # why it was decided, discarded, taken over
        text += f" reason={payload['reason']}"
    if payload.get("message"):  # whatever its severity, an event that says what, says it
        text += f" message={payload['message']}"
    if row["severity"] in _SEVERITY_STYLE:  # a warning or an error says with what, too
        details = _details(payload)
        if details:
            text += f" details={json_text(details, compact=True)}"
    return shown(text.rstrip(), _SEVERITY_STYLE.get(row["severity"], ""))


def _record(row: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The event as --json/--nl give it: its id, its stored payload, its time."""
    ts = iso_utc(row["ts"]) if isinstance(row["ts"], datetime) else row["ts"]
    return {"id": row["id"], **_payload(row, redactor), "ts": ts}


_CSV_COLUMNS: Final = ("id", "ts", "severity", "event", "session_id", *_FIELDS)


def _csv_record(row: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The event as --csv/--tsv give it: fixed columns, then reason, message and details."""
    payload = _payload(row, redactor)
    ts = iso_utc(row["ts"]) if isinstance(row["ts"], datetime) else row["ts"]
    return {
        **{name: row.get(name) for name in _CSV_COLUMNS},
        "ts": ts,
        "reason": payload.get("reason"),
        "message": payload.get("message"),
        "details": _details(payload) or None,
    }


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
        int,
        typer.Option(
            min=1,
            max=1_000_000,
            help="The newest N (a note counts the older).",
            show_default=True,
        ),
    ] = 50,
    include_idle: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Also the pre-flight estimates that changed nothing (hidden by default).",
        ),
    ] = False,
    follow: Annotated[
        bool, typer.Option("--follow", help="After the newest, keep printing new events.")
    ] = False,
    follow_seconds: Annotated[
        float | None, typer.Option(min=0, help="With --follow: stop after this many seconds.")
    ] = None,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """Print stored events (the source of truth every exporter reads), newest last; a
    warning or an error with its message and details. Secrets in them are redacted."""
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)
    if follow and fmt == "json":
        raise typer.BadParameter(
            "--follow never ends a JSON array: use --nl (one JSON object per line)",
            param_hint="--json",
        )
    asks_for_idle = kind is not None and any(
        name.startswith(kind.replace("*", "")) for name in IDLE_EVENTS
    )
    chosen = EventFilter(session, kind, since, include_idle or asks_for_idle)
    header = [fmt in ("csv", "tsv")]

    def show(rows: list[dict[str, Any]], redactor: Redactor) -> None:
        if fmt == "table":
            for row in rows:
                console.print(_line(row, redactor))
        elif fmt in ("json", "nl"):
            records = [_record(row, redactor) for row in rows]
            if fmt == "nl":
                write_text("".join(json_text(r, default=json_value) + "\n" for r in records))
            else:
                write_text(json_text(records, indent=2, default=json_value) + "\n")
        else:
            records = [_csv_record(row, redactor) for row in rows]
            names = [*_CSV_COLUMNS, "reason", "message", "details"]
            text = records_text(names, [[r[n] for n in names] for r in records], fmt)
            if not header[0]:
                text = text.split("\n", 1)[1]  # the header once, before the first rows
            header[0] = False
            write_text(text)
        sys.stdout.flush()

    async def go() -> None:
        async with open_store(url, config, read_only=True) as store:
            redactor = store.redactor
            rows, older, hidden = await _newest(store, chosen, limit)
            show(rows, redactor)
            _notes(chosen, rows, older, hidden, limit)
            last = rows[-1]["id"] if rows else 0
            deadline = None if follow_seconds is None else time.monotonic() + follow_seconds
            while follow and (deadline is None or time.monotonic() < deadline):
                rows = await _after(store, chosen, last, limit)
                show(rows, redactor)
                last = rows[-1]["id"] if rows else last
                if len(rows) < limit:
                    await asyncio.sleep(0.5)

    try:
        asyncio.run(go())
    except KeyboardInterrupt:  # --follow ends with Ctrl-C
        return


def _notes(
    chosen: EventFilter, rows: list[dict[str, Any]], older: int, hidden: int, limit: int
) -> None:
    """What the listing left out, on stderr (so pipes get only events)."""
    if not rows:
        err_console.print(shown(chosen.nothing_found()))
    if older:
        err_console.print(
            shown(f"note: {older} older event(s) not shown (--limit {limit + older} shows them)")
        )
    if hidden:
        err_console.print(
            shown(f"note: {hidden} idle pre-flight estimate(s) hidden (--all shows them)")
        )
