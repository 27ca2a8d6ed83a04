"""`sessionstore doctor`: is everything this installation needs actually working?"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import urlparse

import sqlalchemy as sa
import typer
from rich.table import Table

from .._builders import build_event_bus, build_store
from .._config import SessionStoreConfig, TelemetrySettings, load_config
from .._errors import ConfigError, DatabaseNotFoundError, SessionStoreError
from .._jobs._key_rotation import key_usage, plain_archives
from .._jobs._sdk_first_access import SdkTablesStatus, sdk_tables_status
from .._storage._database import open_database
from .._storage._migrations import current_revision
from .._storage._revisions import head_revision, known_revisions
from .._storage._urls import resolve_url
from .._store import SessionStore
from .._tokens import estimator_for_model
from ._common import ConfigOption, UrlOption, console, emit_json, load_settings
from ._exit_codes import EXIT_FAILED
from ._lease_check import describe_leases, lease_rows
from ._text import shown


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str
    warning: bool = False  # works, but not as it should (e.g. archives stored unencrypted)


async def _database(url: str | None) -> list[Check]:
    try:
        database = open_database(resolve_url(url), read_only=True)  # look, never create
    except DatabaseNotFoundError as exc:
        return [Check("database", False, str(exc))]
    try:
        await database.read(lambda conn: conn.execute(sa.text("SELECT 1")).scalar_one())
    except Exception as exc:  # reachability is exactly what is being asked
        return [Check("database", False, f"cannot connect: {type(exc).__name__}: {exc}"[:200])]
    try:
        current = await current_revision(database)
        checks = [Check("database", True, "reachable"), _migrations(current)]
        checks.append(_sdk_tables(await database.read(sdk_tables_status)))
        if current == head_revision():
            ok, detail = describe_leases(await database.read(lease_rows))
            checks.append(Check("compaction leases", ok, detail))
    finally:
        await database.dispose()
    return checks


def _migrations(current: str | None) -> Check:
    head = head_revision()
    if current == head:
        return Check("migrations", True, f"at {current} (newest {head})")
    if current is not None and current not in known_revisions():
        return Check(
            "migrations",
            False,
            f"at {current}, which is newer than this sessionstore knows (newest {head}): "
            "the database was migrated by a newer release; upgrade sessionstore "
            "(pip install -U sessionstore)",
        )
    return Check(
        "migrations", False, f"at {current or 'nothing'}, needs {head}: run `sessionstore migrate`"
    )


def _sdk_tables(found: list[SdkTablesStatus]) -> Check:
    """The Agents SDK's own tables in this database, and the sessions only they hold."""
    if not found:
        return Check("agents sdk tables", True, "none")
    parts = []
    for status in found:
        names = f"{status.tables.sessions_table}/{status.tables.messages_table}"
        parts.append(
            f"{names}: {status.sessions} session(s), {status.only_there} still only there "
            f"({status.messages_only_there} message(s))"
        )
    pending = sum(status.only_there for status in found)
    hint = (
        "; SQLSession imports each on first access, `sessionstore import` all at once"
        if pending
        else "; every session is imported (docs/MIGRATION.md: dropping them)"
    )
    return Check("agents sdk tables", True, "; ".join(parts) + hint)


def _tokenizer(model: str) -> Check:
    estimator = estimator_for_model(model)
    source = getattr(estimator, "source", "?")
    if estimator.exact:
        return Check("tokenizer", True, f"{estimator.name} from {source}, offline")
    return Check("tokenizer", False, f"heuristic only: {getattr(estimator, 'fallback_reason', '')}")


