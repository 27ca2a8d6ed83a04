"""Do summaries keep facts stated in words the summarizer's rules were not written for?

    python bench/eval_paraphrase.py                          # held-out half, every length
    python bench/eval_paraphrase.py --split tuning           # the half rules may be tuned on
    python bench/eval_paraphrase.py --turns 300 --json       # one length, machine-readable
    python bench/eval_paraphrase.py --check                  # exit 1 below the thresholds

Each fact kind (goal, entity, constraint, decision with its rationale, open action,
preference, artifact) has eight phrasing templates. Even-numbered templates are the tuning
half; odd-numbered ones are the held-out half, which is reported and never tuned on. Sessions
come from a seeded RNG in four domains (coding, research, customer support, operations):
one goal stated in the first turn, two facts of every other kind stated in the first half,
and routine turns around them (a request, a tool call and its output, an answer: "Look up
order 7013." -> lookup_order -> "Order 7013 has shipped."). Turns are appended one at a time
through the real CompactionManager on a temporary SQLite file and compacted at each turn
boundary when the trigger fires (the SDK's own turn boundary; the Runner path is
bench/eval_retention.py's). After every compaction each fact planted so far is probed in the
ACTIVE context (summary plus kept items, what the model would see): it is retained when every
value its probe names (ids, amounts, names, files, the reason's key) is there. The report
gives the share after the last compaction per strategy and kind, and the per-round curve.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from agents import Agent, FunctionTool, RunConfig, Runner, Tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from sessionstore import SessionStore, text_of
from sessionstore.adapters.agents_sdk import SQLSession, input_filter
from sessionstore.compaction import (
    BUILTIN_STRATEGIES,
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
)

Item = dict[str, Any]
Kind = Literal[
    "goal", "entity", "constraint", "decision", "open_action", "preference", "artifact"
]  # fmt: skip
Split = Literal["tuning", "heldout"]

KINDS: Final[tuple[Kind, ...]] = (
    "goal", "entity", "constraint", "decision", "open_action", "preference", "artifact",
)  # fmt: skip
DOMAINS: Final = ("coding", "research", "support", "operations")
LENGTHS: Final = (120, 300, 1000)
WINDOW: Final = 4_000  # small, so a 300-turn session compacts many times
POLICY: Final = CompactionPolicy(
    keep_recent_turns=2, keep_tool_io_pairs=2, recent_user_token_budget=0
)
THRESHOLD: Final = 0.95  # every strategy, 300- and 1,000-turn sessions
KIND_THRESHOLD: Final = 0.90

# Eight phrasings per kind; {slots} are filled per domain. Index parity decides the split.
TEMPLATES: Final[dict[Kind, tuple[str, ...]]] = {
    "goal": (
        "The whole point of this session is to close {noun} {id} by {day}.",
        "{who} wants us to finish {noun} {id} before {day}.",
        "What I need from you: get {noun} {id} resolved by {day}.",
        "Our aim today is wrapping up {noun} {id}; it has to be done by {day}.",
        "Please make sure {noun} {id} is completed before {day}, that's the objective.",
        "I'm here to get {noun} {id} sorted out by {day}.",
        "Target for this work: {noun} {id} done by {day}.",
        "Ultimately we must deliver {noun} {id} before {day}.",
    ),
    "entity": (
        "For reference, the account number is {code}.",
        "Keep in mind the reference code {code}.",
        "The {noun} belongs to customer {code}.",
        "It's tracked under reference {code}.",
        "Note the account id {code} for later.",
        "Everything here relates to case {code}.",
        "The ledger entry is {code}.",
        "Use {code} when you file anything about it.",
    ),
    "constraint": (
        "Policy reminder: anything above {amount} needs approval from {who}.",
        "Never go over {amount} without asking {who} first.",
        "Remember that {who} must sign off on anything costing more than {amount}.",
        "Hard limit: spending stays under {amount} unless {who} agrees.",
        "We are not allowed to exceed {amount}; {who} approves exceptions.",
        "Budget cap is {amount}, escalate to {who} beyond that.",
        "Anything over {amount} has to go through {who}.",
        "Keep every change below {amount}; {who} is the approver otherwise.",
    ),
    "decision": (
        "We'll go with {choice} instead of {alt} because {reason}.",
        "Let's use {choice}, since {reason}.",
        "Going with {choice} rather than {alt}; the reason is {reason}.",
        "{choice} it is, as {reason}.",
        "I picked {choice} over {alt} as {reason}.",
        "Settled on {choice}, given that {reason}.",
        "Choose {choice}: {reason}.",
        "After comparing it with {alt}, {choice} wins because {reason}.",
    ),
    "open_action": (
        "Still to do: send the {file} to {who}.",
        "Don't forget to email {who} the {file} later.",
        "Pending: {who} needs the {file}.",
        "Later I need you to forward {file} to {who}.",
        "Open item: deliver {file} to {who}.",
        "Remind me to share {file} with {who}.",
        "We still owe {who} the {file}.",
        "Next up after this: hand {file} over to {who}.",
    ),
    "preference": (
        "I prefer that you {pref}.",
        "Please always {pref}.",
        "From now on, {pref}.",
        "My preference: {pref}.",
        "It would help if you'd {pref}.",
        "Going forward, {pref}, please.",
        "I like it when you {pref}.",
        "Make it a habit to {pref}.",
    ),
    "artifact": (
        "The dataset file is {file}.",
        "I uploaded {file} for you.",
        "Results are saved in {file}.",
        "Grab the numbers from {file}.",
        "Attached: {file}.",
        "The report lives at {file}.",
        "Output went to {file}.",
        "Source material: {file}.",
    ),
}
# The slot values a probe requires, per kind.
PROBES: Final[dict[Kind, tuple[str, ...]]] = {
    "goal": ("id", "day"),
    "entity": ("code",),
    "constraint": ("amount", "who"),
    "decision": ("choice", "reason_key"),
    "open_action": ("file", "who"),
    "preference": ("pref_key",),
    "artifact": ("file",),
}


@dataclass(frozen=True)
class Domain:
    noun: str
    extensions: tuple[str, ...]
    stems: tuple[str, ...]
    choices: tuple[str, ...]
    routine: str  # the routine turn's kind, see Generator.routine


DOMAIN_DATA: Final[dict[str, Domain]] = {
    "coding": Domain(
        "ticket",
        ("py", "ipynb", "toml", "sql", "patch"),
        ("auth_flow", "migrate", "loader"),
        ("the asyncpg driver", "a feature flag", "the monorepo layout"),
        "steps",
    ),
    "research": Domain(
        "study",
        ("parquet", "pdf", "csv", "feather", "bib"),
        ("corpus", "survey", "appendix"),
        ("the mixed-effects model", "stratified sampling", "the 2019 baseline"),
        "papers",
    ),
    "support": Domain(
        "order",
        ("pdf", "xlsx", "eml", "png", "docx"),
        ("invoice", "label", "receipt"),
        ("the express courier", "a partial refund", "store credit"),
        "orders",
    ),
    "operations": Domain(
        "incident",
        ("yaml", "log", "tar.gz", "json", "tfstate"),
        ("runbook", "dump", "rollout"),
        ("a blue-green rollout", "the standby cluster", "nightly snapshots"),
        "hosts",
    ),
}
PEOPLE: Final = ("Priya", "Mateo", "Ingrid", "Kwame", "Sofia", "Tomasz", "Aiko", "Lena")
DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
ALTERNATIVES: Final = ("the old approach", "doing nothing", "a manual workaround")
REASONS: Final = (  # (reason, the part a probe requires)
    ("it costs {n}% less", "{n}%"),
    ("it cut the failure rate to {n} per week", "{n} per week"),
    ("the audit in March asked for it", "audit"),
    ("it halves the latency to {n} ms", "{n} ms"),
)
PREFERENCES: Final = (  # (preference, the part a probe requires)
    ("write dates as ISO 8601", "ISO 8601"),
    ("keep replies under {n} words", "{n} words"),
    ("quote amounts in CHF", "CHF"),
    ("answer in Portuguese", "Portuguese"),
    ("use metric units only", "metric units"),
)


@dataclass(frozen=True)
class Fact:
    kind: Kind
    template: int
    text: str
    probe: tuple[str, ...]

    def retained(self, context: str) -> bool:
        lowered = context.lower()
        return all(value.lower() in lowered for value in self.probe)


def user(text: str) -> Item:
    return {"role": "user", "content": text}


def assistant(text: str) -> Item:
    return {"role": "assistant", "content": text}


class Generator:
    """One session's items and planted facts, from a seed."""

    def __init__(self, domain: str, split: Split, seed: int) -> None:
        self.rng = random.Random(seed)
        self.domain = DOMAIN_DATA[domain]
        self.split = split
        self.calls = 0

    def slots(self) -> dict[str, str]:
        rng, domain = self.rng, self.domain
        n = rng.randrange(11, 95)
        reason, reason_key = rng.choice(REASONS)
        pref, pref_key = rng.choice(PREFERENCES)
        code = rng.choice(
            [f"{rng.choice('ABCDKQRX')}{rng.choice('ABCDKQRX')}{rng.randrange(1000, 99999)}",
             f"{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}-{rng.choice('abcxyz')}",
             f"acct_{rng.randrange(10**6, 10**7)}"]
        )  # fmt: skip
        stem = f"{rng.choice(domain.stems)}-{rng.randrange(2, 40)}"
        return {
            "noun": domain.noun,
            "id": str(rng.randrange(1000, 9999)),
            "day": rng.choice(DAYS),
            "who": rng.choice(PEOPLE),
            "code": code,
            "amount": f"{rng.randrange(2, 60) * 50} EUR",
            "choice": rng.choice(domain.choices),
            "alt": rng.choice(ALTERNATIVES),
            "reason": reason.format(n=n),
            "reason_key": reason_key.format(n=n),
            "pref": pref.format(n=n),
            "pref_key": pref_key.format(n=n),
            "file": f"{stem}.{rng.choice(domain.extensions)}",
        }

    def fact(self, kind: Kind) -> Fact:
        parity = 0 if self.split == "tuning" else 1
        index = self.rng.choice(range(parity, len(TEMPLATES[kind]), 2))
        values = self.slots()
        text = TEMPLATES[kind][index].format(**values)
        return Fact(kind, index, text[0].upper() + text[1:], tuple(values[s] for s in PROBES[kind]))

    def routine(self, turn: int) -> list[Item]:
        """An ordinary turn: a templated request, a tool call and its output, an answer."""
        self.calls += 1
        call_id = f"call_{self.calls}"
        n, m = turn + 1, self.rng.randrange(1, 40)
        kind = self.domain.routine
        args: dict[str, Any]
        result: dict[str, Any]
        if kind == "orders":
            order = 7000 + 13 * turn
            ask, tool, args = f"Look up order {order}.", "lookup_order", {"order_id": order}
            status = self.rng.choice(["shipped", "delivered", "in transit"])
            result, answer = {"order_id": order, "status": status}, f"Order {order} has {status}."
        elif kind == "steps":
            ask, tool, args = f"Continue with step {n}: check item {m}.", "run_tests", {"k": m}
            result, answer = {"passed": 12, "failed": 0}, f"Step {n} done: item {m} passes."
        elif kind == "papers":
            ask, tool, args = f"Summarize paper {n} of the reading list.", "fetch_paper", {"i": n}
            result = {"title": f"On sampling, part {n}", "pages": 12}
            answer = f"Paper {n} covers sampling; nothing new for us."
        else:
            host = f"web-{n % 120}"
            ask, tool, args = f"Check host {host}.", "check_host", {"host": host}
            result, answer = {"cpu": m, "mem": 41, "ok": True}, f"{host} is healthy (cpu {m}%)."
        return [
            user(ask),
            {"type": "function_call", "call_id": call_id, "name": tool,
             "arguments": json.dumps(args)},
            {"type": "function_call_output", "call_id": call_id, "output": json.dumps(result)},
            assistant(answer),
        ]  # fmt: skip

    def plan(self, turns: int) -> dict[int, Fact]:
        """The goal in turn 0; two facts of each other kind at distinct turns in the first half."""
        planted = {0: self.fact("goal")}
        spots = self.rng.sample(range(1, max(turns // 2, 14)), 2 * (len(KINDS) - 1))
        kinds = [kind for kind in KINDS if kind != "goal" for _ in range(2)]
        planted.update({spot: self.fact(kind) for spot, kind in zip(spots, kinds, strict=True)})
        return planted


@dataclass
class Run:
    """One session under one strategy: per-round retention and the final one."""

    strategy: str
    domain: str
    turns: int
    rounds: list[dict[str, list[bool]]]  # per compaction: kind -> retained flags
    final: dict[str, list[bool]]


Found = dict[str, list[bool]]  # fact kind -> retained flags
Path_ = Literal["manual", "runner"]


async def run_session(
    store: SessionStore,
    strategy: str,
    domain: str,
    turns: int,
    split: Split,
    seed: int,
    path: Path_ = "manual",
) -> Run:
    manager = CompactionManager(
        CompactionConfig(
            max_context_tokens=WINDOW,
            policy=POLICY.model_copy(update={"strategy": strategy}),
            store=store,
        )
    )
    generator = Generator(domain, split, seed)
    plan = generator.plan(turns)
    session = f"{path}-{strategy}-{domain}-{turns}-{seed}"
    runner = RunnerTurns(store, manager, session) if path == "runner" else None
    planted: list[Fact] = []
    rounds: list[Found] = []
    for turn in range(turns):
        fact = plan.get(turn)
        if fact is not None:
            planted.append(fact)
            items = [user(fact.text), assistant("Noted.")]
        else:
            items = generator.routine(turn)
        if runner is not None:
            compacted = await runner.turn(items)
        else:
            await manager.append(session, items)
            outcome = await manager.maybe_compact(session)
            compacted = outcome is not None and outcome.compacted
        if compacted:
            rounds.append(await probe(store, session, planted))
    final = rounds[-1] if rounds else await probe(store, session, planted)
    return Run(strategy, domain, turns, rounds, final)


class RunnerTurns:
    """The same turns through the Agents SDK: `Runner.run` with a ScriptedModel that makes the
    turn's tool call and gives its answer, an SQLSession, and pre-flight compaction in
    `call_model_input_filter` (the path an application takes)."""

    def __init__(self, store: SessionStore, manager: CompactionManager, session_id: str) -> None:
        self.store = store
        self.session = SQLSession(session_id, store, manager=manager)
        self.config = RunConfig(call_model_input_filter=input_filter(manager))
        self.outputs: deque[str] = deque()
        self.compactions = 0

    def tool(self, name: str) -> FunctionTool:
        async def invoke(_context: Any, _arguments: str) -> str:
            return self.outputs.popleft()

        schema = {"type": "object", "properties": {}, "additionalProperties": True}
        return FunctionTool(name, f"the {name} tool", schema, invoke, strict_json_schema=False)

    async def turn(self, items: Sequence[Item]) -> bool:
        """Run one turn; whether the session was compacted during it."""
        request, *rest = items
        steps: list[ModelStep] = []
        tools: list[Tool] = []
        for item in rest:
            if item.get("type") == "function_call":
                tools.append(self.tool(item["name"]))
                arguments = json.loads(item["arguments"])
                call = function_call(item["name"], arguments, call_id=item["call_id"])
                steps.append(ModelStep(output=[call]))
            elif item.get("type") == "function_call_output":
                self.outputs.append(item["output"])
            else:
                answer = assistant_message(text_of(item))
                steps.append(ModelStep(output=[answer]))
        agent = Agent(name="agent", model=ScriptedModel(steps), tools=tools)
        await Runner.run(agent, text_of(request), session=self.session, run_config=self.config)
        info = await self.store.session_info(self.session.session_id)
        count = info.compaction_count if info is not None else 0
        compacted, self.compactions = count > self.compactions, count
        return compacted


async def probe(store: SessionStore, session: str, planted: Sequence[Fact]) -> Found:
    context = "\n".join(text_of(item) for item in await store.load_context(session))
    found: dict[str, list[bool]] = {}
    for fact in planted:
        found.setdefault(fact.kind, []).append(fact.retained(context))
    return found


def share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def merge(maps: Sequence[dict[str, list[bool]]]) -> dict[str, list[bool]]:
    merged: dict[str, list[bool]] = {}
    for found in maps:
        for kind, flags in found.items():
            merged.setdefault(kind, []).extend(flags)
    return merged


def report(runs: Sequence[Run], split: Split) -> dict[str, Any]:
    strategies: dict[str, Any] = {}
    for strategy in dict.fromkeys(run.strategy for run in runs):
        mine = [run for run in runs if run.strategy == strategy]
        by_length: dict[str, Any] = {}
        for turns in sorted({run.turns for run in mine}):
            sessions = [run for run in mine if run.turns == turns]
            final = merge([run.final for run in sessions])
            depth = max(len(run.rounds) for run in sessions)
            curve = []
            for index in range(depth):  # a session with fewer rounds counts at its last one
                at = [run.rounds[min(index, len(run.rounds) - 1)] for run in sessions if run.rounds]
                curve.append(round(share([f for m in at for fs in m.values() for f in fs]) or 0, 4))
            by_length[str(turns)] = {
                "rounds": [len(run.rounds) for run in sessions],
                "overall": round(share([f for fs in final.values() for f in fs]) or 0, 4),
                "kinds": {kind: round(share(final.get(kind, [])) or 0, 4) for kind in KINDS},
                "curve": curve,
            }
        strategies[strategy] = by_length
    return {"split": split, "window": WINDOW, "domains": list(DOMAINS), "strategies": strategies}


def failures(result: dict[str, Any]) -> list[str]:
    """The thresholds issue 14 sets, for 300- and 1,000-turn sessions."""
    found = []
    for strategy, lengths in result["strategies"].items():
        for turns, row in lengths.items():
            if int(turns) < 300:
                continue
            if row["overall"] < THRESHOLD:
                found.append(f"{strategy} {turns} turns: {row['overall']:.1%} < {THRESHOLD:.0%}")
            for kind, rate in row["kinds"].items():
                floor = 1.0 if kind == "goal" else KIND_THRESHOLD
                if rate < floor:
                    found.append(f"{strategy} {turns} turns {kind}: {rate:.1%} < {floor:.0%}")
    return found


def markdown(result: dict[str, Any]) -> str:
    lines = [f"Split: {result['split']}; path: {result['path']}; window {result['window']} tokens."]
    lines.append("")
    lines.append("| strategy | turns | rounds | overall | " + " | ".join(KINDS) + " |")
    lines.append("|---" * (4 + len(KINDS)) + "|")
    for strategy, lengths in result["strategies"].items():
        for turns, row in lengths.items():
            kinds = " | ".join(f"{row['kinds'][kind]:.0%}" for kind in KINDS)
            rounds = f"{min(row['rounds'])}-{max(row['rounds'])}"
            lines.append(f"| {strategy} | {turns} | {rounds} | {row['overall']:.1%} | {kinds} |")
    lines += ["", "Per-round curves (share of the facts planted so far, all kinds):", ""]
    for strategy, lengths in result["strategies"].items():
        for turns, row in lengths.items():
            curve = " ".join(f"{value:.2f}" for value in row["curve"])
            lines.append(f"- {strategy}, {turns} turns: {curve}")
    return "\n".join(lines)


async def evaluate(
    strategies: Sequence[str], domains: Sequence[str], lengths: Sequence[int], split: Split,
    sessions: int, path: Path_ = "manual",
) -> dict[str, Any]:  # fmt: skip
    set_tracing_disabled(True)
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'eval.db'}"
        async with SessionStore(url, model="gpt-4o") as store:
            for strategy in strategies:
                for domain in domains:
                    for turns in lengths:
                        for seed in range(sessions):
                            runs.append(
                                await run_session(store, strategy, domain, turns, split, seed, path)
                            )
    return {**report(runs, split), "path": path}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tuning", "heldout"), default="heldout")
    parser.add_argument("--turns", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    parser.add_argument("--strategies", nargs="+", default=list(BUILTIN_STRATEGIES))
    parser.add_argument("--sessions", type=int, default=1, help="seeds per domain and length")
    parser.add_argument(
        "--path", choices=("manual", "runner"), default="manual",
        help="manual: append + compact at each turn boundary; runner: the Agents SDK Runner",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 below the thresholds")
    args = parser.parse_args(argv)
    result = asyncio.run(
        evaluate(args.strategies, args.domains, args.turns, args.split, args.sessions, args.path)
    )
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    missed = failures(result)
    for line in missed:
        print(f"below threshold: {line}", file=sys.stderr)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
