"""The fact sheet: a rolling summary keeps the prior summary's standing facts, whoever wrote it.

The LLM path is measured end to end: the real openai client, the local OpenAI-compatible
server playing a summarizer that drops facts, the real compaction service and database.
"""

from __future__ import annotations

import json
import random
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore
from sessionstore._items import text_of
from sessionstore.compaction._manager import CompactionManager
from sessionstore.compaction._outcome import CompactionConfig
from sessionstore.compaction._policy import CompactionPolicy
from sessionstore.compaction._summarizers._factsheet import carry_forward, is_kept, standing_facts
from sessionstore.compaction._summarizers._openai import OpenAISummarizer
from tests.support.histories import turns
from tests.support.openai_server import OpenAIServer, ok

GOAL = "Customer wants to refund order 7697 before Friday."
CONSTRAINT = "Refunds above 500 EUR need manager approval."
PREFERENCE = "The customer prefers email over phone calls."
FILE = "corpus-v3.parquet"
FIRST_SUMMARY = f"""## Goals
- {GOAL}
## Constraints
- {CONSTRAINT}
## Preferences
- {PREFERENCE}
## Entities
- files: {FILE}"""


def test_standing_facts_are_the_goal_constraints_preferences_and_identifiers() -> None:
    sheet = standing_facts(FIRST_SUMMARY + "\n## Notes\n- We chatted about the weather.")
    assert [(fact.kind, fact.text) for fact in sheet] == [
        ("goal", GOAL),
        ("constraint", CONSTRAINT),
        ("preference", PREFERENCE),
        ("entity", FILE),
    ]
    assert standing_facts(None) == standing_facts("") == []


def test_a_paraphrase_keeps_a_fact_only_with_its_numbers_and_names_exact() -> None:
    (goal, *_rest) = standing_facts(FIRST_SUMMARY)
    assert is_kept(goal, "The customer wants to refund order 7697 before Friday, urgently.")
    assert not is_kept(goal, "The customer wants to refund order 7696 before Friday.")
    assert not is_kept(goal, "Customer wants to refund order 7697.")  # Friday is gone
    assert not is_kept(goal, "Order 7697 was mentioned.")  # most of the words are gone


def test_dropped_facts_come_back_in_order_of_importance_while_they_fit() -> None:
    carried = carry_forward(FIRST_SUMMARY, f"## Goals\n- {GOAL}", len, 10**6)
    assert carried.checked == 4
    assert [fact.kind for fact in carried.reinserted] == ["constraint", "preference", "entity"]
    assert carried.text.endswith(
        f"## Carried facts\n- Constraint: {CONSTRAINT}\n- Preference: {PREFERENCE}\n- files: {FILE}"
    )
    # What came back parses back into the same standing facts next round.
    assert standing_facts(carried.text) == standing_facts(FIRST_SUMMARY)

    tight = carry_forward(FIRST_SUMMARY, "Nothing kept.", len, 99)
    assert [fact.kind for fact in tight.reinserted] == ["goal"]
    assert [fact.kind for fact in tight.left_out] == ["constraint", "preference", "entity"]


def _llm_manager(store: SessionStore, summarizer: OpenAISummarizer) -> CompactionManager:
    """Compacts everything but the last turn with `summarizer`, whenever asked."""
    return CompactionManager(
        CompactionConfig(
            max_context_tokens=100_000,
            policy=CompactionPolicy(keep_recent_turns=1, keep_tool_io_pairs=0),
            store=store,
            summarizer=summarizer,
        )
    )


async def carried_events(store: SessionStore) -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT payload FROM events WHERE event = 'compact.facts_carried' ORDER BY id")
        )
        return [p if isinstance(p, dict) else json.loads(p) for (p,) in rows]


