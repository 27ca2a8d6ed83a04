"""A real pg_auto_failover cluster on 127.0.0.1: a monitor, a primary and a synchronous
standby (Debian's `postgresql-15-auto-failover` and `pg-auto-failover-cli`), each a
`pg_autoctl ... --run` process of ours, in a temporary directory, on free ports.

Set-up takes about 25 s (the standby's base backup and the monitor's state machine); a
controlled failover (`pg_autoctl perform failover`) about 10 s, of which writes wait 2-3 s.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from tests.support.servers import free_port
from tests.support.system_services import (
    PG_BIN,
    as_service_user,
    ensure_installed,
    service_dir,
    stop,
    wait_for_port,
)

PACKAGES: Final = ["postgresql-15-auto-failover", "pg-auto-failover-cli"]
_SETUP_S: Final = 90.0
UrlForm = Literal["repeated", "comma"]


@dataclass
class HaCluster:
    pg_autoctl: str
    folder: Path
    monitor_port: int
    node_ports: list[int]
    processes: list[subprocess.Popen[Any]] = field(default_factory=list)

    def url(
        self, form: UrlForm = "repeated", *, ports: list[int] | None = None, attrs: bool = True
    ) -> str:
        """A store URL listing the nodes (`ports`, default every node, in node order) in one
        of the two multi-host forms, with target_session_attrs=read-write (`attrs`)."""
        chosen = self.node_ports if ports is None else ports
        if form == "repeated":
            query = "&".join(f"host=127.0.0.1:{port}" for port in chosen)
        else:
            hosts = ",".join("127.0.0.1" for _ in chosen)
            query = f"host={hosts}&port={','.join(str(port) for port in chosen)}"
        if attrs:
            query += "&target_session_attrs=read-write"
        return f"postgresql+asyncpg://postgres@/postgres?{query}"

    def run(self, *args: str, timeout_s: float = 60.0) -> str:
        done = subprocess.run(
            [self.pg_autoctl, *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            **as_service_user(),
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_autoctl {' '.join(args)} failed: {done.stderr[-2000:]}")
        return str(done.stdout)

    def states(self) -> dict[int, tuple[str, str]]:
        """Node port -> (reported state, assigned state), as the monitor sees them."""
        try:
            shown = json.loads(self.run("show", "state", "--json", "--pgdata", self._monitor()))
        except (RuntimeError, json.JSONDecodeError):
            return {}
        return {
            int(node["nodeport"]): (node["current_group_state"], node["assigned_group_state"])
            for node in shown
        }

    def primary_port(self) -> int:
        """The node the monitor has as primary (the cluster must be healthy)."""
        [port] = [port for port, (now, _) in self.states().items() if now == "primary"]
        return port

    def wait_healthy(self, timeout_s: float = _SETUP_S) -> int:
        """Until one node is primary and every other a secondary, settled; the primary's port."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            states = self.states()
            settled = len(states) == len(self.node_ports) and all(
                now == goal for now, goal in states.values()
            )
            roles = sorted(now for now, _ in states.values())
            if settled and roles == ["primary"] + ["secondary"] * (len(self.node_ports) - 1):
                return self.primary_port()
            time.sleep(0.2)
        raise TimeoutError(f"the cluster did not settle within {timeout_s:g} s: {self.states()}")

    def failover(self) -> int:
        """A controlled failover (`pg_autoctl perform failover`, which returns once the
        monitor reached the new primary); the new primary's port once all settled."""
        before = self.primary_port()
        self.run("perform", "failover", "--pgdata", self._monitor(), timeout_s=120)
        after = self.wait_healthy(60)
        assert after != before, "the failover left the same node primary"
        return after

    def _monitor(self) -> str:
        return str(self.folder / "monitor")

    def _start(self, name: str, *args: str) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [self.pg_autoctl, *args, "--run"],
                stdout=log,
                stderr=subprocess.STDOUT,
                **as_service_user(),
            )
        )

    def start(self) -> None:
        common = ["--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl"]
        monitor = f"postgres://autoctl_node@127.0.0.1:{self.monitor_port}/pg_auto_failover"
        self._start(
            "monitor",
            "create",
            "monitor",
            "--pgdata",
            self._monitor(),
            "--pgport",
            str(self.monitor_port),
            *common,
        )
        wait_for_port(self.monitor_port, _SETUP_S, self.processes[-1])
        self._wait_monitor_ready()
        self._tune_monitor()
        for number, port in enumerate(self.node_ports, 1):
            self._start(
                f"node{number}",
                "create",
                "postgres",
                "--pgdata",
                str(self.folder / f"node{number}"),
                "--pgport",
                str(port),
                "--monitor",
                f"{monitor}?sslmode=disable",
                "--name",
                f"node{number}",
                *common,
            )
            if number == 1:  # the first node registered becomes the primary
                self._wait_registered(1)
        self.wait_healthy()

    def _wait_monitor_ready(self) -> None:
        deadline = time.monotonic() + _SETUP_S
        while time.monotonic() < deadline:
            try:
                self.run("show", "state", "--pgdata", self._monitor(), timeout_s=10)
                return
            except RuntimeError:
                time.sleep(0.2)
        raise TimeoutError("the pg_auto_failover monitor did not come up")

    def _tune_monitor(self) -> None:
        """Faster health checks than the defaults (5 s period, 20 s to unhealthy), so a
        test cluster settles and an unplanned failover is noticed sooner."""
        settings = {
            "pgautofailover.health_check_period": "1000",
            "pgautofailover.health_check_timeout": "1000",
            "pgautofailover.health_check_retry_delay": "500",
            "pgautofailover.node_considered_unhealthy_timeout": "5000",
            "pgautofailover.primary_demote_timeout": "10000",
        }
        commands: list[str] = []
        for name, value in settings.items():
            commands += ["-c", f"ALTER SYSTEM SET {name} = {value}"]
        done = subprocess.run(
            [
                str(PG_BIN / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.monitor_port),
                "-U",
                "postgres",
                "-d",
                "pg_auto_failover",
                "-v",
                "ON_ERROR_STOP=1",
                *commands,
                "-c",
                "SELECT pg_reload_conf()",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            **as_service_user(),
        )
        if done.returncode != 0:
            raise RuntimeError(f"tuning the monitor failed: {done.stderr[-1000:]}")

    def _wait_registered(self, count: int) -> None:
        deadline = time.monotonic() + _SETUP_S
        while len(self.states()) < count:
            if time.monotonic() > deadline:
                raise TimeoutError("a node did not register with the monitor")
            time.sleep(0.2)

    def stop(self) -> None:
        for process in reversed(self.processes):  # nodes first, the monitor last
            stop(process, timeout_s=30)
        self.processes.clear()

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.folder.glob("*.log"))
        )


@contextmanager
def ha_cluster(nodes: int = 2) -> Iterator[HaCluster]:
    """A running monitor + primary + (nodes - 1) synchronous standbys, stopped after."""
    binary = ensure_installed("pg_autoctl", PACKAGES)
    cluster = HaCluster(
        pg_autoctl=binary,
        folder=service_dir("sessionstore-ha-"),
        monitor_port=free_port(),
        node_ports=[free_port() for _ in range(nodes)],
    )
    try:
        try:
            cluster.start()
        except Exception as error:
            raise RuntimeError(f"{error}\n{cluster.logs()}") from error
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)
        home = Path(as_service_user()["env"]["HOME"])  # pg_autoctl's files about our nodes
        for kept in (".config/pg_autoctl", ".local/share/pg_autoctl"):
            shutil.rmtree(home / kept / str(cluster.folder).lstrip("/"), ignore_errors=True)