async def _keys(url: str | None, settings: SessionStoreConfig | None) -> Check:
    try:  # exporters are checked on their own: a broken callback is not a key problem
        store = (
            SessionStore(url, read_only=True)
            if settings is None
            else build_store(
                settings.model_copy(update={"telemetry": TelemetrySettings(exporters=())}),
                read_only=True,
            )
        )
    except SessionStoreError as exc:
        return Check("keys", False, str(exc))
    async with store:
        usage = await key_usage(store)
        plain = await plain_archives(store)
    keyring = store.keyring
    missing = sorted(set(usage) - set(keyring.ids if keyring else ()))
    if missing:
        return Check(
            "keys", False, f"data sealed under {', '.join(missing)} but not in the keyring"
        )
    if keyring is None:
        stored = f"{plain} archive(s) hold" if plain else "archives will hold"
        return Check(
            "keys",
            True,
            f"no keyring: {stored} the originals compaction replaced, unencrypted; "
            "`sessionstore keys generate` makes one (docs/SECURITY.md)",
            warning=True,
        )
    sealed = f"active {keyring.active.key_id!r}; {sum(usage.values())} sealed"
    if plain:
        return Check(
            "keys",
            True,
            f"{sealed}; {plain} archive(s) written before the keyring are unencrypted: "
            "`sessionstore keys rotate` seals them",
            warning=True,
        )
    return Check("keys", True, sealed)


def _settings(url: str | None, config: Path | None) -> tuple[SessionStoreConfig | None, Check]:
    """The file's settings, or the defaults with the COMPACT_* environment applied."""
    try:
        settings = load_settings(url, config) or load_config()
    except ConfigError as exc:
        return None, Check("config", False, "; ".join(exc.problems))
    return settings, Check("config", True, str(config) if config else "defaults + environment")


def _target_database(
    url: str | None, config: Path | None, settings: SessionStoreConfig | None
) -> list[Check]:
    """Checks of the database the commands would use; none of a guessed one."""
    if config is not None and settings is None and url is None:
        # Probing the default would create ./sessionstore.db and report on the wrong database.
        return [
            Check(
                "database",
                False,
                "not checked: the config did not load, so its store.url is unknown "
                "(fix it, or give --url)",
            )
        ]
    return asyncio.run(_database(url if settings is None or config is None else settings.store.url))


def _exporters(settings: SessionStoreConfig) -> Check:
    """Can every configured exporter be built (callback importable, endpoints valid)?"""
    try:
        bus = build_event_bus(settings)
    except SessionStoreError as exc:
        return Check("exporters", False, str(exc))
    if bus is None:
        return Check("exporters", True, "none configured")
    bus.close()
    return Check("exporters", True, ", ".join(exporter.name for exporter in bus.exporters))


def _endpoints(settings: SessionStoreConfig) -> list[Check]:
    checks = []
    telemetry = settings.telemetry
    for name, value in (("otlp", telemetry.otlp_endpoint), ("ariadne", telemetry.ariadne_url)):
        if not value:
            continue
        parsed = urlparse(value)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((parsed.hostname or "", port), timeout=2):
                checks.append(Check(name, True, f"{parsed.hostname}:{port} accepts connections"))
        except OSError as exc:
            checks.append(Check(name, False, f"{parsed.hostname}:{port}: {exc}"))
    return checks


def doctor(
    url: UrlOption = None,
    config: ConfigOption = None,
    model: Annotated[
        str | None, typer.Option(help="Model whose tokenizer to check (default: the config's).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check the config, database, migrations, offline tokenizer, keys and exporter endpoints."""
    settings, loaded = _settings(url, config)
    checks = [loaded, *_target_database(url, config, settings)]
    checks.append(_tokenizer(model or (settings.model if settings else "gpt-4o")))
    if all(check.ok for check in checks[1:3]):
        checks.append(asyncio.run(_keys(url, settings if config else None)))
    if settings is not None:
        checks.append(_exporters(settings))
        checks.extend(_endpoints(settings))
    if as_json:
        emit_json([asdict(check) for check in checks])
    else:
        table = Table(title="sessionstore doctor")
        for column in ("check", "status", "detail"):
            table.add_column(column)
        for check in checks:
            status = (
                shown("FAIL", "red")
                if not check.ok
                else shown("warn", "yellow")
                if check.warning
                else shown("ok", "green")
            )
            table.add_row(shown(check.name), status, shown(check.detail))
        console.print(table)
    if not all(check.ok for check in checks):
        raise typer.Exit(EXIT_FAILED)
