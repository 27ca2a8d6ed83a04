"""Examples run offline in CI exactly as a user would run them (subprocesses, a fresh cwd)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._items import text_of
from sessionstore._schema import compactions
from tests.support.cli import run_process
from tests.support.invariants import assert_session_invariants
from tests.support.openai_server import OpenAIServer
from tests.support.paths import REPO_ROOT
from tests.support.servers import AriadneIngest, serve

EXAMPLES = REPO_ROOT / "examples"


def _run(
    script: str, cwd: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run an example offline (no OPENAI_API_KEY unless `env` sets one)."""
    unset = ("OPENAI_API_KEY", "ARIADNE_URL", "SESSIONSTORE_URL")
    base = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, **(env or {})},
        timeout=120,
    )


def _sections(stdout: str) -> dict[str, list[str]]:
    """The example's output as {question line: its indented answer lines}."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(" "):
            current.append(line.strip())
        else:
            current = sections.setdefault(line, [])
    return sections


def _model_env(server: OpenAIServer) -> dict[str, str]:
    """What a reader with a key exports, pointed at the OpenAI-compatible test server."""
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }


def _remembering(body: Mapping[str, Any]) -> str:
    """The model: says the name when asked for it and it is in the input."""
    said = json.dumps(body.get("input", ""))
    return "You are Ada." if "What's my name" in said and "I'm Ada" in said else "Hi Ada!"


def test_quickstart_remembers_across_turns(tmp_path: Path) -> None:
    with OpenAIServer(default=_remembering) as server:
        first = _run("quickstart.py", tmp_path, env=_model_env(server))
        second = _run("quickstart.py", tmp_path, env=_model_env(server))  # the same file again
    assert first.returncode == 0, first.stderr
    answer, tokens, unit = first.stdout.strip().rsplit(" ", 2)
    assert answer == "You are Ada." and int(tokens) > 0 and unit == "tokens"
    assert second.returncode == 0 and second.stdout.startswith("You are Ada.")
    assert int(second.stdout.split()[-2]) > int(tokens)  # the second run's turns came on top


def test_quickstart_without_a_key_says_so_and_stores_nothing(tmp_path: Path) -> None:
    result = _run("quickstart.py", tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "quickstart: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible "
        "server); `sessionstore demo` shows the store at work without a key"
    ]
    assert list(tmp_path.iterdir()) == []  # no database, so no half-stored turn


def test_the_readme_quick_start_is_the_example_line_for_line() -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    block = readme.split("## Quick start with the Agents SDK\n\n```python\n", 1)[1]
    assert block.split("```\n", 1)[0] == (EXAMPLES / "quickstart.py").read_text()


def test_minimal_compaction_example_compacts(tmp_path: Path) -> None:
    result = _run("agents_sdk_minimal.py", tmp_path)
    assert result.returncode == 0, result.stderr
    turns, compactions = result.stdout.split()[0], result.stdout.split()[2]
    assert turns == "12" and int(compactions) >= 1
    # It prints a real summary of the compacted turns (issue 14), not "No prior context".
    summary = result.stdout.split("\n", 1)[1]
    assert summary.startswith("<COMPACT-SUMMARY") and "No prior context" not in summary
    assert "Noted fact 0-" in summary  # the scripted answers, one line with their range
    # The console exporter showed the decisions as they were made.
    assert "compact.trigger_decision" in result.stderr
    assert "compact.summary_created" in result.stderr


# ------------------------------------------------------------------ coding_session.py

CODING = "coding-demo"
COMPACTION_SPANS = frozenset(
    {
        "compact",
        "compact.trigger_decision",
        "compact.pruned_messages",
        "compact.policy_applied",
        "compact.archival",
    }
)


async def _check_coding_session(url: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Check the session's invariants; return its protected items and the test-run outputs."""
    async with SessionStore(url) as store:
        history = [row for row in await store.history(CODING) if row.kind == "item" and row.item]
        protected = [
            row.item
            for row in history
            if row.item and (row.role == "developer" or row.tool_name == "remember")
        ]
        await assert_session_invariants(store, CODING, protected=protected)
        context = [text_of(item) for item in await store.load_context(CODING)]
    assert sum(text.startswith("<COMPACT-SUMMARY") for text in context) == 1
    test_runs = [
        text_of(row.item)
        for row in history
        if row.item and row.tool_name == "run_tests" and row.item_type == "function_call_output"
    ]
    return protected, test_runs


