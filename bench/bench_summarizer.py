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
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in a child process whose sys.path starts with one tree or the other.
CHILD = r"""
import json, random, sys, time
from sessionstore.compaction._extractive import ExtractiveSummarizer
from sessionstore.compaction._factsheet import carry_forward
from sessionstore.compaction._summarizer import SummaryRequest

def items(count, seed):
    rng = random.Random(seed)
    names = ["Priya", "Marco", "Ana", "Lucia", "Bjorn", "Noor"]
    out = []
    n = 0
    while len(out) < count:
        n += 1
        pick = rng.randrange(6)
        host = f"db-{rng.randrange(99)}.internal"
        out.append({"role": "user", "content": f"Check the {rng.choice(['cache', 'replica', 'pool'])} settings for step {n}."})
        call = f"c{n}"
        if pick == 0:
            text = f"replicas: {rng.randrange(9)}\ncache:\n  host: {host}\n  port: 6379\nlimits:\n  cpu: 750m\n"
            args = {"path": f"deploy/svc{n % 7}.yaml"}
        elif pick == 1:
            text = "\n".join(f"KEY_{i}={rng.randrange(999)}" for i in range(12))
            args = {"path": f"deploy/{n % 5}/.env"}
        elif pick == 2:
            text = json.dumps({"number": n, "assignee": {"name": rng.choice(names)}, "labels": ["bug"]})
            args = {"number": n}
        elif pick == 3:
            rows = "\n".join(f" OPS-{n}{i} | {rng.choice(names)} | open" for i in range(4))
            text = f" id | owner | status\n----+-------+-------\n{rows}\n(4 rows)"
            args = {"query": "SELECT id, owner, status FROM tickets"}
        elif pick == 4:
            text = "\n".join(f"2026-01-0{i % 9 + 1}T10:00:0{i % 9}Z INFO worker pool_size={i}" for i in range(8))
            args = {"service": "worker"}
        else:
            text = "\n".join(f"src/m{i}.py:{i * 7}: # TODO: tidy {i}" for i in range(15))
            args = {"pattern": "TODO"}
        out.append({"type": "function_call", "call_id": call, "name": "tool", "arguments": json.dumps(args)})
        out.append({"type": "function_call_output", "call_id": call, "output": text})
        out.append({"role": "assistant", "content": f"The {rng.choice(['limit', 'owner', 'host'])} is {rng.choice(names)} now, moving to {host}."})
    return out[:count]

summarizer = ExtractiveSummarizer()
count = summarizer._estimator.count_text
result = {}
for size in (1000, 10000):
    batch = items(size, size)
    prior = summarizer.render(SummaryRequest(items(200, 1), None, "task_state", "", 2048))
    request = SummaryRequest(batch, prior, "task_state", "", 2048)
    summarizer.render(request)  # warm caches and imports
    start = time.perf_counter()
    text = summarizer.render(request)
    carry_forward(prior, text, count, 2048, batch)
    result[size] = time.perf_counter() - start
print(json.dumps(result))
"""


def run(tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    return {key: float(value) for key, value in json.loads(done.stdout).items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="57bffb6", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
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
