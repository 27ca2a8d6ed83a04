"""Provider compaction items in real Agents SDK runs (Runner, ScriptedModel, SQLSession) on
SQLite and PostgreSQL: the pre-flight compacts through the test server's
`/v1/responses/compact`, the next model call replays the item first, and an agent switched
to another model gets a readable summary instead."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.models.interface import Model, ModelProvider
from agents.testing import ScriptedModel, assistant_message

from sessionstore import SessionStore, SQLSession
from sessionstore._items import text_of
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.adapters.agents_sdk._binding import call_binding
from sessionstore.compaction import CompactionManager
from tests.support.openai_server import OpenAIServer
from tests.support.provider import (
    BOUND_MODEL,
    FACT,
    ProviderManagers,
    compaction_rows,
)
from tests.support.stored_events import events_of

TURNS = 12
WINDOW = 3_000


class Scripted(ModelProvider):
    """Every model name resolves to one scripted model: the agent's model stays a name (as
    in production), and the run still needs no network."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def get_model(self, model_name: str | None) -> Model:
        return self.model


@pytest.fixture
async def managers() -> AsyncIterator[ProviderManagers]:
    with OpenAIServer() as server:
        built = ProviderManagers(server)
        yield built
        await built.aclose()


# Chatter with nothing an extractive summary must keep: FACT is the one fact to carry.
CHATTER = ("apple", "river", "cloud", "stone", "maple", "amber", "piano", "orbit")


def prompts() -> list[str]:
    rng = random.Random(7)
    return [FACT, *(" ".join(rng.choices(CHATTER, k=300)) for _ in range(1, TURNS))]


async def converse(
    manager: CompactionManager, session: SQLSession, agent_model: str, texts: list[str]
) -> ScriptedModel:
    """One Runner turn per text on `agent_model`, with the pre-flight filter."""
    model = ScriptedModel([[assistant_message(f"done: {text[:40]}")] for text in texts])
    agent = Agent(name="assistant", instructions="Be brief.", model=agent_model)
    config = RunConfig(
        call_model_input_filter=input_filter(manager), model_provider=Scripted(model)
    )
    for text in texts:
        await Runner.run(agent, text, session=session, run_config=config)
    model.assert_complete()
    return model


def is_compaction(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "compaction"


async def test_a_runner_run_replays_the_provider_item_as_the_first_item(
    store: SessionStore, managers: ProviderManagers
) -> None:
    manager = managers.make(store, window=WINDOW, keep_recent_turns=1)
    session = SQLSession("run", store, manager=manager)
    model = await converse(manager, session, BOUND_MODEL, prompts())

    compacted = [call for call in model.calls if any(map(is_compaction, call.input))]
    assert compacted, "the pre-flight never compacted: raise TURNS or lower WINDOW"
    for call in compacted:
        assert is_compaction(call.input[0])  # the marker first, the recent turns after it
        assert sum(map(is_compaction, call.input)) == 1
    stored: list[Any] = await session.get_items()
    assert is_compaction(stored[0]) and stored[0] == compacted[-1].input[0]
    assert [r.path for r in managers.server.requests] == ["/v1/responses/compact"] * len(
        await compaction_rows(store, "run")
    )
    assert managers.server.bound_model(stored[0]["id"]) == BOUND_MODEL


async def test_an_agent_switched_to_another_model_gets_a_readable_summary(
    store: SessionStore, managers: ProviderManagers
) -> None:
    manager = managers.make(store, window=WINDOW, keep_recent_turns=1)
    session = SQLSession("switch", store, manager=manager)
    await converse(manager, session, BOUND_MODEL, prompts())
    assert is_compaction((await session.get_items())[0])

    model = await converse(manager, session, "gpt-4.1", ["and now?"])
    [call] = model.calls
    assert not any(map(is_compaction, call.input))
    assert text_of(call.input[0]).startswith("<COMPACT-SUMMARY")
    assert "zeta-42" in text_of(call.input[0])  # the first turn, from the archives
    # The summarizer still makes gpt-5 items: each one is replaced before gpt-4.1 sees it.
    events = await events_of(store, "switch", "compact.provider_item_unusable")
    assert events and all(
        (event["marker_model"], event["model"]) == (BOUND_MODEL, "gpt-4.1") for event in events
    )
    assert not is_compaction((await session.get_items())[0])


@pytest.mark.parametrize(
    ("model", "binding"),
    [
        ("gpt-5", ("openai", "gpt-5")),
        ("openai/gpt-5", ("openai", "gpt-5")),
        ("litellm/anthropic/claude-4", ("litellm", "anthropic/claude-4")),
    ],
)
def test_the_call_binding_follows_the_sdks_provider_prefixes(
    model: str, binding: tuple[str, str]
) -> None:
    assert call_binding(Agent(name="a", model=model)) == binding


def test_a_model_without_a_name_binds_nothing() -> None:
    assert call_binding(Agent(name="a", model=ScriptedModel([]))) is None
