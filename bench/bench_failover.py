"""Failover benchmark: the write outage and the appends lost or duplicated when the primary of
a pg_auto_failover pair (synchronous standby) goes away under load, one run per scenario.

    python bench/bench_failover.py                       # controlled, then kill -9
    python bench/bench_failover.py --scenarios kill

`controlled` is `pg_autoctl perform failover`; `kill` SIGKILLs the primary's whole process
tree (its pg_autoctl, postmaster and backends: the machine is gone), so the monitor must
notice (pg_auto_failover's default health checks) before it promotes the standby. Writers
append through a multi-host URL with `failover_retry_s`; afterwards every session is read
back from the new primary and compared with what was acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support's servers

from sessionstore import SessionStore
from tests.support.ha_cluster import HaCluster, ha_cluster

WRITERS = 8
RETRY_S = 120.0


def _tree(pid: int) -> list[int]:
    """`pid` and every descendant, from /proc."""
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in children:
            found += _tree(int(child))
    return found


def kill_primary(cluster: HaCluster) -> None:
    """SIGKILL the primary node's pg_autoctl and every process under it."""
    primary = cluster.primary_port()
    node = cluster.node_ports.index(primary)
    keeper = cluster.processes[node + 1]  # processes[0] is the monitor
    pids = _tree(keeper.pid)
    postmaster = cluster.folder / f"node{node + 1}" / "postmaster.pid"
    if postmaster.exists():  # in case postgres was started detached from pg_autoctl
        pids += _tree(int(postmaster.read_text().split()[0]))
    for pid in reversed(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def scenario(cluster: HaCluster, name: str) -> dict[str, Any]:
    url = cluster.url("repeated")
    async with SessionStore(url, create_tables=True):
        pass
    acked: dict[str, list[tuple[int, str]]] = defaultdict(list)
    times: list[float] = []
    stop = asyncio.Event()

    async def write(store: SessionStore, sid: str) -> None:
        for n in itertools.count():
            if stop.is_set():
                return
            text = f"{sid}:{n}"
            [seq] = await store.append(sid, [{"role": "user", "content": text}], token=f"{n}")
            acked[sid].append((seq, text))
            times.append(time.monotonic())

    async with SessionStore(url, failover_retry_s=RETRY_S) as store:
        tasks = [asyncio.create_task(write(store, f"{name}-{n}")) for n in range(WRITERS)]
        await asyncio.sleep(2)
        started = time.monotonic()
        if name == "controlled":
            await asyncio.to_thread(cluster.failover)
        else:
            kill_primary(cluster)
            await asyncio.to_thread(_wait_new_primary, cluster)
        ended = time.monotonic()
        await asyncio.sleep(2)
        stop.set()
        await asyncio.gather(*tasks)
    marks = [started, *sorted(t for t in times if t >= started), ended]
    outage = max(later - earlier for earlier, later in itertools.pairwise(marks))
    lost = duplicated = gaps = 0
    async with SessionStore(url) as reader:
        for sid, done in acked.items():
            rows = [row for row in await reader.history(sid) if row.kind == "item"]
            stored = [(row.seq, (row.item or {}).get("content")) for row in rows]
            contents = [text for _, text in stored]
            lost += sum(1 for pair in done if pair not in stored)
            duplicated += len(contents) - len(set(contents))
            gaps += sum(1 for i, (seq, _) in enumerate(stored, 1) if seq != i)
    return {
        "scenario": name,
        "manager s": round(ended - started, 1),
        "write outage s": round(outage, 2),
        "acknowledged": sum(len(done) for done in acked.values()),
        "lost": lost,
        "duplicated": duplicated,
        "seq gaps": gaps,
    }


def _wait_new_primary(cluster: HaCluster) -> None:
    """Until a node still running is the writable primary (`wait_primary` while its peer
    is gone: it commits alone)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        live = _live_ports(cluster)
        states = cluster.states()
        if any(
            port in live and now == goal and now in ("primary", "wait_primary")
            for port, (now, goal) in states.items()
        ):
            return
        time.sleep(0.2)
    raise TimeoutError(f"no new primary within 180 s: {cluster.states()}")


def _live_ports(cluster: HaCluster) -> set[int]:
    return {
        port
        for index, port in enumerate(cluster.node_ports)
        if cluster.processes[index + 1].poll() is None
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", default="controlled,kill")
    args = parser.parse_args()
    results = []
    for name in args.scenarios.split(","):
        print(f"running {name} ...", file=sys.stderr, flush=True)
        with ha_cluster() as cluster:  # a fresh pair each: `kill` leaves one node dead
            results.append(await scenario(cluster, name))
    for result in results:
        print("  ".join(f"{key}: {value}" for key, value in result.items()))


if __name__ == "__main__":
    asyncio.run(main())
