"""Masking, summaries, or the cascade: facts the model is sent, tokens sent, summarizer calls.

    python bench/eval_masking.py                     # held-out half, 120 and 300 turns
    python bench/eval_masking.py --split tuning      # the half options may be tuned on
    python bench/eval_masking.py --turns 120 --json  # one length, machine-readable

Sessions are bench/eval_paraphrase.py's (its seeded generator, four domains, facts in
phrasing templates whose odd-numbered half is held out), with tool outputs the size real
tools return: every routine turn's output carries a few hundred tokens of log lines, and half
of the facts arrive inside a tool output (a `read_notes` call) instead of a user message.
Each turn is one model call through the kernel path (`chat.py`'s: append, pre-flight, send):

- `masking`: old tool outputs masked, never summarized (the window is not enforced; the
  calls that would not fit it are counted);
- `summaries`: today's behaviour, summaries whenever the pre-flight's trigger fires;
- `cascade`: masking first, summaries only when the masked input is still over the trigger.

Per session it records the tokens sent (the pre-flight's estimate of each call's input,
summed), the summarizer calls, and, after the last turn, which facts planted so far are in
the text the model is sent (masked outputs count as lost, whatever a tool could read back).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from eval_paraphrase import DOMAINS, KINDS, POLICY, Fact, Generator, Split, assistant, user

from sessionstore import SessionStore, text_of
from sessionstore.compaction import (
    CompactionConfig,
    CompactionManager,
    ExtractiveSummarizer,
    MaskingPolicy,
    RowMasking,
    SummaryRequest,
    SummaryResult,
)

Item = dict[str, Any]
Strategy = Literal["masking", "summaries", "cascade"]
STRATEGIES: Final[tuple[Strategy, ...]] = ("masking", "summaries", "cascade")
LENGTHS: Final = (120, 300)
WINDOW: Final = 16_000  # room for a few turns of real-sized tool outputs
MASKING: Final = MaskingPolicy(enabled=True, clear_at_least=1_000, keep_tool_outputs=2)
LOG_LINES: Final = 24  # per routine output: ~300 tokens


class CountingSummarizer:
    """The extractive summarizer, counting its calls."""

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()
        self.name = self.inner.name
        self.input_window = self.inner.input_window
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        return await self.inner.summarize(request)


def log_lines(rng: random.Random, turn: int) -> str:
    """What a tool prints around its result: timestamps, levels, ids (no fact values)."""
    levels = ("INFO", "DEBUG", "WARN")
    return "\n".join(
        f"2026-03-{1 + turn % 28:02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d} "
        f"{rng.choice(levels)} worker-{rng.randrange(16)} span={rng.randrange(16**8):08x} "
        f"took {rng.randrange(1, 900)}ms queue={rng.randrange(40)}"
        for _ in range(LOG_LINES)
    )


def turn_items(generator: Generator, turn: int, fact: Fact | None, planted: int) -> list[Item]:
    """The turn's items: a routine turn with a long output, or a fact stated by the user
    (even-numbered facts) or read from a tool's output (odd-numbered)."""
    rng = generator.rng
    if fact is None:
        items = generator.routine(turn)
        items[2] = {**items[2], "output": f"{items[2]['output']}\n{log_lines(rng, turn)}"}
        return items
    if planted % 2 == 0:
        return [user(fact.text), assistant("Noted.")]
    call_id = f"notes_{turn}"
    body = f"{log_lines(rng, turn)}\nNOTE: {fact.text}\n{log_lines(rng, turn + 1)}"
    return [
        user("Read the latest notes."),
        {"type": "function_call", "call_id": call_id, "name": "read_notes", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": body},
        assistant("Noted."),
    ]


@dataclass
class Run:
    strategy: Strategy
    domain: str
    turns: int
    tokens_sent: int
    summarizer_calls: int
    over_window: int  # calls whose input would not fit the window
    retained: dict[str, list[bool]]  # fact kind -> retained flags after the last turn


async def run_session(
    store: SessionStore, strategy: Strategy, domain: str, turns: int, split: Split, seed: int
) -> Run:
    summarizer = CountingSummarizer()
    masking = MASKING if strategy != "summaries" else MaskingPolicy()
    policy = POLICY.model_copy(update={"masking": masking})
    window = 10**9 if strategy == "masking" else WINDOW  # masking alone never summarizes
    manager = CompactionManager(
        CompactionConfig(
            max_context_tokens=window,
            policy=policy,
            store=store,
            summarizer=summarizer,
            record_idle_decisions=False,
        )
    )
    view = RowMasking(masking, policy, manager.estimator) if masking.enabled else None
    generator = Generator(domain, split, seed)
    plan = generator.plan(turns)
    session = f"{strategy}-{domain}-{turns}-{seed}"
    planted: list[Fact] = []
    sent_tokens = over = 0
    sent: list[Item] = []
    for turn in range(turns):
        fact = plan.get(turn)
        items = turn_items(generator, turn, fact, len(planted))
        if fact is not None:
            planted.append(fact)
        *asked, answer = items
        await manager.append(session, asked)
        sent, freed = await send(manager, view, session)
        tokens = await store.context_tokens(session) - freed
        sent_tokens += tokens
        over += tokens > POLICY.budget(WINDOW)
        await manager.append(session, [answer])
    context = "\n".join(text_of(item) for item in sent)
    retained: dict[str, list[bool]] = {}
    for fact in planted:
        retained.setdefault(fact.kind, []).append(fact.retained(context))
    return Run(strategy, domain, turns, sent_tokens, summarizer.calls, over, retained)


async def send(
    manager: CompactionManager, masking: RowMasking | None, session: str
) -> tuple[list[Item], int]:
    """One model call's pre-flight, as chat.py runs it: what is sent, what masking freed."""
    store = manager.store
    if masking is None:
        await manager.before_model_call(session)
        return await store.load_context(session), 0
    view = masking.view(session, await store.context_rows(session))
    if await manager.before_model_call(session, masked=view.report):
        view = masking.view(session, await store.context_rows(session))
    return view.items, view.report.tokens_freed


def report(runs: Sequence[Run], split: Split) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for strategy in STRATEGIES:
        for turns in sorted({run.turns for run in runs}):
            mine = [run for run in runs if run.strategy == strategy and run.turns == turns]
            if not mine:
                continue
            flags = [flag for run in mine for found in run.retained.values() for flag in found]
            by_kind = {
                kind: [flag for run in mine for flag in run.retained.get(kind, [])]
                for kind in KINDS
            }
            table.setdefault(strategy, {})[str(turns)] = {
                "sessions": len(mine),
                "retained": round(sum(flags) / len(flags), 4),
                "kinds": {k: round(sum(f) / len(f), 4) for k, f in by_kind.items() if f},
                "tokens_sent": round(sum(run.tokens_sent for run in mine) / len(mine)),
                "summarizer_calls": round(sum(r.summarizer_calls for r in mine) / len(mine), 1),
                "over_window": round(sum(run.over_window for run in mine) / len(mine), 1),
            }
    return {"split": split, "window": WINDOW, "masking": MASKING.model_dump(), "table": table}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Split: {result['split']}; window {result['window']} tokens; per session (means).",
        "",
        "| strategy | turns | facts sent | tokens sent | summarizer calls | calls over window |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for strategy, lengths in result["table"].items():
        for turns, row in lengths.items():
            lines.append(
                f"| {strategy} | {turns} | {row['retained']:.1%} | {row['tokens_sent']:,} | "
                f"{row['summarizer_calls']} | {row['over_window']} |"
            )
    return "\n".join(lines)


async def evaluate(
    lengths: Sequence[int], domains: Sequence[str], split: Split, sessions: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="eval-masking-") as folder:
        url = f"sqlite:///{Path(folder) / 'eval.db'}"
        async with SessionStore(url, keyring=None, sqlite_synchronous="OFF") as store:
            runs = [
                await run_session(store, strategy, domain, turns, split, seed)
                for strategy in STRATEGIES
                for turns in lengths
                for domain in domains
                for seed in range(sessions)
            ]
    return report(runs, split)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tuning", "heldout"), default="heldout")
    parser.add_argument("--turns", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    parser.add_argument("--sessions", type=int, default=1, help="seeds per domain and length")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.sessions < 1 or min(args.turns) < 20:
        parser.error("--sessions must be at least 1 and --turns at least 20")
    result = asyncio.run(evaluate(args.turns, args.domains, args.split, args.sessions))
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
