"""A Runner conversation with a handoff, over SQLSession on both backends: every item is
stored exactly once, as the SDK's own SQLiteSession stores it, with the agent that produced
it; a new store reloads the identical context."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import Agent, SQLiteSession
from agents.tracing import agent_span, custom_span

from sessionstore import SessionStore, SQLSession
from sessionstore.adapters.agents_sdk._producing_agent import producing_agent
from sessionstore.compaction import CompactionConfig, CompactionManager
from tests.support.handoff_runs import PRODUCERS, converse_with_handoff
from tests.support.histories import user

# The SDK's nested handoff history hands the next agent one summary message of the
# conversation so far instead of the items themselves; it is model input, never stored.
NESTED_PREAMBLE = "For context, here is the conversation so far between the user"


@pytest.mark.parametrize(
    ("nest", "streamed"),
    [(False, False), (True, False), (False, True)],
    ids=["run", "nested-history", "streamed"],
)
async def test_a_handoff_run_is_stored_once_per_item_with_its_agent(
    db_url: str, tmp_path: Path, nest: bool, streamed: bool
) -> None:
    theirs = SQLiteSession("conv", str(tmp_path / "sdk.db"))
    sdk_run = await converse_with_handoff(theirs, nest=nest, streamed=streamed)
    expected = await theirs.get_items()
    async with SessionStore(db_url, create_tables=True) as store:
        ours = SQLSession("conv", store)
        our_run = await converse_with_handoff(ours, nest=nest, streamed=streamed)
        assert our_run == sdk_run  # the models saw the same inputs, the same agents answered
        assert our_run.last_agents == ["billing", "billing"]
        assert await ours.get_items() == expected
        rows = await store.history("conv")
        # Exactly once: one item row per item the SDK stored, nothing else written.
        assert [row.kind for row in rows] == ["item"] * len(expected)
        assert [row.item for row in rows] == expected
        assert [row.agent for row in rows] == list(PRODUCERS)
        assert [row.tool_name for row in rows if row.agent == "triage"] == [
            "transfer_to_billing",
            "transfer_to_billing",
        ]
        billing = await store.load_context("conv", agent="billing")
        produced = zip(expected, PRODUCERS, strict=True)
        assert billing == [item for item, who in produced if who == "billing"]
        assert (await store.verify_history("conv")).ok
    async with SessionStore(db_url) as reopened:  # a restart: the same context, same agents
        assert await SQLSession("conv", reopened).get_items() == expected
        assert [row.agent for row in await reopened.history("conv")] == list(PRODUCERS)
    handed = our_run.inputs[1]  # billing's first model call, right after the handoff
    if nest:
        assert NESTED_PREAMBLE in str(handed[0]["content"])
        assert all(NESTED_PREAMBLE not in str(item) for item in expected)
    else:
        assert handed == expected[:3]
    # The second turn's model input is the whole stored conversation, reloaded.
    assert our_run.inputs[3] == expected[:7]
    theirs.close()


async def test_a_handoff_run_through_a_compaction_manager_stores_the_agents(
    sqlite_url: str,
) -> None:
    async with SessionStore(sqlite_url) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        session = SQLSession("conv", manager=manager)
        await converse_with_handoff(session)
        assert [row.agent for row in await store.history("conv")] == list(PRODUCERS)


async def test_items_saved_outside_an_agent_span_name_no_agent(sqlite_url: str) -> None:
    async with SessionStore(sqlite_url) as store:
        session = SQLSession("s", store)
        await session.add_items([user("outside any run")])  # type: ignore[list-item]
        with custom_span("not an agent"):
            await session.add_items([user("inside another span")])  # type: ignore[list-item]
        with agent_span(name="researcher"):
            await session.add_items([user("inside an agent span")])  # type: ignore[list-item]
        assert [row.agent for row in await store.history("s")] == [None, None, "researcher"]


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        ("line\nbreak", "line\ufffdbreak"),
        ("\x1b[31mevil\x1b[0m", "\ufffd[31mevil\ufffd[0m"),
        ("half \ud800 pair", "half \ufffd pair"),
        ("x" * 300, "x" * 256),
        ("", None),
        ("   ", None),
    ],
)
def test_an_agent_name_the_store_refuses_is_stored_visibly_altered(
    name: str, stored: str | None
) -> None:
    """A run never fails over its agent's name, and its rows keep their attribution: what
    the store cannot hold is replaced (U+FFFD, cut to 256 characters); a blank name is none."""
    assert Agent(name=name).name == name  # the SDK accepts it
    with agent_span(name=name):
        assert producing_agent() == stored
    with agent_span(name="billing"):
        assert producing_agent() == "billing"
