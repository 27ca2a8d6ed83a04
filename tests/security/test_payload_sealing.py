"""Encryption of live payloads at rest: invisible to the application, opaque in the database."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._errors import SessionStoreError
from sessionstore._jobs._key_rotation import check_retirable, key_usage, rotate_keys
from sessionstore._jobs._retention import (
    RetentionAction,
    RetentionPolicy,
    run_retention,
    set_policy,
)
from sessionstore._schema import messages
from sessionstore._security._crypto import Keyring, LocalKey
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.database import edit_rows
from tests.support.histories import call, coding_session, output

K1 = LocalKey.generate("k1")
K2 = LocalKey.generate("k2")
SECRET_TEXT = "the launch code is 0000-RED-HORIZON"
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": SECRET_TEXT},
    call("c1", "lookup", q="launch"),
    output("c1", "RED-HORIZON confirmed"),
    {"role": "assistant", "content": "Noted. naïve café 🙂 \ud800"},
]


def sealed_store(url: str, *, keyring: Keyring | None = None, **kwargs: Any) -> SessionStore:
    return SessionStore(
        url, create_tables=True, keyring=keyring or Keyring([K1]), encrypt_payloads=True, **kwargs
    )


async def raw_rows(store: SessionStore, session_id: str) -> list[Any]:
    async with store.engine.connect() as conn:
        query = (
            sa.select(messages).where(messages.c.session_id == session_id).order_by(messages.c.seq)
        )
        return list((await conn.execute(query)).all())


async def test_sealed_sessions_behave_exactly_like_plain_ones(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        await store.append("s", ITEMS)
        assert await store.load_context("s") == ITEMS
        assert await store.load_context("s", 2) == ITEMS[2:]
        assert await store.pop("s") == ITEMS[3]
        assert [row.item for row in await store.history("s") if row.kind == "item"] == ITEMS
        await store.append("s", [ITEMS[3]])
    async with SessionStore(db_url, keyring=Keyring([K1])) as reopened:  # no encrypt flag needed
        assert await reopened.load_context("s") == ITEMS


async def test_the_database_holds_ciphertext_but_typed_columns_stay_queryable(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        await store.append("s", ITEMS)
        rows = [row for row in await raw_rows(store, "s") if row.kind == "item"]
        assert all(row.payload is None and row.payload_sealed for row in rows)
        assert all(b"RED-HORIZON" not in bytes(row.payload_sealed) for row in rows)
        assert [(row.role, row.item_type, row.tool_name) for row in rows][:3] == [
            ("user", "message", None),
            (None, "function_call", "lookup"),
            (None, "function_call_output", "lookup"),
        ]
        async with store.engine.connect() as conn:
            calls = (
                await conn.execute(
                    sa.text("SELECT count(*) FROM messages WHERE tool_name = 'lookup'")
                )
            ).scalar_one()
        assert calls == 2


async def test_compaction_reseals_copies_and_the_summary(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        manager = CompactionManager(
            CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=2))
        )
        await manager.append("s", coding_session(10))
        before = await store.load_context("s")
        outcome = await manager.compact("s")
        assert outcome.compacted
        context = await store.load_context("s")
        assert context[0]["content"].startswith("<COMPACT-SUMMARY v1>")
        assert context[-4:] == before[-4:]
        new_rows = [row for row in await raw_rows(store, "s") if row.compaction_id]
        assert new_rows and all(row.payload is None and row.payload_sealed for row in new_rows)


async def test_moved_or_swapped_ciphertext_fails_loudly(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        await store.append("a", ITEMS)
        await store.append("b", ITEMS)
        rows = await raw_rows(store, "a")
        await edit_rows(  # swap two rows' ciphertext within a session
            store,
            *(
                messages.update()
                .where(messages.c.session_id == "a", messages.c.seq == row.seq)
                .values(payload_sealed=other.payload_sealed)
                for row, other in ((rows[0], rows[1]), (rows[1], rows[0]))
            ),
        )
        with pytest.raises(SessionStoreError, match="message 1 of session 'a'"):
            await store.load_context("a")
        b_rows = await raw_rows(store, "b")
        await edit_rows(  # b's row 4 replaced by a's row 4
            store,
            messages.update()
            .where(messages.c.session_id == "b", messages.c.seq == 4)
            .values(payload_sealed=rows[3].payload_sealed),
        )
        with pytest.raises(SessionStoreError, match="message 4 of session 'b'"):
            await store.load_context("b")
        assert len(b_rows) == 4


async def test_without_the_key_nothing_opens(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        await store.append("s", ITEMS)
    async with SessionStore(db_url, keyring=None) as no_keys:
        with pytest.raises(SessionStoreError, match="no keyring is configured"):
            await no_keys.load_context("s")
    async with SessionStore(db_url, keyring=Keyring([LocalKey("k1", b"\x01" * 32)])) as wrong:
        with pytest.raises(SessionStoreError, match="payload key of session 's'"):
            await wrong.load_context("s")


def test_encrypting_payloads_requires_a_keyring(sqlite_url: str) -> None:
    with pytest.raises(ValueError, match="encrypt_payloads needs a keyring"):
        SessionStore(sqlite_url, keyring=None, encrypt_payloads=True)


async def test_rotation_rewraps_session_keys_too(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        for sid in ("a", "b", "c"):
            await store.append(sid, ITEMS)
    async with sealed_store(db_url, keyring=Keyring([K1, K2], active="k2")) as store:
        # Each session's payload key and history-chain key.
        assert await key_usage(store) == {"k1": 6}
        report = await rotate_keys(store, batch_size=2)
        assert report.rewrapped == 6 and report.usage == {"k2": 6}
        await check_retirable(store, "k1")
    async with SessionStore(db_url, keyring=Keyring([K2])) as retired:
        for sid in ("a", "b", "c"):
            assert await retired.load_context(sid) == ITEMS


async def test_retention_purge_clears_sealed_payloads(db_url: str) -> None:
    async with sealed_store(db_url) as store:
        manager = CompactionManager(
            CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=2))
        )
        await manager.append("s", coding_session(10))
        outcome = await manager.compact("s")
        assert outcome.plan is not None
        await edit_rows(
            store, messages.update().values(created_at=datetime(2020, 1, 1, tzinfo=UTC))
        )
        await set_policy(store, RetentionPolicy("p", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 30))
        report = await run_retention(store)
        assert report.counts == {"p": len(outcome.plan.replaced_rows)}
        purged = {row.seq: row for row in await raw_rows(store, "s")}
        for replaced in outcome.plan.replaced_rows:
            assert purged[replaced.seq].payload_sealed is None
        assert await store.load_context("s")  # the active context is untouched


async def test_runner_sees_the_same_history_through_an_encrypted_store(
    db_url: str, tmp_path: Any
) -> None:
    from agents import SQLiteSession

    from sessionstore import SQLSession
    from tests.support.sdk_runs import run_three_turns

    sdk = SQLiteSession("conv", str(tmp_path / "sdk.db"))
    sdk_outputs, sdk_inputs = await run_three_turns(sdk)
    async with sealed_store(db_url) as store:
        ours_outputs, ours_inputs = await run_three_turns(SQLSession("conv", store))
        assert (ours_outputs, ours_inputs) == (sdk_outputs, sdk_inputs)
        assert await SQLSession("conv", store).get_items() == await sdk.get_items()
        assert all(row.payload is None for row in await raw_rows(store, "conv"))
    sdk.close()