async def test_an_llm_that_drops_facts_gets_them_back_every_round(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    """Twelve rounds; each round the model keeps a random part of the facts (never all of
    them). After the last round every standing fact is in the active context."""
    rng = random.Random(14)
    facts = [f"- {GOAL}", f"- {CONSTRAINT}", f"- {PREFERENCE}", f"- files: {FILE}"]
    replies = [FIRST_SUMMARY]
    for _ in range(11):
        kept = rng.sample(facts, rng.randrange(0, len(facts)))
        replies.append("## State\n" + "\n".join(["- Working through the queue.", *kept]))
    summarizer = OpenAISummarizer("drops-facts", base_url=openai_server.base_url, timeout=5)
    async with SessionStore(sqlite_url) as store:
        manager = _llm_manager(store, summarizer)
        for round_number, reply in enumerate(replies):
            openai_server.enqueue(ok(reply))
            await manager.append("s", turns(4, seed=round_number, size=20))
            outcome = await manager.compact("s")
            assert outcome.compacted and outcome.fallback is None
        context = "\n".join(text_of(item) for item in await store.load_context("s"))
        events = await carried_events(store)
    for fact in (GOAL, CONSTRAINT, PREFERENCE, FILE):
        assert fact in context, fact
    assert len(events) == 11  # every round after the first had a prior summary to check
    assert all(event["checked"] == 4 and event["left_out"] == 0 for event in events)
    reinserted = sum(event["reinserted"] for event in events)
    assert reinserted >= 11  # the model dropped something every round; all of it came back
    assert all(  # `sessionstore events` shows what each says
        f"{event['reinserted']} the summarizer dropped were put back" in event["message"]
        for event in events
        if event["reinserted"]
    )
    assert any(f"Constraint: {CONSTRAINT}" in event["reinserted_facts"] for event in events)
    # The model saw the repaired summary as the prior state each round.
    prompts = [json.dumps(request.body) for request in openai_server.requests]
    assert all(CONSTRAINT in prompt for prompt in prompts[1:])


def test_a_fact_the_conversation_superseded_is_not_put_back() -> None:
    said = [
        {"role": "user", "content": "Refunds above 500 EUR no longer need manager approval."},
        {"role": "assistant", "content": "Noted: refunds of any size go through."},
    ]
    carried = carry_forward(FIRST_SUMMARY, f"## Goals\n- {GOAL}", len, 10**6, said)
    assert [fact.text for fact in carried.superseded] == [CONSTRAINT]
    assert [fact.kind for fact in carried.reinserted] == ["preference", "entity"]
    assert CONSTRAINT not in carried.text
    # Tool output states nothing: a retraction found there does not count.
    tool = [{"type": "function_call_output", "call_id": "c", "output": said[0]["content"]}]
    assert carry_forward(FIRST_SUMMARY, "Nothing kept.", len, 10**6, tool).superseded == ()


async def test_an_llm_that_drops_a_superseded_fact_is_not_corrected(
    sqlite_url: str, openai_server: OpenAIServer
) -> None:
    retraction = "The approval limit for refunds changed to 800 EUR."
    summarizer = OpenAISummarizer("follows-changes", base_url=openai_server.base_url, timeout=5)
    async with SessionStore(sqlite_url) as store:
        manager = _llm_manager(store, summarizer)
        openai_server.enqueue(ok(FIRST_SUMMARY))
        await manager.append("s", turns(4, seed=1, size=20))
        await manager.compact("s")
        openai_server.enqueue(ok(f"## Goals\n- {GOAL}\n## Constraints\n- {retraction}"))
        await manager.append("s", [{"role": "user", "content": retraction}])
        await manager.append("s", turns(2, seed=2, size=20))
        await manager.compact("s")
        context = "\n".join(text_of(item) for item in await store.load_context("s"))
        (event,) = await carried_events(store)
    assert CONSTRAINT not in context and "800 EUR" in context
    assert event["superseded"] == 1
    assert event["superseded_facts"] == [f"Constraint: {CONSTRAINT}"]
    assert event["reinserted"] == 2  # the preference and the file the model also dropped
    assert event["message"] == (
        "4 standing fact(s) of the previous summary checked in the new one; 2 the summarizer "
        "dropped were put back; 1 the conversation superseded were not"
    )
