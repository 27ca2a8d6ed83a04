"""`sessionstore events`: filters, JSON lines, bounded --follow."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sessionstore import Event, SessionStore
from tests.support.cli import assert_refused, mentions, run


def test_filters_by_session_and_type(seeded: str) -> None:
    result = run("events", "--url", seeded, "--session", "work", "--type", "compact.*", "--nl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    names = {row["event"] for row in rows}
    assert {"compact.trigger_decision", "compact.summary_created"} <= names
    assert all(row["session_id"] == "work" for row in rows)
    only = run("events", "--url", seeded, "--type", "compact.archival", "--nl")
    assert {json.loads(line)["event"] for line in only.stdout.splitlines()} == {"compact.archival"}


def test_follow_stops_after_its_window(seeded: str) -> None:
    result = run("events", "--url", seeded, "--follow", "--follow-seconds", "0.6", "--limit", "5")
    assert result.exit_code == 0 and "compact." in result.output


def test_bad_since_is_a_usage_error(seeded: str) -> None:
    result = run("events", "--url", seeded, "--since", "yesterday")
    assert result.exit_code == 2
    assert_refused(result, 2, "'--since'", "datetime")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--limit", "0"], "'--limit': Input should be greater than or equal to 1"),
        (["--limit", "-4"], "'--limit': Input should be greater than or equal to 1"),
        (["--limit", "1000001"], "'--limit': Input should be less than or equal to 1000000"),
        (["--follow", "--follow-seconds", "-1"], "'--follow-seconds'"),
    ],
)
def test_bad_option_values_are_usage_errors(seeded: str, args: list[str], problem: str) -> None:
    assert_refused(run("events", "--url", seeded, *args), 2, problem)


def test_a_filter_that_matches_nothing_says_so(seeded: str) -> None:
    result = run("events", "--url", seeded, "--type", "compact.nothing_like_this")
    assert result.exit_code == 0
    assert mentions(result, "no events match --type 'compact.nothing_like_this'")
    quiet = run("events", "--url", seeded, "--session", "nope", "--nl")
    assert quiet.exit_code == 0 and quiet.stdout == ""  # the note is on stderr
    assert "no events match --session 'nope'" in quiet.stderr


def test_the_config_file_names_the_database(config_file: Path) -> None:
    result = run("events", "--config", str(config_file), "--session", "work", "--nl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert "compact.summary_created" in {row["event"] for row in rows}


def _event_ids(result_stdout: str) -> list[int]:
    return [json.loads(line)["id"] for line in result_stdout.splitlines()]


def test_the_newest_are_shown_and_the_rest_counted(seeded: str) -> None:
    everything = _event_ids(run("events", "--url", seeded, "--all", "--nl").stdout)
    newest = run("events", "--url", seeded, "--all", "--limit", "3")
    assert newest.exit_code == 0, newest.output
    shown_ids = [int(line.split()[0]) for line in newest.stdout.splitlines()]
    assert shown_ids == everything[-3:]
    assert f"{len(everything) - 3} older event(s) not shown" in newest.output


def test_idle_estimates_are_hidden_unless_asked_for(seeded: str) -> None:
    idle = [
        Event("compact.token_estimate", "other", fields={"t_est": 10, "max": 100}),
        Event("compact.trigger_decision", "other", fields={"t_est": 10, "triggered": False}),
    ]
    asyncio.run(_record(seeded, *idle))
    default = run("events", "--url", seeded)
    assert default.exit_code == 0, default.output
    assert "compact.token_estimate" not in default.stdout
    assert "2 idle pre-flight estimate(s) hidden (--all shows them)" in default.output
    everything = run("events", "--url", seeded, "--all").stdout
    asked = run("events", "--url", seeded, "--type", "compact.trigger_decision").stdout
    assert "compact.trigger_decision" in everything and "compact.trigger_decision" in asked


def test_warnings_show_their_message(seeded: str) -> None:
    asyncio.run(_record(seeded, Event("compact.error", "work", "error", {"message": "[red]x[/]"})))
    result = run("events", "--url", seeded, "--type", "compact.error")
    assert "message=[red]x[/]" in result.stdout


def test_every_event_that_says_what_shows_it_and_high_ones_their_details(seeded: str) -> None:
    """An info event's message (compact.facts_carried) and a high one's (redaction turned
    off, with its details) are on its line, not only in --json."""
    info = Event("compact.facts_carried", "work", "info", {"message": "4 facts checked", "n": 4})
    high = Event("compact.warning", "work", "high", {"message": "redaction off", "why": "asked"})
    asyncio.run(_record(seeded, info, high))
    lines = run("events", "--url", seeded, "--type", "compact.*").stdout.splitlines()
    info_line = next(line for line in lines if "facts_carried" in line)
    assert "message=4 facts checked" in info_line and "details=" not in info_line
    high_line = next(line for line in lines if "redaction off" in line)
    assert 'details={"why":"asked"}' in high_line


async def _record(url: str, *events: Event) -> None:
    async with SessionStore(url) as store:
        await store.record_events(list(events))


def test_follow_starts_at_the_newest(seeded: str) -> None:
    everything = _event_ids(run("events", "--url", seeded, "--all", "--nl").stdout)
    followed = run(
        "events", "--url", seeded, "--all", "--limit", "2", "--follow", "--follow-seconds", "0.3"
    )
    ids = [int(line.split()[0]) for line in followed.stdout.splitlines()]
    assert ids == everything[-2:]


def test_the_listing_says_why(sqlite_url: str) -> None:
    """An event's `reason` (a discarded preparation, a trigger decision) is on its line, as
    text: a reason holding markup is printed as it is."""

    async def record() -> None:
        async with SessionStore(sqlite_url) as store:
            await store.record_events(
                [
                    Event("compact.prepared_discarded", "s", fields={"reason": "prefix_changed"}),
                    Event("compact.prepared_discarded", "s", fields={"reason": "[bold]x[/]"}),
                ]
            )

    asyncio.run(record())
    result = run("events", "--url", sqlite_url, "--session", "s")
    assert result.exit_code == 0, result.output
    assert "reason=prefix_changed" in result.output
    assert "reason=[bold]x[/]" in result.output
