"""The `turns` view (migration 0011): one row per turn, on both backends, agreeing with a
Python model of the appends and with `HistoryPoint.before_turn`."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import HistoryPoint, SessionStore
from sessionstore._security._crypto import Keyring, LocalKey
from tests.support.histories import assistant, call, output, user


async def turns_of(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT * FROM turns WHERE session_id = :sid ORDER BY turn"),
            {"sid": session_id},
        )
        return [dict(row._mapping) for row in rows]


async def test_each_user_message_starts_a_turn(store: SessionStore) -> None:
    await store.append("s", [{"role": "system", "content": "be brief"}])
    await store.append("s", [user("look up order 7"), call("c1", "lookup", order=7)])
    await store.append("s", [output("c1", "shipped"), assistant("It shipped.")])
    await store.append("s", [user("refund 8"), call("c2", "refund"), call("c3", "lookup")])
    await store.pop("s")  # markers and hidden rows stay in history: turns count appends
    turns = await turns_of(store, "s")
    assert [(t["turn"], t["first_seq"], t["last_seq"], t["items"]) for t in turns] == [
        (0, 1, 1, 1),
        (1, 2, 5, 4),
        (2, 6, 8, 3),
    ]
    assert turns[1]["user_text"] == "look up order 7" and turns[0]["user_text"] is None
    assert turns[1]["tools"] == "lookup" and set(turns[2]["tools"].split(",")) == {
        "refund",
        "lookup",
    }
    history = {row.seq: row.tokens for row in await store.history("s")}
    assert turns[1]["tokens"] == sum(history[seq] for seq in range(2, 6))


_turn = st.lists(st.sampled_from(["user", "assistant", "call"]), min_size=1, max_size=5)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(_turn, min_size=1, max_size=8))
async def test_turns_agree_with_a_model_and_with_before_turn(
    db_url: str, batches: list[list[str]]
) -> None:
    sid = f"turns-{abs(hash(str(batches)))}"
    async with SessionStore(db_url, create_tables=True) as store:
        model: dict[int, int] = {}  # turn -> items
        turn = 0
        for batch in batches:
            items = []
            for n, kind in enumerate(batch):
                if kind == "user":
                    items.append(user(f"ask {n}"))
                elif kind == "assistant":
                    items.append(assistant(f"answer {n}"))
                else:
                    items.append(call(f"c{n}", "tool"))
            seqs = await store.append(sid, items)
            for item in items:
                if item.get("role") == "user":
                    turn += 1
                model[turn] = model.get(turn, 0) + 1
            assert seqs
        turns = await turns_of(store, sid)
        assert {t["turn"]: t["items"] for t in turns} == model
        starts = [(t["turn"], t["first_seq"], t["user_text"]) for t in turns if t["turn"]]
        listed = await store.user_turns(sid)  # the cheap read agrees with the view
        assert [(u.turn, u.seq, u.user_text) for u in listed] == starts
        for t in turns:
            if t["turn"] == 0:
                continue
            before = await store.rows_as_of(sid, HistoryPoint.before_turn(t["turn"]))
            assert before[0] < t["first_seq"]  # the context before the turn lacks its message


async def test_store_turns_open_sealed_user_text_and_count_tools(db_url: str) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    async with SessionStore(db_url, keyring=keyring, encrypt_payloads=True) as store:
        await store.append(
            "s", [user("secret question"), call("c1", "lookup"), call("c2", "lookup")]
        )
        await store.append(
            "s",
            [
                output("c1"),
                output("c2"),
                {"role": "user", "content": [{"type": "input_text", "text": "x"}]},
            ],
        )
        turns = await store.turns("s")
        assert [turn.user_text for turn in turns] == [
            "secret question",
            '[{"type":"input_text","text":"x"}]',
        ]
        assert turns[0].tools == ("lookup",) and turns[0].items == 5
        assert [(u.turn, u.user_text) for u in await store.user_turns("s")] == [
            (turn.turn, turn.user_text) for turn in turns
        ]
        assert await store.tool_usage("s") == [("lookup", 2, 1)]
        assert (await turns_of(store, "s"))[0]["user_text"] is None  # SQL cannot read it


async def test_turns_before_clear_count_to_the_newest_clear_not_a_rewind_and_branches_inherit(
    store: SessionStore,
) -> None:
    assert await store.turns_before_clear("s") == 0  # no session yet
    await store.append("s", [user("one"), assistant("1")])
    assert await store.turns_before_clear("s") == 0  # never cleared
    await store.clear("s")
    await store.append("s", [user("two"), assistant("2"), user("three")])
    assert await store.turns_before_clear("s") == 1
    await store.rewind("s", HistoryPoint.before_turn(3))  # a clear naming its target
    assert await store.turns_before_clear("s") == 1
    await store.fork("s", "s-branch", at=HistoryPoint.before_turn(3))
    assert await store.turns_before_clear("s-branch") == 1  # the parent's clear, inherited
    await store.append("s-branch", [user("four")])
    await store.clear("s-branch")
    assert await store.turns_before_clear("s-branch") == 3  # one, two (shared), four
    assert await store.turns_before_clear("s") == 1  # the branch's clear is its own
