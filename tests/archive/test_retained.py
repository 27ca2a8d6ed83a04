"""Archives that outlive their session: kept by retention, still opened, rotated and retired.

`delete_idle_sessions` keeps archives on purpose (audit, compliance); deleting the session
deletes its compactions, and the database sets the archives' `compaction_id` to NULL. The
ciphertext is bound to the compaction recorded on the archive row itself, so it still opens,
by the Python job and by PostgreSQL's `sessionstore_apply_retention()`, and databases whose
archives were orphaned before migration 0006 get their binding back from the events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import RetentionAction, RetentionPolicy, SessionStore, run_retention, set_policy
from sessionstore._errors import SealedDataError
from sessionstore._jobs._key_rotation import check_retirable, key_usage, rotate_keys
from sessionstore._schema import archives, compactions, events, sessions
from sessionstore._security._crypto import Keyring, LocalKey
from sessionstore._storage._database import open_database
from sessionstore._storage._revisions import head_revision
from sessionstore._storage._urls import resolve_url
from sessionstore.archive import read_archives
from tests.support.archives import compacted, raw_archive, update_archive
from tests.support.database import migrate_to

K1 = LocalKey.generate("k1")
K2 = LocalKey.generate("k2")
NOW = datetime.now(UTC)
IDLE = RetentionPolicy("idle-30d", RetentionAction.DELETE_IDLE_SESSIONS, 30)


async def _idle(store: SessionStore, session_id: str) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(
            sessions.update()
            .where(sessions.c.session_id == session_id)
            .values(updated_at=NOW - timedelta(days=90))
        )


async def _by_the_job(store: SessionStore) -> None:
    await set_policy(store, IDLE)
    report = await run_retention(store)
    assert report.counts == {"idle-30d": 1}


async def _by_the_sql_function(store: SessionStore) -> None:
    await set_policy(store, IDLE)
    async with store.engine.begin() as conn:
        rows = (await conn.execute(sa.text("SELECT * FROM sessionstore_apply_retention()"))).all()
    assert {row.policy: row.affected for row in rows} == {"idle-30d": 1}


async def _outlives_its_session(
    url: str, retire: Callable[[SessionStore], Awaitable[None]]
) -> None:
    async with SessionStore(url, create_tables=True, keyring=Keyring([K1])) as store:
        items = await compacted(store, "gone")
        kept = await compacted(store, "stays", seed=1)
        await _idle(store, "gone")
        await retire(store)
        assert await store.session_info("gone") is None
        row = await raw_archive(store, "gone")
        assert row["compaction_id"] is None and row["bound_compaction"] is not None
        (opened,) = await read_archives(store, "gone")
        assert [record["item"] for record in opened.records] == items
        assert opened.of_deleted_session  # stamped by the database when the session went
        (alive,) = await read_archives(store, "stays")
        assert not alive.of_deleted_session
    # Rotation and retirement walk over the orphan like any other archive.
    async with SessionStore(url, keyring=Keyring([K1, K2], active="k2")) as store:
        report = await rotate_keys(store)
        # Both archives, and the chain key of the session that is still there.
        assert report.rewrapped == 3 and await key_usage(store) == {"k2": 3}
        await check_retirable(store, "k1")
    async with SessionStore(url, keyring=Keyring([K2])) as store:
        (opened,) = await read_archives(store, "gone")
        assert [record["item"] for record in opened.records] == items
        (still,) = await read_archives(store, "stays")
        assert [record["item"] for record in still.records] == kept


async def test_an_archive_kept_by_the_retention_job_opens_rotates_and_retires(
    fresh_db_url: str,
) -> None:
    await _outlives_its_session(fresh_db_url, _by_the_job)


async def test_an_archive_kept_by_the_postgresql_function_opens_rotates_and_retires(
    fresh_pg_url: str,
) -> None:
    await _outlives_its_session(fresh_pg_url, _by_the_sql_function)


async def test_an_archive_pointed_at_another_compaction_does_not_open(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True, keyring=Keyring([K1])) as store:
        await compacted(store, "a")
        await compacted(store, "b", seed=1)
        a, b = await raw_archive(store, "a"), await raw_archive(store, "b")
        await update_archive(store, a["id"], compaction_id=b["compaction_id"])
        with pytest.raises(SealedDataError, match="compaction_id was changed"):
            await read_archives(store, "a")
        await update_archive(store, a["id"], compaction_id=None, bound_compaction="999")
        with pytest.raises(SealedDataError, match="binding"):
            await read_archives(store, "a")


async def _orphan_as_before_0006(url: str, session_id: str, *, lose_events: bool) -> None:
    """What an old release's retention left behind: the session, its compactions and
    (sometimes) its events gone, the archive's compaction_id NULL."""
    database = open_database(resolve_url(url))

    def orphan(conn: sa.Connection) -> None:
        conn.execute(
            archives.update().where(archives.c.session_id == session_id).values(compaction_id=None)
        )
        conn.execute(compactions.delete().where(compactions.c.session_id == session_id))
        conn.execute(sessions.delete().where(sessions.c.session_id == session_id))
        if lose_events:
            conn.execute(events.delete().where(events.c.session_id == session_id))

    try:
        await database.write(orphan)
    finally:
        await database.dispose()


async def test_migration_0006_gives_old_orphans_their_binding_back(fresh_db_url: str) -> None:
    expected: dict[str, Any] = {}
    async with SessionStore(fresh_db_url, create_tables=True, keyring=Keyring([K1])) as store:
        for seed, session_id in enumerate(("recovered", "unrecoverable", "alive")):
            expected[session_id] = await compacted(store, session_id, seed=seed)
    await migrate_to(fresh_db_url, "0005", down=True)
    await _orphan_as_before_0006(fresh_db_url, "recovered", lose_events=False)
    await _orphan_as_before_0006(fresh_db_url, "unrecoverable", lose_events=True)
    await migrate_to(fresh_db_url, head_revision())
    async with SessionStore(fresh_db_url, keyring=Keyring([K1])) as store:
        for session_id in ("recovered", "alive"):
            (opened,) = await read_archives(store, session_id)
            assert [record["item"] for record in opened.records] == expected[session_id]
        with pytest.raises(SealedDataError, match="cannot be rebuilt") as caught:
            await read_archives(store, "unrecoverable")
        assert "unrecoverable" in str(caught.value)
