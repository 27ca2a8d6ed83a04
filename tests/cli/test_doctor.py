"""`sessionstore doctor`: every FAIL exits 1 (docs/OBSERVABILITY.md), a bad config included."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from sessionstore import SessionStore
from sessionstore._store._compaction_leases import tx_take_lease
from tests.support.cli import BAD_CONFIG_PROBLEM, NO_KEYS, run


def _checks(result: Result) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in json.loads(result.stdout)}


def test_healthy_installation(seeded: str) -> None:
    result = run("doctor", "--url", seeded, "--json", env={"SESSIONSTORE_KEYS": ""})
    checks = _checks(result)
    assert result.exit_code == 0, result.output
    assert checks["database"]["ok"] and checks["migrations"]["ok"]
    assert checks["tokenizer"]["ok"] and "offline" in checks["tokenizer"]["detail"]
    assert "unencrypted" in checks["keys"]["detail"] and checks["keys"]["warning"]
    assert "1 archive(s) hold" in checks["keys"]["detail"]  # "work" was compacted once
    table = run("doctor", "--url", seeded, env={"SESSIONSTORE_KEYS": ""})
    assert "warn" in table.stdout and "FAIL" not in table.stdout


def test_archives_written_before_the_keyring_are_flagged_until_rotated(
    seeded: str, tmp_path: Path
) -> None:
    key_file = tmp_path / "keys.txt"
    generated = run("keys", "generate", "k1", "--key-file", str(key_file))
    assert generated.exit_code == 0, generated.output
    env = {"SESSIONSTORE_KEY_FILE": str(key_file), "SESSIONSTORE_KEYS": ""}
    keys = _checks(run("doctor", "--url", seeded, "--json", env=env))["keys"]
    assert keys["warning"] and "1 archive(s) written before the keyring" in keys["detail"]
    assert run("keys", "rotate", "--url", seeded, env=env).exit_code == 0
    keys = _checks(run("doctor", "--url", seeded, "--json", env=env))["keys"]
    assert keys["ok"] and not keys["warning"] and "1 sealed" in keys["detail"]


def test_unreachable_database_and_endpoint_fail() -> None:
    result = run(
        "doctor",
        "--url",
        "postgresql://postgres@127.0.0.1:1/none",
        "--json",
        env={"COMPACT_OTLP_ENDPOINT": "http://127.0.0.1:1/v1/traces"},
    )
    assert result.exit_code == 1
    checks = _checks(result)
    assert not checks["database"]["ok"] and not checks["otlp"]["ok"]


def test_the_config_check_names_the_file_and_its_database(config_file: Path) -> None:
    result = run("doctor", "--config", str(config_file), "--json", env=NO_KEYS)
    assert result.exit_code == 0, result.output
    checks = _checks(result)
    assert checks["config"] == {
        "name": "config",
        "ok": True,
        "detail": str(config_file),
        "warning": False,
    }
    assert checks["migrations"]["ok"] and checks["keys"]["ok"]


def test_an_invalid_config_fails_its_check_by_field_path(
    bad_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("doctor", "--config", str(bad_config), "--json")
    assert result.exit_code == 1
    checks = _checks(result)
    assert not checks["config"]["ok"] and BAD_CONFIG_PROBLEM in checks["config"]["detail"]
    assert not checks["database"]["ok"] and "not checked" in checks["database"]["detail"]
    assert "sessionstore.db" not in os.listdir(tmp_path)  # no default database was made


def test_a_missing_config_fails_its_check(seeded: str, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    result = run("doctor", "--config", str(missing), "--url", seeded, "--json")
    assert result.exit_code == 1
    checks = _checks(result)
    assert "cannot read the file" in checks["config"]["detail"]
    assert checks["database"]["ok"]  # --url still names a database to check


def test_a_broken_callback_fails_the_exporters_check_not_keys(
    seeded: str, write_config: Callable[..., Path]
) -> None:
    path = write_config(
        seeded, telemetry={"exporters": ["callback"], "callback": "no_such_module_xyz:collect"}
    )
    result = run("doctor", "--config", str(path), "--json", env=NO_KEYS)
    assert result.exit_code == 1
    checks = _checks(result)
    assert checks["keys"]["ok"], checks["keys"]
    assert not checks["exporters"]["ok"]
    assert "telemetry.callback cannot be imported" in checks["exporters"]["detail"]


def test_configured_exporters_are_listed(seeded: str, write_config: Callable[..., Path]) -> None:
    path = write_config(seeded, telemetry={"exporters": ["console"]})
    checks = _checks(run("doctor", "--config", str(path), "--json", env=NO_KEYS))
    assert checks["exporters"] == {
        "name": "exporters",
        "ok": True,
        "detail": "console",
        "warning": False,
    }


def _lease(url: str, session_id: str, holder: str, acquired: datetime, lease_s: float) -> None:
    async def take() -> None:
        async with SessionStore(url) as store:
            grant = await store.write_transaction(
                tx_take_lease, session_id, holder, acquired, lease_s
            )
            assert grant.outcome == "granted"

    asyncio.run(take())


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_lease_held_by_a_process_that_is_gone_fails_its_check(seeded: str) -> None:
    now = datetime.now(UTC)
    _lease(seeded, "work", f"{socket.gethostname()}:{_gone_pid()}:dead", now, 300.0)
    _lease(seeded, "other", "elsewhere:1:old", now - timedelta(hours=1), 60.0)
    result = run("doctor", "--url", seeded, "--json", env={"SESSIONSTORE_KEYS": ""})
    assert result.exit_code == 1, result.output
    check = _checks(result)["compaction leases"]
    assert not check["ok"]
    assert "2 held, 1 expired" in check["detail"] and "'work'" in check["detail"]
    assert "sessionstore compact SESSION" in check["detail"]


def test_leases_of_live_or_other_hosts_processes_pass(seeded: str) -> None:
    now = datetime.now(UTC)
    _lease(seeded, "work", f"{socket.gethostname()}:{os.getpid()}:live", now, 300.0)
    _lease(seeded, "other", f"another-host:{_gone_pid()}:x", now, 300.0)
    result = run("doctor", "--url", seeded, "--json", env={"SESSIONSTORE_KEYS": ""})
    check = _checks(result)["compaction leases"]
    assert result.exit_code == 0, result.output
    assert check["ok"] and check["detail"].startswith("2 held, 0 expired")
