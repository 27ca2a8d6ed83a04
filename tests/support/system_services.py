"""Real server programs for tests (PgBouncer, pg_auto_failover): installed from Debian when
missing, run as the `postgres` OS user (both refuse to run as root) on free 127.0.0.1 ports,
in temporary directories that user owns."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import pytest

PG_BIN: Final = Path("/usr/lib/postgresql/15/bin")
_SERVICE_USER: Final = "postgres"


def ensure_installed(binary: str, packages: list[str]) -> str:
    """The path of `binary`, installing `packages` with apt-get first when it is missing;
    skips (with apt's own words) only when apt cannot install them."""
    found = shutil.which(binary, path=f"{os.environ.get('PATH', '')}:{PG_BIN}:/usr/sbin")
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.skip(f"{binary} is missing and apt-get cannot install {' '.join(packages)} here")
    done = subprocess.run(
        ["apt-get", "install", "-y", "-q", *packages],
        capture_output=True,
        text=True,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        check=False,
    )
    found = shutil.which(binary, path=f"{os.environ.get('PATH', '')}:{PG_BIN}:/usr/sbin")
    if done.returncode != 0 or not found:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        pytest.skip(f"apt-get could not install {' '.join(packages)}: {' | '.join(tail)}")
    return found


def service_dir(prefix: str) -> Path:
    """A new temporary directory the service user owns (pytest's tmp_path is root's, 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(_SERVICE_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


def as_service_user() -> dict[str, Any]:
    """`subprocess.Popen`/`run` arguments that run a program as the service user when we are
    root (otherwise as ourselves), with PostgreSQL's programs on its PATH."""
    env = {**os.environ, "PATH": f"{PG_BIN}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
    if os.geteuid() != 0:
        return {"env": env}
    entry = pwd.getpwnam(_SERVICE_USER)
    env |= {"HOME": entry.pw_dir, "USER": _SERVICE_USER, "LOGNAME": _SERVICE_USER}
    return {"env": env, "user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def wait_for_port(port: int, deadline_s: float, process: subprocess.Popen[Any] | None) -> None:
    """Until something accepts connections on 127.0.0.1:`port` (the process must not exit)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}) before listening")
        with socket.socket() as probe:
            probe.settimeout(0.2)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {deadline_s:g} s")


def stop(process: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """End a server we started: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout_s)
