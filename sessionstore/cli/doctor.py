"""`sessionstore doctor`: is everything this installation needs actually working?"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from dataclasses import asdict, dataclass
from typing import Annotated
from urllib.parse import urlparse

import sqlalchemy as sa
import typer
from rich.table import Table

from ..archive.rotation import key_usage
from ..crypto import Keyring
from ..database import open_database, resolve_url
from ..errors import SessionStoreError
from ..migrations import current_revision, head_revision
from ..store import SessionStore
from ..tokens import estimator_for_model
from .common import EXIT_FAILED, UrlOption, console

# Exporter endpoints doctor can reach-test, by the environment variable that configures them.
ENDPOINT_VARIABLES = ("COMPACT_OTLP_ENDPOINT", "COMPACT_ARIADNE_URL")


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str


async def _database(url: str | None) -> list[Check]:
    database = open_database(resolve_url(url))
    try:
        await database.read(lambda conn: conn.execute(sa.text("SELECT 1")).scalar_one())
    except Exception as exc:  # reachability is exactly what is being asked
        return [Check("database", False, f"cannot connect: {type(exc).__name__}: {exc}"[:200])]
    try:
        current = await current_revision(database)
    finally:
        await database.dispose()
    head = head_revision()
    state = Check(
        "migrations",
        current == head,
        f"at {current} (newest {head})"
        if current == head
        else f"at {current or 'nothing'}, needs {head}: run `sessionstore migrate`",
    )
    return [Check("database", True, "reachable"), state]


def _tokenizer(model: str) -> Check:
    estimator = estimator_for_model(model)
    source = getattr(estimator, "source", "?")
    if estimator.exact:
        return Check("tokenizer", True, f"{estimator.name} from {source}, offline")
    return Check("tokenizer", False, f"heuristic only: {getattr(estimator, 'fallback_reason', '')}")


async def _keys(url: str | None) -> Check:
    try:
        keyring = Keyring.load()
    except SessionStoreError as exc:
        return Check("keys", False, str(exc))
    async with SessionStore(url) as store:
        usage = await key_usage(store)
    missing = sorted(set(usage) - set(keyring.ids if keyring else ()))
    if missing:
        return Check(
            "keys", False, f"data sealed under {', '.join(missing)} but not in the keyring"
        )
    if keyring is None:
        return Check("keys", True, "no keyring: archives are stored unencrypted")
    return Check("keys", True, f"active {keyring.active.key_id!r}; {sum(usage.values())} sealed")


def _endpoints() -> list[Check]:
    checks = []
    for variable in ENDPOINT_VARIABLES:
        value = os.environ.get(variable)
        if not value:
            continue
        parsed = urlparse(value)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((parsed.hostname or "", port), timeout=2):
                checks.append(
                    Check(variable, True, f"{parsed.hostname}:{port} accepts connections")
                )
        except OSError as exc:
            checks.append(Check(variable, False, f"{parsed.hostname}:{port}: {exc}"))
    return checks


def doctor(
    url: UrlOption = None,
    model: Annotated[str, typer.Option(help="Model whose tokenizer to check.")] = "gpt-4o",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check the database, migrations, offline tokenizer, keys and exporter endpoints."""
    checks = asyncio.run(_database(url))
    checks.append(_tokenizer(model))
    if all(check.ok for check in checks[:2]):
        checks.append(asyncio.run(_keys(url)))
    checks.extend(_endpoints())
    if as_json:
        console.print_json(json.dumps([asdict(check) for check in checks]))
    else:
        table = Table(title="sessionstore doctor")
        for column in ("check", "status", "detail"):
            table.add_column(column)
        for check in checks:
            table.add_row(check.name, "[green]ok" if check.ok else "[red]FAIL", check.detail)
        console.print(table)
    if not all(check.ok for check in checks):
        raise typer.Exit(EXIT_FAILED)
