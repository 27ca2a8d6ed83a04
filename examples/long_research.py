"""A long research session: several compaction rounds, and a report of what each one did.

An assistant researches approximate-nearest-neighbour indexes for a retrieval service: for
every question it searches a (synthetic) library, reads a paper and records the finding
with `note_finding`, a protected tool, so findings survive every compaction. The session
pushes several times its 8,000-token window through `long_research.db`.

Compaction runs between questions (`manager.maybe_compact`, an O(1) check of the stored
total), where nothing is in flight, so each round can report back: tokens before and after,
and how many rows each layer kept or summarized. The last round is then printed row by row,
kept (=) or summarized and archived (-), the same report as
`sessionstore compact SESSION --dry-run --diff`. (For compaction before every model call, see
agents_sdk_minimal.py.)

Offline by default (the SDK's ScriptedModel and the extractive summarizer). With
OPENAI_API_KEY set (OPENAI_BASE_URL for any OpenAI-compatible server, OPENAI_MODEL for the
model), a real model researches and summarizes instead.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from agents import Agent, Runner, function_tool
from agents.testing import assistant_message, function_call
from online_or_offline import agent_model, summarizer

from sessionstore import SessionStore, SQLSession
from sessionstore.compaction import (
    CompactionConfig,
    CompactionManager,
    CompactionOutcome,
    CompactionPolicy,
    diff_lines,
)

SESSION = "research"
WINDOW = 6_000
TOPICS = (
    "HNSW graph degree",
    "IVF-PQ codebook size",
    "DiskANN on NVMe",
    "ScaNN anisotropic quantization",
    "filtered search with metadata",
    "streaming inserts and deletes",
    "memory per million vectors",
    "sharding across nodes",
    "hybrid BM25 plus vector search",
    "cross-encoder reranking",
    "embedding dimension reduction",
    "recall measurement methodology",
    "cold start and index build time",
    "multi-tenant isolation",
)

REMARKS = (
    "build time grows linearly",
    "tail latency dominates",
    "filters cut recall",
    "quantization error is bounded",
)

# ----------------------------------------------------------------- the library


def _paper(topic: str) -> dict[str, Any]:
    """A deterministic synthetic paper about `topic`, with numbers worth remembering."""
    rng = random.Random(topic)
    recall = round(rng.uniform(0.86, 0.99), 3)
    latency = rng.randint(2, 40)
    return {
        "id": f"P{rng.randint(100, 999)}",
        "title": f"An empirical study of {topic}",
        "recall": recall,
        "latency": latency,
        "body": " ".join(
            f"Experiment {k}: on {rng.choice(('SIFT1M', 'Deep10M', 'MSMARCO', 'GIST1M'))} "
            f"{topic} reached recall@10 {recall - k * 0.004:.3f} at p99 {latency + k} ms "
            f"with {rng.randint(8, 96)} GB of memory; the authors note "
            f"{rng.choice(REMARKS)}."
            for k in range(14)
        ),
    }


@function_tool
def search(query: str) -> str:
    """Search the paper library; returns ids, titles and one-line abstracts."""
    topic = next((t for t in TOPICS if t.lower() in query.lower()), query)
    found = [_paper(topic), *(_paper(f"{topic} ({variant})") for variant in ("survey", "ablation"))]
    return "\n".join(
        f"[{paper['id']}] {paper['title']}: recall@10 {paper['recall']}, p99 {paper['latency']} ms"
        for paper in found
    )


@function_tool
def read_paper(topic: str) -> str:
    """Read the main paper about a topic (its full experimental section)."""
    paper = _paper(topic)
    return f"{paper['id']} {paper['title']}\n{paper['body']}"


@function_tool
def note_finding(finding: str) -> str:
    """Record a finding for the final recommendation (protected: never compacted away)."""
    return f"noted: {finding}"


# ----------------------------------------------------------------- the session


def _question(topic: str) -> str:
    return f"Research question: how does {topic} affect recall and latency for our service?"


def _script() -> list[list[Any]]:
    """The offline researcher: search, read, note, answer; for every topic."""
    steps: list[list[Any]] = []
    for n, topic in enumerate(TOPICS):
        paper = _paper(topic)
        finding = f"{topic}: recall@10 {paper['recall']} at p99 {paper['latency']} ms"
        steps += [
            [function_call("search", {"query": topic}, call_id=f"search_{n}")],
            [function_call("read_paper", {"topic": topic}, call_id=f"read_{n}")],
            [function_call("note_finding", {"finding": finding}, call_id=f"note_{n}")],
            [assistant_message(f"{paper['id']} answers it: {finding}. " * 3)],
        ]
    return steps


async def main() -> None:
    store = SessionStore()  # ./sessionstore.db ($SESSIONSTORE_URL if set)
    policy = CompactionPolicy(
        trigger_pct=0.6,  # compact between questions, well before the window is near
        keep_recent_turns=1,
        keep_tool_io_pairs=2,
        protected_tools=("note_finding",),  # findings are pinned: never summarized
        recent_user_token_budget=0,  # older questions live on in the summary
        strategy="decision_log",
        summary_max_tokens=800,  # a small window wants a small summary
    )
    manager = CompactionManager(
        CompactionConfig(
            max_context_tokens=WINDOW, policy=policy, store=store, summarizer=summarizer()
        )
    )
    session = SQLSession(SESSION, store)
    await session.clear_session()  # each run starts an empty context; history stays
    agent = Agent(
        name="researcher",
        instructions="Answer each research question from the papers; note every finding.",
        model=agent_model(_script),
        tools=[search, read_paper, note_finding],
    )
    rounds: list[CompactionOutcome] = []
    for number, topic in enumerate(TOPICS, 1):
        await Runner.run(agent, _question(topic), session=session)
        # Between questions nothing is in flight: the checkpoint where compaction reports back.
        outcome = await manager.maybe_compact(SESSION)
        if outcome is not None and outcome.compacted:
            rounds.append(outcome)
            _print_round(outcome, after_question=number)
    info = await store.session_info(SESSION)
    assert info is not None
    print(
        f"{len(TOPICS)} questions, {len(rounds)} compaction rounds, "
        f"{info.context_tokens} of {WINDOW} tokens in context now"
    )
    if rounds:
        _print_rows(rounds[-1])
    await store.close()


def _print_round(outcome: CompactionOutcome, after_question: int) -> None:
    """One round in two lines: tokens saved, then how many rows each fate got."""
    assert outcome.plan is not None and outcome.result is not None
    fates: dict[str, int] = {}
    for line in diff_lines(outcome.plan):
        fates[line.fate] = fates.get(line.fate, 0) + 1
    print(
        f"round v{outcome.result.version} after question {after_question}: "
        f"{outcome.tokens_before} -> {outcome.tokens_after} tokens ({outcome.reduction:.0%} saved)"
    )
    print("  " + ", ".join(f"{fate}: {count}" for fate, count in sorted(fates.items())))


def _print_rows(outcome: CompactionOutcome) -> None:
    """The last round row by row: kept (=) or summarized and archived (-)."""
    assert outcome.plan is not None and outcome.result is not None
    print(f"round v{outcome.result.version}, row by row:")
    for line in diff_lines(outcome.plan, width=56):
        where = f"{line.seq:>4} {line.fate:<13} {line.label:<21} {line.tokens:>4}"
        print(f"  {line.sign} {where}  {line.preview}")


if __name__ == "__main__":
    asyncio.run(main())