async def test_coding_session_traces_compactions_to_ariadne_and_keeps_protected_memory(
    tmp_path: Path,
) -> None:
    with serve(AriadneIngest) as ariadne:
        result = _run("coding_session.py", tmp_path, env={"ARIADNE_URL": ariadne.url})
    assert result.returncode == 0, result.stderr
    found = re.search(r"^9 turns, (\d+) compactions, (\d+) of 2500 tokens", result.stdout, re.M)
    assert found is not None, result.stdout
    rounds = int(found[1])
    assert rounds >= 2 and int(found[2]) <= 2500
    assert "project rules kept: yes" in result.stdout
    assert "remembered facts kept: 2" in result.stdout

    assert ariadne.rejected == []  # every body passed the Ariadne schema
    batch = [item for body in ariadne.accepted for item in body["batch"]]
    traces: dict[str, set[str]] = {}
    for span in (item for item in batch if item["type"] == "span"):
        traces.setdefault(span["trace_id"], set()).add(span["name"])
    compacted = [names for names in traces.values() if "compact.summary_created" in names]
    assert len(compacted) == rounds  # one trace per compaction, all its events as spans
    assert all(names >= COMPACTION_SPANS for names in compacted)
    trace_items = [item for item in batch if item["type"] == "trace"]
    grouped = {item["trace_id"] for item in trace_items if "group_id" in item}
    assert {item["group_id"] for item in trace_items if "group_id" in item} == {CODING}
    sessionless = {
        span["name"]
        for span in batch
        if span["type"] == "span" and "parent_id" in span and span["trace_id"] not in grouped
    }
    assert sessionless == {"schema.migrated"}  # the new file's migration belongs to no session

    protected, test_runs = await _check_coding_session(f"sqlite:///{tmp_path / 'sessionstore.db'}")
    assert len(protected) == 1 + 2 * 2  # the rules, two remember calls and their outputs
    # The tools worked on a real repository: the bug failed a test, the fix made it pass.
    assert len(test_runs) == 3 and "FAILED (failures=1)" in test_runs[0]
    assert test_runs[2].endswith("OK") and "Ran 4 tests" in test_runs[2]


def _answers_and_summaries(body: Mapping[str, Any]) -> str:
    """The fake model: long answers (so compaction happens), short summaries."""
    if "messages" in body:  # the summarizer uses Chat Completions
        return "Goal: fix the login rate limiter. Constraint: mask client IPs."
    return "I looked into it carefully. " + "Details of the analysis follow. " * 40


async def test_coding_session_uses_a_real_model_and_summarizer_with_a_key(
    tmp_path: Path,
) -> None:
    with OpenAIServer(default=_answers_and_summaries) as server:
        env = {
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
        }
        result = _run("coding_session.py", tmp_path, env=env)
        requests = server.requests
    assert result.returncode == 0, result.stderr
    agent_calls = [r for r in requests if r.path == "/v1/responses"]
    summaries = [r for r in requests if r.path == "/v1/chat/completions"]
    assert len(agent_calls) >= 9 and agent_calls[0].body["model"] == "gpt-4o-mini"
    assert summaries and summaries[0].body["temperature"] == 0
    url = f"sqlite:///{tmp_path / 'sessionstore.db'}"
    async with SessionStore(url) as store, store.engine.connect() as conn:
        query = sa.select(compactions.c.summarizer, compactions.c.status)
        rows = (await conn.execute(query)).all()
    assert rows and set(rows) == {("openai:gpt-4o-mini", "summarized")}


# ------------------------------------------------------------------ long_research.py

