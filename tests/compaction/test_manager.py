"""The compaction service on real databases: the documented scenarios and the invariants."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import Redactor, SessionStore
from sessionstore._errors import CompactionError, CompactionErrorReason, InvalidItemError
from sessionstore._items import answered_call, calls_in, text_of
from sessionstore._schema import archives
from sessionstore._security._archive_codec import decode_archive
from sessionstore.compaction._manager import CompactionManager
from sessionstore.compaction._message import Message
from sessionstore.compaction._outcome import CompactionConfig
from sessionstore.compaction._policy import CompactionPolicy
from sessionstore.compaction._preflight._hygiene import normalize
from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer
from sessionstore.compaction._summarizers._summarizer import SummaryRequest, SummaryResult
from tests.support.histories import assistant, call, coding_session, output, turns, user
from tests.support.stored_events import events_of


class Recording:
    """The real extractive summarizer, remembering what it was asked (and optionally slow)."""

    def __init__(self, store: SessionStore, *, during: Any = None) -> None:
        self.inner = ExtractiveSummarizer(store.estimator)
        self.name = "recording-extractive"
        self.input_window: int | None = None
        self.requests: list[SummaryRequest] = []
        self.during = during

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        if self.during is not None:
            await self.during()
        return await self.inner.summarize(request)


def manager_for(store: SessionStore, *, window: int = 4_000, **policy: Any) -> CompactionManager:
    summarizer = policy.pop("summarizer", None)
    return CompactionManager(
        CompactionConfig(
            max_context_tokens=window,
            policy=CompactionPolicy(**{"hard_cap_buffer": 200, **policy}),
            store=store,
            summarizer=summarizer,
        )
    )


def contents(items: list[dict[str, Any]]) -> list[str]:
    return [text_of(item) for item in items]


async def test_manual_compaction_runs_regardless_of_usage_and_records_the_note(
    store: SessionStore,
) -> None:
    manager = manager_for(store, window=100_000)
    messages = turns(12, size=20)
    result = await manager.manual_compact("s", messages, note="user-requested")
    assert 0 < len(result) < len(messages)
    assert sum(1 for item in result if text_of(item).startswith("<COMPACT-SUMMARY v1>")) == 1
    decisions = await events_of(store, "s", "compact.trigger_decision")
    assert decisions[-1]["triggered"] is True and decisions[-1]["note"] == "user-requested"
    assert decisions[-1]["reason"] == "manual"


async def test_manual_compaction_cuts_at_least_40_percent(store: SessionStore) -> None:
    manager = manager_for(store, window=100_000)
    fixture = coding_session(30)
    await manager.append("fixture", fixture)
    outcome = await manager.compact("fixture", trigger="manual")
    assert outcome.compacted
    assert outcome.reduction >= 0.40, outcome
    assert await store.context_tokens("fixture") == outcome.tokens_after


async def test_three_layers_in_order_and_reload_matches(store: SessionStore) -> None:
    manager = manager_for(store, keep_recent_turns=2, keep_tool_io_pairs=1)
    pinned = {"role": "developer", "content": "Always answer in French."}
    history = [pinned, *turns(10, size=15, tools_every=2)]
    await manager.append("s", history)
    await manager.compact("s")
    context = await store.load_context("s")
    assert context[0] == pinned
    assert text_of(context[1]).startswith("<COMPACT-SUMMARY v1>")
    recent = context[2:]
    assert contents(recent)[-1] == contents(history)[-1]
    positions = [contents(history).index(text) for text in contents(recent)]
    assert positions == sorted(positions)  # recent items keep their original order
    async with SessionStore(store.url, create_tables=False) as again:  # as after a restart
        assert await again.load_context("s") == context
        assert await again.context_tokens("s") == await store.context_tokens("s")


async def test_protected_items_are_never_summarized_or_pruned(store: SessionStore) -> None:
    recording = Recording(store)
    manager = manager_for(store, summarizer=recording, keep_recent_turns=1)
    secret_rule = Message("user", "Acceptance: p99 under 200ms", meta={"protected": True})
    messages = [Message("system", "You are terse."), secret_rule, *turns(12, size=15)]
    result = await manager.manual_compact("s", messages)
    assert {"role": "user", "content": secret_rule.content, "meta": {"protected": True}} in result
    assert {"role": "system", "content": "You are terse."} in result
    summarized = [text_of(item) for item in recording.requests[0].items]
    assert secret_rule.content not in summarized and "You are terse." not in summarized


async def test_protected_only_overflow_raises_insufficient_budget(store: SessionStore) -> None:
    manager = manager_for(store, window=600)
    big_rule = {"role": "developer", "content": "Policy clause. " * 200}
    await manager.append("s", [big_rule, *turns(4, size=10)])
    with pytest.raises(CompactionError) as caught:
        await manager.compact("s")
    assert caught.value.reason is CompactionErrorReason.INSUFFICIENT_BUDGET
    assert "Reduce protected memory" in str(caught.value)
    errors = await events_of(store, "s", "compact.error")
    assert errors[-1]["error_type"] == "InsufficientBudget"
    assert (await store.load_context("s"))[0] == big_rule  # nothing was changed


async def test_rolling_summary_updates_the_prior_one(store: SessionStore) -> None:
    recording = Recording(store)
    manager = manager_for(
        store,
        summarizer=recording,
        keep_recent_turns=1,
        keep_tool_io_pairs=0,
        recent_user_token_budget=0,  # the goal must travel through the summaries
    )
    await manager.append(
        "s", [user("Goal: migrate billing to Postgres 16 by Friday."), *turns(8, size=10)]
    )
    await manager.compact("s")
    await manager.append("s", turns(8, seed=1, size=10))
    await manager.compact("s")
    context = await store.load_context("s")
    summaries = [t for t in contents(context) if t.startswith("<COMPACT-SUMMARY")]
    assert len(summaries) == 1 and summaries[0].startswith("<COMPACT-SUMMARY v2>")
    assert recording.requests[1].prior_summary is not None
    assert "Postgres 16" in recording.requests[1].prior_summary
    assert "Postgres 16" in summaries[0]
    old_summary_texts = [text_of(item) for item in recording.requests[1].items]
    assert not any(t.startswith("<COMPACT-SUMMARY") for t in old_summary_texts)


async def test_items_appended_while_summarizing_are_carried_in_order(store: SessionStore) -> None:
    late = [user("late question"), assistant("late answer")]

    async def append_meanwhile() -> None:
        await store.append("s", late)

    recording = Recording(store, during=append_meanwhile)
    manager = manager_for(store, summarizer=recording)
    await manager.append("s", turns(10, size=15))
    outcome = await manager.compact("s")
    assert outcome.result is not None and outcome.result.carried_late == 2
    context = await store.load_context("s")
    assert context[-2:] == late
    history = await store.history("s")
    assert [row.seq for row in history] == list(range(1, len(history) + 1))


async def test_a_pop_during_summarizing_makes_it_retry(store: SessionStore) -> None:
    popped: list[Any] = []

    async def pop_once() -> None:
        if not popped:
            popped.append(await store.pop("s"))

    recording = Recording(store, during=pop_once)
    manager = manager_for(store, summarizer=recording)
    await manager.append("s", turns(10, size=15))
    outcome = await manager.compact("s")
    assert outcome.compacted and len(recording.requests) == 2  # the first plan was discarded
    assert popped[0] not in await store.load_context("s")


async def test_archive_holds_exactly_the_replaced_originals(store: SessionStore) -> None:
    manager = manager_for(store, keep_recent_turns=1, keep_tool_io_pairs=0)
    history = turns(8, size=12)
    await manager.append("s", history)
    outcome = await manager.compact("s")
    assert outcome.plan is not None and outcome.result is not None
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(
                sa.select(archives).where(archives.c.compaction_id == outcome.result.compaction_id)
            )
        ).one()
    records = decode_archive(row.body, row.content_sha256)
    assert [r["item"] for r in records] == [r.item for r in outcome.plan.replaced_rows]
    assert row.item_count == len(records) == outcome.plan.replaced_rows.__len__()


async def test_dry_run_changes_nothing(store: SessionStore) -> None:
    manager = manager_for(store, window=100_000)
    await manager.append("s", coding_session(20))
    before = await store.history("s")
    outcome = await manager.compact("s", dry_run=True)
    assert not outcome.compacted and outcome.plan is not None and outcome.plan.remainder
    assert outcome.tokens_after < outcome.tokens_before
    assert await store.history("s") == before


async def test_write_time_truncation_archives_the_original(store: SessionStore) -> None:
    manager = manager_for(store, window=100_000)
    huge = output("c1", "\n".join(f"line {n}: " + "data " * 20 for n in range(2_000)))
    await manager.append("s", [call("c1", "cat"), huge])
    stored = (await store.load_context("s"))[1]
    assert "Total output lines: 2000" in stored["output"]
    assert store.estimator.count_text(stored["output"]) < 5_000 * 1.3
    row = (await store.history("s"))[1]
    assert row.archive_id is not None
    async with store.engine.connect() as conn:
        archived = (
            await conn.execute(sa.select(archives).where(archives.c.id == row.archive_id))
        ).one()
    assert decode_archive(archived.body, archived.content_sha256)[0]["item"] == huge


async def test_events_carry_the_spec_fields_as_columns(store: SessionStore) -> None:
    manager = manager_for(store)
    await manager.append("s", turns(10, size=15))
    outcome = await manager.compact("s")
    async with store.engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text(
                    "SELECT event, triggered, pruned_count, summary_tokens, compression_ratio, "
                    "compaction_id FROM events WHERE session_id = 's' ORDER BY id"
                )
            )
        ).all()
    names = [row.event for row in rows]
    for name in (
        "compact.trigger_decision",
        "compact.summary_created",
        "compact.pruned_messages",
        "compact.policy_applied",
        "compact.archival",
    ):
        assert name in names
    assert outcome.result is not None
    assert {row.compaction_id for row in rows} == {outcome.result.compaction_id}
    created = next(row for row in rows if row.event == "compact.summary_created")
    assert created.summary_tokens > 0 and 0 < created.compression_ratio < 1


async def test_concurrent_compactions_of_one_session_leave_one_summary(store: SessionStore) -> None:
    manager = manager_for(store)
    await manager.append("s", turns(12, size=15))
    other = manager_for(store)  # a second process's manager on the same database
    await asyncio.gather(manager.compact("s"), other.compact("s"))
    context = await store.load_context("s")
    assert sum(t.startswith("<COMPACT-SUMMARY") for t in contents(context)) == 1


# ---------------------------------------------------------------- properties

_kind = st.sampled_from(["turn", "tool", "protected", "dangling"])


@pytest.mark.untraced  # repeats paths the rest of the suite covers (tests/conftest.py)
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.lists(_kind, min_size=4, max_size=30),
    size=st.integers(5, 60),
    keep_turns=st.integers(1, 6),
    keep_pairs=st.integers(1, 4),
)
async def test_compaction_invariants(
    db_url: str, kinds: list[str], size: int, keep_turns: int, keep_pairs: int
) -> None:
    """Protected never pruned, pairs never split, within budget, one summary, reload equal."""
    sid = f"p{abs(hash((tuple(kinds), size, keep_turns, keep_pairs)))}"
    async with SessionStore(db_url, create_tables=True) as store:
        manager = manager_for(
            store, window=6_000, keep_recent_turns=keep_turns, keep_tool_io_pairs=keep_pairs
        )
        items: list[dict[str, Any]] = []
        for n, kind in enumerate(kinds):
            if kind == "turn":
                items += turns(1, seed=n, size=size)
            elif kind == "tool":
                items += [call(f"c{n}"), output(f"c{n}", "r " * size)]
            elif kind == "protected":
                items.append({"role": "user", "content": f"keep {n}", "meta": {"protected": True}})
            else:
                items.append(call(f"d{n}"))  # a call that never got an output
        await manager.append(sid, items)
        try:
            outcome = await manager.compact(sid)
        except CompactionError as exc:
            assert exc.reason is CompactionErrorReason.INSUFFICIENT_BUDGET
            return
        context = await store.load_context(sid)
        protected = [i for i in items if i.get("meta")]
        assert all(p in context for p in protected)
        for index, item in enumerate(context):
            answered = answered_call(item)
            if answered is not None:
                assert any(answered in calls_in(prior) for prior in context[:index])
        for item in items:
            made = calls_in(item)
            if made and item in context:
                outputs = [o for o in items if answered_call(o) in made]
                assert all(o in context for o in outputs)
        if outcome.compacted:
            assert sum(t.startswith("<COMPACT-SUMMARY") for t in contents(context)) == 1
            assert await store.context_tokens(sid) <= manager.policy.budget(6_000)
        assert normalize(context).items == normalize(await store.load_context(sid)).items
        async with SessionStore(db_url) as reopened:
            assert await reopened.load_context(sid) == context


# One secret per default redaction pattern, each in a sentence the summarizer keeps
# (names, paths and addresses are what it copies); the value after "->" must never be stored.
SECRET_LINES = {
    "Deploy with postgres://app:S3cr3t-Pa55@db.internal:5432/prod from now on.": "S3cr3t-Pa55",
    "The AWS key is aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY for "
    "the backup job.": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Use AKIAIOSFODNN7EXAMPLE as the access key id for staging.": "AKIAIOSFODNN7EXAMPLE",
    "We decided to rotate sk-proj-Abc123Def456Ghi789Jkl012 because it leaked.": (
        "sk-proj-Abc123Def456Ghi789Jkl012"
    ),
    "The CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for repo main.": (
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    ),
    "Slack alerts post with xoxb-1234567890-abcdefghij to channel ops-7.": (
        "xoxb-1234567890-abcdefghij"
    ),
    "The maps key AIzaSyA1234567890abcdefghijklmnopqrstuv must stay private.": (
        "AIzaSyA1234567890abcdefghijklmnopqrstuv"
    ),
    "Send the header Authorization: Basic dXNlcjpwYXNz9 to api.example.com.": "dXNlcjpwYXNz9",
    "Run curl -H 'Bearer tok3nV4lue.xyz' https://api.example.com/v2/orders now.": (
        "tok3nV4lue.xyz"
    ),
    "Start it with --db-password Hunter2-Zebra in config/run.sh always.": "Hunter2-Zebra",
    "The session cookie is eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz for tests.": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz"
    ),
    "Use -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkgT0pSecretBody\n-----END EC PRIVATE KEY-----"
    " for signing.": "MHcCAQEEIBkgT0pSecretBody",
}


@pytest.mark.parametrize(
    "strategy",
    ["task_state", "brief", "decision_log", "code_delta", "step_ledger", "requirements_ledger"],
)
async def test_the_stored_summary_holds_no_secret_of_the_summarized_items(
    store: SessionStore, strategy: str
) -> None:
    """Issue 18: the summary of items with secrets carries none of them, bare or in context."""
    manager = manager_for(store, window=100_000, keep_recent_turns=1, strategy=strategy)
    messages: list[dict[str, Any]] = []
    for number, line in enumerate(SECRET_LINES):
        messages += [user(line), assistant(f"Noted for step {number}: {line}")]
    messages += [user("Carry on with the release."), assistant("Done.")]
    await manager.manual_compact("s", messages)
    summaries = [
        text for text in contents(await store.load_context("s")) if text.startswith("<COMPACT-")
    ]
    assert len(summaries) == 1
    stored = summaries[0]
    for secret in SECRET_LINES.values():
        assert secret not in stored, secret
    assert "<REDACTED>" in stored
    # The live session's originals are untouched: the archive still holds them.
    async with store.engine.connect() as conn:
        assert (await conn.execute(sa.select(sa.func.count()).select_from(archives))).scalar()


@pytest.mark.parametrize(
    ("items", "error", "fragment"),
    [
        ("hello", TypeError, "wrap a single item in a list"),
        ({"role": "user", "content": "x"}, TypeError, "wrap a single item in a list"),
        (["hello"], InvalidItemError, "item #0 is a str, not a mapping"),
        ([{"role": "user", "content": object()}], InvalidItemError, "field content is a object"),
        ([{"role": "u" * 33}], InvalidItemError, "more than its column holds"),
    ],
)
async def test_the_manager_refuses_what_the_store_refuses_before_any_work(
    store: SessionStore, items: Any, error: type[Exception], fragment: str
) -> None:
    manager = CompactionManager(CompactionConfig(store=store))
    await manager.append("s", [user("before")])
    with pytest.raises(error, match=fragment):
        await manager.append("s", items)
    with pytest.raises(ValueError, match="NUL character"):
        await manager.append("s\x00", [user("x")])
    assert await store.load_context("s") == [user("before")]


async def test_the_manager_reads_a_generator_of_items_once(store: SessionStore) -> None:
    """It used to be consumed by the truncation check, and nothing was stored."""
    manager = CompactionManager(CompactionConfig(store=store))
    assert await manager.append("s", (user(f"m{n}") for n in range(3))) == [1, 2, 3]
    assert await store.load_context("s") == [user("m0"), user("m1"), user("m2")]


class _WaitsForTheArchive:
    """A summarizer that never yields to the event loop: it blocks until the archive's
    encoding (on a worker thread) has begun, then says whether it did."""

    name = "waits-for-the-archive"
    input_window: int | None = None

    def __init__(self, encoding: threading.Event) -> None:
        self.encoding = encoding

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        began = self.encoding.wait(timeout=10)  # blocking on purpose: no await before it
        return SummaryResult("the archive was being encoded" if began else "it was not")


_TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")


async def test_the_archive_is_encoded_while_a_summarizer_that_never_yields_runs(
    db_url: str,
) -> None:
    """...on its worker thread, in the compacting task's context (a redaction hook may read
    context variables, as it could when the encoding went through `asyncio.to_thread`)."""
    encoding = threading.Event()
    tenants: set[str] = set()

    def seen(text: str) -> str:  # the redaction hook runs on every archived string
        tenants.add(_TENANT.get())
        encoding.set()
        return text

    async with SessionStore(db_url, redactor=Redactor(hook=seen), redact_archives=True) as store:
        manager = manager_for(store, summarizer=_WaitsForTheArchive(encoding))
        await store.append("s", coding_session(10))
        encoding.clear()  # appends run the hook too; only the compaction's encoding counts
        tenants.clear()
        _TENANT.set("tenant-7")
        outcome = await manager.compact("s")
    assert outcome.compacted and outcome.summary == "the archive was being encoded"
    assert tenants == {"tenant-7"}


async def test_compacting_a_session_with_no_rows_is_skipped(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        outcome = await manager_for(store).compact("nobody", trigger="manual")
        assert not outcome.compacted and outcome.tokens_before == 0


async def test_a_turn_boundary_decides_from_the_total_this_store_keeps(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a model call's record read the total, the store keeps it through its own
    appends: the turn boundary decides without reading it again (a Runner turn has three),
    and still compacts when that total crosses the trigger. Unknown, it is read."""
    manager = manager_for(store, window=2_000)
    reads: list[str] = []
    read = store.context_tokens

    async def counted(session_id: str) -> int:
        reads.append(session_id)
        return await read(session_id)

    monkeypatch.setattr(store, "context_tokens", counted)
    assert await manager.maybe_compact("fresh") is None
    assert reads == ["fresh"]  # nothing known: read
    await store.append("s", [user("hello")])
    await store.record_model_call("s", await store.load_context("s"))
    assert store.known_context_tokens("s") is not None
    reads.clear()
    assert await manager.maybe_compact("s") is None
    assert reads == []  # known: not read
    await store.append("s", turns(20, size=60))
    outcome = await manager.maybe_compact("s")
    assert outcome is not None and outcome.compacted  # the kept total crossed the trigger
    assert reads[:1] == ["s"]  # and the crossing was confirmed from the stored total


async def test_a_crossing_the_kept_total_shows_is_confirmed_before_compacting(
    db_url: str,
) -> None:
    """Another process compacted the session since this store last saw its total: the kept
    total still says the trigger is crossed, the stored one does not, nothing is compacted."""
    async with (
        SessionStore(db_url, create_tables=True) as store,
        SessionStore(db_url) as other_process,
    ):
        await store.append("s", [user("hello")])
        await store.record_model_call("s", await store.load_context("s"))
        await store.append("s", turns(20, size=60))
        assert (await manager_for(other_process, window=2_000).maybe_compact("s")) is not None
        kept = store.known_context_tokens("s")
        assert kept is not None and kept > await store.context_tokens("s")
        manager = manager_for(store, window=2_000)
        assert manager.decide(kept).triggered
        assert await manager.maybe_compact("s") is None
