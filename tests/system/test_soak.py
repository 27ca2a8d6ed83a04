"""Soak: many real Agents SDK runs under random policies, zero context-limit errors (QUALITY.md).

Each run drives `Runner.run` through an `SQLSession` with pre-flight compaction on a small
window, so compaction happens often: random message sizes, random tool-I/O density (some runs
return tool outputs far above the truncation limit), random keep counts, strategies and
protected memory. The scripted model measures every input it receives with the store's
estimator; a run fails if any input exceeds the window (a context-limit error) or even the
budget (the window minus `hard_cap_buffer`, which pre-flight must respect), if anything
raises, or if any DESIGN.md invariant does not hold afterwards (tests/support/invariants.py).

`SESSIONSTORE_SOAK_RUNS=1000 python -m pytest tests/system/test_soak.py -q -s` is the full soak
(-s shows the summary line of each backend; a failure always shows it); the default of 30
runs keeps CI fast. A failing run names its seed: `SoakPlan.draw(seed)` replays it.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
import sqlalchemy as sa
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.testing.model import ModelCall
from sqlalchemy.engine import make_url

from sessionstore import SessionStore, SQLSession
from sessionstore._rows import StoredRow
from sessionstore._tokens import TokenEstimator, count_tools
from sessionstore.adapters.agents_sdk import input_filter, tool_schemas
from sessionstore.archive import read_archives
from sessionstore.compaction import (
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
    TruncationPolicy,
)
from tests.support.histories import words
from tests.support.invariants import assert_session_invariants

SOAK_RUNS: Final = int(os.environ.get("SESSIONSTORE_SOAK_RUNS", "8"))
PG_RUNS: Final = max(8, SOAK_RUNS // 10)  # the same runs on PostgreSQL: a sample suffices
STRATEGIES: Final = (
    "task_state",
    "brief",
    "decision_log",
    "code_delta",
    "step_ledger",
    "requirements_ledger",
)
INSTRUCTIONS: Final = "You are a coding assistant. Use the tools; keep decisions explicit."
PINNED_TOOL: Final = "pin_fact"
LINE_TOKENS: Final = 12  # about what one line of a tool output below costs


# ------------------------------------------------------------------------ tools
# Tool outputs are sized by the model's arguments, so each plan controls its tool-I/O density.


def tool_text(tool: str, key: str, lines: int) -> str:
    """What a tool returns: deterministic, so the soak can check nothing of it was lost."""
    rng = random.Random(f"{tool}:{key}")
    if tool == "read_file":
        return "\n".join(f"{key}:{n + 1}: {words(rng, 7)}" for n in range(lines))
    if tool == "run_tests":
        body = [f"{key}/test_{n}.py::test_{words(rng, 1)} PASSED" for n in range(lines)]
        return "\n".join([*body, f"{lines} passed in 0.{lines % 10}s"])
    return "\n".join(f"src/{words(rng, 1)}.py:{n * 7}: {key} {words(rng, 5)}" for n in range(lines))


@function_tool
def read_file(path: str, lines: int) -> str:
    """Read `lines` lines of a source file."""
    return tool_text("read_file", path, lines)


@function_tool
def run_tests(target: str, lines: int) -> str:
    """Run the test suite under `target`."""
    return tool_text("run_tests", target, lines)


@function_tool
def grep(pattern: str, lines: int) -> str:
    """Search the repository for `pattern`."""
    return tool_text("grep", pattern, lines)


@function_tool
def pin_fact(fact: str) -> str:
    """Record a fact the assistant must never forget (a protected tool)."""
    return f"pinned: {fact}"


TOOLS: Final = (read_file, run_tests, grep)
ARG_KEY: Final = {"read_file": "path", "run_tests": "target", "grep": "pattern"}


# ------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class SoakPlan:
    """One run's random shape, fully determined by its seed."""

    seed: int
    window: int
    policy: CompactionPolicy
    turns: int
    message_words: int  # upper bound per user/assistant message
    calls_per_turn: int  # tool calls per turn, upper bound (0: a chat-only run)
    output_lines: int  # upper bound per tool output (about LINE_TOKENS each)
    pinned_words: int  # the developer note (never pruned)
    pins: int  # protected-tool calls over the run

    @classmethod
    def draw(cls, seed: int) -> SoakPlan:
        """A feasible plan: sized so one turn plus the protected memory fits the budget."""
        rng = random.Random(seed)
        window = rng.choice((3_000, 4_000, 6_000, 8_000, 12_000, 16_000))
        heavy = rng.random() < 0.3
        truncate_at = rng.randint(window // 30, window // 12)
        policy = CompactionPolicy(
            trigger_pct=rng.uniform(0.6, 0.95),
            hard_cap_buffer=rng.randint(100, window // 8),
            keep_recent_turns=rng.randint(0, 6),
            keep_tool_io_pairs=rng.randint(0, 4),
            recent_user_token_budget=rng.choice((0, window // 20, window // 8)),
            strategy=rng.choice(STRATEGIES),
            summary_max_tokens=rng.randint(128, max(129, window // 8)),
            protected_tools=(PINNED_TOOL,),
            truncation=TruncationPolicy(max_tokens=truncate_at),
        )
        return cls(
            seed=seed,
            window=window,
            policy=policy,
            turns=rng.randint(10, 30),
            message_words=rng.randint(window // 60, window // 20),
            calls_per_turn=rng.choice((0, 1, 2, 3)),
            # Heavy runs return outputs up to twice the window; the store keeps head + tail.
            output_lines=(
                rng.randint(truncate_at, 2 * window) // LINE_TOKENS
                if heavy
                else rng.randint(2, max(3, truncate_at // LINE_TOKENS))
            ),
            pinned_words=rng.randint(0, window // 60),
            pins=rng.randint(0, 3),
        )

    @property
    def heavy(self) -> bool:
        """Whether some tool outputs may be cut at write time."""
        return self.output_lines * LINE_TOKENS > self.policy.truncation.max_tokens * 1.2


# ------------------------------------------------------------------------ a run


@dataclass
class RunStats:
    """What one run observed."""

    model_calls: int = 0
    largest_input: int = 0
    compactions: int = 0


class MeasuringScript:
    """Scripted turns on a model that counts every input it receives (the window check)."""

    def __init__(self, plan: SoakPlan, estimator: TokenEstimator, fixed_tokens: int) -> None:
        self.plan = plan
        self.rng = random.Random(plan.seed * 7919 + 1)
        self.estimator = estimator
        self.fixed_tokens = fixed_tokens  # instructions and tool schemas, sent on every call
        self.stats = RunStats()

    def measure(self, call: ModelCall) -> None:
        items = call.input if isinstance(call.input, list) else [user_item(call.input)]
        tokens = self.fixed_tokens + sum(self.estimator.count_item(item) for item in items)
        self.stats.model_calls += 1
        self.stats.largest_input = max(self.stats.largest_input, tokens)

    def step(self, output: list[Any]) -> ModelStep:
        def respond(call: ModelCall) -> list[Any]:
            self.measure(call)
            return output

        return ModelStep.respond(respond)

    def turn(self, n: int, pin: bool) -> list[ModelStep]:
        """Tool steps (one or two parallel calls each, maybe a pin), then the answer."""
        rng, plan = self.rng, self.plan
        steps: list[ModelStep] = []
        calls = rng.randint(0, plan.calls_per_turn)
        made = 0
        while made < calls or pin:
            batch: list[Any] = []
            if pin:
                fact = f"fact {n}: {words(rng, 6)}"
                batch.append(function_call(PINNED_TOOL, {"fact": fact}, call_id=f"pin_{n}"))
                pin = False
            for _ in range(min(rng.randint(1, 2), calls - made)):
                tool = rng.choice(TOOLS)
                lines = rng.randint(1, plan.output_lines)
                args = {ARG_KEY[tool.name]: f"{tool.name}-{n}-{made}", "lines": lines}
                batch.append(function_call(tool.name, args, call_id=f"call_{n}_{made}"))
                made += 1
            steps.append(self.step(batch))
        answer = f"Turn {n} done: {words(rng, rng.randint(3, plan.message_words))}"
        steps.append(self.step([assistant_message(answer)]))
        return steps

    def prompt(self, n: int) -> str:
        return f"Step {n}: {words(self.rng, self.rng.randint(3, self.plan.message_words))}"


def user_item(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def soak_run(store: SessionStore, plan: SoakPlan) -> RunStats:
    """One run: every turn through the real Runner, then every invariant."""
    session_id = f"soak-{plan.seed}"
    manager = CompactionManager(
        CompactionConfig(max_context_tokens=plan.window, policy=plan.policy, store=store)
    )
    model = ScriptedModel([])
    agent = Agent(name="soak", instructions=INSTRUCTIONS, model=model, tools=[*TOOLS, pin_fact])
    estimator = store.estimator
    fixed = count_tools(estimator, tool_schemas(agent))
    fixed += estimator.count_item({"role": "system", "content": INSTRUCTIONS})
    script = MeasuringScript(plan, estimator, fixed)
    session = SQLSession(session_id, store, manager=manager)
    run_config = RunConfig(call_model_input_filter=input_filter(manager))
    rules = {"role": "developer", "content": f"Rules: {words(script.rng, plan.pinned_words)}"}
    await session.add_items([rules])  # type: ignore[list-item]
    pin_turns = set(script.rng.sample(range(plan.turns), plan.pins))
    for n in range(plan.turns):
        model.extend(script.turn(n, pin=n in pin_turns))
        await Runner.run(agent, script.prompt(n), session=session, run_config=run_config)
    model.assert_complete()

    history = await store.history(session_id)
    pins = [row.item for row in history if row.tool_name == PINNED_TOOL and row.kind == "item"]
    context = await assert_session_invariants(
        store, session_id, protected=[rules, *filter(None, pins)], loaded=await session.get_items()
    )
    async with SessionStore(store.url) as reopened:  # as after a restart
        assert await SQLSession(session_id, reopened).get_items() == context
    await assert_tool_outputs_recoverable(store, session_id, history)
    estimates = await _count_events(store, session_id, "compact.token_estimate")
    assert estimates == script.stats.model_calls, "one token estimate event per model call"
    script.stats.compactions = await _count_events(store, session_id, "compact.archival")
    return script.stats


async def assert_tool_outputs_recoverable(
    store: SessionStore, session_id: str, history: list[StoredRow]
) -> None:
    """What every tool returned is stored whole, or archived whole when it was truncated."""
    originals = {
        archive.archive_id: archive.records[0]["item"]
        for archive in await read_archives(store, session_id)
        if archive.reason == "truncation"
    }
    calls = {row.call_id: row.item for row in history if row.item_type == "function_call"}
    checked = 0
    for row in history:
        if row.kind != "item" or row.item_type != "function_call_output" or row.item is None:
            continue
        call = calls[row.call_id]
        assert call is not None
        args = json.loads(call["arguments"])
        if call["name"] == PINNED_TOOL:
            continue
        expected = tool_text(call["name"], args[ARG_KEY[call["name"]]], args["lines"])
        kept = row.item if row.archive_id is None else originals[row.archive_id]
        assert kept["output"] == expected, f"output of {row.call_id} was not kept whole"
        checked += 1
    assert checked == sum(1 for call in calls.values() if call and call["name"] != PINNED_TOOL)


async def _count_events(store: SessionStore, session_id: str, name: str) -> int:
    async with store.engine.connect() as conn:
        found = await conn.execute(
            sa.text("SELECT count(*) FROM events WHERE session_id = :s AND event = :e"),
            {"s": session_id, "e": name},
        )
        return int(found.scalar_one())


# ------------------------------------------------------------------------ the soak


@dataclass
class SoakReport:
    """Every run's outcome, and a summary that names failing seeds."""

    backend: str
    ok: list[RunStats] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    overflows: int = 0  # runs where a model input exceeded the window
    largest_usage: float = 0.0  # the largest model input seen, as a share of its window

    def line(self, seconds: float) -> str:
        runs = len(self.ok) + len(self.failed)
        calls = sum(stats.model_calls for stats in self.ok)
        compactions = sum(stats.compactions for stats in self.ok)
        return (
            f"soak[{self.backend}]: {len(self.ok)}/{runs} runs ok "
            f"({100 * len(self.ok) / max(runs, 1):.1f}%), {self.overflows} with a context-limit "
            f"error; {calls} model calls, largest input {100 * self.largest_usage:.0f}% of its "
            f"window; {compactions} compactions; {seconds:.1f}s"
        )

    def record(self, plan: SoakPlan, stats: RunStats) -> None:
        """File a finished run: over the window is a context-limit error; over the budget
        means pre-flight let through what it should have compacted."""
        self.largest_usage = max(self.largest_usage, stats.largest_input / plan.window)
        budget = plan.policy.budget(plan.window)
        if stats.largest_input > plan.window:
            self.overflows += 1
            self.failed[plan.seed] = (
                f"model input of {stats.largest_input} tokens over the {plan.window} window"
            )
        elif stats.largest_input > budget:
            self.failed[plan.seed] = (
                f"model input of {stats.largest_input} tokens over the {budget} budget"
            )
        else:
            self.ok.append(stats)


async def soak(url: str, seeds: range) -> SoakReport:
    """Run every seed on one store; a failure is recorded and the soak goes on."""
    report = SoakReport(backend=make_url(url).get_backend_name())
    async with SessionStore(url, create_tables=True) as store:
        for seed in seeds:
            plan = SoakPlan.draw(seed)
            try:
                stats = await soak_run(store, plan)
            except Exception as exc:  # every failure is reported with its seed, not just the first
                report.failed[seed] = f"{type(exc).__name__}: {exc}"[:400]
            else:
                report.record(plan, stats)
    return report


@pytest.mark.untraced  # repeats paths the rest of the suite covers (tests/conftest.py)
async def test_soak_runs_never_exceed_the_window(db_url: str) -> None:
    """KR1: every run stays under the window through compaction, with every invariant intact."""
    sqlite = make_url(db_url).get_backend_name() == "sqlite"
    seeds = range(SOAK_RUNS) if sqlite else range(100_000, 100_000 + PG_RUNS)
    started = time.perf_counter()
    report = await soak(db_url, seeds)
    summary = report.line(time.perf_counter() - started)
    print(summary)
    if report.failed:
        failures = "\n".join(f"  seed {seed}: {why}" for seed, why in report.failed.items())
        pytest.fail(f"{summary}\nfailed runs (replay with SoakPlan.draw(seed)):\n{failures}")
    assert sum(stats.compactions for stats in report.ok) >= len(seeds), "compaction was rare"
    assert sum(stats.compactions > 0 for stats in report.ok) >= len(seeds) // 2


def test_plans_cover_the_space() -> None:
    """The random plans really vary what the soak claims to vary."""
    plans = [SoakPlan.draw(seed) for seed in range(200)]
    assert {plan.policy.strategy for plan in plans} == set(STRATEGIES)
    assert {plan.calls_per_turn for plan in plans} == {0, 1, 2, 3}
    assert 0.15 < sum(plan.heavy for plan in plans) / len(plans) < 0.45
    assert {plan.policy.keep_recent_turns for plan in plans} == set(range(7))
    assert {plan.policy.keep_tool_io_pairs for plan in plans} == set(range(5))
    assert len({plan.window for plan in plans}) == 6
    assert SoakPlan.draw(7) == SoakPlan.draw(7)  # a seed replays its run
