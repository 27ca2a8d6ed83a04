"""`sessionstore keys`: generate, inspect, rotate and retire archive encryption keys."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from .._jobs._key_rotation import RotationReport, check_retirable, key_usage, rotate_keys
from .._security._crypto import KEY_FILE_ENV, Keyring, LocalKey
from ._common import ConfigOption, UrlOption, console, emit_json, open_store
from ._guard import command_group
from ._text import shown

keys_app = command_group(help="Archive encryption keys: generate, status, rotate, retire.")
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
KeyFileOption = Annotated[
    Path | None,
    typer.Option("--key-file", envvar=KEY_FILE_ENV, help="JSON key file (chmod 600)."),
]


def _replace_file(path: Path, keyring: Keyring) -> None:
    """Write the key file atomically (a crash never leaves a half-written key file)."""
    staging = path.with_name(f".{path.name}.new")
    try:
        staging.unlink(missing_ok=True)
        Keyring.write_file(staging, keyring)
        os.replace(staging, path)
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot write {path}: {exc.strerror}; pick a path in a writable directory",
            param_hint="--key-file",
        ) from None


@keys_app.command()
def generate(
    key_id: Annotated[str, typer.Argument(help="Id of the new key, e.g. k2026-11.")],
    key_file: KeyFileOption = None,
    activate: Annotated[bool, typer.Option(help="Make it the key new archives use.")] = True,
) -> None:
    """Add a new random key to the key file (created with mode 600 if missing)."""
    if key_file is None:
        raise typer.BadParameter("give --key-file or set SESSIONSTORE_KEY_FILE")
    new = LocalKey.generate(key_id)
    if key_file.exists():
        current = Keyring.from_file(key_file)
        if key_id in current.ids:
            raise typer.BadParameter(f"key {key_id!r} already exists in {key_file}")
        keys = [current.get(k) for k in current.ids] + [new]
        active = key_id if activate else current.active.key_id
    else:
        keys, active = [new], key_id
    _replace_file(key_file, Keyring(keys, active=active))
    console.print(shown(f"added key {key_id!r} to {key_file}; active key: {active!r}", "green"))


@keys_app.command()
def status(url: UrlOption = None, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Which keys are configured, which is active, what each protects (sealed archives plus
    sessions' payload and history-chain keys)."""

    async def go() -> tuple[Keyring | None, dict[str, int]]:
        async with open_store(url, config, read_only=True) as store:
            return store.keyring, await key_usage(store)

    keyring, usage = asyncio.run(go())
    configured = list(keyring.ids) if keyring else []
    active = keyring.active.key_id if keyring else None
    rows = [
        {
            "key_id": k,
            "active": k == active,
            "configured": k in configured,
            "uses": usage.get(k, 0),
        }
        for k in sorted(set(configured) | set(usage))
    ]
    if as_json:
        emit_json({"active": active, "keys": rows})
        return
    if keyring is None:
        console.print(shown("no keyring configured: new archives are stored unencrypted", "yellow"))
    table = Table(title="Keys (uses: sealed archives and session keys under each)")
    for column in ("key_id", "active", "configured", "uses"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(shown(value) for value in row.values()))
    console.print(table)


@keys_app.command()
def rotate(
    url: UrlOption = None,
    config: ConfigOption = None,
    batch_size: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="Archives per transaction.")
    ] = 200,
    as_json: JsonOption = False,
) -> None:
    """Rewrap every archive's data key under the active key (payloads are not decrypted)."""

    async def go() -> RotationReport:
        async with open_store(url, config) as store:
            with Progress(
                TextColumn("rewrapping"),
                BarColumn(),
                MofNCompleteColumn(),
                console=console,
                disable=as_json,
                transient=True,
            ) as bar:
                task = bar.add_task("rotate", total=None)

                def progress(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                return await rotate_keys(store, batch_size=batch_size, progress=progress)

    report = asyncio.run(go())
    if as_json:
        emit_json({"active": report.active, "rewrapped": report.rewrapped, "usage": report.usage})
        return
    console.print(
        shown(f"rewrapped {report.rewrapped} archive(s) under {report.active!r}", "green")
    )
    for key_id, count in sorted(report.usage.items()):
        console.print(shown(f"  {key_id}: {count} archive(s)"))


@keys_app.command()
def retire(
    key_id: Annotated[str, typer.Argument(help="The key to retire.")],
    url: UrlOption = None,
    config: ConfigOption = None,
    key_file: KeyFileOption = None,
) -> None:
    """Retire a key once no archive needs it (removes it from --key-file if given)."""

    async def go() -> Keyring | None:
        async with open_store(url, config) as store:
            await check_retirable(store, key_id)
            return store.keyring

    configured = asyncio.run(go())
    current = configured if key_file is None else Keyring.from_file(key_file)
    if current is None or key_id not in current.ids:
        where = "the configured keyring" if key_file is None else str(key_file)
        known = ", ".join(current.ids) if current else "none: no keyring is configured"
        raise typer.BadParameter(
            f"unknown key {key_id!r}: it is not in {where} (keys: {known})", param_hint="KEY_ID"
        )
    if key_file is None:
        console.print(
            shown(f"no archive needs {key_id!r}; remove it from SESSIONSTORE_KEYS", "green")
        )
        return
    if current.active.key_id == key_id:
        raise typer.BadParameter(f"{key_id!r} is the active key; activate another one first")
    _replace_file(
        key_file,
        Keyring([current.get(k) for k in current.ids if k != key_id], active=current.active.key_id),
    )
    console.print(shown(f"retired {key_id!r}: removed from {key_file}", "green"))
