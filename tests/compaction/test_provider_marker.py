"""A provider's opaque compaction item as the marker, on SQLite and PostgreSQL, through the
real openai client and a real HTTP server: stored verbatim, loaded first, its originals
archived; updated by the next compaction; kept by a failed one; replaced by a readable
summary when the next call goes to another model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sessionstore import SessionStore
from sessionstore._items import text_of
from sessionstore._schema import messages
from sessionstore._security._crypto import Keyring, LocalKey
from sessionstore.archive import FilesystemSink, read_archives
from sessionstore.compaction import CompactionManager
from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer
from sessionstore.compaction._summarizers._provider import ProviderSummarizer
from tests.support.background import fill_between, prepare
from tests.support.histories import turns
from tests.support.invariants import assert_session_invariants
from tests.support.openai_server import OpenAIServer, ok, status
from tests.support.provider import (
    BOUND_MODEL,
    ProviderManagers,
    compaction_rows,
    history_with_fact,
)
from tests.support.stored_events import events_of


@pytest.fixture
async def managers(openai_server: OpenAIServer) -> AsyncIterator[ProviderManagers]:
    built = ProviderManagers(openai_server)
    yield built
    await built.aclose()


async def compacted_then_grown(
    manager: CompactionManager, *, fact_again: bool = True
) -> list[dict[str, Any]]:
    """Session 's': a first round compacted, then a second round appended (stating the fact
    again, or not); returns the first round's marker (a list of one opaque item)."""
    await manager.append("s", history_with_fact())
    await manager.compact("s")
    first = opaque_items(await manager.store.load_context("s"))
    second = history_with_fact(6, seed=1)
    await manager.append("s", second if fact_again else second[2:])
    return first


def opaque_items(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for item in context if item.get("type") == "compaction"]


async def test_the_provider_item_is_the_marker_loaded_first_and_bound_to_its_model(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store)
    items = history_with_fact()
    await manager.append("s", items)
    openai_server.enqueue(ok("state of the work"))
    outcome = await manager.compact("s")
    assert outcome.compacted and outcome.plan is not None
    replaced = [row.item for row in outcome.plan.replaced_rows]

    [request] = openai_server.requests
    assert request.path == "/v1/responses/compact"
    assert request.body["model"] == BOUND_MODEL
    assert request.body["input"] == replaced  # the originals, oldest first, nothing else
    context = await store.load_context("s")
    assert context[0] == {
        "type": "compaction",
        "id": "cmp_1",
        "encrypted_content": "opaque:state of the work",
    }
    assert openai_server.bound_model("cmp_1") == BOUND_MODEL
    assert context[1:] == [item for item in items if item not in replaced]  # kept verbatim

    [row] = await compaction_rows(store, "s")
    assert (row["provider"], row["model"]) == ("openai", BOUND_MODEL)
    assert row["summarizer"] == f"provider:openai:{BOUND_MODEL}"
    assert row["status"] == "summarized"
    assert row["summary_tokens"] == 4  # the reported usage: the 4 words of the reply
    marker = next(r for r in await store.history("s") if r.seq == row["summary_seq"])
    assert (marker.kind, marker.item_type, marker.role) == ("summary", "compaction", None)
    [created] = await events_of(store, "s", "compact.summary_created")
    assert "opaque:" not in created["summary"]  # events describe the item, never hold it
    assert "cmp_1" in created["summary"]


async def test_the_marker_is_sealed_at_rest_and_its_originals_decrypt_with_the_keyring(
    db_url: str, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, encrypt_payloads=True) as store:
        manager = managers.make(store)
        await manager.append("sealed", history_with_fact())
        openai_server.enqueue(ok("secret state"))
        outcome = await manager.compact("sealed")
        assert outcome.result is not None and outcome.plan is not None
        async with store.engine.connect() as conn:
            plain, sealed = (
                await conn.execute(
                    sa.select(messages.c.payload, messages.c.payload_sealed).where(
                        messages.c.session_id == "sealed",
                        messages.c.seq == outcome.result.summary_seq,
                    )
                )
            ).one()
        assert plain is None and b"secret state" not in bytes(sealed)
        assert (await store.load_context("sealed"))[0]["encrypted_content"] == (
            "opaque:secret state"
        )
        [archive] = await read_archives(store, "sealed", compaction_id=outcome.result.compaction_id)
        assert archive.kek_id == "k1"
        assert [r["item"] for r in archive.records] == [
            row.item for row in outcome.plan.replaced_rows
        ]


