"""The command line's start-up, as a user feels it: the wall time of whole processes.

Each figure is the best (and the median) of `--runs` processes of the installed
`sessionstore` command on a small SQLite file (the demo's two sessions):

- `--help`: the root's help, which imports no command;
- `sessions list`: the standard-library read of a file at the newest schema;
- `sessions list (store)`: the same listing through the store (a URL with a query is not
  read by the quick path), what every listing cost before issue #33's start-up work;
- `python -c pass`: the interpreter alone, the floor.

    python bench/bench_startup.py              # 5 processes per figure
    python bench/bench_startup.py --runs 9
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    cli = shutil.which("sessionstore") or str(Path(sys.executable).parent / "sessionstore")
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'demo.db'}"
        subprocess.run([cli, "demo", "--url", url], check=True, capture_output=True)
        figures = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "--help": [cli, "--help"],
            "sessions list": [cli, "sessions", "list", "--url", url],
            "sessions list (store)": [cli, "sessions", "list", "--url", f"{url}?timeout=5"],
        }
        print(f"{'command':<24}{'best':>8}{'median':>9}   ({runs} processes each)")
        for name, command in figures.items():
            times = [_seconds(command) for _ in range(runs)]
            print(f"{name:<24}{min(times):>7.2f}s{statistics.median(times):>8.2f}s")


if __name__ == "__main__":
    main()
