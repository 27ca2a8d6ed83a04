"""Search and a provider's opaque compaction item, on both backends: its ciphertext is not
indexed nor found, and a hit on one is shown as what it is (as every view shows it)."""

from __future__ import annotations

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._opaque import describe_opaque, is_opaque, opaque_view
from sessionstore._redaction import Redactor
from tests.support.openai_server import OpenAIServer, ok
from tests.support.provider import (
    BOUND_MODEL,
    ProviderManagers,
    compaction_rows,
    history_with_fact,
)

CIPHERTEXT = "CIPHERTEXT-ONLY-THE-PROVIDER-READS"


async def _provider_compacted(store: SessionStore) -> None:
    """Session 'p' compacted into a provider item holding CIPHERTEXT, then a later turn."""
    with OpenAIServer() as server:
        managers = ProviderManagers(server)
        manager = managers.make(store)
        await manager.append("p", history_with_fact())
        server.enqueue(ok(CIPHERTEXT))
        assert (await manager.compact("p")).compacted
        await managers.aclose()


async def test_the_ciphertext_is_never_found(store: SessionStore) -> None:
    await _provider_compacted(store)
    [marker] = [row for row in await store.history("p") if is_opaque(row.item)]
    assert marker.item is not None and CIPHERTEXT in str(marker.item["encrypted_content"])
    assert await store.search("CIPHERTEXT READS") == []
    assert await store.search("PROVIDER", session_id="p", redact=False) == []
    assert await store.search("zeta") != []  # the rest of the session still is


async def test_sqlite_indexes_no_opaque_row_and_skips_one_indexed_before(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url, create_tables=True) as store:
        await _provider_compacted(store)
        assert await store.search("zeta") != []  # the index is caught up
        async with store.engine.begin() as conn:
            indexed = await conn.execute(
                sa.text(
                    "SELECT count(*) FROM message_search_rows r JOIN messages m "
                    "ON m.session_id = r.session_id AND m.seq = r.seq "
                    "WHERE m.item_type = 'compaction'"
                )
            )
            assert indexed.scalar() == 0
            # A database indexed by an older version holds the ciphertext: never a hit.
            [seq] = [row.seq for row in await store.history("p") if is_opaque(row.item)]
            rowid = (
                await conn.execute(
                    sa.text(
                        "INSERT INTO message_search_rows (session_id, seq) "
                        "VALUES ('p', :seq) RETURNING id"
                    ),
                    {"seq": seq},
                )
            ).scalar()
            await conn.execute(
                sa.text("INSERT INTO message_search (rowid, body) VALUES (:id, :body)"),
                {"id": rowid, "body": f"compaction opaque:{CIPHERTEXT}"},
            )
        assert await store.search("CIPHERTEXT READS") == []


async def test_a_hit_on_an_opaque_row_says_what_it_is(store: SessionStore) -> None:
    from sessionstore._history._search import search_hit  # here: the other tests run without it

    await _provider_compacted(store)
    [marker] = [row for row in await store.history("p") if is_opaque(row.item)]
    assert marker.item is not None
    [*_, compaction] = await compaction_rows(store, "p")
    binding = (compaction["provider"], compaction["model"])
    assert binding == ("openai", BOUND_MODEL)
    hit = search_hit(marker, ["CIPHERTEXT"], store.redactor, binding)
    assert hit.snippet == describe_opaque(marker.item, provider="openai", model=BOUND_MODEL)
    assert hit.snippet.startswith("[opaque compaction item ") and "(openai gpt-5)" in hit.snippet
    assert hit.item == opaque_view(marker.item, provider="openai", model=BOUND_MODEL)
    assert CIPHERTEXT not in str(hit.item)
    raw = search_hit(marker, ["CIPHERTEXT"], Redactor(enabled=False), binding)
    assert raw.item == marker.item and CIPHERTEXT not in raw.snippet  # --no-redact: as stored