async def test_the_next_compaction_sends_the_previous_item_back_first(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store)
    first = await compacted_then_grown(manager)
    outcome = await manager.compact("s")
    assert outcome.compacted

    second = openai_server.requests[1]
    assert second.body["input"][0] == first[0]
    assert [item.get("type") for item in second.body["input"][1:]].count("compaction") == 0
    context = await store.load_context("s")
    assert [item["id"] for item in opaque_items(context)] == ["cmp_2"]  # exactly one marker
    assert context[0]["id"] == "cmp_2"


async def test_a_provider_error_keeps_the_bound_marker_and_records_the_fallback(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store)
    await compacted_then_grown(manager)
    openai_server.enqueue(status(503, "overloaded"))
    outcome = await manager.compact("s")

    assert outcome.compacted and outcome.fallback == "pruning-only"
    [error] = await events_of(store, "s", "compact.error")
    assert error["error_type"] == "unavailable"
    assert error["fallback"] == "pruning-only"
    assert error["summarizer"] == f"provider:openai:{BOUND_MODEL}"
    assert "503" in error["message"]
    context = await store.load_context("s")
    assert [item["id"] for item in opaque_items(context)] == ["cmp_1"]  # kept as it was
    latest = (await compaction_rows(store, "s"))[-1]
    assert latest["status"] == "pruned_only"
    assert (latest["provider"], latest["model"]) == ("openai", BOUND_MODEL)  # still bound


async def test_a_first_compaction_that_fails_is_prune_only_and_binds_nothing(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store)
    await manager.append("s", history_with_fact())
    openai_server.enqueue(status(400, "bad model", code="model_not_found"))
    outcome = await manager.compact("s")
    assert outcome.fallback == "pruning-only"
    [row] = await compaction_rows(store, "s")
    assert row["provider"] is None and row["summary_seq"] is None
    [error] = await events_of(store, "s", "compact.error")
    assert error["error_type"] == "error" and "model_not_found" in error["message"]
    assert not await manager.ensure_readable("s", model="gpt-4.1")


async def test_a_model_switch_replaces_the_marker_with_a_readable_summary(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store)
    await compacted_then_grown(manager, fact_again=False)  # the fact only in round one
    await manager.compact("s")
    before = await store.load_context("s")
    assert not await manager.ensure_readable("s", model=BOUND_MODEL)  # same model: untouched
    assert await events_of(store, "s", "compact.provider_item_unusable") == []

    assert await manager.ensure_readable("s", model="gpt-4.1")
    context = await store.load_context("s")
    assert opaque_items(context) == []
    assert text_of(context[0]).startswith("<COMPACT-SUMMARY v3>")
    assert "zeta-42" in text_of(context[0])  # from the first marker's originals, two back
    assert context[1:] == before[1:]  # everything after the marker, unchanged
    [event] = await events_of(store, "s", "compact.provider_item_unusable")
    assert event["marker_provider"] == "openai"
    assert (event["marker_model"], event["model"]) == (BOUND_MODEL, "gpt-4.1")
    latest = (await compaction_rows(store, "s"))[-1]
    assert (latest["trigger"], latest["model"], latest["provider"]) == (
        "model_switch",
        "gpt-4.1",
        None,
    )
    [archive] = await read_archives(store, "s", compaction_id=latest["id"])
    assert [r["item"] for r in archive.records] == [before[0]]  # the opaque marker, kept
    assert not await manager.ensure_readable("s", model="gpt-4.1")  # nothing bound now
    pruned = await events_of(store, "s", "compact.pruned_messages")  # the rebuild's included
    assert len(pruned) == len(await compaction_rows(store, "s"))
    assert {tuple(event["layers"]) for event in pruned} == {
        ("pinned", "summary", "recent_turns", "tool_pairs", "user_messages", "aborted_markers")
    }


async def test_only_the_bound_model_can_replay_the_item_until_it_is_rebuilt(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    """The server reads an item only for the model it issued it to, as OpenAI does; the
    message-list pre-flight given the model hands over what that model can read."""
    manager = managers.make(store)
    messages: list[Any] = await manager.manual_compact("s", history_with_fact())
    client = openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="test", max_retries=0)
    async with client:
        await client.responses.create(model=BOUND_MODEL, input=messages)  # readable
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(model="gpt-4.1", input=messages)
        assert refused.value.code == "invalid_encrypted_content"
        readable: list[Any] = await manager.preflight("s", messages, model="gpt-4.1")
        assert opaque_items(readable) == [] and "zeta-42" in text_of(readable[0])
        await client.responses.create(model="gpt-4.1", input=readable)
        assert await manager.preflight("s", readable, model="gpt-4.1") == readable


