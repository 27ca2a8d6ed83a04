"""The offline summarizer's time at 1k and 10k items: this tree against an earlier commit.

    python bench/bench_summarizer.py                 # against 57bffb6, 3 rounds
    python bench/bench_summarizer.py --against HEAD~3 --rounds 5

bench/bench_compaction.py times compaction with an instant summarizer, so that it measures
the store; this one times what that leaves out: the extractive summarizer (render) and the
fact sheet's carry-forward check, which is what reading tool outputs by their structure
and settling one value per subject added. Sessions are generated from a seeded RNG: user
requests, assistant remarks that state values, tool calls whose outputs are configs (YAML,
.env), JSON records, SQL tables, logs and grep hits, and a prior summary to carry. The old
code is `git archive`d into a temporary folder; each round times both trees in fresh
processes, alternating, and the report gives the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def items(count: int, seed: int) -> list[dict[str, Any]]:
    """A session of `count` items: requests, tool calls of six shapes, remarks with values."""
    rng = random.Random(seed)
    names = ["Priya", "Marco", "Ana", "Lucia", "Bjorn", "Noor"]
    out: list[dict[str, Any]] = []
    n = 0
    while len(out) < count:
        n += 1
        host = f"db-{rng.randrange(99)}.internal"
        topic = rng.choice(["cache", "replica", "pool"])
        out.append({"role": "user", "content": f"Check the {topic} settings for step {n}."})
        text, arguments = _output(rng, n, host, names)
        call = {"type": "function_call", "call_id": f"c{n}", "name": "tool"}
        out.append({**call, "arguments": json.dumps(arguments)})
        out.append({"type": "function_call_output", "call_id": f"c{n}", "output": text})
        said = f"The {rng.choice(['limit', 'owner', 'host'])} is {rng.choice(names)} now."
        out.append({"role": "assistant", "content": f"{said} Moving to {host}."})
    return out[:count]


def _output(rng: random.Random, n: int, host: str, names: list[str]) -> tuple[str, Any]:
    pick = rng.randrange(6)
    if pick == 0:
        config = f"replicas: {rng.randrange(9)}\ncache:\n  host: {host}\n  port: 6379\n"
        return config, {"path": f"deploy/svc{n % 7}.yaml"}
    if pick == 1:
        env = "\n".join(f"KEY_{i}={rng.randrange(999)}" for i in range(12))
        return env, {"path": f"deploy/{n % 5}/.env"}
    if pick == 2:
        issue = {"number": n, "assignee": {"name": rng.choice(names)}, "labels": ["bug"]}
        return json.dumps(issue), {"number": n}
    if pick == 3:
        rows = "\n".join(f" OPS-{n}{i} | {rng.choice(names)} | open" for i in range(4))
        table = f" id | owner | status\n----+-------+-------\n{rows}\n(4 rows)"
        return table, {"query": "SELECT id, owner, status FROM tickets"}
    if pick == 4:
        log = "\n".join(f"2026-01-0{i % 9 + 1}T10:00:00Z INFO pool_size={i}" for i in range(8))
        return log, {"service": "worker"}
    hits = "\n".join(f"src/m{i}.py:{i * 7}: # TODO: tidy {i}" for i in range(15))
    return hits, {"pattern": "TODO"}


def child() -> dict[str, float]:
    """Times of the summarizer of whichever tree `sessionstore` is imported from."""
    from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer
    from sessionstore.compaction._summarizers._factsheet import carry_forward
    from sessionstore.compaction._summarizers._summarizer import SummaryRequest

    summarizer = ExtractiveSummarizer()
    count = summarizer._estimator.count_text
    result = {}
    prior = summarizer.render(SummaryRequest(items(200, 1), None, "task_state", "", 2048))
    for size in (1000, 10000):
        batch = items(size, size)
        request = SummaryRequest(batch, prior, "task_state", "", 2048)
        summarizer.render(request)  # warm caches and imports
        start = time.perf_counter()
        text = summarizer.render(request)
        carry_forward(prior, text, count, 2048, batch)
        result[str(size)] = time.perf_counter() - start
    return result


def run(tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True
    )
    return {key: float(value) for key, value in json.loads(done.stdout).items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="57bffb6", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child()))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-summarizer-") as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.against, "sessionstore"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
        old: list[dict[str, float]] = []
        new: list[dict[str, float]] = []
        for _ in range(args.rounds):
            old.append(run(Path(folder)))
            new.append(run(ROOT))
    print(f"extractive summarizer + carry-forward, median of {args.rounds} alternating rounds")
    print(f"| items | {args.against} (ms) | this tree (ms) | ratio |")
    print("| ---: | ---: | ---: | ---: |")
    for size in ("1000", "10000"):
        before = statistics.median(r[size] for r in old) * 1000
        after = statistics.median(r[size] for r in new) * 1000
        print(f"| {size} | {before:.1f} | {after:.1f} | {after / before:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
