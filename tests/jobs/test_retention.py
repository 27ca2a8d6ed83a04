"""Retention on SQLite and PostgreSQL: exactly what the policies say, nothing else.

On PostgreSQL the SQL function installed by the migration and the Python job run
on identical fixtures and must leave identical databases.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._events import Event
from sessionstore._jobs._retention import (
    RetentionAction,
    RetentionPolicy,
    delete_policy,
    list_policies,
    run_retention,
    set_policy,
)
from sessionstore._schema import archives, events, messages, sessions
from sessionstore._security._archive_codec import decode_archive
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.database import age
from tests.support.histories import coding_session, turns

NOW = datetime(2026, 6, 1, tzinfo=UTC)
OLD = NOW - timedelta(days=200)


async def scenario(store: SessionStore) -> dict[str, Any]:
    """old-compacted (archived rows, old), old-idle (untouched for 200 days), fresh (today)."""
    manager = CompactionManager(
        CompactionConfig(
            max_context_tokens=100_000, store=store, policy=CompactionPolicy(keep_recent_turns=2)
        )
    )
    await manager.append("old-compacted", coding_session(12))
    outcome = await manager.compact("old-compacted")
    assert outcome.result is not None
    await manager.append("old-idle", turns(6, size=10))
    idle = await manager.compact("old-idle")
    assert idle.plan is not None
    await manager.append("fresh", coding_session(8))
    await manager.compact("fresh")
    await store.record_events([Event("custom.note", "fresh")])
    await age(store, "old-compacted", OLD)
    await age(store, "old-idle", OLD)
    async with store.engine.begin() as conn:  # old-compacted is still active: touched recently
        await conn.execute(
            sessions.update().where(sessions.c.session_id == "old-compacted").values(updated_at=NOW)
        )
    assert outcome.plan is not None
    return {
        "replaced": [("old-compacted", row.seq) for row in outcome.plan.replaced_rows]
        + [("old-idle", row.seq) for row in idle.plan.replaced_rows],
        "compacted_seqs": [row.seq for row in outcome.plan.replaced_rows],
    }


async def snapshot(store: SessionStore) -> dict[str, Any]:
    async with store.engine.connect() as conn:
        purged = (
            await conn.execute(
                sa.select(messages.c.session_id, messages.c.seq)
                .where(
                    messages.c.payload.is_(None), messages.c.kind.in_(["item", "carry", "summary"])
                )
                .order_by(messages.c.session_id, messages.c.seq)
            )
        ).all()
        counts = {
            table.name: (
                await conn.execute(sa.select(sa.func.count()).select_from(table))
            ).scalar_one()
            for table in (sessions, messages, archives)
        }
        session_ids = sorted((await conn.execute(sa.select(sessions.c.session_id))).scalars())
        archive_sessions = sorted((await conn.execute(sa.select(archives.c.session_id))).scalars())
        event_names = sorted(
            (
                await conn.execute(
                    sa.select(events.c.event).where(events.c.event != "retention.run")
                )
            ).scalars()
        )
    return {
        "purged": [tuple(row) for row in purged],
        "counts": counts,
        "sessions": session_ids,
        "archive_sessions": archive_sessions,
        "events": event_names,
    }


ALL_POLICIES = [
    RetentionPolicy("purge-30d", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 30),
    RetentionPolicy("idle-90d", RetentionAction.DELETE_IDLE_SESSIONS, 90),
    RetentionPolicy("events-180d", RetentionAction.DELETE_EVENTS, 180),
]


async def test_purge_removes_only_archived_old_plaintext(store: SessionStore) -> None:
    facts = await scenario(store)
    before = await store.load_context("old-compacted")
    await set_policy(store, ALL_POLICIES[0])
    report = await run_retention(store, now=NOW)
    assert report.counts == {"purge-30d": len(facts["replaced"])}
    after = await snapshot(store)
    assert after["purged"] == sorted(facts["replaced"])  # fresh's archived rows are too young
    assert await store.load_context("old-compacted") == before  # the active context is intact
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(sa.select(archives).where(archives.c.session_id == "old-compacted"))
        ).one()
    originals = decode_archive(row.body, row.content_sha256)
    assert [record["seq"] for record in originals] == facts["compacted_seqs"]
    assert all(record["item"] for record in originals)  # the archive still holds the plaintext


async def test_idle_sessions_go_but_their_archives_stay_by_default(store: SessionStore) -> None:
    await scenario(store)
    await set_policy(store, ALL_POLICIES[1])
    report = await run_retention(store, now=NOW)
    assert report.counts == {"idle-90d": 1}
    after = await snapshot(store)
    assert after["sessions"] == ["fresh", "old-compacted"]
    assert "old-idle" in after["archive_sessions"]
    await set_policy(
        store,
        RetentionPolicy("idle-90d", RetentionAction.DELETE_IDLE_SESSIONS, 90, keep_archives=False),
    )
    await age(store, "fresh", OLD)
    await run_retention(store, now=NOW)
    after = await snapshot(store)
    assert "fresh" not in after["archive_sessions"] and "old-idle" in after["archive_sessions"]


async def test_archives_and_events_by_age(store: SessionStore) -> None:
    await scenario(store)
    await set_policy(store, RetentionPolicy("arch-100d", RetentionAction.DELETE_ARCHIVES, 100))
    await set_policy(store, ALL_POLICIES[2])
    report = await run_retention(store, now=NOW)
    assert report.counts["arch-100d"] == 2  # old-compacted's and old-idle's
    after = await snapshot(store)
    assert after["archive_sessions"] == ["fresh"]
    assert "custom.note" in after["events"]
    assert report.counts["events-180d"] > 0
    assert await store.load_context("old-compacted")  # deleting archives never touches sessions


async def test_dry_run_counts_and_changes_nothing(store: SessionStore) -> None:
    await scenario(store)
    for policy in (ALL_POLICIES[0], ALL_POLICIES[2]):  # policies that do not overlap
        await set_policy(store, policy)
    before = await snapshot(store)
    dry = await run_retention(store, now=NOW, dry_run=True)
    assert await snapshot(store) == before
    real = await run_retention(store, now=NOW, batch_size=7)  # small batches, same result
    assert dry.counts == real.counts and dry.counts["purge-30d"] == 30


async def test_every_run_records_its_counts(store: SessionStore) -> None:
    await scenario(store)
    await set_policy(store, ALL_POLICIES[0])
    await run_retention(store, now=NOW)
    async with store.engine.connect() as conn:
        payload = (
            await conn.execute(sa.select(events.c.payload).where(events.c.event == "retention.run"))
        ).scalar_one()
    payload = payload if isinstance(payload, dict) else json.loads(payload)
    assert payload["counts"]["purge-30d"] > 0 and payload["dry_run"] is False


async def test_disabled_policies_and_policy_management(store: SessionStore) -> None:
    await scenario(store)
    await set_policy(store, RetentionPolicy("off", RetentionAction.DELETE_EVENTS, 1, enabled=False))
    assert (await run_retention(store, now=NOW)).counts == {}
    assert [p.name for p in await list_policies(store)] == ["off"]
    assert await delete_policy(store, "off") and not await delete_policy(store, "off")
    with pytest.raises(ValueError, match="positive number of days"):
        RetentionPolicy("bad", RetentionAction.DELETE_EVENTS, 0)


async def test_postgres_function_matches_the_python_job(pg_url: str) -> None:
    from tests.conftest import _empty_tables

    results = []
    for runner in ("python", "sql"):
        await _empty_tables(pg_url)
        async with SessionStore(pg_url) as store:
            await scenario(store)
            for policy in ALL_POLICIES:
                await set_policy(store, policy)
            if runner == "python":
                counts = (await run_retention(store, now=NOW)).counts
            else:
                async with store.engine.begin() as conn:
                    rows = (
                        await conn.execute(
                            sa.text("SELECT * FROM sessionstore_apply_retention(false, :at)"),
                            {"at": NOW},
                        )
                    ).all()
                counts = {row.policy: row.affected for row in rows}
            results.append((counts, await snapshot(store)))
        async with SessionStore(pg_url) as store, store.engine.begin() as conn:
            await conn.execute(sa.text("DELETE FROM retention_policies"))
    assert results[0] == results[1]
    assert results[0][0]["purge-30d"] > 0


async def test_sealed_archives_still_open_after_the_plaintext_purge(db_url: str) -> None:
    from sessionstore._security._crypto import Keyring, LocalKey
    from sessionstore.archive import read_archives

    async with SessionStore(
        db_url, create_tables=True, keyring=Keyring([LocalKey.generate("k1")])
    ) as store:
        facts = await scenario(store)
        await set_policy(store, ALL_POLICIES[0])
        await run_retention(store, now=NOW)
        (opened,) = await read_archives(store, "old-compacted")
        assert [record["seq"] for record in opened.records] == facts["compacted_seqs"]
        assert all(record["item"] for record in opened.records) and opened.kek_id == "k1"
        history = {row.seq: row for row in await store.history("old-compacted")}
        assert all(history[seq].item is None for seq in facts["compacted_seqs"])
