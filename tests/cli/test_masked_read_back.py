"""What a masking placeholder tells the model or the user to run, run: the command it names
prints the whole stored output back, and `sessions show --call N` marks what was masked."""

from __future__ import annotations

import asyncio
import json
import random
import shlex
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager
from tests.support.cli import run, run_process
from tests.support.histories import words
from tests.support.masking import is_placeholder, masking_policy

SID = 'user "42" $(id) `id` $HOME'
# An id the CLI would read as options if it came before `--` (issue #34).
DASHED = "--json --seq 1..1"
TURNS = 5


@function_tool
def read_file(path: str) -> str:
    """Return a (long) file body."""
    return f"[bold]contents[/bold] of {path}: " + words(random.Random(path), 400)


def _masked_run(url: str, *, record_idle: bool = True, sid: str = SID) -> list[list[Any]]:
    """A real Agents SDK run with masking on; the input of each of its model calls
    (`record_idle`: whether its calls store their events)."""

    async def go() -> list[list[Any]]:
        async with SessionStore(url, create_tables=True) as store:
            manager = CompactionManager(
                CompactionConfig(
                    max_context_tokens=100_000,
                    policy=masking_policy(),
                    store=store,
                    record_idle_decisions=record_idle,
                )
            )
            steps: list[Any] = []
            for n in range(TURNS):
                steps.append([function_call("read_file", {"path": f"m{n}.py"}, call_id=f"c{n}")])
                steps.append([assistant_message(f"Read m{n}.py.")])
            model = ScriptedModel(steps)
            agent = Agent(name="reader", instructions="Read.", model=model, tools=[read_file])
            session = SQLSession(sid, store, manager=manager)
            config = RunConfig(call_model_input_filter=input_filter(manager))
            for n in range(TURNS):
                await Runner.run(agent, f"Read m{n}.py", session=session, run_config=config)
            return [list(call.input) for call in model.calls]

    return asyncio.run(go())


def _with_url(command: str, url: str) -> list[str]:
    """The placeholder's command as the user runs it: the URL added before the `--`."""
    words_ = shlex.split(command)
    end = words_.index("--")
    return [*words_[:end], "--url", url, *words_[end:]]


def test_the_command_a_placeholder_names_prints_the_whole_original(db_url: str) -> None:
    sent = _masked_run(db_url)[-1]
    placeholders = [item for item in sent if is_placeholder(item)]
    assert len(placeholders) == TURNS - 2  # the newest output and the last turn's stay
    for item in placeholders:
        words_ = _with_url(item["output"].split("opened with before the --):\n", 1)[1], db_url)
        assert words_[:3] == ["sessionstore", "sessions", "show"] and words_[-2:] == ["--", SID]
        result = run(*words_[1:])  # as the placeholder says, with the URL
        assert result.exit_code == 0, result.output
        [row] = json.loads(result.stdout)
        path = f"m{item['call_id'][1:]}.py"
        assert row["item"]["call_id"] == item["call_id"]
        assert row["item"]["output"] == read_file_body(path)  # whole, not a preview
        assert "[bold]contents[/bold]" in result.stdout  # data, not read as markup


@pytest.mark.slow  # drives a process: left out of the everyday subset
def test_the_printed_command_reads_a_session_whose_id_starts_with_a_dash(
    db_url: str, tmp_path: Path
) -> None:
    """The real command in a real process: the id after `--` is an argument, not options
    (before issue #34 it came first, and `--json --seq 1..1` was read as two options)."""
    [item, *_] = [item for item in _masked_run(db_url, sid=DASHED)[-1] if is_placeholder(item)]
    words_ = _with_url(item["output"].split("opened with before the --):\n", 1)[1], db_url)
    assert words_[-2:] == ["--", DASHED]
    result = run_process(*words_[1:], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)
    assert row["item"]["call_id"] == item["call_id"]
    assert row["item"]["output"] == read_file_body(f"m{item['call_id'][1:]}.py")


def read_file_body(path: str) -> str:
    return f"[bold]contents[/bold] of {path}: " + words(random.Random(path), 400)


@pytest.mark.untraced  # repeats paths the rest of the suite covers (tests/conftest.py)
def test_show_call_marks_the_rows_each_call_was_sent_masked(db_url: str) -> None:
    inputs = _masked_run(db_url)
    history = json.loads(
        run("sessions", "show", SID, "--history", "--json", "--url", db_url).stdout
    )
    output_seq = {
        row["item"]["call_id"]: row["seq"]
        for row in history
        if row["item_type"] == "function_call_output"
    }
    assert any(is_placeholder(item) for item in inputs[-1])
    for number, sent in enumerate(inputs, start=1):
        result = run("sessions", "show", SID, "--call", str(number), "--json", "--url", db_url)
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        marked = {row["seq"] for row in rows if row["sent_masked"]}
        placeholders = {output_seq[item["call_id"]] for item in sent if is_placeholder(item)}
        assert marked == placeholders, number
        assert all(row["sent_masked"] is False for row in rows if row["seq"] not in marked)
        table = run("sessions", "show", SID, "--call", str(number), "--url", db_url)
        assert table.stdout.count("[sent masked]") == len(marked)
        if marked:
            assert f"sent {len(marked)} tool output(s) as a masking placeholder" in " ".join(
                table.stderr.split()
            )


def test_show_call_says_when_its_record_cannot_tell_which_rows_were_masked(db_url: str) -> None:
    inputs = _masked_run(db_url, record_idle=False)  # no events: no compact.masked to go by
    for number, sent in enumerate(inputs, start=1):
        result = run("sessions", "show", SID, "--call", str(number), "--json", "--url", db_url)
        assert result.exit_code == 0, result.output
        flags = {row["sent_masked"] for row in json.loads(result.stdout)}
        note = " ".join(result.stderr.split())
        if any(is_placeholder(item) for item in sent):
            assert flags == {None} and "does not say which rows, if any" in note, number
        else:  # its estimate is its rows' stored tokens: nothing was taken out
            assert flags == {False} and "masking" not in note, number