ROUND = re.compile(r"^round v(\d+) after question (\d+): (\d+) -> (\d+) tokens \((\d+)% saved\)$")


async def test_long_research_reports_every_round(tmp_path: Path) -> None:
    result = _run("long_research.py", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    rounds = [match for line in lines if (match := ROUND.match(line))]
    assert len(rounds) >= 2
    assert [int(match[1]) for match in rounds] == list(range(1, len(rounds) + 1))
    assert all(int(match[4]) < int(match[3]) for match in rounds)
    questions = [int(match[2]) for match in rounds]
    assert questions == sorted(questions) and questions[-1] <= 14
    summary = re.search(
        r"^14 questions, (\d+) compaction rounds, (\d+) of 6000 tokens", result.stdout, re.M
    )
    assert summary is not None and int(summary[1]) == len(rounds) and int(summary[2]) < 6000

    rows = lines[lines.index(f"round v{len(rounds)}, row by row:") + 1 :]
    fates = Counter(line.split()[2] for line in rows)
    assert {"pinned", "summarized", "prior"} <= set(fates)  # "prior summary" splits in two
    assert all(line.startswith(("  = ", "  - ")) for line in rows)
    assert all(line.startswith("  - ") for line in rows if "summarized" in line)

    async with SessionStore(f"sqlite:///{tmp_path / 'sessionstore.db'}") as store:
        history = await store.history("research")
        findings = [
            row.item
            for row in history
            if row.kind == "item" and row.tool_name == "note_finding" and row.item
        ]
        await assert_session_invariants(store, "research", protected=findings)
    assert len(findings) == 2 * 14  # every finding (call and output) is still in context


# ------------------------------------------------------------------ sql_queries.py


async def _expected_answers(url: str) -> dict[str, list[str]]:
    """The example's answers, derived through the store's Python API instead of its SQL."""
    async with SessionStore(url) as store:
        sessions = await store.list_sessions()
        tools: Counter[str] = Counter()
        mentions: list[str] = []
        for info in sessions:
            history = [row for row in await store.history(info.session_id) if row.kind == "item"]
            tools.update(
                row.tool_name
                for row in history
                if row.item_type == "function_call" and row.tool_name
            )
            for index, row in enumerate(history):
                if row.role == "user" and row.item and "postgres 16" in text_of(row.item).lower():
                    answer = next(r for r in history[index:] if r.role == "assistant")
                    assert answer.item is not None
                    mentions.append(f"{info.session_id} seq {row.seq}: {text_of(row.item)}")
                    mentions.append(f"answered: {text_of(answer.item)}")
        async with store.engine.connect() as conn:
            rounds = (await conn.execute(sa.select(compactions))).all()
    saved: dict[str, list[int]] = {}
    for compaction in rounds:
        cut = compaction.tokens_before - compaction.tokens_after
        saved.setdefault(compaction.session_id, []).append(cut)
    by_saving = sorted(saved.items(), key=lambda pair: -sum(pair[1]))
    return {
        "Which tools were called most?": [
            f"{tool:<12} {calls}"
            for tool, calls in sorted(tools.items(), key=lambda pair: (-pair[1], pair[0]))
        ],
        "How many tokens did compaction save per session?": [
            f"{session:<14} {sum(cuts)} tokens saved in {len(cuts)} compaction(s)"
            for session, cuts in by_saving
        ],
        "Which sessions compacted in the last day?": [
            ", ".join(sorted(info.session_id for info in sessions if info.compaction_count))
        ],
        "Where did a user mention 'Postgres 16'?": mentions,
    }


async def test_sql_queries_answer_from_history_on_both_backends(
    db_url: str, tmp_path: Path
) -> None:
    first = _run("sql_queries.py", tmp_path, db_url)
    assert first.returncode == 0, first.stderr
    answers = _sections(first.stdout)
    assert answers == await _expected_answers(db_url)
    assert answers["Which sessions compacted in the last day?"] == ["bob-billing, carol-deploy"]
    assert answers["Which tools were called most?"][0].split() == ["read_file", "8"]
    again = _run("sql_queries.py", tmp_path, env={"SESSIONSTORE_URL": db_url})
    assert again.stdout == first.stdout  # the history is stored once; the answers are stable


def test_chat_loop_runs_against_an_openai_compatible_server(tmp_path: Path) -> None:
    from tests.support.openai_server import OpenAIServer, ok, tool_call

    with OpenAIServer() as server:
        for order in range(7001, 7006):
            server.enqueue(
                tool_call("lookup_order", {"order": order}), ok(f"{order} is on its way")
            )
        env = {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url, "CHAT_MODEL": "m"}
        result = _run("chat_loop.py", tmp_path, env=env)
        tool_results = [
            message["content"]
            for request in server.requests
            for message in request.body["messages"]
            if message["role"] == "tool"
        ]
    assert result.returncode == 0, result.stderr
    assert "order 7005: 7005 is on its way" in result.stdout
    found = re.search(r"^(\d+) compactions, (\d+) tokens in context", result.stdout, re.M)
    assert found is not None and int(found[1]) >= 1 and int(found[2]) <= 1_000
    assert "Order 7005: shipped" in tool_results[-1]
    assert (tmp_path / "sessionstore.db").exists()  # the default database, in the cwd


def test_chat_loop_says_what_it_needs_without_a_key(tmp_path: Path) -> None:
    result = _run("chat_loop.py", tmp_path)
    assert result.returncode == 1 and "set OPENAI_API_KEY" in result.stderr


def test_the_examples_share_the_default_database_and_run_again(tmp_path: Path) -> None:
    """The README's path: examples, then the CLI, all on ./sessionstore.db, any number of times."""
    scripts = ("quickstart.py", "agents_sdk_minimal.py", "long_research.py", "sql_queries.py")
    with OpenAIServer(default=_remembering) as server:  # the quick start needs a model
        for script in (*scripts, "agents_sdk_minimal.py", "long_research.py"):  # and again
            env = _model_env(server) if script == "quickstart.py" else None
            result = _run(script, tmp_path, env=env)
            assert result.returncode == 0, f"{script}: {result.stderr}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sessionstore.db"]
    listed = run_process("sessions", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    sessions = {row["session_id"] for row in json.loads(listed.stdout)}
    expected = {"user-42", "minimal-demo", "research", "alice-trip", "bob-billing"}
    assert expected <= sessions


def _tenant_routing_stores(tmp_path: Path, urls: list[str]) -> dict[str, list[str]]:
    """Run the tenant routing example twice; each tenant's stored conversation."""
    for _ in range(2):  # a second run starts over: same output
        result = _run("tenant_routing.py", tmp_path, *urls)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            "refused: no store for tenant 'initech': run with context=Tenant(...)",
            "acme: We sell rockets. | Noted: rockets.",
            "globex: We sell anvils. | Noted: anvils.",
        ]
    found = {}
    for tenant, url in zip(("acme", "globex"), urls, strict=True):
        store = SessionStore(url)
        found[tenant] = [text_of(item) for item in asyncio.run(store.load_context("support-chat"))]
        asyncio.run(store.close())
    return found


def test_tenant_routing_keeps_each_tenant_in_its_own_sqlite_file(tmp_path: Path) -> None:
    urls = [f"sqlite:///{tmp_path / 'acme.db'}", f"sqlite:///{tmp_path / 'globex.db'}"]
    assert _tenant_routing_stores(tmp_path, urls) == {
        "acme": ["We sell rockets.", "Noted: rockets."],
        "globex": ["We sell anvils.", "Noted: anvils."],
    }


def test_tenant_routing_on_two_postgresql_databases(
    tmp_path: Path, pg_url: str, fresh_pg_url: str
) -> None:
    stored = _tenant_routing_stores(tmp_path, [pg_url, fresh_pg_url])
    assert stored["acme"] == ["We sell rockets.", "Noted: rockets."]
    assert stored["globex"] == ["We sell anvils.", "Noted: anvils."]
