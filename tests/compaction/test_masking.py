"""Observation masking: which old tool outputs are sent as a placeholder, and what it says."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sessionstore._items import answered_call, calls_in
from sessionstore._tokens import estimator_for_model
from sessionstore.compaction import (
    CompactionPolicy,
    Masker,
    MaskingPolicy,
    MaskReport,
    MaskScan,
    normalize,
)
from sessionstore.compaction._preflight._masking import (
    ToolOutput,
    placeholder_text,
    read_back_command,
)
from tests.support.histories import Item, chat_call, chat_out, user
from tests.support.masking import (
    PLACEHOLDER_START,
    is_placeholder,
    masking_policy,
    tool_history,
    tool_turn,
)

ESTIMATOR = estimator_for_model("gpt-4o")


class Calls:
    """One session's model calls as its input grows: the scan extended, the chunks kept."""

    def __init__(self, policy: CompactionPolicy) -> None:
        self.masker = Masker(policy.masking, policy, ESTIMATOR)
        self.scan = MaskScan()

    def send(self, items: Sequence[Item]) -> tuple[list[Item], MaskReport]:
        """The masked view of `items` (which extend the last call's), seqs = index."""
        self.scan = self.scan.extend(items[self.scan.count :])
        new = self.masker.due(self.scan, lambda out: ESTIMATOR.count_item(items[out.index]))
        report = self.masker.settle(new, items, {o.call_id: o.index for o in new}, "s-1")
        return self.masker.view(items), report


def masked_view(items: Sequence[Item], policy: CompactionPolicy) -> tuple[list[Item], MaskReport]:
    """One call's masking from scratch (a new process)."""
    return Calls(policy).send(items)


def masked_indices(items: Sequence[Item]) -> list[int]:
    return [index for index, item in enumerate(items) if is_placeholder(item)]


# ------------------------------------------------------------------------------ what is sent


def test_old_outputs_become_placeholders_that_keep_the_pairing() -> None:
    history = tool_history(6)
    sent, report = masked_view(history, masking_policy())
    # Two recent turns (indices 16..23) and the newest output stay whole.
    assert masked_indices(sent) == [2, 6, 10, 14]
    assert report.outputs == 4 and report.new_seqs == (2, 6, 10, 14)
    for index in masked_indices(sent):
        original, masked = history[index], sent[index]
        assert masked["type"] == original["type"] == "function_call_output"
        assert masked["call_id"] == original["call_id"]
    assert normalize(sent).changed is False  # every call still answered, nothing orphaned
    assert [calls_in(item) for item in sent] == [calls_in(item) for item in history]
    assert [answered_call(item) for item in sent] == [answered_call(item) for item in history]


def test_the_placeholder_names_the_tool_the_size_the_seq_and_how_to_read_it() -> None:
    history = tool_history(6)
    sent, report = masked_view(history, masking_policy())
    text = sent[2]["output"]
    tokens = ESTIMATOR.count_item(history[2])
    assert text.startswith(PLACEHOLDER_START)
    assert '"read_file"' in text and f"({tokens:,} tokens)" in text
    assert "\nsessionstore sessions show --history --seq 2..2 --json -- s-1" in text
    assert "--url or --config" in text  # the database is the reader's to name
    assert history[2]["output"] not in text  # the output itself is not repeated
    freed = sum(ESTIMATOR.count_item(history[i]) - ESTIMATOR.count_item(sent[i]) for i in (2, 6))
    assert report.tokens_freed > freed > 0


