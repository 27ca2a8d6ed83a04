"""`sessionstore sessions show ID --agent NAME`: one agent's rows of a multi-agent session,
redacted and never read as markup, like every other listing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.support.cli import SECRET, assert_refused, run
from tests.support.histories import assistant, call, output, user

# A name that is Rich markup: printed as these characters, never as bold text.
MARKUP_AGENT = "[bold]ops[/bold]"
# The agent of each row `_seed` writes, in order.
PRODUCERS = [None, "triage", "triage", "billing", "billing", MARKUP_AGENT]


def _seed(url: str) -> None:
    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            await store.append("desk", [user("refund order 7")])
            await store.append(
                "desk",
                [call("h1", "transfer_to_billing"), output("h1", "billing")],
                agent="triage",
            )
            await store.append(
                "desk",
                [call("r1", "refund", order=7), output("r1", f"done, {SECRET}")],
                agent="billing",
            )
            await store.append("desk", [assistant("[red]refunded[/red]")], agent=MARKUP_AGENT)

    asyncio.run(seed())


@pytest.fixture
def desk(db_url: str) -> str:
    _seed(db_url)
    return db_url


def test_show_lists_only_the_rows_the_agent_produced(desk: str) -> None:
    shown = json.loads(
        run("sessions", "show", "desk", "--url", desk, "--agent", "billing", "--json").stdout
    )
    assert [(row["seq"], row["agent"], row["tool_name"]) for row in shown] == [
        (4, "billing", "refund"),
        (5, "billing", "refund"),
    ]
    assert "sk-proj" not in json.dumps(shown) and "<REDACTED>" in shown[1]["item"]["output"]
    everything = json.loads(run("sessions", "show", "desk", "--url", desk, "--json").stdout)
    assert [row["agent"] for row in everything] == PRODUCERS
    history = json.loads(
        run(
            "sessions", "show", "desk", "--url", desk, "--history", "--agent", "triage", "--json"
        ).stdout
    )
    assert [row["seq"] for row in history] == [2, 3]


def test_the_table_shows_the_agent_as_text_never_as_markup(desk: str) -> None:
    result = run("sessions", "show", "desk", "--url", desk, "--agent", MARKUP_AGENT)
    assert result.exit_code == 0, result.output
    assert MARKUP_AGENT in result.output and "[red]refunded[/red]" in result.output
    assert "billing" not in result.output.replace("transfer_to_billing", "")
    table = run("sessions", "show", "desk", "--url", desk)
    assert table.exit_code == 0 and "agent" in table.output and "triage" in table.output
    assert SECRET not in table.output


def test_an_agent_without_rows_is_reported_with_the_agents_there(desk: str) -> None:
    result = run("sessions", "show", "desk", "--url", desk, "--agent", "refunds")
    assert_refused(result, 1, "no rows of session 'desk'", "'refunds'", "'billing', 'triage'")


@pytest.mark.parametrize(
    ("name", "phrase"),
    [("", "empty or only whitespace"), ("bill\ning", "control character"), ("a" * 300, "256")],
    ids=["empty", "newline", "too-long"],
)
def test_a_bad_agent_name_is_a_usage_error(desk: str, name: str, phrase: str) -> None:
    result = run("sessions", "show", "desk", "--url", desk, "--agent", name)
    assert_refused(result, 2, "--agent", phrase)


def test_export_of_the_history_carries_each_rows_agent(desk: str, tmp_path: Path) -> None:
    out = tmp_path / "desk.jsonl"
    done = run("sessions", "export", "desk", "--url", desk, "--history", "--output", str(out))
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["agent"] for line in lines] == PRODUCERS
