"""Cluster benchmark: one PostgreSQL node vs an HA pair vs PgBouncer, in one run.

Columns (each a `Target`, see TARGETS): `single` is the server of
$SESSIONSTORE_BENCH_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres); `ha` a
pg_auto_failover monitor + primary + synchronous standby started on free 127.0.0.1 ports
(every commit waits for the standby), reached through a multi-host URL with
target_session_attrs=read-write; `pgbouncer` a PgBouncer (pool_mode=transaction, 20 server
connections) in front of the single node, with `?pgbouncer=transaction`.

Rows: append latency (one single-item append, median and p95), load latency (load_context
of a 50-item session), throughput of 16 sessions appending at once from one process, and
(PgBouncer only: 64 processes would need up to 64 x 11 server connections without a pooler)
throughput of 64 client processes. Ratios are each column over `single`.

    python bench/bench_cluster.py                # every column
    python bench/bench_cluster.py --quick        # fewer rounds
    python bench/bench_cluster.py --targets single,pgbouncer

`citus` (asked for with --targets): a Citus 13 coordinator and two workers (see
`citus_target`), the tables distributed by session_id; its ratios against `single` are the
cost of sharding (docs/DEPLOYMENT.md).

    python bench/bench_cluster.py --targets single,citus,citus-coordinator

`citus-coordinator` is `citus` with every append through the coordinator, as before the
store sent a session's appends to the worker holding its shard: the before and after of
that change in one run.

Adding a column: write an async context manager yielding a store URL on a fresh, empty
database and register it in TARGETS under its name.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support's servers

from scratch_pg import ADMIN_URL, scratch_database

from sessionstore import SessionStore
from tests.support.citus import create_citus_database, drop_citus_database
from tests.support.ha_cluster import ha_cluster
from tests.support.pgbouncer import pgbouncer

Target = Callable[[], AbstractAsyncContextManager[str]]
SESSIONS = 16
CLIENT_PROCESSES = 64


def item(n: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {n}: please check the build of branch feat-{n}"}


@contextlib.asynccontextmanager
async def single_target() -> AsyncIterator[str]:
    async with scratch_database() as url:
        yield url


@contextlib.asynccontextmanager
async def ha_target() -> AsyncIterator[str]:
    with ha_cluster() as cluster:
        primary = cluster.primary_port()
        ports = [port for port in cluster.node_ports if port != primary] + [primary]
        yield cluster.url("repeated", ports=ports)  # the standby first: skipped at connect


@contextlib.asynccontextmanager
async def pgbouncer_target() -> AsyncIterator[str]:
    async with scratch_database() as url:
        with pgbouncer(url, pool_size=20) as bouncer:
            yield bouncer.url_for(url)


@contextlib.asynccontextmanager
async def citus_target() -> AsyncIterator[str]:
    """A Citus coordinator and two workers: those of $SESSIONSTORE_BENCH_CITUS_URL, or a
    throwaway cluster started by $CITUS_SCRIPTS/start-cluster (default /work/shared/citus,
    see its README) on free ports; a database of its own on every node, whose tables the
    store's first migration distributes by session_id (sessionstore/_citus.py)."""
    base = os.environ.get("SESSIONSTORE_BENCH_CITUS_URL")
    name = f"sessionstore_bench_{uuid.uuid4().hex[:8]}"
    async with contextlib.AsyncExitStack() as stack:
        if not base:
            base = stack.enter_context(_citus_cluster())
        admin = make_url(base).set(drivername="postgresql").render_as_string(hide_password=False)
        await create_citus_database(admin, name)
        stack.push_async_callback(drop_citus_database, admin, name)
        yield (
            make_url(base)
            .set(drivername="postgresql+asyncpg", database=name)
            .render_as_string(hide_password=False)
        )


@contextlib.asynccontextmanager
async def citus_coordinator_target() -> AsyncIterator[str]:
    """`citus` with every append sent through the coordinator, as the store did before it
    sent a session's appends to the worker holding it (`_worker_routes.py`): the before."""
    from sessionstore._storage._postgres._worker_routes import WorkerRoutes

    kept = WorkerRoutes.__dict__["possible"]
    WorkerRoutes.possible = staticmethod(lambda url, pooled: False)  # type: ignore[method-assign]
    try:
        async with citus_target() as url:
            yield url
    finally:
        WorkerRoutes.possible = kept  # type: ignore[method-assign]


@contextlib.contextmanager
def _citus_cluster() -> Iterator[str]:
    scripts = Path(os.environ.get("CITUS_SCRIPTS", "/work/shared/citus"))
    with tempfile.TemporaryDirectory(prefix="citus-bench-") as parent:
        where = Path(parent) / "cluster"
        with socket.socket() as probe:  # three consecutive ports from a free one
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1] % 20_000 + 30_000
        started = subprocess.run(
            [str(scripts / "start-cluster"), str(where), str(port)],
            check=True,
            capture_output=True,
            text=True,
        )
        try:
            yield started.stdout.strip().splitlines()[-1]
        finally:
            subprocess.run([str(scripts / "stop-cluster"), str(where)], check=False)