async def test_a_provider_switch_is_a_model_switch_too(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store)
    await manager.append("s", history_with_fact())
    await manager.compact("s")
    assert await manager.ensure_readable("s", model=BOUND_MODEL, provider="litellm")
    [event] = await events_of(store, "s", "compact.provider_item_unusable")
    assert (event["marker_provider"], event["provider"]) == ("openai", "litellm")


async def test_a_readable_summary_before_the_provider_item_is_carried_into_the_rebuild(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    extractive = managers.make(store)
    extractive.summarizer = ExtractiveSummarizer(store.estimator)
    await extractive.append("s", history_with_fact())
    await extractive.compact("s")  # v1: our readable summary, holding the fact
    provider = managers.make(store)
    await provider.append("s", history_with_fact(6, seed=1)[2:])
    await provider.compact("s")  # v2: the provider item replaces it
    sent = openai_server.requests[0].body["input"][0]
    assert sent["role"] == "assistant" and "zeta-42" in sent["content"]  # the prior state

    assert await provider.ensure_readable("s", model="gpt-4.1")
    assert "zeta-42" in text_of((await store.load_context("s"))[0])


async def test_a_summarizer_of_another_model_gets_the_marker_in_readable_form(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    await managers.make(store).append("s", history_with_fact())
    await managers.make(store).compact("s")
    other = managers.make(store, model="gpt-4.1")
    await other.append("s", history_with_fact(6, seed=1)[2:])
    outcome = await other.compact("s")
    assert outcome.compacted and outcome.fallback is None

    prior = openai_server.requests[1].body["input"][0]
    assert prior["role"] == "assistant" and "zeta-42" in prior["content"]
    assert all(item.get("type") != "compaction" for item in openai_server.requests[1].body["input"])
    assert (await compaction_rows(store, "s"))[-1]["model"] == "gpt-4.1"
    assert openai_server.bound_model("cmp_2") == "gpt-4.1"


async def test_the_provider_summarizer_rejects_an_empty_provider_name() -> None:
    with pytest.raises(ValueError, match="provider must name"):
        ProviderSummarizer("gpt-5", provider=" ", base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("name", ["open ai", "openai/gpt", ""])
async def test_a_bad_provider_name_says_what_is_allowed(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        ProviderSummarizer("gpt-5", provider=name, base_url="http://127.0.0.1:9/v1")
    assert str(caught.value) == (
        "provider must name who reads the compaction items: letters, digits and _ . : - only, "
        f"e.g. 'openai' or 'azure-openai' (case is ignored) (got {name!r})"
    )


async def test_a_capitalized_provider_binds_the_marker_to_the_name_the_adapter_uses(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    """'OpenAI' once bound the marker to 'OpenAI' while the adapter asks for 'openai', so
    every call rebuilt the marker it had just written."""
    manager = managers.make(store, provider="OpenAI")
    assert getattr(manager.summarizer, "provider", None) == "openai"
    await manager.append("s", history_with_fact())
    await manager.compact("s")
    assert (await compaction_rows(store, "s"))[-1]["provider"] == "openai"
    assert not await manager.ensure_readable("s", model=BOUND_MODEL)  # adapter's "openai"
    assert not await manager.ensure_readable("s", model=BOUND_MODEL, provider="OpenAI")
    assert await events_of(store, "s", "compact.provider_item_unusable") == []


_step = st.sampled_from(["turns", "tools", "provider", "extractive", "failing", "switch"])


@pytest.mark.untraced  # repeats paths the rest of the suite covers (tests/conftest.py)
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(_step, min_size=3, max_size=9), size=st.integers(5, 40))
async def test_every_mix_of_provider_readable_and_rebuilt_markers_keeps_the_invariants(
    db_url: str, openai_server: OpenAIServer, steps: list[str], size: int
) -> None:
    """Lossless archives, gapless seqs, exact counters, at most one marker, and no
    provider item in front of a model it is not bound to once `ensure_readable` ran."""
    sid = f"mix{abs(hash((tuple(steps), size)))}"
    managers = ProviderManagers(openai_server)
    async with SessionStore(db_url, create_tables=True) as store:
        provider = managers.make(store)
        readable = managers.make(store)
        readable.summarizer = ExtractiveSummarizer(store.estimator)
        for n, step in enumerate(["turns", *steps]):
            if step in ("turns", "tools"):
                every = 1 if step == "tools" else 0
                await provider.append(sid, turns(3, seed=n, size=size, tools_every=every))
            elif step == "switch":
                before = await store.load_context(sid)
                rebuilt = await provider.ensure_readable(sid, model="gpt-4.1")
                event(f"switch rebuilt: {rebuilt}")
                after = await store.load_context(sid)
                assert opaque_items(after) == []
                if rebuilt:  # the marker, and only it, became a readable summary
                    at = next(
                        i for i, item in enumerate(before) if item.get("type") == "compaction"
                    )
                    assert after[:at] == before[:at] and after[at + 1 :] == before[at + 1 :]
                    assert text_of(after[at]).startswith("<COMPACT-SUMMARY")
            else:
                if step == "failing":
                    openai_server.enqueue(status(500))
                await (readable if step == "extractive" else provider).compact(sid)
            context = await assert_session_invariants(store, sid)
            assert len(opaque_items(context)) <= 1
    await managers.aclose()


async def test_concurrent_rebuilds_and_appends_lose_nothing_and_rebuild_once(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    """Two managers (no shared in-process lock) rebuild at once while rows are appended: the
    database's compare-and-swap lets one rebuild commit, the other finds nothing bound, and
    every appended row is in the context after the readable summary."""
    first, second = managers.make(store), managers.make(store)
    await first.append("s", history_with_fact())
    await first.compact("s")
    late = [{"role": "user", "content": f"late {n}"} for n in range(6)]
    rebuilt = asyncio.gather(
        first.ensure_readable("s", model="gpt-4.1"),
        second.ensure_readable("s", model="gpt-4.1"),
    )
    outcomes, *_ = await asyncio.gather(rebuilt, *(store.append("s", [item]) for item in late))
    assert sorted(outcomes) == [False, True]
    rebuilds = [r for r in await compaction_rows(store, "s") if r["trigger"] == "model_switch"]
    assert len(rebuilds) == 1
    context = await assert_session_invariants(store, "s")
    assert opaque_items(context) == []
    appended = [r.item for r in await store.history("s") if r.kind == "item" and r.item in late]
    assert sorted(appended, key=str) == sorted(late, key=str)  # each stored once
    assert [item for item in context if item in late] == appended  # all kept, in seq order


async def test_a_rebuild_is_copied_to_the_archive_sinks_like_any_compaction(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers, tmp_path: Path
) -> None:
    manager = managers.make(store)
    manager.config.sinks = [FilesystemSink(tmp_path / "archive")]
    await manager.append("s", history_with_fact())
    await manager.compact("s")  # v1: the provider item
    assert await manager.ensure_readable("s", model="gpt-4.1")  # v2: the rebuild
    folder = tmp_path / "archive" / "s"
    [marker] = [json.loads(line) for line in (folder / "transcript-pre-compact-002.jsonl").open()]
    assert marker["item"]["type"] == "compaction"  # what the rebuild replaced
    summary = json.loads((folder / "summary-002.json").read_text())
    assert "zeta-42" in summary["text"]
    assert "opaque:" not in (folder / "summary-001.json").read_text()  # v1's is a description


async def test_a_provider_item_prepared_in_the_background_is_committed_bound_at_the_trigger(
    store: SessionStore, openai_server: OpenAIServer, managers: ProviderManagers
) -> None:
    manager = managers.make(store, window=4_000, background=True)
    await fill_between(manager, "s")
    openai_server.enqueue(ok("prepared state"))
    await prepare(manager, "s")  # past prepare_at: the provider is called off the request path
    assert len(openai_server.requests) == 1
    outcome = await manager.compact("s", trigger="threshold")
    assert outcome.compacted
    assert len(openai_server.requests) == 1  # the trigger used the prepared item
    [marker] = opaque_items(await store.load_context("s"))
    assert marker["encrypted_content"] == "opaque:prepared state"
    assert (await store.load_context("s"))[0] == marker
    [row] = await compaction_rows(store, "s")
    assert (row["provider"], row["model"], row["status"]) == ("openai", BOUND_MODEL, "summarized")
    assert len(await events_of(store, "s", "compact.prepared_committed")) == 1
    await assert_session_invariants(store, "s")
