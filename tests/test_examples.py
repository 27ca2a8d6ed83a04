"""Examples run offline in CI exactly as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_quickstart_remembers_across_turns(tmp_path: Path) -> None:
    first = _run("quickstart.py", tmp_path)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.strip().splitlines()
    assert lines[0] == "You are Ada."
    assert lines[1].startswith("4 items,") and lines[1].endswith("tokens")
    second = _run("quickstart.py", tmp_path)  # same database file, started fresh
    assert second.stdout == first.stdout
    assert (tmp_path / "quickstart.db").exists()


def test_minimal_compaction_example_compacts(tmp_path: Path) -> None:
    result = _run("agents_sdk_minimal.py", tmp_path)
    assert result.returncode == 0, result.stderr
    turns, compactions = result.stdout.split()[0], result.stdout.split()[2]
    assert turns == "12" and int(compactions) >= 1
