"""One `Runner.run` turn with the SDK's `SQLiteSession` and with `SQLSession`, side by side
(issue #36): an agent with one function tool and a `ScriptedModel` that answers each turn
with a tool call and then a final answer (two model calls, one `get_items`, three
`add_items`).

    python bench/bench_runner_turn.py                 # 3 repetitions, usage reported
    python bench/bench_runner_turn.py --no-usage      # ScriptedModel's default: no usage rows
    python bench/bench_runner_turn.py --reps 1 --turns 20

Contenders, each on its own fresh SQLite file, in ONE process: `sdk` (`SQLiteSession`),
`ours` (`SQLSession(id, path)`, the drop-in form) and `ours+pf` (a `CompactionManager` bound,
with the compaction pre-flight as the Runner's input filter; no compaction fires). After a
warm-up, each timed round runs one turn of every contender, each round starting with another
one; the collector runs before each timed turn and is off during it. Printed per repetition:
the median wall and process CPU per turn, and the ratios to `sdk`, with the load average.
docs/PERFORMANCE.md ("Where a Runner turn's time goes") has a run and its breakdown.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager

CONTENDERS = ("sdk", "ours", "ours+pf")


@function_tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return f"18C and sunny in {city}, light wind from the west, humidity 40%."


class Contender:
    """One session kind, its agent and its scripted model."""

    def __init__(self, name: str, directory: Path, usage: bool) -> None:
        self.name = name
        reported = Usage(requests=1, input_tokens=350, output_tokens=40, total_tokens=390)
        self.model = ScriptedModel(default_usage=reported if usage else None)
        self.agent = Agent(
            name="assistant",
            instructions="Be brief. Use the weather tool when asked about weather.",
            model=self.model,
            tools=[get_weather],
        )
        self.run_config = RunConfig()
        self.store: SessionStore | None = None
        path = str(directory / f"{name}.db")
        self.session: Any
        if name == "sdk":
            self.session = SQLiteSession("user-42", path)
        elif name == "ours":
            self.session = SQLSession("user-42", path)
        else:
            self.store = SessionStore(f"sqlite:///{path}")
            manager = CompactionManager(CompactionConfig(store=self.store))
            self.session = SQLSession("user-42", manager=manager)
            self.run_config = RunConfig(call_model_input_filter=input_filter(manager))
        self.turns = 0

    async def turn(self) -> None:
        n = self.turns
        self.turns += 1
        self.model.extend(
            [
                [function_call("get_weather", {"city": f"Paris {n}"}, call_id=f"call_{n}")],
                [assistant_message(f"It is 18C and sunny in Paris {n}. Anything else?")],
            ]
        )
        await Runner.run(
            self.agent,
            f"What is the weather in Paris {n} today?",
            session=self.session,
            run_config=self.run_config,
        )

    async def close(self) -> None:
        if self.name == "sdk":
            self.session.close()
        elif self.store is None:
            await self.session.close()
        else:
            await self.store.close()


async def _timed(contender: Contender) -> tuple[float, float]:
    """(wall ms, process CPU ms) of one turn, the collector off during it."""
    gc.collect()
    gc.disable()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        await contender.turn()
        return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
    finally:
        gc.enable()


def _load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


async def repetition(turns: int, warmup: int, usage: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        contenders = [Contender(name, Path(directory), usage) for name in CONTENDERS]
        for _ in range(warmup):
            for contender in contenders:
                await contender.turn()
        walls: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        cpus: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        load = _load()
        for round_ in range(turns):
            start = round_ % len(contenders)
            for contender in contenders[start:] + contenders[:start]:
                wall, cpu = await _timed(contender)
                walls[contender.name].append(wall)
                cpus[contender.name].append(cpu)
        for contender in contenders:
            await contender.close()
    base_wall, base_cpu = statistics.median(walls["sdk"]), statistics.median(cpus["sdk"])
    print(f"load {load} -> {_load()}, {turns} turns each")
    for name in CONTENDERS:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        ratio = (
            "" if name == "sdk" else f"  ({wall / base_wall:.2f}x wall, {cpu / base_cpu:.2f}x CPU)"
        )
        print(f"  {name:8s} wall {wall:6.2f} ms  CPU {cpu:6.2f} ms{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-usage", dest="usage", action="store_false")
    args = parser.parse_args()
    set_tracing_disabled(True)  # the same for every contender: no trace export thread
    for _ in range(args.reps):
        asyncio.run(repetition(args.turns, args.warmup, args.usage))


if __name__ == "__main__":
    main()
