"""What envelope encryption costs on archive-sized payloads, next to plain zlib.

    python bench/bench_crypto.py            # 1 KB, 64 KB, 1 MB
    python bench/bench_crypto.py --quick

Payloads are JSON lines shaped like archived chat transcripts (user/assistant turns, tool
calls and outputs). Archives are compressed then sealed, so the row to compare against is
plain zlib level 6: "compress+seal / zlib" is the slowdown encryption adds to archiving.
Throughput is MB of uncompressed payload per second (the median of 7 interleaved timed rounds).
Rewrap (key rotation) touches only the 60-byte wrapped key, so it is reported in ops/s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import zlib
from collections.abc import Callable

from sessionstore import Keyring, LocalKey
from sessionstore._security._crypto import open_sealed, rewrap, seal  # measured directly

SIZES = {"1 KB": 1024, "64 KB": 64 * 1024, "1 MB": 1024 * 1024}
CONTEXT = {"table": "archives", "session": "user-42", "compaction": "17", "seq": "1-400"}
WORDS = (
    "the", "deploy", "failed", "because", "config", "cache", "was", "stale", "so", "I",
    "rebuilt", "index", "and", "reran", "tests", "latency", "is", "back", "under", "budget",
    "but", "rollout", "branch", "still", "needs", "a", "schema", "migration", "before", "we",
    "can", "merge", "it", "into", "main", "please", "check", "logs", "for", "errors",
)  # fmt: skip
LABEL = "bench archive"
TOOLS = ("grep", "read_file", "run_tests", "git_diff", "search_docs")


def transcript(size: int, seed: int = 7) -> bytes:
    """At least `size` bytes of archive-style JSON lines, cut at `size`."""
    rng = random.Random(seed)
    lines: list[str] = []
    total, seq = 0, 0
    while total < size:
        seq += 1
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 80)))
        kind = seq % 4
        if kind == 1:
            item: dict[str, object] = {"role": "user", "content": text}
        elif kind == 2:
            tool = rng.choice(TOOLS)
            args = json.dumps({"query": text[:40], "path": f"src/mod_{rng.randint(1, 99)}.py"})
            item = {
                "type": "function_call",
                "call_id": f"call_{seq}",
                "name": tool,
                "arguments": args,
            }
        elif kind == 3:
            item = {"type": "function_call_output", "call_id": f"call_{seq - 1}", "output": text}
        else:
            item = {"role": "assistant", "content": [{"type": "output_text", "text": text}]}
        line = json.dumps({"seq": seq, "item": item}, separators=(",", ":")) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:size]


def seconds_per_call(works: dict[str, Callable[[], object]], budget: float) -> dict[str, float]:
    """Median seconds per call of each work; rounds interleave the works so drift hits all."""
    counts: dict[str, int] = {}
    for name, work in works.items():
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < budget / 10 or calls < 3:
            work()
            calls += 1
        counts[name] = calls
    rounds: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(7):
        for name, work in works.items():
            start = time.perf_counter()
            for _ in range(counts[name]):
                work()
            rounds[name].append((time.perf_counter() - start) / counts[name])
    return {name: statistics.median(values) for name, values in rounds.items()}


def bench_size(name: str, size: int, keyring: Keyring, budget: float) -> None:
    """One table row: every operation on one payload size."""
    raw = transcript(size)
    packed = zlib.compress(raw, 6)
    sealed_raw = seal(raw, keyring, CONTEXT)
    sealed_packed = seal(packed, keyring, CONTEXT)
    times = seconds_per_call(
        {
            "zlib": lambda: zlib.compress(raw, 6),
            "seal": lambda: seal(raw, keyring, CONTEXT),
            "zip+seal": lambda: seal(zlib.compress(raw, 6), keyring, CONTEXT),
            "open": lambda: open_sealed(sealed_raw, keyring, CONTEXT, label=LABEL),
            "open+unzip": lambda: zlib.decompress(
                open_sealed(sealed_packed, keyring, CONTEXT, label=LABEL)
            ),
            "unzip": lambda: zlib.decompress(packed),
        },
        budget,
    )
    mbps = {key: size / 1e6 / value for key, value in times.items()}
    print(
        f"{name:>8} {size / len(packed):>5.1f}x | {mbps['zlib']:>8.1f} {mbps['seal']:>8.1f}"
        f" {mbps['zip+seal']:>9.1f} {mbps['open']:>8.1f} {mbps['open+unzip']:>10.1f}"
        f" {mbps['unzip']:>8.1f} | {times['zip+seal'] / times['zlib']:>12.3f}x"
        f" {times['open+unzip'] / times['unzip']:>15.3f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    budget = 0.05 if parser.parse_args().quick else 0.4

    keyring = Keyring([LocalKey.generate("k1"), LocalKey.generate("k2")], active="k1")
    print("envelope encryption (AES-256-GCM, local KEK), MB/s of uncompressed JSON lines")
    header = f"{'payload':>8} {'ratio':>6} | {'zlib':>8} {'seal':>8} {'zip+seal':>9}"
    header += f" {'open':>8} {'open+unzip':>10} {'unzip':>8} | {'zip+seal/zlib':>13}"
    header += f" {'open+unzip/unzip':>16}"
    print(header)
    print("-" * len(header))
    for name, size in SIZES.items():
        bench_size(name, size, keyring, budget)

    sealed = seal(transcript(SIZES["1 MB"]), keyring, CONTEXT)
    rotated = keyring.with_active("k2")
    times = seconds_per_call(
        {
            "rewrap": lambda: rewrap(sealed, rotated, CONTEXT),
            "open": lambda: open_sealed(sealed, keyring, CONTEXT, label=LABEL),
        },
        budget,
    )
    per_rewrap, per_open = times["rewrap"], times["open"]
    print(
        f"\nrewrap (key rotation) of a 1 MB sealed payload: {1 / per_rewrap:,.0f} ops/s"
        f" ({per_rewrap * 1e6:.1f} us; opening the same payload takes {per_open * 1e6:.1f} us)"
    )
    print(
        "ratio = compression ratio; zip+seal/zlib and open+unzip/unzip = time with encryption"
        " over time without (1.000x would be free)"
    )


if __name__ == "__main__":
    main()
