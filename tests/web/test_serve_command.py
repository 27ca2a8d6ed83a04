"""`sessionstore serve`: refuses to listen beyond loopback without a token, requires the
token it was given on every request, and reads a store it never writes."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.cli import run
from tests.support.servers import free_port
from tests.support.viewer import seeded


def test_another_host_without_a_token_refuses_to_start(sqlite_url: str) -> None:
    result = run("serve", "--url", sqlite_url, "--host", "0.0.0.0")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--token" in lines[0] and "0.0.0.0" in lines[0]


def test_a_malformed_token_is_refused(sqlite_url: str) -> None:
    result = run("serve", "--url", sqlite_url, "--token", "short")
    assert result.exit_code == 2 and "--token" in result.output


def test_a_missing_database_is_an_error_not_a_new_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = run("serve", "--url", str(missing))
    assert result.exit_code != 0 and not missing.exists()


@contextmanager
def _serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    env = {k: v for k, v in os.environ.items() if k != "SESSIONSTORE_URL"}
    process = subprocess.Popen(
        [sys.executable, "-m", "sessionstore.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        assert "sessionstore viewer (read-only) on" in first, process.stderr.read()
        yield process, first
    finally:
        process.terminate()
        process.wait(10)


def _get(url: str, **kwargs: object) -> httpx.Response:
    deadline = time.monotonic() + 10
    while True:
        try:
            return httpx.get(url, timeout=5, **kwargs)  # type: ignore[arg-type]
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_with_a_token_every_request_needs_it(sqlite_url: str) -> None:
    port = free_port()
    token = "viewer-token-0123456789"
    with _serving(
        "--url", seeded(sqlite_url), "--host", "0.0.0.0", "--port", str(port), "--token", token
    ):
        base = f"http://127.0.0.1:{port}"
        assert _get(base + "/").status_code == 401
        assert _get(base + "/session?id=work").status_code == 401
        assert _get(base + f"/?token={token}").status_code == 200
        assert _get(base + "/", cookies={"sessionstore_viewer_token": token}).status_code == 200
        assert httpx.post(base + f"/?token={token}").status_code == 405


def test_generated_token_is_printed_and_loopback_needs_none(sqlite_url: str) -> None:
    url = seeded(sqlite_url)
    port = free_port()
    with _serving("--url", url, "--port", str(port)) as (_, first):
        assert f"http://127.0.0.1:{port}/" in first
        assert _get(f"http://127.0.0.1:{port}/").status_code == 200
    port = free_port()
    with _serving("--url", url, "--port", str(port), "--generate-token") as (process, _):
        assert process.stdout is not None
        line = process.stdout.readline()
        token = line.rsplit("token=", 1)[1].strip()
        assert len(token) >= 16
        assert _get(f"http://127.0.0.1:{port}/").status_code == 401
        assert _get(f"http://127.0.0.1:{port}/?token={token}").status_code == 200


def test_no_redact_is_audited(sqlite_url: str) -> None:
    url = seeded(sqlite_url)
    port = free_port()
    with _serving("--url", url, "--port", str(port), "--no-redact"):
        html = _get(f"http://127.0.0.1:{port}/").text
        assert "redaction OFF" in html
    result = run("events", "--url", url, "--json")
    assert "redaction_disabled" in result.output


def test_a_port_in_use_is_one_line_and_nothing_is_announced(sqlite_url: str) -> None:
    url = seeded(sqlite_url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--url", url, "--port", str(port))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0], lines
    assert "sessionstore viewer" not in result.output  # no address another process serves


def test_port_zero_announces_the_port_the_system_chose(sqlite_url: str) -> None:
    with _serving("--url", seeded(sqlite_url), "--port", "0") as (_, first):
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert found and found[1] != "0", first
        assert _get(f"http://127.0.0.1:{found[1]}/").status_code == 200
