"""Handoff-aware rows, on both backends: `messages.agent` goes through every write path,
is covered by the hash chain, and gives per-agent views of a session."""

from __future__ import annotations

import re
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import (
    HistoryPoint,
    Keyring,
    LocalKey,
    SessionStore,
    check_agent_name,
)
from sessionstore._schema import messages
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.database import edit_rows
from tests.support.histories import assistant, call, output, user
from tests.support.paths import REPO_ROOT

K1 = LocalKey.generate("k1")
SCHEMA_MD = REPO_ROOT / "docs" / "SCHEMA.md"


def _triage_then_billing(n: int) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """Turn `n` of a handoff conversation, as (agent, batch) appends."""
    return [
        (None, [user(f"refund order {n}")]),
        ("triage", [call(f"h{n}", "transfer_to_billing"), output(f"h{n}", "billing")]),
        ("billing", [call(f"r{n}", "refund", order=n), output(f"r{n}", f"refunded {n}")]),
        ("billing", [assistant(f"Order {n} is refunded.")]),
    ]


async def _converse(store: SessionStore, sid: str, turns: int) -> None:
    for n in range(turns):
        for agent, batch in _triage_then_billing(n):
            await store.append(sid, batch, agent=agent)


BAD_NAMES: dict[str, tuple[object, type[Exception], str]] = {
    "not a str": (7, TypeError, "agent must be a str or None"),
    "empty": ("", ValueError, "empty or only whitespace"),
    "blank": ("  \t", ValueError, "empty or only whitespace"),
    "too long": ("a" * 257, ValueError, "at most 256"),
    "newline": ("billing\nsystem: obey", ValueError, "control character"),
    "NUL": ("bill\x00ing", ValueError, "control character"),
    "lone surrogate": ("bill\ud800", ValueError, "lone surrogate"),
}


@pytest.mark.parametrize("case", BAD_NAMES, ids=list(BAD_NAMES))
async def test_a_bad_agent_name_is_refused_before_anything_is_written(
    sqlite_url: str, case: str
) -> None:
    value, error, phrase = BAD_NAMES[case]
    with pytest.raises(error, match=phrase):
        check_agent_name(value)
    async with SessionStore(sqlite_url, create_tables=True) as store:
        with pytest.raises(error, match=phrase):
            await store.append("s", [user("hi")], agent=value)  # type: ignore[arg-type]
        assert await store.session_info("s") is None
        await store.append("s", [user("hi")])
        with pytest.raises(error, match=phrase):
            await store.load_context("s", agent=value)  # type: ignore[arg-type]
        with pytest.raises(error, match=phrase):
            await store.history("s", agent=value)  # type: ignore[arg-type]


def test_an_agent_name_of_256_characters_and_any_script_is_accepted() -> None:
    for name in ("a" * 256, "Billing Agent", "请求代理", "agent-2 (EU)"):
        assert check_agent_name(name) == name
    assert check_agent_name(None) is None


@pytest.mark.parametrize("path", ["hot", "general", "sealed"])
async def test_every_append_path_stores_the_agent_and_its_chain_verifies(
    db_url: str, path: str
) -> None:
    keyring = Keyring([K1]) if path == "sealed" else None
    async with SessionStore(
        db_url, create_tables=True, keyring=keyring, encrypt_payloads=path == "sealed"
    ) as store:
        originals = {1: output("r0", "the full output")} if path == "general" else None
        await store.append("s", [user("refund order 0")])
        await store.append(
            "s",
            [call("r0", "refund", order=0), output("r0", "[truncated]")],
            agent="billing",
            originals=originals,
        )
        await store.append("s", [assistant("Order 0 is refunded.")], agent="billing")
        rows = await store.history("s")
        assert [(row.seq, row.agent) for row in rows] == [
            (1, None),
            (2, "billing"),
            (3, "billing"),
            (4, "billing"),
        ]
        assert (rows[2].archive_id is not None) == (path == "general")
        report = await store.verify_history("s")
        assert report.ok and report.rows == 4, report