def test_the_stored_text_is_quoted_as_data_in_the_placeholder() -> None:
    hostile = 'x" --seq 1..99; rm -rf / [bold]'
    history = [
        user("q"),
        {"type": "function_call", "call_id": "c", "name": hostile, "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "y " * 400},
        *tool_history(3),
    ]
    sent, _ = masked_view(history, masking_policy())
    assert json.dumps(hostile) in sent[2]["output"]  # escaped, quoted: a name, nothing more


@pytest.mark.parametrize(
    "session_id",
    ['user "42" $(id)', "a`id`b", "$HOME", "it's; rm -rf /", "x\n--json", "-x", "--json"],
)
def test_the_read_back_command_keeps_a_hostile_session_id_one_shell_word(session_id: str) -> None:
    text = placeholder_text(ToolOutput(0, "c", "read", 10, True), 500, 7, session_id, "body", 0)
    command = text.split("opened with before the --):\n", 1)[1]  # the rest of the text: the command
    assert command == read_back_command(session_id, 7)
    words = shlex.split(command)
    assert words == [
        "sessionstore", "sessions", "show", "--history", "--seq", "7..7", "--json", "--", session_id
    ]  # fmt: skip
    # What a POSIX shell runs: the words, no expansion (`$(id)`, backticks, `$VAR` stay text).
    echoed = subprocess.run(
        ["sh", "-c", f"printf '%s\\0' {shlex.join(words[-1:])}"],
        capture_output=True, text=True, check=True, env={"HOME": "/nowhere"},
    )  # fmt: skip
    assert echoed.stdout == session_id + "\0"


def test_chat_completions_tool_messages_are_masked_in_their_content() -> None:
    history: list[Item] = []
    for n in range(5):
        history += [user(f"q{n}"), chat_call(f"c{n}"), chat_out(f"c{n}", "out " * 300)]
    sent, _ = masked_view(history, masking_policy())
    assert masked_indices(sent) == [2, 5, 8]  # before the last two turns (index 9 on)
    assert sent[2]["role"] == "tool" and sent[2]["tool_call_id"] == "c0"
    assert '"shell"' in sent[2]["content"]


def test_outputs_that_are_not_text_or_are_protected_or_small_stay_whole() -> None:
    screenshot = {"type": "computer_screenshot", "image_url": "data:image/png;base64," + "A" * 4000}
    history = [
        user("q0"),
        {"type": "computer_call", "call_id": "shot", "action": {"type": "screenshot"}},
        {"type": "computer_call_output", "call_id": "shot", "output": screenshot},
        user("q1"),
        {"type": "function_call", "call_id": "kept", "name": "read", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "kept",
            "output": "z " * 500,
            "meta": {"protected": True},
        },
        user("q2"),
        {"type": "function_call", "call_id": "tiny", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "tiny", "output": "ok"},
        *tool_history(3),
    ]
    sent, report = masked_view(history, masking_policy())
    assert sent[:9] == history[:9]
    assert report.outputs == 1  # only tool_turn(0)'s output: the rest are the newest


def test_nothing_is_masked_while_the_context_is_all_recent_turns() -> None:
    sent, report = masked_view(tool_history(2), masking_policy())
    assert sent == tool_history(2) and report == MaskReport()


# ------------------------------------------------------------------------------ options


def test_clear_at_least_waits_for_a_chunk_worth_masking() -> None:
    one = ESTIMATOR.count_item(tool_turn(0)[2])
    policy = masking_policy(clear_at_least=3 * one)
    sent, report = masked_view(tool_history(4), policy)  # two outputs due: not enough
    assert report.outputs == 0 and masked_indices(sent) == []
    sent, report = masked_view(tool_history(5), policy)  # three due: one chunk
    assert masked_indices(sent) == [2, 6, 10]
    assert report.tokens_freed > 0


def test_excluded_and_protected_tools_are_never_masked() -> None:
    history = [
        *tool_turn(0, tool="search"),
        *tool_turn(1, tool="pinned"),
        *tool_turn(2, tool="read_file"),
        *tool_history(3),
    ]
    policy = masking_policy(exclude_tools=("search",)).model_copy(
        update={"protected_tools": ("pinned",)}
    )
    sent, _ = masked_view(history, policy)
    assert masked_indices(sent) == [10, 14]  # read_file of turn 2, and turn 3's (tool_history)


def test_previews_keep_the_first_characters_of_a_tools_output() -> None:
    history = [*tool_turn(0, tool="search"), *tool_turn(1), *tool_history(3)]
    policy = masking_policy(previews={"search": 40, "*": 10})
    sent, _ = masked_view(history, policy)
    search, other = sent[2]["output"], sent[6]["output"]
    assert f"first 40 characters:\n{history[2]['output'][:40]}\n[...]" in search
    assert history[2]["output"][:41] not in search
    assert f"first 10 characters:\n{history[6]['output'][:10]}\n[...]" in other


def test_keep_tool_outputs_keeps_the_newest_outputs_whatever_their_turn() -> None:
    sent, _ = masked_view(tool_history(6), masking_policy(keep_tool_outputs=3))
    assert masked_indices(sent) == [2, 6, 10]


def test_bad_previews_say_what_to_give_instead() -> None:
    with pytest.raises(ValidationError, match="number of characters"):
        MaskingPolicy(previews={"search": -1})
    with pytest.raises(ValidationError, match="clear_at_least"):
        MaskingPolicy(clear_at_least=-5)


# ------------------------------------------------------------------------------ stability


def test_a_masked_output_stays_masked_and_the_prefix_holds_until_a_chunk_crosses() -> None:
    one = ESTIMATOR.count_item(tool_turn(0)[2])
    policy = masking_policy(clear_at_least=2 * one)
    calls = Calls(policy)
    history = tool_history(4)
    first, _ = calls.send(history)
    assert masked_indices(first) == [2, 6]
    grown = [*history, *tool_turn(4)]  # one more output due: less than a chunk
    second, report = calls.send(grown)
    assert second[: len(first)] == first and report.new_seqs == ()
    grown += tool_turn(5)  # two due now: a chunk
    third, report = calls.send(grown)
    assert masked_indices(third) == [2, 6, 10, 14] and report.new_seqs == (10, 14)


@st.composite
def growth(draw: st.DrawFn) -> tuple[list[Item], list[int], dict[str, Any]]:
    """A tool-heavy history, the lengths it is sent at as it grows, and masking options."""
    history: list[Item] = []
    for n in range(draw(st.integers(1, 12))):
        size = draw(st.sampled_from([5, 60, 300]))
        history += tool_turn(n, tool=draw(st.sampled_from(["read", "grep"])), size=size)
        if draw(st.booleans()):
            history.append(user(f"aside {n}"))
    cuts = sorted([*draw(st.lists(st.integers(0, len(history)), max_size=6)), len(history)])
    options = {
        "clear_at_least": draw(st.sampled_from([0, 200, 1000])),
        "keep_tool_outputs": draw(st.integers(0, 3)),
        "exclude_tools": draw(st.sampled_from([(), ("grep",)])),
    }
    return history, cuts, options


@settings(max_examples=150, deadline=None)
@given(growth())
def test_masking_only_grows_and_a_restart_masks_the_same(
    case: tuple[list[Item], list[int], dict[str, Any]],
) -> None:
    history, cuts, options = case
    policy = masking_policy(**options)
    calls = Calls(policy)
    before: list[int] = []
    for cut in cuts:
        sent, _ = calls.send(history[:cut])
        now = masked_indices(sent)
        assert now[: len(before)] == before  # once masked, masked on every later call
        fresh, _ = masked_view(history[:cut], policy)  # a new process: the same view
        assert fresh == sent
        before = now
    assert normalize(sent).changed is False