TARGETS: dict[str, Target] = {
    "single": single_target,
    "ha": ha_target,
    "pgbouncer": pgbouncer_target,
    "citus": citus_target,  # runs only when asked for (--targets ...,citus)
    "citus-coordinator": citus_coordinator_target,  # the same, appends not sent to workers
}
DEFAULT_TARGETS = ("single", "ha", "pgbouncer")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure(url: str, rounds: int, burst_s: float) -> dict[str, float]:
    """Append and load latency (ms), 16-session throughput (appends/s) on one store."""
    results: dict[str, float] = {}
    async with SessionStore(url) as store:
        for n in range(20):  # warm the pools
            await store.append("warm", [item(n)])
        # ... every connection the burst below uses: a new connection's first append asks the
        # server about its array types (asyncpg), 60 ms on one node, 2 s on a loaded Citus
        # coordinator: a cost of connecting, not of appending.
        await asyncio.gather(*(store.append(f"warm-{k}", [item(0)]) for k in range(SESSIONS)))
        appends = []
        for n in range(rounds):
            start = time.perf_counter()
            await store.append("latency", [item(n)])
            appends.append((time.perf_counter() - start) * 1000)
        results["append p50 ms"] = statistics.median(appends)
        results["append p95 ms"] = percentile(appends, 0.95)
        await store.append("load", [item(n) for n in range(50)])
        loads = []
        for _ in range(rounds):
            start = time.perf_counter()
            assert len(await store.load_context("load")) == 50
            loads.append((time.perf_counter() - start) * 1000)
        results["load(50) p50 ms"] = statistics.median(loads)
        results["load(50) p95 ms"] = percentile(loads, 0.95)

        done = 0
        deadline = time.perf_counter() + burst_s

        async def session(number: int) -> None:
            nonlocal done
            n = 0
            while time.perf_counter() < deadline:
                await store.append(f"burst-{number}", [item(n)])
                n += 1
                done += 1

        start = time.perf_counter()
        await asyncio.gather(*(session(number) for number in range(SESSIONS)))
        results[f"{SESSIONS} sessions appends/s"] = done / (time.perf_counter() - start)
    return results


def _client(url: str, number: int, appends: int, start_at: float, out: Any) -> None:
    async def work() -> float:
        async with SessionStore(url) as store:
            await store.append(f"proc-{number}", [item(0)])  # connected before the clock
            delay = start_at - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            began = time.perf_counter()
            for n in range(appends):
                await store.append(f"proc-{number}", [item(n + 1)])
            return time.perf_counter() - began

    out.put(asyncio.run(work()))


async def processes(url: str, appends: int) -> dict[str, float]:
    """64 client processes, each appending `appends` single items to its own session."""
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    start_at = time.time() + 8.0  # every process connected and waiting by then
    workers = [
        context.Process(target=_client, args=(url, number, appends, start_at, out))
        for number in range(CLIENT_PROCESSES)
    ]
    for worker in workers:
        worker.start()
    spans = [await asyncio.to_thread(out.get, True, 300) for _ in workers]
    for worker in workers:
        worker.join(60)
    failed = [worker.exitcode for worker in workers if worker.exitcode != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} client processes failed")
    return {
        f"{CLIENT_PROCESSES} processes appends/s": CLIENT_PROCESSES * appends / max(spans),
        f"{CLIENT_PROCESSES} processes append mean ms": statistics.mean(spans) / appends * 1000,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS))
    args = parser.parse_args()
    rounds, burst_s, appends = (100, 1.0, 20) if args.quick else (500, 3.0, 100)
    names = [name.strip() for name in args.targets.split(",") if name.strip()]
    columns: dict[str, dict[str, float]] = {}
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        async with TARGETS[name]() as url:
            async with SessionStore(url, create_tables=True):
                pass
            columns[name] = await measure(url, rounds, burst_s)
            if name == "pgbouncer":
                columns[name] |= await processes(url, appends)
    rows = list(dict.fromkeys(row for column in columns.values() for row in column))
    anchor = columns.get("single", {})
    print(f"server: {make_url(ADMIN_URL).render_as_string(hide_password=True)}")
    print(f"{'':34}" + "".join(f"{name:>12}{'ratio':>8}" for name in columns))
    for row in rows:
        cells = ""
        for column in columns.values():
            value = column.get(row)
            if value is None:
                cells += f"{'-':>12}{'':>8}"
                continue
            base = anchor.get(row)
            ratio = f"{value / base:.2f}x" if base else ""
            cells += f"{value:>12.2f}{ratio:>8}"
        print(f"{row:34}{cells}")


if __name__ == "__main__":
    asyncio.run(main())
