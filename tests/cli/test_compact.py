"""`sessionstore compact` and `compactctl`: run, dry-run, diff; the config file's policy."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.compaction import BUILTIN_STRATEGIES
from tests.support.cli import NO_KEYS, assert_refused, db_state, run, run_compactctl
from tests.support.histories import coding_session


def _fates(result_output: str) -> Counter[str]:
    return Counter(row["fate"] for row in json.loads(result_output)["rows"])


def test_compact_dry_run_diff_shows_fates_and_changes_nothing(uncompacted: str) -> None:
    before = db_state(uncompacted)
    result = run("compact", "work", "--url", uncompacted, "--dry-run", "--diff")
    assert result.exit_code == 0, result.output
    assert "summarized" in result.output and "recent" in result.output
    assert "would go from" in result.output
    again = run("compact", "work", "--url", uncompacted, "--dry-run", "--json")
    payload = json.loads(again.stdout)
    assert payload["compacted"] is False and payload["version"] is None
    assert {"summarized", "recent", "tool pair"} <= set(_fates(again.stdout))
    after = db_state(uncompacted)
    assert (after["messages"], after["compactions"]) == (before["messages"], 0)


def test_compact_writes_a_summary_and_reports_it(uncompacted: str) -> None:
    result = run("compact", "work", "--url", uncompacted, "--strategy", "decision_log")
    assert result.exit_code == 0, result.output
    assert "Wrote <COMPACT-SUMMARY v1> (decision_log)" in result.output
    second = json.loads(run("compact", "work", "--url", uncompacted, "--json").stdout)
    assert second["compacted"] is False and "nothing to summarize" in second["skipped_reason"]


def test_compact_rejects_an_unknown_strategy_with_the_valid_names(uncompacted: str) -> None:
    before = db_state(uncompacted)
    result = run("compact", "work", "--url", uncompacted, "--strategy", "poetry")
    assert result.exit_code == 2
    assert "task_state" in result.output
    assert_refused(result, 2, "--strategy", "unknown summarization strategy 'poetry'")
    assert db_state(uncompacted) == before


@pytest.mark.parametrize("mode", [[], ["--dry-run"]])
def test_an_unknown_session_is_reported_and_nothing_is_written(
    seeded: str, mode: list[str]
) -> None:
    before = db_state(seeded)
    result = run("compact", "nope", "--url", seeded, *mode)
    assert_refused(result, 1, "no session 'nope'", "sessionstore sessions list")
    assert db_state(seeded) == before


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--window", "0"], "'--window': Input should be greater than or equal to 1"),
        (["--window", "big"], "'--window': Input should be a valid integer"),
        (["--bogus"], "No such option: --bogus"),
        ([], "choose the sessions one way: ids"),
    ],
)
def test_bad_options_are_usage_errors(uncompacted: str, args: list[str], problem: str) -> None:
    session = [] if not args else ["work"]
    before = db_state(uncompacted)
    assert_refused(run("compact", *session, "--url", uncompacted, *args), 2, problem)
    assert db_state(uncompacted) == before


def test_compactctl_is_the_same_command(uncompacted: str) -> None:
    result = run_compactctl("work", "--url", uncompacted, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would go from" in result.output
    missing = run_compactctl("nope", "--url", uncompacted)
    assert_refused(missing, 1, "no session 'nope'")


def test_the_config_files_policy_sink_and_exporter_apply(
    uncompacted: str,
    tmp_path: Path,
    write_config: Callable[..., Path],
    collected: list[dict[str, Any]],
) -> None:
    archive_dir = tmp_path / "archive"
    config = write_config(
        uncompacted,
        policy={"keep_recent_turns": 1, "keep_tool_io_pairs": 0},
        storage={"adapter": "fs", "path": str(archive_dir)},
        telemetry={"exporters": ["callback"], "callback": "tests.support.cli:collect"},
    )
    default = _fates(run("compact", "work", "--url", uncompacted, "--dry-run", "--json").stdout)
    planned = run("compact", "work", "--config", str(config), "--dry-run", "--json")
    assert planned.exit_code == 0, planned.output
    assert "tool pair" not in _fates(planned.stdout)
    assert _fates(planned.stdout)["recent"] < default["recent"]

    done = run("compact", "work", "--config", str(config), "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["version"] == 1
    assert json.loads(done.stdout)["summary_written"] is True
    written = {path.name for path in (archive_dir / "work").iterdir()}
    assert {"transcript-pre-compact-001.jsonl", "summary-001.json"} <= written
    assert "compact.summary_created" in {event["event"] for event in collected}


def test_url_beats_the_config_files_database(
    uncompacted: str, tmp_path: Path, write_config: Callable[..., Path]
) -> None:
    elsewhere = tmp_path / "never.db"
    config = write_config(f"sqlite:///{elsewhere}")
    result = run("compact", "work", "--config", str(config), "--url", uncompacted, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["compacted"] is True
    assert not elsewhere.exists()


def test_diff_previews_unless_write_is_given_and_says_what_it_wrote(uncompacted: str) -> None:
    before = db_state(uncompacted)
    preview = run("compact", "work", "--url", uncompacted, "--diff")
    assert preview.exit_code == 0, preview.output
    assert "Preview only: nothing was written" in preview.output
    assert db_state(uncompacted) == before
    written = run("compact", "work", "--url", uncompacted, "--diff", "--write")
    assert written.exit_code == 0, written.output
    assert (
        "Wrote <COMPACT-SUMMARY v1>" in written.output
        and "archive show --compaction 1 -- work" in written.output
    )
    assert db_state(uncompacted)["compactions"] == 1
    assert_refused(run("compact", "work", "--url", uncompacted, "--write"), 2, "--diff")


def test_without_a_key_compact_says_archives_are_unencrypted(uncompacted: str) -> None:
    result = run("compact", "work", "--url", uncompacted, env=NO_KEYS)
    assert result.exit_code == 0, result.output
    assert "archives are stored unencrypted" in result.output
    assert "sessionstore keys generate" in result.output


UNREACHABLE = ("--base-url", "http://127.0.0.1:9/v1", "--summarizer-model", "gpt-4o-mini")


def _summaries(url: str) -> list[str]:
    """The summary markers in the session's context (what the next model call would see)."""

    async def load() -> list[str]:
        async with SessionStore(url) as store:
            items = await store.load_context("work")
        return [
            str(item["content"]).splitlines()[0]
            for item in items
            if str(item.get("content", "")).startswith("<COMPACT-SUMMARY")
        ]

    return asyncio.run(load())


