"""`sessionstore retention`: policies and the job that applies them.

Policies come from the database (`retention policy set`) and from the config file's
`retention.policies` (which win over a stored policy of the same name); `policy list`
shows both with their source, `run` applies both.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Final

import typer
from rich.table import Table

from .._jobs._retention import (
    RetentionAction,
    RetentionPolicy,
    RetentionReport,
    _tx_count,
    delete_policy,
    list_policies,
    run_retention,
    set_policy,
)
from .._store import SessionStore
from ._common import ConfigOption, UrlOption, console, emit_json, load_settings, open_store
from ._exit_codes import EXIT_FAILED
from ._guard import command_group
from ._output import CsvFlag, JsonFlag, NlFlag, TsvFlag, chosen_format, emit_records
from ._progress import progress_bar
from ._text import shown

retention_app = command_group(help="Retention: policies, and the job that applies them.")
policy_app = command_group(help="Create, list and delete retention policies.")
retention_app.add_typer(policy_app, name="policy")


async def effective_policies(
    store: SessionStore, url: str | None, config: Path | None
) -> list[tuple[RetentionPolicy, str]]:
    """Every policy with its source ("database" or "config"), by name; the config file's
    replace stored ones of the same name."""
    settings = load_settings(url, config)
    from_file = {p.name: p.to_policy() for p in (settings.retention.policies if settings else [])}
    stored = {p.name: p for p in await list_policies(store) if p.name not in from_file}
    both = [(p, "database") for p in stored.values()] + [(p, "config") for p in from_file.values()]
    return sorted(both, key=lambda pair: pair[0].name)


async def _rows_due(store: SessionStore, policies: list[RetentionPolicy], at: datetime) -> int:
    """What the enabled policies would touch now (the progress bar's total; overlapping
    policies may find less to do when run, and the bar then ends early)."""
    cutoffs = [(p, at - timedelta(days=p.older_than_days)) for p in policies if p.enabled]
    return sum([await store.read_snapshot(_tx_count, p, cutoff) for p, cutoff in cutoffs])


# A century is plenty; past ~739,000 days the cutoff (now - days) is before year 1 and every
# later `retention run` would fail on the stored policy.
MAX_DAYS: Final = 36_500
# What each action's count counts (a deleted session takes its rows with it).
_COUNTED: Final = {
    RetentionAction.PURGE_COMPACTED_PLAINTEXT: "rows",
    RetentionAction.DELETE_IDLE_SESSIONS: "sessions",
    RetentionAction.DELETE_ARCHIVES: "archives",
    RetentionAction.DELETE_EVENTS: "events",
}


@retention_app.command("run")
def run(
    url: UrlOption = None,
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count only; change nothing.")] = False,
    batch_size: Annotated[
        int,
        typer.Option(min=1, max=1_000_000, help="Rows per transaction.", show_default=True),
    ] = 500,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """Apply every enabled policy now (on PostgreSQL, sessionstore_apply_retention() too)."""
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)

    units: dict[str, str] = {}

    async def go() -> RetentionReport:
        async with open_store(url, config, read_only=dry_run) as store:
            policies = [policy for policy, _ in await effective_policies(store, url, config)]
            units.update({policy.name: _COUNTED[policy.action] for policy in policies})
            with progress_bar(quiet=as_json) as bar:
                at = datetime.now(UTC)
                # On a terminal, a real run counts first: the bar's total is the rows due.
                due = None if bar.disable or dry_run else await _rows_due(store, policies, at)
                task = bar.add_task("retention", total=due)
                done: dict[str, int] = {}

                def progress(name: str, rows: int) -> None:
                    done[name] = rows
                    bar.update(task, completed=sum(done.values()), description=name)

                return await run_retention(
                    store,
                    now=at,
                    dry_run=dry_run,
                    batch_size=batch_size,
                    policies=policies,
                    progress=progress,
                )

    report = asyncio.run(go())
    if as_json:  # one object, as before: the run's kind and the count of each policy
        emit_json({"dry_run": report.dry_run, "counts": report.counts})
        return
    if not report.counts and fmt == "table":
        console.print(
            shown(
                "No enabled retention policies; add one with `sessionstore retention policy set`."
            )
        )
        return
    records = [
        {"policy": name, "rows": count, "of": units.get(name, "rows"), "dry_run": report.dry_run}
        for name, count in report.counts.items()
    ]

    def table() -> Table:
        drawn = Table(title="Retention " + ("(dry run: nothing changed)" if dry_run else "run"))
        drawn.add_column("policy")
        drawn.add_column("would be affected" if dry_run else "affected", justify="right")
        for record in records:
            drawn.add_row(shown(record["policy"]), shown(f"{record['rows']:,} {record['of']}"))
        return drawn

    emit_records(records, fmt, table, columns=("policy", "rows", "of", "dry_run"))


@policy_app.command("set")
def set_(
    name: Annotated[str, typer.Argument(help="Policy name (replaces a policy of that name).")],
    action: Annotated[RetentionAction, typer.Option(help="What to do with old data.")],
    days: Annotated[
        int, typer.Option(min=1, max=MAX_DAYS, help="Older than this many days (1-36500).")
    ],
    delete_archives: Annotated[
        bool, typer.Option(help="delete_idle_sessions: delete their archives too.")
    ] = False,
    disabled: Annotated[bool, typer.Option(help="Store the policy but do not apply it.")] = False,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Create or replace a policy."""
    try:
        policy = RetentionPolicy(
            name, action, days, keep_archives=not delete_archives, enabled=not disabled
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAME") from None

    async def go() -> None:
        async with open_store(url, config) as store:
            await set_policy(store, policy)

    asyncio.run(go())
    console.print(shown(f"policy {name!r}: {action.value} older than {days} days", "green"))


@policy_app.command("list")
def list_(
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
    as_nl: NlFlag = False,
    as_csv: CsvFlag = False,
    as_tsv: TsvFlag = False,
) -> None:
    """List the policies."""
    fmt = chosen_format(as_json, as_nl, as_csv, as_tsv)

    async def go() -> list[tuple[RetentionPolicy, str]]:
        async with open_store(url, config, read_only=True) as store:
            return await effective_policies(store, url, config)

    rows = [
        {
            "name": p.name,
            "action": p.action.value,
            "older_than_days": p.older_than_days,
            "keep_archives": p.keep_archives,
            "enabled": p.enabled,
            "source": source,
        }
        for p, source in asyncio.run(go())
    ]
    columns = ("name", "action", "older_than_days", "keep_archives", "enabled", "source")

    def table() -> Table:
        drawn = Table(title="Retention policies")
        for column in columns:
            drawn.add_column(column)
        for row in rows:
            drawn.add_row(*(shown(value) for value in row.values()))
        return drawn

    emit_records(rows, fmt, table, columns=columns)


@policy_app.command("delete")
def delete(name: str, url: UrlOption = None, config: ConfigOption = None) -> None:
    """Delete a policy."""

    async def go() -> bool:
        async with open_store(url, config) as store:
            return await delete_policy(store, name)

    if not asyncio.run(go()):
        console.print(shown(f"no policy named {name!r}", "red"))
        raise typer.Exit(EXIT_FAILED)
    console.print(shown(f"deleted policy {name!r}"))
