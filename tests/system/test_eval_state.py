"""bench/eval_state.py: its quick run is deterministic, its probes cannot pass by accident,
its stale rule says what docs and the issue say, and its halves do not overlap. The full run
and its numbers are the script's own output (`python bench/eval_state.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from tests.support.paths import REPO_ROOT
from tests.support.scripts import load_script

SCRIPT = REPO_ROOT / "bench" / "eval_state.py"
QUICK = ("--quick", "--strategy", "task_state", "--masking", "off", "--json")


@pytest.fixture(scope="module")
def script() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))  # it imports its sibling harnesses by name
    try:
        return load_script(SCRIPT)
    finally:
        sys.path.remove(str(SCRIPT.parent))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300, check=False,
    )  # fmt: skip


def test_a_quick_run_is_deterministic_and_complete(script: ModuleType) -> None:
    first, second = run(*QUICK), run(*QUICK)
    assert first.returncode == 0, first.stderr
    assert second.stdout == first.stdout  # same seed, same bytes
    report: dict[str, Any] = json.loads(first.stdout)
    assert report["split"] == "heldout" and report["quick"] is True
    assert len(report["sessions"]) == len(script.SPECS)
    [row] = report["configs"]
    assert (row["strategy"], row["masking"]) == ("task_state", "off")
    assert set(row["categories"]) == set(script.CATEGORIES)
    assert all(row["categories"][c] is not None for c in script.CATEGORIES)
    assert all(row["kinds"][k] is not None for k in script.KINDS)
    assert row["superseded"] > 0 and row["stale_rate"] is not None
    assert min(row["compactions"]) >= 1  # every session was compacted after its last fact
    assert row["facts"] >= 100


def test_the_probe_check_fails_on_a_planted_collision(script: ModuleType) -> None:
    session = script.build_session(script.SPECS[0], "heldout", 0, True)
    script.check_probes(session)  # as generated: every value only where it was planted
    fact = next(f for f in session.facts if f.category == "tool_output")
    spots = {spot for spots in session.fact_turns for spot in spots}
    noise = next(i for i in range(len(session.turns)) if i not in spots)
    session.turns[noise][1].append({"role": "user", "content": f"also {fact.values[0]} maybe"})
    with pytest.raises(RuntimeError, match="also occurs"):
        script.check_probes(session)


def test_the_stale_rule(script: ModuleType) -> None:
    stale = script.is_stale
    assert not stale("Alice", "pager: Bob (was Alice)")
    assert stale("Alice", "- pager: Alice")
    assert not stale("Alice", "pager: Alice -> Bob")
    assert not stale("Alice", "pager: Alice → Bob")
    assert not stale("6.2.14", "we upgraded redis from 6.2.14 to 7.2.4")
    assert not stale("4,000", "budget 6,500 USD (previously 4,000 USD)")
    assert not stale("Alice", "Bob replaced Alice as release manager")
    assert stale("4,000", "Budget: 4,000 USD. budget is 6,500 USD")
    assert stale("Alice", "(Alice, Bob) are on call")  # a parenthesis, but no marker
    assert not stale("6.2", "redis 16.2 and 6.2.1")  # whole tokens only


def test_kept_needs_every_value_and_a_negation_for_negatives(script: ModuleType) -> None:
    fact = script.Fact("negative", "constraint", 1, "en", ("Fridays",), negative=True)
    assert fact.kept("Team rules: never deploy on Fridays.")
    assert not fact.kept("Deploys happen on Fridays. Never skip the tests.")
    plain = script.Fact("tool_output", "entity", 1, "en", ("ams-web-04", "Priya"))
    assert plain.kept("Priya runs ams-web-04")
    assert not plain.kept("Priya runs ams-web-045")


def test_the_halves_are_disjoint_and_every_family_has_six_phrasings(script: ModuleType) -> None:
    families = script.families()
    assert {category for category, _, _ in families} == set(script.CATEGORIES)
    assert {kind for _, kind, _ in families} == set(script.KINDS)
    for key, templates in families.items():
        assert len(templates) >= 6, key
        tuning = {t.index for t in templates if script.in_split(t, "tuning")}
        heldout = {t.index for t in templates if script.in_split(t, "heldout")}
        assert tuning and heldout and not tuning & heldout, key
    for split, parity in (("tuning", 0), ("heldout", 1)):
        for spec in script.SPECS:
            session = script.build_session(spec, split, 0, True)
            assert {fact.template % 2 for fact in session.facts} == {parity}, (split, spec.name)


def test_check_fails_a_setting_below_any_threshold(script: ModuleType) -> None:
    categories: dict[str, float] = dict.fromkeys(script.CATEGORIES, 0.9)
    good = {"overall": 0.95, "categories": categories}
    assert script.failures({**good, "stale_rate": 0.0}) == []
    assert script.failures({**good, "stale_rate": 0.06}) == ["stale rate 6.0% > 5%"]
    low = {**good, "categories": {**categories, "negative": 0.79}, "stale_rate": 0.0}
    assert script.failures(low) == ["negative 79.0% < 80%"]
    assert script.failures({**good, "overall": 0.89, "stale_rate": None}) == ["overall 89.0% < 90%"]


def test_the_handoff_session_passes_between_three_agents(script: ModuleType) -> None:
    spec = next(spec for spec in script.SPECS if spec.agents)
    session = script.build_session(spec, "heldout", 0, False)
    assert {agent for agent, _ in session.turns} == set(script.AGENTS)
    calls = [item["name"] for _, items in session.turns for item in items if "name" in item]
    assert {f"transfer_to_{agent}" for agent in script.AGENTS} <= set(calls)


def test_an_openai_compatible_endpoint_summarizes_and_check_fails_below_target() -> None:
    # The server echoes a line of the prompt: a poor summary, so --check must fail.
    with OpenAIServer() as server:
        result = run(
            "--quick", "--sessions", "1", "--strategy", "brief", "--masking", "off", "--json",
            "--check", "--base-url", server.base_url, "--model", "eval-model", "--api-key", "sk-e",
        )  # fmt: skip
        requests = server.requests
    assert result.returncode == 1, result.stderr
    assert "below threshold: brief masking off" in result.stderr
    report = json.loads(result.stdout)
    assert report["summarizer"] == "openai:eval-model" and not report["passed"]
    assert requests and all(r.path == "/v1/chat/completions" for r in requests)
    assert requests[0].headers["authorization"] == "Bearer sk-e"
    assert len(requests) == sum(report["configs"][0]["compactions"])  # one per compaction
