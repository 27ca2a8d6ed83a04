"""`sessionstore doctor`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sessionstore.cli import app

runner = CliRunner()


def test_healthy_installation(seeded: str) -> None:
    result = runner.invoke(
        app, ["doctor", "--url", seeded, "--json"], env={"SESSIONSTORE_KEYS": ""}
    )
    checks = {check["name"]: check for check in json.loads(result.output)}
    assert result.exit_code == 0, result.output
    assert checks["database"]["ok"] and checks["migrations"]["ok"]
    assert checks["tokenizer"]["ok"] and "offline" in checks["tokenizer"]["detail"]
    assert "unencrypted" in checks["keys"]["detail"]


def test_unreachable_database_and_endpoint_fail(tmp_path: object) -> None:
    result = runner.invoke(
        app,
        ["doctor", "--url", "postgresql://postgres@127.0.0.1:1/none", "--json"],
        env={"COMPACT_OTLP_ENDPOINT": "http://127.0.0.1:1/v1/traces"},
    )
    assert result.exit_code == 1
    checks = {check["name"]: check for check in json.loads(result.output)}
    assert not checks["database"]["ok"] and not checks["otlp"]["ok"]
