"""bench/eval_masking.py, reduced: the held-out half, one domain, 60 turns per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "bench" / "eval_masking.py"


def test_the_cascade_summarizes_less_and_sends_less_than_summaries_alone() -> None:
    env = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--turns", "60", "--domains", "operations", "--json"],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["split"] == "heldout"
    rows = {strategy: lengths["60"] for strategy, lengths in report["table"].items()}
    assert list(rows) == ["masking", "summaries", "cascade"]
    masking, summaries, cascade = rows["masking"], rows["summaries"], rows["cascade"]
    assert masking["summarizer_calls"] == 0  # masking alone never summarizes
    assert cascade["summarizer_calls"] < summaries["summarizer_calls"]
    assert cascade["tokens_sent"] < summaries["tokens_sent"]
    assert summaries["over_window"] == cascade["over_window"] == 0
    for row in rows.values():
        assert 0 < row["retained"] <= 1
