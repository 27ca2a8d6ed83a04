"""bench/eval_retention.py run as a user runs it: deterministic, complete, at the KR4 target.

Small sizes keep it fast; the full run and its numbers are in docs/QUALITY.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from sessionstore.compaction._summarizers._prompts import BUILTIN_STRATEGIES, fill_template
from tests.support.openai_server import OpenAIServer
from tests.support.paths import REPO_ROOT
from tests.support.scripts import load_script

SCRIPT = REPO_ROOT / "bench" / "eval_retention.py"
FACT_KINDS = {
    "goal", "constraint", "preference", "artifact", "decision", "open_action", "latest_request",
}  # fmt: skip
PROBE_KINDS = {"recall", "artifact", "continuation", "decision"}
SMALL = ("--sessions", "1", "--rounds", "2")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=300,
        check=False,
    )


def report_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_offline_runs_are_identical_complete_and_on_target() -> None:
    first, second = run(*SMALL, "--json"), run(*SMALL, "--json")
    report = report_of(first)
    assert second.stdout == first.stdout  # same seed, same numbers, to the last digit
    assert report["summarizer"] == "extractive"
    assert (report["sessions"], report["rounds"]) == (1, 2)
    assert list(report["strategies"]) == list(BUILTIN_STRATEGIES)
    for name, data in report["strategies"].items():
        assert set(data["kinds"]) == FACT_KINDS, name
        assert set(data["probes"]) == PROBE_KINDS, name
        for kind, row in data["kinds"].items():
            assert row["probes"] > 0 and len(row["rounds"]) == 2, (name, kind)
            assert all(rate is not None for rate in row["rounds"]), (name, kind)
        assert data["overall"] >= 0.9, name
        # The policy keeps little verbatim: most retained facts live in the summary only.
        assert data["summary_only"] >= 0.5, name
    assert report["overall"] >= 0.9 and report["passed"] and report["below_target"] == []


def test_the_table_shows_every_strategy_and_fact_kind_and_check_passes() -> None:
    result = run("--sessions", "1", "--rounds", "1", "--check")
    assert result.returncode == 0, result.stderr
    table = result.stdout
    for name in BUILTIN_STRATEGIES:
        assert f"### {name}\n" in table
        assert f"\n| {name} | " in table  # the all-strategies summary row
    for kind in FACT_KINDS:
        assert table.count(f"\n| {kind} | ") == len(BUILTIN_STRATEGIES)
    assert "PASS" in table.splitlines()[-1]


def test_an_openai_compatible_endpoint_summarizes_and_check_fails_below_target() -> None:
    # The server echoes a line of the prompt: a poor summary, so --check must fail.
    with OpenAIServer() as server:
        result = run(
            "--sessions", "1", "--rounds", "1", "--strategy", "brief", "--json", "--check",
            "--base-url", server.base_url, "--model", "eval-model", "--api-key", "sk-eval",
        )  # fmt: skip
        requests = server.requests
    assert result.returncode == 1, result.stderr
    assert "retention below 90.0%: brief" in result.stderr
    report = json.loads(result.stdout)
    assert report["summarizer"] == "openai:eval-model"
    assert list(report["strategies"]) == ["brief"] and not report["passed"]
    assert requests and all(r.path == "/v1/chat/completions" for r in requests)
    body, headers = requests[0].body, requests[0].headers
    assert headers["authorization"] == "Bearer sk-eval"
    assert (body["model"], body["temperature"]) == ("eval-model", 0)
    system = body["messages"][0]["content"]
    assert system == fill_template(BUILTIN_STRATEGIES["brief"], body["max_tokens"])


@pytest.mark.parametrize(
    ("argv", "advice"),
    [
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url and --api-key need --model NAME"),
        (["--target", "90"], "0.9 means 90%"),
        (["--sessions", "0"], "must be at least 1"),
        (["--strategy", "nope"], "invalid choice: 'nope'"),
    ],
)
def test_bad_options_say_what_to_do(
    argv: list[str], advice: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        load_script(SCRIPT).parse_args(argv)
    assert exit_info.value.code == 2
    assert advice in capsys.readouterr().err
