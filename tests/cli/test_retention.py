"""`sessionstore retention run|policy set|list|delete`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import assert_refused, db_state, run


def _policy_set(url: str, *args: str) -> list[str]:
    return ["retention", "policy", "set", *args, "--url", url]


def test_retention_policies_and_run_through_the_cli(uncompacted: str) -> None:
    made = run(*_policy_set(uncompacted, "events-1d", "--action", "delete_events", "--days", "1"))
    assert made.exit_code == 0, made.output
    listed = json.loads(run("retention", "policy", "list", "--url", uncompacted, "--json").stdout)
    assert listed == [
        {
            "name": "events-1d",
            "action": "delete_events",
            "older_than_days": 1,
            "keep_archives": True,
            "enabled": True,
            "source": "database",
        }
    ]
    dry = run("retention", "run", "--dry-run", "--json", "--url", uncompacted)
    assert json.loads(dry.stdout) == {"dry_run": True, "counts": {"events-1d": 0}}
    gone = run("retention", "policy", "delete", "missing", "--url", uncompacted)
    assert gone.exit_code == 1 and "no policy named 'missing'" in gone.output


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["x", "--action", "shred", "--days", "3"], "'shred' is not one of"),
        (["x", "--action", "delete_events", "--days", "0"], "'--days': Input should be greater"),
        (["x", "--action", "delete_events", "--days", "-5"], "'--days': Input should be greater"),
        (["x", "--action", "delete_events", "--days", "36501"], "'--days': Input should be less"),
        (["x", "--action", "delete_events"], "Missing option '--days'"),
        (["n" * 65, "--action", "delete_events", "--days", "3"], "names are 1-64 characters"),
    ],
)
def test_a_refused_policy_is_not_stored(seeded: str, args: list[str], problem: str) -> None:
    before = db_state(seeded)
    assert_refused(run(*_policy_set(seeded, *args)), 2, problem)
    assert db_state(seeded) == before


def test_the_bad_action_message_lists_the_valid_ones(seeded: str) -> None:
    result = run(*_policy_set(seeded, "x", "--action", "shred", "--days", "3"))
    assert result.exit_code == 2 and "shred" in result.output
    assert_refused(result, 2, "delete_events", "purge_compacted_plaintext")


@pytest.mark.parametrize("size", ["0", "-1", "1000001"])
def test_run_refuses_a_bad_batch_size_and_deletes_nothing(seeded: str, size: str) -> None:
    run(*_policy_set(seeded, "all-events", "--action", "delete_events", "--days", "1"))
    before = db_state(seeded)
    assert_refused(
        run("retention", "run", "--batch-size", size, "--url", seeded), 2, "'--batch-size'"
    )
    assert db_state(seeded) == before


def test_deleting_a_missing_policy_keeps_the_others(seeded: str) -> None:
    run(*_policy_set(seeded, "keep-me", "--action", "delete_events", "--days", "9"))
    gone = run("retention", "policy", "delete", "missing", "--url", seeded)
    assert_refused(gone, 1, "no policy named 'missing'")
    names = json.loads(run("retention", "policy", "list", "--url", seeded, "--json").stdout)
    assert [policy["name"] for policy in names] == ["keep-me"]


def test_policies_go_to_the_config_files_database(seeded: str, config_file: Path) -> None:
    made = run(
        "retention",
        "policy",
        "set",
        "p",
        "--action",
        "delete_events",
        "--days",
        "7",
        "--config",
        str(config_file),
    )
    assert made.exit_code == 0, made.output
    listed = run("retention", "policy", "list", "--url", seeded, "--json")
    assert [policy["name"] for policy in json.loads(listed.stdout)] == ["p"]
    counted = run("retention", "run", "--dry-run", "--json", "--config", str(config_file))
    assert json.loads(counted.stdout) == {"dry_run": True, "counts": {"p": 0}}


def test_the_config_files_policies_are_listed_and_applied(
    uncompacted: str, write_config: Callable[..., Path]
) -> None:
    stored = run(*_policy_set(uncompacted, "events-1d", "--action", "delete_events", "--days", "9"))
    assert stored.exit_code == 0, stored.output
    config = write_config(
        uncompacted,
        retention={
            "policies": [
                {"name": "events-1d", "action": "delete_events", "older_than_days": 1},
                {"name": "idle-30d", "action": "delete_idle_sessions", "older_than_days": 30},
            ]
        },
    )
    listed = json.loads(
        run("retention", "policy", "list", "--config", str(config), "--json").stdout
    )
    assert [(p["name"], p["older_than_days"], p["source"]) for p in listed] == [
        ("events-1d", 1, "config"),
        ("idle-30d", 30, "config"),
    ]
    dry = run("retention", "run", "--dry-run", "--config", str(config), "--json")
    assert json.loads(dry.stdout)["counts"] == {"events-1d": 0, "idle-30d": 0}


def test_the_dry_run_counts_what_each_policy_counts(seeded: str) -> None:
    """delete_idle_sessions counts sessions, not rows (a README claim once said rows)."""
    for name, action in (("idle", "delete_idle_sessions"), ("old-events", "delete_events")):
        chosen = ("--action", action, "--days", "1", "--url", seeded)
        done = run("retention", "policy", "set", name, *chosen)
        assert done.exit_code == 0, done.output
    shown = run("retention", "run", "--dry-run", "--nl", "--url", seeded).stdout
    records = [json.loads(line) for line in shown.splitlines()]
    assert {record["policy"]: record["of"] for record in records} == {
        "idle": "sessions",
        "old-events": "events",
    }
