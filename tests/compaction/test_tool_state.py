"""Which tool-output values the conversation used, and how a summary keeps them."""

from __future__ import annotations

import json
from typing import Any

from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer, current_state
from sessionstore.compaction._summarizers._prompts import build_prompt, transcript_entries
from sessionstore.compaction._summarizers._summarizer import SummaryRequest
from sessionstore.compaction._summarizers._tool_state import ToolFact, tool_facts
from tests.support import histories
from tests.support.histories import assistant, output, user

Item = dict[str, Any]
CONFIG = (
    "replicaCount: 3\ndatabase:\n  primary: db-1.internal\n  read_replica: db-7.internal\n"
    "  pool: 20\nlogging:\n  level: info\n"
)


def call(name: str, arguments: dict[str, Any], text: str, number: int = 1) -> list[Item]:
    """A tool call and its output."""
    return [histories.call(f"call_{number}", name, **arguments), output(f"call_{number}", text)]


def facts(items: list[Item]) -> list[ToolFact]:
    entries = transcript_entries(items)
    paths = {
        e.call_id: json.loads(e.text).get("path", "") for e in entries if e.kind == "tool_call"
    }
    return [fact for _, fact in tool_facts(entries, {k: v for k, v in paths.items() if v})]


def shown(items: list[Item]) -> list[str]:
    return [fact.line() for fact in facts(items) if fact.used and not fact.silent]


def test_a_value_referred_to_by_its_key_s_word_is_kept_with_its_source() -> None:
    items = [
        user("Point the reporting worker somewhere cheaper."),
        *call("read_file", {"path": "deploy/prod.yaml"}, CONFIG),
        assistant("I'll point the worker at that replica."),
    ]
    # "replicaCount" shares the word: a near miss that costs a line, not a fact.
    assert "deploy/prod.yaml: database.read_replica = db-7.internal" in shown(items)
    assert not [line for line in shown(items) if "primary" in line or "logging" in line]


def test_a_value_named_later_is_kept_and_one_nobody_touched_is_not() -> None:
    used = [*call("read_file", {"path": "deploy/prod.yaml"}, CONFIG), user("Use db-1.internal.")]
    assert shown(used) == ["deploy/prod.yaml: database.primary = db-1.internal"]
    untouched = [*call("read_file", {"path": "deploy/prod.yaml"}, CONFIG), user("next file")]
    assert shown(untouched) == []


def test_the_question_picks_a_row_a_group_or_the_one_value_of_its_type() -> None:
    table = (
        " id | owner | task\n----+-------+-----\n OPS-12 | alice | migrate cron\n"
        " OPS-13 | bob | docs\n"
    )
    row = [
        user("Who is on OPS-12?"),
        *call("run_sql", {"query": "SELECT id, owner, task FROM tickets"}, table),
        assistant("Assigning the follow-up to them."),
    ]
    assert shown(row) == ["tickets row OPS-12: owner alice, task migrate cron"]
    group = [
        user("What cache does the session service use?"),
        *call(
            "read_file",
            {"path": "values.yaml"},
            "cache:\n  host: osl-web-14\n  port: 6379\nreplicas: 3\n",
        ),
        assistant("Good, I'll reuse it."),
    ]
    assert shown(group) == [
        "values.yaml: cache.host = osl-web-14",
        "values.yaml: cache.port = 6379",
    ]
    issue = json.dumps({"number": 482, "state": "open", "assignee": {"login": "Dalia"}})
    person = [
        user("Who picked up #482?"),
        *call("get_issue", {"number": 482}, issue),
        assistant("Ok."),
    ]
    assert [fact.value for fact in facts(person) if fact.used] == ["Dalia"]


def test_routine_output_and_echoes_give_nothing() -> None:
    grep = "\n".join(f"src/m{i}.py:{i}: # TODO: tidy" for i in range(30))
    items = [
        user("any TODOs left?"),
        *call("grep", {"pattern": "TODO"}, grep),
        assistant("Found 30 TODOs."),
    ]
    assert facts(items) == []
    echo = [
        *call("lookup", {"order_id": 2551}, json.dumps({"order_id": 2551})),
        user("Order 2551?"),
    ]
    assert facts(echo) == []


def summarize(items: list[Item], prior: str | None = None) -> str:
    return ExtractiveSummarizer().render(SummaryRequest(items, prior, "task_state", "", 2048))


def test_the_summary_keeps_a_used_value_and_replaces_it_when_the_file_is_read_again() -> None:
    first = summarize(
        [
            *call("read_file", {"path": "deploy/prod.yaml"}, CONFIG),
            assistant("I'll point the worker at that replica."),
            user("go on"),
        ]
    )
    assert "- deploy/prod.yaml: database.read_replica = db-7.internal" in first
    second = summarize(
        [
            *call("read_file", {"path": "deploy/prod.yaml"}, CONFIG.replace("db-7", "db-9"), 2),
            assistant("Done reading."),
            user("go on"),
        ],
        prior=first,
    )
    assert "database.read_replica = db-9.internal (was db-7.internal)" in second
    assert "db-7.internal" not in second.replace("(was db-7.internal)", "")


def test_a_model_summarizer_is_given_the_current_state() -> None:
    items = [
        user("The payments on-call is Priya."),
        *call("read_file", {"path": "deploy/prod.yaml"}, CONFIG),
        assistant("I'll point the worker at that replica."),
        user("Now Marco has the payments on-call."),
        assistant("Noted."),
        user("go on"),
    ]
    request = SummaryRequest(items, None, "task_state", "", 512)
    state = current_state(request)
    assert "deploy/prod.yaml: database.read_replica = db-7.internal" in state
    assert "Now Marco has the payments on-call. (was Priya)" in state
    _, prompt = build_prompt(SummaryRequest(items, None, "task_state", "", 512, state=state))
    assert (
        "CURRENT STATE" in prompt and "- Now Marco has the payments on-call. (was Priya)" in prompt
    )
