"""The web viewer's fixtures: a seeded store (turns, tools, a compaction, model calls, a
branch, hostile content), and a real uvicorn server on a free loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, Final

import uvicorn

from sessionstore import CallUsage, HistoryPoint, Price, SessionStore
from sessionstore.web import create_app
from tests.support.histories import assistant, call, output, turns, user
from tests.support.managers import small_window_manager
from tests.support.servers import free_port

SECRET: Final = "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
HOSTILE_ID: Final = "<img src=x onerror=alert(4)>\u202eevil"
HOSTILE_AGENT: Final = "<script>alert(3)</script>"
HOSTILE_TEXTS: Final = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[bold]not bold[/bold]",
    "\x1b[31mred\x1b[0m",
    "abc\u202edcba",
    f"my key is {SECRET}",
)


async def seed(url: str) -> None:
    """Session 'work' (tool calls, a compaction, priced model calls, an agent), its branch
    'work-alt' (forked before turn 3, with rows of its own) and the hostile session."""
    prices = {"house-model": Price(1.0, 0.1, 4.0)}
    async with SessionStore(url, create_tables=True, prices=prices) as store:
        history = turns(8, seed=1, size=40, tools_every=2)
        for start in range(0, len(history), 4):
            await store.append("work", history[start : start + 4], agent="triage")
            number = await store.record_model_call(
                "work", history[: start + 4], model="house-model"
            )
            await store.record_usage(
                "work", [CallUsage(500 + start, 0, 40, 0)], calls=[(number, "house-model")]
            )
        assert (await small_window_manager(store).compact("work", trigger="manual")).compacted
        await store.append(
            "work",
            [user("after the compaction: what about the walrus?"), assistant("the walrus is fine")],
            agent="billing",
        )
        await store.fork("work", "work-alt", at=HistoryPoint.before_turn(3))
        await store.append("work-alt", [user("an alternative question about pelicans")])
        await store.append("work-alt", [assistant("pelicans answer")], agent="billing")
        for item in turns(3, seed=2, size=5):
            await store.append("rewound", [item])
        await store.rewind("rewound", 2)
        await store.append("rewound", [user("a second try")])
        await store.append(
            HOSTILE_ID,
            [
                user(" ".join(HOSTILE_TEXTS)),
                call("c1", "<b>tool</b>", pattern="<script>alert(5)</script>"),
                output("c1", "<img src=x onerror=alert(6)> " + SECRET),
            ],
            agent=HOSTILE_AGENT,
        )
        await store.append(HOSTILE_ID, [assistant("done <svg onload=alert(7)>")])


def seeded(url: str) -> str:
    """`url` with the viewer's sessions written (synchronously, for sync tests)."""
    asyncio.run(seed(url))
    return url


@contextlib.contextmanager
def running_viewer(url: str, **options: Any) -> Iterator[str]:
    """A real uvicorn server of the viewer over a read-only store on 127.0.0.1, in a thread;
    yields its base URL."""
    port = free_port()
    store = SessionStore(url, read_only=True)
    app = create_app(store, **options)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the viewer did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
