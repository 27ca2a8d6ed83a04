"""The viewer's first paint: a 10,000-item session's timeline and a 100,000-session list.

    python bench/bench_viewer.py                 # SQLite and PostgreSQL, one run each
    python bench/bench_viewer.py --sqlite-only
    python bench/bench_viewer.py --demo-shot docs/viewer.png   # the README's screenshot

A real uvicorn server of `sessionstore serve`'s app over a read-only store, on a free
loopback port. Measured: in headless Chromium (/usr/bin/chromium through Playwright), the
first paint (`first-contentful-paint`, from navigation start) of the server's first request of
the page and the median of 5 visits, then the time to the complete HTTP response (httpx,
the median of 5 warm requests).
The 10,000 items are written through the store (user, tool call, tool output, assistant);
the list's 100,000 sessions are 1,000 written through the store and 99,000 more `sessions`
rows copied from them in SQL (the list reads only that table, and the page's own rows' agents).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from playwright.async_api import async_playwright
from scratch_pg import scratch_database

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sessionstore import SessionStore
from tests.support.viewer import running_viewer

CHROMIUM = "/usr/bin/chromium"
ITEMS = 10_000
SESSIONS = 100_000
WRITTEN = 1_000
WARM = 5  # warm figures: the median of this many (the machine may be shared)
# The paint entry is queued once the frame is composited, which can come after `load`.
FIRST_PAINT = """() => new Promise((resolve) => new PerformanceObserver((list) => {
    const [entry] = list.getEntriesByName('first-contentful-paint');
    if (entry) resolve(entry.startTime);
}).observe({type: 'paint', buffered: true}))"""


def _items(count: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    n = 0
    while len(items) < count:
        items += [
            {"role": "user", "content": f"step {n}: check the latency of service {n % 17}"},
            {
                "type": "function_call",
                "call_id": f"c{n}",
                "name": "read_logs",
                "arguments": f'{{"service": {n % 17}}}',
            },
            {"type": "function_call_output", "call_id": f"c{n}", "output": "ok " * 200},
            {"role": "assistant", "content": f"step {n}: latency is fine, p99 {100 + n % 50} ms"},
        ]
        n += 1
    return items[:count]


def _earlier(moment: datetime | str, seconds: int) -> datetime | str:
    """`seconds` before `moment` (SQLite hands timestamps back as text: kept as text)."""
    if isinstance(moment, str):
        return str(datetime.fromisoformat(moment) - timedelta(seconds=seconds))
    return moment - timedelta(seconds=seconds)


async def fill(url: str) -> None:
    """The big session, then WRITTEN small sessions, then their rows copied to SESSIONS."""
    async with SessionStore(url, create_tables=True) as store:
        items = _items(ITEMS)
        for start in range(0, ITEMS, 500):
            await store.append("big", items[start : start + 500], agent="sre")
        for n in range(WRITTEN - 1):
            await store.append(f"small-{n:06d}", [{"role": "user", "content": f"hello {n}"}])
        async with store.engine.begin() as conn:
            row = (
                (
                    await conn.execute(
                        sa.text("SELECT * FROM sessions WHERE session_id = 'small-000000'")
                    )
                )
                .mappings()
                .one()
            )
            columns = list(row.keys())
            statement = sa.text(
                f"INSERT INTO sessions ({', '.join(columns)}) "
                f"VALUES ({', '.join(':' + c for c in columns)})"
            )
            copies = []
            for n in range(WRITTEN, SESSIONS + 1):
                copy = dict(row)
                copy["session_id"] = f"copy-{n:06d}"
                copy["updated_at"] = _earlier(row["updated_at"], n)
                copy["context_items"] = n % 97
                copy["context_tokens"] = n % 9973
                copies.append(copy)
            for start in range(0, len(copies), 10_000):
                await conn.execute(statement, copies[start : start + 10_000])


async def _http(base: str, path: str, *, ok: bool = True) -> float:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        started = time.perf_counter()
        response = await client.get(path)
        elapsed = time.perf_counter() - started
        if ok:
            response.raise_for_status()
        return elapsed * 1000


async def measure(url: str, label: str) -> None:
    pages = {
        # The browser's own floor: the viewer's smallest page (a 404), painted the same way.
        "an empty page (the browser's floor)": "/nowhere",
        "timeline, 10,000 items (newest page)": "/session?id=big",
        "list, 100,000 sessions (first page)": "/",
        "list, sorted by context tokens": "/?sort=tokens&dir=desc",
        "list, filtered (id contains '0999')": "/?q=0999",
        "tokens chart, 10,000 items": "/tokens?id=big",
    }
    print(f"\n== {label}")
    with running_viewer(url) as base:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox"]
            )
            page = await browser.new_page()
            await page.goto(base + "/nowhere")  # the browser's own start, not a page's
            for name, path in pages.items():
                painted = []
                for _ in range(WARM):  # the first visit is the server's first of this page
                    await page.goto(base + path, wait_until="load")
                    painted.append(await page.evaluate(FIRST_PAINT))
                warm = statistics.median(
                    [await _http(base, path, ok=path != "/nowhere") for _ in range(WARM)]
                )
                print(
                    f"  {name:42s} first paint: first visit {painted[0]:7.1f} ms, "
                    f"median {statistics.median(painted):7.1f} ms  HTTP warm {warm:7.1f} ms"
                )
            await browser.close()


async def demo_shot(out: Path) -> None:
    """`sessionstore demo`'s database, its compacting session's timeline and token chart."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'demo.db'}"
        await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "sessionstore.cli", "demo", "--url", url],
            check=True,
            capture_output=True,
        )
        with running_viewer(url) as base:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox"]
                )
                page = await browser.new_page(viewport={"width": 1100, "height": 640})
                await page.goto(base + "/tokens?id=demo-long")
                await page.screenshot(path=str(out))
                await browser.close()
    print(f"wrote {out}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--demo-shot", type=Path, help="write the README's screenshot here")
    args = parser.parse_args()
    if args.demo_shot:
        await demo_shot(args.demo_shot)
        return
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.db'}"
        started = time.perf_counter()
        await fill(url)
        gc.collect()  # the fill's garbage is not collected on the first page's time
        print(f"SQLite filled in {time.perf_counter() - started:.0f} s")
        await measure(url, "SQLite")
    if not args.sqlite_only:
        async with scratch_database() as url:
            started = time.perf_counter()
            await fill(url)
            gc.collect()
            print(f"PostgreSQL filled in {time.perf_counter() - started:.0f} s")
            await measure(url, "PostgreSQL")


if __name__ == "__main__":
    asyncio.run(main())
