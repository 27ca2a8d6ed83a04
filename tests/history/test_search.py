"""Full-text search over history, on both backends: found, ranked, redacted, never past
retention, never into sealed rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sessionstore import SessionStore
from sessionstore._jobs._retention import RetentionAction, RetentionPolicy, run_retention
from sessionstore._security._crypto import Keyring, LocalKey
from tests.support.cli import SECRET
from tests.support.database import age
from tests.support.histories import assistant, call, output, user
from tests.support.managers import small_window_manager


async def test_search_finds_rows_holding_every_word(store: SessionStore) -> None:
    await store.append("a", [user("Please refund order 7697, the parcel was damaged")])
    await store.append("a", [call("c1", "lookup_order", order=7697), output("c1", "Order 7697")])
    await store.append("b", [user("What is the refund policy?"), assistant("Refunds take 5 days")])
    hits = await store.search("refund 7697")
    assert [(hit.session_id, hit.seq) for hit in hits] == [("a", 1)]
    assert "refund order 7697" in hits[0].snippet and hits[0].role == "user"
    assert {(hit.session_id, hit.seq) for hit in await store.search("7697")} == {
        ("a", 1),
        ("a", 2),
        ("a", 3),
    }
    assert [hit.session_id for hit in await store.search("REFUND", session_id="b")] == ["b"]
    assert await store.search("refund", session_id="nobody") == []
    assert len(await store.search("7697", limit=1)) == 1
    assert await store.search("elephant") == []


async def test_words_inside_markup_are_found_on_both_backends(store: SessionStore) -> None:
    """PostgreSQL's parser drops `<script>...</script>` as tags, words and all, unless the
    index reads `<`, `>` and `&` as spaces (0021); SQLite's FTS5 always found them."""
    await store.append("m", [user('<script>alert("xss")</script> and <b>bold</b> &amp; co')])
    await store.append("m", [assistant("nothing of the kind here")])
    for query in ("script", "alert xss", "<script>", "bold", "amp co"):
        assert [hit.seq for hit in await store.search(query)] == [1], query


async def test_results_are_redacted_unless_asked(store: SessionStore) -> None:
    await store.append("s", [user(f"deploy with key {SECRET} to staging")])
    [hit] = await store.search("deploy staging")
    assert SECRET not in hit.snippet and SECRET not in str(hit.item)
    [raw] = await store.search("deploy staging", redact=False)
    assert SECRET in raw.snippet


async def test_query_syntax_is_data_not_operators(store: SessionStore) -> None:
    await store.append("s", [user('he said "NEAR" (AND) OR NOT * this - that')])
    assert len(await store.search('"NEAR" (AND) OR NOT* -')) == 1  # no FTS/tsquery syntax
    for bad, error in [("", ValueError), ("!!! ...", ValueError), (None, TypeError)]:
        with pytest.raises(error, match=r"query must be a str|at least one word"):
            await store.search(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most 32 words"):
        await store.search(" ".join(["w"] * 33))
    with pytest.raises(ValueError, match="limit must be"):
        await store.search("he", limit=0)


async def test_sealed_rows_and_carries_are_not_indexed(db_url: str) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, encrypt_payloads=True) as sealed:
        await sealed.append("sealed", [user("confidential merger codename bluebird")])
        assert await sealed.search("bluebird") == []
    async with SessionStore(db_url) as store:
        manager = small_window_manager(store)
        for n in range(6):
            await store.append("plain", [user(f"step {n} about the zebra"), assistant("ok")])
        assert (await manager.compact("plain", trigger="manual")).compacted
        kinds = {hit.kind for hit in await store.search("zebra", session_id="plain", limit=50)}
        assert "carry" not in kinds and "item" in kinds


async def test_retention_and_deletion_take_rows_out_of_the_index(store: SessionStore) -> None:
    manager = small_window_manager(store)
    for n in range(6):
        await store.append("s", [user(f"fact {n}"), assistant(f"walrus {n} acknowledged")])
    assert (await manager.compact("s", trigger="manual")).compacted
    before = {hit.seq for hit in await store.search("walrus", session_id="s", limit=50)}
    await age(store, "s", datetime.now(UTC) - timedelta(days=30))
    policy = RetentionPolicy("purge", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 7)
    await run_retention(store, policies=[policy])
    after = {hit.seq for hit in await store.search("walrus", session_id="s", limit=50)}
    assert after and after < before  # the purged originals are gone from the index
    assert await store.delete_session("s")
    assert await store.search("walrus") == []


async def test_every_storable_item_stays_storable_and_findable(store: SessionStore) -> None:
    """The index never refuses an append: NUL escapes, megabytes of text (only a row's first
    100,000 characters are indexed; on SQLite a string's text ends at a NUL)."""
    huge = "needle " + "hay " * 750_000 + "buried"
    await store.append("s", [user("a nul \x00 inside"), output("c1", huge)])
    assert [hit.seq for hit in await store.search("a nul")] == [1]
    assert [hit.seq for hit in await store.search("needle")] == [2]
    assert await store.search("buried") == []  # past the indexed part