def _append_turns(url: str) -> None:
    async def append() -> None:
        async with SessionStore(url) as store:
            await store.append("work", coding_session(12))

    asyncio.run(append())


def test_an_unreachable_summarizer_says_no_summary_was_written_and_exits_1(
    uncompacted: str,
) -> None:
    result = run(
        "compact", "work", "--url", uncompacted, *UNREACHABLE, env={"OPENAI_API_KEY": "test"}
    )
    assert result.exit_code == 1, result.output  # README: the summarizer unavailable is 1
    assert "Wrote <COMPACT-SUMMARY" not in result.output
    assert "No summary was written: the summarizer failed" in result.output
    assert "archived without a summary: 22 rows" in result.output
    assert "Compaction 1 archived 22 rows without summarizing them" in result.output
    assert "(the context has no summary)" in result.output
    assert "`sessionstore archive show --compaction 1 -- work`" in result.output
    assert "To retry:" in result.output and "`sessionstore compact -- work` again" in result.output
    assert "summarizer failed:" in result.output and "could not connect" in result.output
    assert db_state(uncompacted)["compactions"] == 1  # the compaction itself went ahead
    assert _summaries(uncompacted) == []


def test_a_prune_only_compaction_keeps_the_prior_summary_and_says_so(uncompacted: str) -> None:
    assert run("compact", "work", "--url", uncompacted).exit_code == 0  # offline: v1
    _append_turns(uncompacted)

    result = run(
        "compact", "work", "--url", uncompacted, *UNREACHABLE, "--diff", "--write", env=NO_KEYS
    )

    assert result.exit_code == 1, result.output
    assert "\tkept summary\t" in result.output and "\tprior summary\t" not in result.output
    assert "(the prior summary is kept unchanged)" in result.output
    assert "Wrote <COMPACT-SUMMARY" not in result.output
    assert _summaries(uncompacted) == ["<COMPACT-SUMMARY v1>"]


def test_the_json_of_a_prune_only_compaction_says_no_summary_was_written(
    uncompacted: str,
) -> None:
    result = run("compact", "work", "--url", uncompacted, *UNREACHABLE, "--json", env=NO_KEYS)
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert (payload["compacted"], payload["summary_written"]) == (True, False)
    assert (payload["summary"], payload["fallback"]) == (None, "pruning-only")
    assert _fates(result.stdout)["archived"] == 22 and "summarized" not in _fates(result.stdout)


@pytest.mark.parametrize("window", ["99999999999999999999999", "0", "-5"])
def test_an_absurd_window_is_one_line_and_exit_2(uncompacted: str, window: str) -> None:
    result = run("compact", "work", "--url", uncompacted, "--window", window)
    assert_refused(result, 2, "--window")
    assert "Traceback" not in result.output


def test_strategy_help_lists_every_strategy() -> None:
    help_text = run("compact", "--help").output
    for name in BUILTIN_STRATEGIES:
        assert name in help_text
