"""Tool outputs read by their structure: every format gives its keys, values and rows."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.compaction._summarizers._output_fields import OutputField, fields_of, key_words


def pairs(fields: list[OutputField]) -> dict[str, str]:
    return {field.key: field.value for field in fields}


def test_json_objects_flatten_to_key_paths_and_lists_of_objects_to_rows() -> None:
    text = json.dumps(
        {
            "number": 482,
            "assignee": {"name": "Dalia", "team": "web"},
            "labels": ["bug", "flaky"],
            "comments": [{"author": "Farah", "body": "Still happening."}],
        }
    )
    fields = fields_of(text, "get_issue")
    assert pairs(fields)["assignee.name"] == "Dalia"
    assert pairs(fields)["labels"] == "bug, flaky"
    [row] = [field for field in fields if field.row]
    assert row.key == "comments row Farah"
    assert row.columns == ("author", "body") and "Still happening." in row.cells


def test_yaml_nested_keys() -> None:
    text = "database:\n  primary: db-1.internal\n  read_replica: db-7.internal\nworkers: 4\n"
    assert pairs(fields_of(text)) == {
        "database.primary": "db-1.internal",
        "database.read_replica": "db-7.internal",
        "workers": "4",
    }


def test_env_and_ini_assignments() -> None:
    env = "# comment\nexport DB_HOST=db.prod.internal\nMAX_CONN=50\nEMPTY=\n"
    assert pairs(fields_of(env)) == {"DB_HOST": "db.prod.internal", "MAX_CONN": "50"}
    ini = "[db]\nhost = a.internal\nport = 5432\n"
    assert pairs(fields_of(ini)) == {"db.host": "a.internal", "db.port": "5432"}


@pytest.mark.parametrize(
    "table",
    [
        " id | owner | status\n----+-------+-------\n OPS-12 | alice | open\n(1 row)",
        "| id | owner | status |\n|---|---|---|\n| OPS-12 | alice | open |",
        "id,owner,status\nOPS-12,alice,open\n",
        "id\towner\tstatus\nOPS-12\talice\topen\n",
    ],
    ids=["psql", "markdown", "csv", "tsv"],
)
def test_tables_become_rows_named_by_their_id_and_their_query_s_table(table: str) -> None:
    [row] = fields_of(table, '{"query": "SELECT id, owner, status FROM tickets"}')
    assert row.key == "tickets row OPS-12"
    assert row.value == "owner alice, status open"
    assert row.cells == ("OPS-12", "alice", "open")


def test_log_lines_give_their_pairs_and_their_errors() -> None:
    text = (
        "2026-01-02T10:00:01Z INFO start pool_size=20\n"
        "2026-01-02T10:00:02Z ERROR db unreachable host=db-3.internal\n"
        "2026-01-02 10:00:03 WARN slow query took 5s\n"
    )
    assert pairs(fields_of(text)) == {
        "pool_size": "20",
        "host": "db-3.internal",
        "log warn": "slow query took 5s",
    }


def test_a_traceback_keeps_the_application_s_frames_only() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/asyncio/runners.py", line 118, in run\n'
        '  File "/app/billing/jobs/reconcile.py", line 268, in reconcile\n'
        '  File "/app/.venv/lib/python3.11/site-packages/asyncpg/connection.py", line 1722, '
        "in _execute\n"
        "asyncpg.exceptions.UniqueViolationError: duplicate key\n"
    )
    fields = pairs(fields_of(text))
    assert fields["traceback frame"] == "/app/billing/jobs/reconcile.py:268 in reconcile"
    assert fields["asyncpg.exceptions.UniqueViolationError"] == "duplicate key"
    assert not any("site-packages" in value for value in fields.values())


def test_column_aligned_lines_and_short_listings() -> None:
    owners = "/api/            Sofia\n/search/indexer/ Zofia\n"
    assert pairs(fields_of(owners))["/api/"] == "Sofia"
    log = "b8599671 fix(ratelimit): count bursts per client\nce32a9b1 docs typo\n"
    lines = [field.value for field in fields_of(log, listing=True)]
    assert "b8599671 fix(ratelimit): count bursts per client" in lines
    assert not [field for field in fields_of(log, listing=False) if not field.key]


@pytest.mark.parametrize(
    "routine",
    [
        "\n".join(f"src/m{i}.py:{i}: # TODO: tidy" for i in range(20)),
        "==== test session starts ====\ncollected 3 items\n\ntests/a.py ... [100%]\n"
        "==== 3 passed in 0.12s ====",
    ],
    ids=["grep hits", "test log"],
)
def test_search_hits_and_test_logs_are_no_facts(routine: str) -> None:
    assert fields_of(routine) == []


def test_key_words_split_every_spelling() -> None:
    assert key_words("DBSnapshotIdentifier") == {"snapshot", "identifier"}
    assert key_words("read_replica.host") == {"read", "replica", "host"}
    assert key_words("maxConnections") == {"max", "connections"}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_error_into_bounded_fields(text: str) -> None:
    fields = fields_of(text, text[:40])
    assert all(len(field.value) <= 160 for field in fields)
    assert len(fields) <= 400


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True),
        st.from_regex(r"[a-z0-9][a-z0-9.-]{0,20}", fullmatch=True),
        min_size=1,
        max_size=8,
    )
)
def test_every_key_of_a_flat_json_object_or_env_file_comes_back(values: dict[str, str]) -> None:
    assert pairs(fields_of(json.dumps(values))) == values
    env = "\n".join(f"{key.upper()}={value}" for key, value in values.items())
    assert pairs(fields_of(env)) == {key.upper(): value for key, value in values.items()}