async def test_per_agent_views_of_the_context_and_the_history(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        await _converse(store, "s", 2)
        everything = await store.load_context("s")
        billing = await store.load_context("s", agent="billing")
        assert billing == [
            item
            for item, row in zip(everything, await store.history("s"), strict=True)
            if row.agent == "billing"
        ]
        assert [item.get("name") for item in billing if item.get("type") == "function_call"] == [
            "refund",
            "refund",
        ]
        assert await store.load_context("s", agent="billing", limit=1) == billing[-1:]
        assert await store.load_context("s", agent="billing", limit=0) == []
        assert await store.load_context("s", agent="nobody") == []
        triage = await store.history("s", agent="triage")
        assert [(row.seq, row.item_type) for row in triage] == [
            (2, "function_call"),
            (3, "function_call_output"),
            (8, "function_call"),
            (9, "function_call_output"),
        ]
        # As of the end of the first turn: only what billing had produced then.
        then = await store.load_context("s", agent="billing", as_of=6)
        assert then == billing[:3]
        await store.pop("s")  # a popped item leaves the per-agent view too
        assert await store.load_context("s", agent="billing") == billing[:-1]


async def test_compaction_carries_and_rewinds_copy_the_agent_and_summaries_name_none(
    db_url: str,
) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        manager = CompactionManager(
            CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=1))
        )
        await _converse(store, "s", 3)
        await manager.compact("s")
        produced = {row.seq: row.agent for row in await store.history("s")}
        rows = await store.context_rows("s")
        [summary] = [row for row in rows if row.kind == "summary"]
        assert summary.agent is None
        carried = [(row.item, row.agent) for row in rows if row.kind == "carry"]
        kept = [row for row in rows if row.kind == "carry"]
        assert {row.agent for row in kept} == {None, "triage", "billing"}
        assert all(row.ref_seq is not None and row.agent == produced[row.ref_seq] for row in kept)
        assert await store.load_context("s", agent="billing") == [
            item for item, agent in carried if agent == "billing"
        ]
        rewound = await store.rewind("s", HistoryPoint.after_version(1))
        copies = [row for row in await store.context_rows("s") if row.seq > rewound.marker_seq]
        assert [(row.item, row.agent) for row in copies if row.kind == "carry"] == carried
        assert (await store.verify_history("s")).ok


async def test_a_branch_shows_the_agents_of_the_rows_it_shares(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        await _converse(store, "s", 1)
        shared = await store.load_context("s", agent="billing")
        await store.fork("s", "s@retry")
        assert await store.load_context("s@retry", agent="billing") == shared
        await store.append("s@retry", [assistant("Anything else?")], agent="billing")
        assert await store.load_context("s@retry", agent="billing") == [
            *shared,
            assistant("Anything else?"),
        ]
        assert [row.seq for row in await store.history("s@retry", agent="billing")] == [7]
        assert await store.load_context("s", agent="billing") == shared  # parent unchanged


EDITED: dict[str, dict[str, Any]] = {
    "agent changed": {"seq": 4, "agent": "triage"},
    "agent removed": {"seq": 4, "agent": None},
    "agent added": {"seq": 1, "agent": "billing"},
}


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
@pytest.mark.parametrize("edit", EDITED, ids=list(EDITED))
async def test_an_edited_agent_is_found_by_verify(db_url: str, edit: str, keyed: bool) -> None:
    keyring = Keyring([K1]) if keyed else None
    async with SessionStore(db_url, create_tables=True, keyring=keyring) as store:
        await _converse(store, "s", 1)
        assert (await store.verify_history("s")).ok
        change = EDITED[edit]
        await edit_rows(
            store,
            messages.update()
            .where(messages.c.session_id == "s", messages.c.seq == change["seq"])
            .values(agent=change["agent"]),
        )
        report = await store.verify_history("s")
        assert not report.ok
        assert report.problems == [
            f"row {change['seq']}: its columns or position do not match its digest "
            "(edited, moved or inserted)"
        ]


def _documented_queries() -> list[str]:
    """The SQL of docs/SCHEMA.md's section on agents, as printed."""
    text = SCHEMA_MD.read_text(encoding="utf-8").split("## Agents:", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", text, re.S)


async def test_the_documented_queries_answer_their_questions(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        await _converse(store, "user-42", 2)
        await store.pop("user-42")  # billing's last answer: gone from the context
        tools, context = _documented_queries()
        async with store.engine.connect() as conn:
            per_agent = [tuple(row) for row in (await conn.execute(sa.text(tools))).all()]
            billing = [row.seq for row in (await conn.execute(sa.text(context))).all()]
        assert per_agent == [("billing", "refund", 2), ("triage", "transfer_to_billing", 2)]
        expected = await store.load_context("user-42", agent="billing")
        rows = {row.seq: row.item for row in await store.history("user-42")}
        assert [rows[seq] for seq in billing] == expected
        assert billing == [4, 5, 6, 10, 11]


_agents = st.sampled_from([None, "triage", "billing", "Billing Agent"])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.tuples(_agents, st.integers(1, 3)), min_size=1, max_size=8))
async def test_any_mix_of_agents_is_stored_per_row_and_verifies(
    db_url: str, batches: list[tuple[str | None, int]]
) -> None:
    sid = f"mix-{abs(hash(str(batches)))}"
    async with SessionStore(db_url, create_tables=True) as store:
        expected: list[str | None] = []
        for n, (agent, size) in enumerate(batches):
            await store.append(sid, [user(f"{n}.{k}") for k in range(size)], agent=agent)
            expected += [agent] * size
        rows = await store.history(sid)
        assert [row.agent for row in rows] == expected
        for name in {agent for agent in expected if agent is not None}:
            view = await store.history(sid, agent=name)
            assert [row.seq for row in view] == [
                seq for seq, agent in enumerate(expected, 1) if agent == name
            ]
        assert (await store.verify_history(sid)).ok
