"""Usage and model calls captured by the SDK adapter with no call to remember: a real Runner
with a scripted model that reports usage, on both backends."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from sessionstore import HistoryPoint, Price, SessionStore, SQLSession
from sessionstore._items import canonical_json, input_sha256
from sessionstore.adapters.agents_sdk import _input_memo as input_memo
from sessionstore.adapters.agents_sdk import input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager
from tests.support.sdk_runs import get_weather


def usage(inputs: int, cached: int, outputs: int, reasoning: int = 0) -> Usage:
    return Usage(
        requests=1,
        input_tokens=inputs,
        input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
        output_tokens=outputs,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
        total_tokens=inputs + outputs,
    )


def script() -> ScriptedModel:
    """Two turns: a tool round trip (two calls), then a plain answer (one call)."""
    return ScriptedModel(
        [
            ModelStep(
                output=[function_call("get_weather", {"city": "Paris"}, call_id="c1")],
                usage=usage(1_000, 0, 20),
            ),
            ModelStep(output=[assistant_message("18C in Paris.")], usage=usage(1_100, 1_000, 30)),
            ModelStep(output=[assistant_message("You asked.")], usage=usage(1_200, 1_024, 40, 8)),
        ]
    )


@pytest.mark.parametrize("with_filter", [True, False])
async def test_every_model_call_is_recorded_with_its_usage_and_cost(
    db_url: str, with_filter: bool
) -> None:
    prices = {"scripted": Price(input=2.0, cached_input=0.5, output=10.0)}
    async with SessionStore(db_url, create_tables=True, prices=prices) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        model = script()
        model.model = "scripted-2026"  # type: ignore[attr-defined]  # what a provider model names
        agent = Agent(name="a", instructions="Be brief.", model=model, tools=[get_weather])
        session = SQLSession("u", store)
        config = RunConfig(call_model_input_filter=input_filter(manager) if with_filter else None)
        for prompt in ("weather in Paris?", "what did I ask?"):
            await Runner.run(agent, prompt, session=session, run_config=config)
        calls = await store.model_calls("u")
        assert [c.call for c in calls] == [1, 2, 3]
        assert [(c.input_tokens, c.cached_tokens, c.output_tokens) for c in calls] == [
            (1_000, 0, 20),
            (1_100, 1_000, 30),
            (1_200, 1_024, 40),
        ]
        assert calls[2].reasoning_tokens == 8
        if not with_filter:  # usage alone: no input, no model, no price, no turn
            assert {c.model for c in calls} == {None} and {c.cost_usd for c in calls} == {None}
            assert await session.get_turn_usage() == []
            return
        assert await session.get_session_usage() == {
            "requests": 3,
            "input_tokens": 3_300,
            "output_tokens": 90,
            "total_tokens": 3_390,
            "total_turns": 2,
        }
        per_turn = await session.get_turn_usage()
        assert isinstance(per_turn, list)
        assert [(t["user_turn_number"], t["requests"]) for t in per_turn] == [(1, 2), (2, 1)]
        one_turn = {key: value for key, value in per_turn[1].items() if key != "user_turn_number"}
        assert await session.get_turn_usage(2) == one_turn  # the SDK's one-turn shape
        assert per_turn[1]["output_tokens_details"] == {"reasoning_tokens": 8}
        assert await session.get_turn_usage(9) == {}
        assert {c.model for c in calls} == {"scripted-2026"}
        assert calls[1].cost_usd == pytest.approx((100 * 2.0 + 1_000 * 0.5 + 30 * 10.0) / 1e6)
        sent = [json.loads(json.dumps(call.input)) for call in model.calls]
        for call, items in zip(calls, sent, strict=True):
            digest = hashlib.sha256(
                json.dumps(
                    items, ensure_ascii=False, separators=(",", ":"), sort_keys=True
                ).encode()
            ).hexdigest()
            assert call.input_sha256 == digest  # the exact input sent
            assert call.input_items == len(items)
        # What call 3 was sent: the stored context then, plus the unsaved items after it.
        third = calls[2]
        assert third.context_to_seq is not None and third.unsaved_items is not None
        stored = await store.load_context("u", as_of=HistoryPoint.at_seq(third.context_to_seq))
        unsaved = [row.item for row in await store.history("u")][
            third.context_to_seq : third.context_to_seq + third.unsaved_items
        ]
        assert [*stored, *unsaved] == sent[2]


async def test_each_item_is_digested_once_across_calls_and_runs(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded: list[str] = []

    def counted(item: Mapping[str, Any]) -> str:
        encoded.append(canonical_json(item))
        return encoded[-1]

    monkeypatch.setattr(input_memo, "canonical_json", counted)
    async with SessionStore(db_url, create_tables=True) as store:
        manager = CompactionManager(CompactionConfig(store=store))
        model = script()
        agent = Agent(name="a", instructions="Be brief.", model=model, tools=[get_weather])
        session = SQLSession("u", store)
        config = RunConfig(call_model_input_filter=input_filter(manager))
        for prompt in ("weather in Paris?", "what did I ask?"):
            await Runner.run(agent, prompt, session=session, run_config=config)
        sent = [json.loads(json.dumps(call.input)) for call in model.calls]
        assert len(encoded) == len(sent[-1])  # the second run went on from the first's memo
        calls = await store.model_calls("u")
        assert [call.input_sha256 for call in calls] == [input_sha256(items) for items in sent]
