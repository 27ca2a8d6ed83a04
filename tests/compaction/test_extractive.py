"""The extractive summarizer: golden summaries, formats, budgets and facts kept across rounds.

Golden files are compared exactly. After an intended change to the output, regenerate them
with SESSIONSTORE_UPDATE_GOLDEN=1, read the diff, and commit it with the change.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore._tokens import HeuristicEstimator, estimator_for_model
from sessionstore.compaction._summarizers._extractive import NO_CONTEXT, ExtractiveSummarizer
from sessionstore.compaction._summarizers._prompts import BUILTIN_STRATEGIES
from sessionstore.compaction._summarizers._summarizer import Summarizer, SummaryRequest
from tests.support.histories import message, user

GOLDEN = Path(__file__).parent / "golden"
STRATEGIES = tuple(BUILTIN_STRATEGIES)
ESTIMATOR = estimator_for_model("gpt-4o")
SUMMARIZER = ExtractiveSummarizer(ESTIMATOR)

Items = list[dict[str, Any]]


def summarize(
    items: Items,
    strategy: str = "task_state",
    *,
    prior: str | None = None,
    max_tokens: int = 2000,
    keep: tuple[str, ...] = (),
) -> str:
    request = SummaryRequest(items, prior, strategy, "", max_tokens, keep_keys=keep)
    return SUMMARIZER.render(request)


def latest_request(text: str) -> str | None:
    match = re.search(r"^## Latest request\n(.*)$", text, re.MULTILINE)
    return match.group(1) if match else None


# ---------------------------------------------------------------- golden summaries


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_golden_summary_of_the_coding_session(strategy: str, login_session: Items) -> None:
    text = summarize(login_session, strategy)
    path = GOLDEN / f"login_session.{strategy}.txt"
    if os.environ.get("SESSIONSTORE_UPDATE_GOLDEN") == "1":
        path.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == path.read_text(encoding="utf-8")


async def test_summarize_reports_its_tokens_and_is_a_summarizer(login_session: Items) -> None:
    assert isinstance(SUMMARIZER, Summarizer)
    assert (SUMMARIZER.name, SUMMARIZER.input_window) == ("extractive", None)
    result = await SUMMARIZER.summarize(SummaryRequest(login_session, None, "brief", "", 2000))
    assert result.text == summarize(login_session, "brief")
    assert result.output_tokens == ESTIMATOR.count_text(result.text)


def test_same_input_gives_the_same_summary(login_session: Items) -> None:
    fresh = ExtractiveSummarizer(estimator_for_model("gpt-4o"))
    for strategy in STRATEGIES:
        request = SummaryRequest(login_session, "## Goals\n- ship", strategy, "", 500)
        assert SUMMARIZER.render(request) == SUMMARIZER.render(request) == fresh.render(request)


# ---------------------------------------------------------------- formats


def test_task_state_sections_come_in_order(login_session: Items) -> None:
    headings = re.findall(r"^## (.+)$", summarize(login_session), re.MULTILINE)
    assert headings == [
        "Goals",
        "Entities",
        "Constraints",
        "Decisions",
        "Changes",
        "Open actions",
        "Preferences",
        "Notes",
        "Latest request",
        "Tool results",
    ]


def test_decision_log_is_a_chronological_ledger(login_session: Items) -> None:
    text = summarize(login_session, "decision_log")
    ledger = re.findall(r"^\[S(\d+)\] (.+?) :: (.+?) :: (.+?) :: (.+)$", text, re.MULTILINE)
    assert [int(step) for step, *_ in ledger] == list(range(1, len(ledger) + 1))
    decisions = [decision for _, decision, *_ in ledger]
    assert decisions.index("Use Redis, we already run it.") < decisions.index(
        "Decided to use a Redis fixed-window counter keyed by the masked IP"
    )
    assert ("because it works across all workers and Redis is already in both environments.") in [
        rationale for _, _, rationale, *_ in ledger
    ]


def test_code_delta_lists_changes_per_file(login_session: Items) -> None:
    text = summarize(login_session, "code_delta")
    changes = text.split("## Code changes\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert all(re.match(r"^- [\w./-]+\.py: \S", line) for line in changes)
    assert "- src/auth/views.py: apply_patch -> Patched src/auth/views.py" in changes


def test_brief_is_tagged_bullets_and_refs(login_session: Items) -> None:
    text = summarize(login_session, "brief")
    brief = text.split("## Brief\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert all(
        re.match(r"^- (Goal|Constraint|Decision|Change|Action|Preference): ", b) for b in brief
    )
    assert "- ids: JIRA-4821, #312" in text.split("## Refs\n", 1)[1]
    assert "## Tool results" not in text


def test_step_and_requirements_ledgers_number_their_entries(login_session: Items) -> None:
    steps = summarize(login_session, "step_ledger")
    assert re.search(r"^\[S1\] Tool: grep ", steps, re.MULTILINE)
    assert "] Change: src/auth/ratelimit.py: " in steps
    requirements = summarize(login_session, "requirements_ledger")
    assert re.search(r"^\[R1\] Goal: The goal is to stop credential-stuffing", requirements, re.M)
    assert re.search(r"^\[R\d\] Constraint: Never log raw passwords", requirements, re.MULTILINE)


def test_unknown_strategies_use_the_task_state_layout(login_session: Items) -> None:
    assert summarize(login_session, "my_custom") == summarize(login_session, "task_state")


def test_chat_completions_sessions_are_read_alike() -> None:
    arguments = '{"path": "app/main.go", "content": "package main"}'
    function = {"name": "write_file", "arguments": arguments}
    call = {"id": "t1", "type": "function", "function": function}
    items: Items = [
        {"role": "system", "content": "You must never push to main directly."},
        user("Make the server listen on port 8443 in production."),
        {"role": "assistant", "content": "Editing.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "t1", "content": "wrote 12 lines"},
        user("Now add a health check."),
    ]
    text = summarize(items)
    assert "- You must never push to main directly." in text.split("## Constraints\n")[1]
    assert "- app/main.go: write_file -> wrote 12 lines" in text.split("## Changes\n")[1]
    assert "- Make the server listen on port 8443 in production." in text
    assert latest_request(text) == "Now add a health check."


# ---------------------------------------------------------------- rounds and the prior summary


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_summary_fed_back_as_prior_is_unchanged(strategy: str, login_session: Items) -> None:
    first = summarize(login_session, strategy)
    assert summarize([], strategy, prior=first) == first
    assert summarize([], strategy, prior=f"<COMPACT-SUMMARY v3> {first}") == first


def test_the_previous_latest_request_becomes_history(login_session: Items) -> None:
    first = summarize(login_session)
    second = summarize([user("Ship it now.")], prior=first)
    assert latest_request(second) == "Ship it now."
    assert "- Next, add the fakeredis fixture to tests/conftest.py" in second
    assert re.search(r"^- files: .*tests/conftest\.py", second, re.MULTILINE)


def test_summaries_found_among_the_items_are_merged(login_session: Items) -> None:
    earlier = summarize(login_session)
    text = summarize([message("assistant", f"<COMPACT-SUMMARY v2>\n{earlier}"), user("Continue.")])
    assert "- Never log raw passwords or full IP addresses because of GDPR" in text
    assert latest_request(text) == "Continue."


def test_a_prior_summary_written_by_a_model_keeps_its_facts() -> None:
    prior = (
        "**Summary so far**\nThe user is migrating the billing DB to PostgreSQL 15.\n"
        "Key facts:\n1. Ticket PAY-2231; branch release/2025.11.\n"
        "2. Card data must remain encrypted (PCI).\nThe user likes concise answers.\n"
        "#312 has to merge first.\n## Changes\n- Renamed the billing job"
    )
    text = summarize([user("Carry on.")], prior=prior)
    for fact in ("PostgreSQL 15", "PAY-2231", "release/2025.11", "encrypted (PCI)", "concise"):
        assert fact in text
    assert "- #312 has to merge first." in text.split("## Open actions\n")[1]
    assert "- Renamed the billing job" in text.split("## Changes\n")[1]
    assert "- Card data must remain encrypted (PCI)." in text.split("## Constraints\n")[1]


PLANTED = [  # (sentence, what must survive)
    (
        "The goal is to migrate the billing service to PostgreSQL 15 with zero downtime.",
        "PostgreSQL 15",
    ),
    ("Ticket PAY-2231 tracks the migration.", "PAY-2231"),
    ("Work happens on branch release/2025.11 only.", "release/2025.11"),
    ("The staging cluster is stg-eu-west-1 and production is prod-eu-west-1.", "prod-eu-west-1"),
    ("All card data must stay encrypted at rest for PCI compliance.", "PCI compliance"),
    ("The migration budget is capped at 40 engineer-hours.", "40 engineer-hours"),
    (
        "We decided to use logical replication because it allows a rolling cutover.",
        "rolling cutover",
    ),
    ("We chose pgbouncer 1.21 for pooling since the old pool leaks connections.", "pgbouncer 1.21"),
    ("TODO: rewrite the nightly report query in reports/nightly.sql.", "reports/nightly.sql"),
    ("We are blocked on DBA approval for the replication slot.", "DBA approval"),
    ("I prefer small PRs under 300 lines.", "300 lines"),
    ("Please always include a rollback plan in every PR description.", "rollback plan"),
    ("The cutover deadline is 2025-12-01 and read-only mode may last 5 minutes.", "2025-12-01"),
    ("The runbook lives at https://runbooks.example.com/billing/pg15.", "runbooks.example.com"),
    ("Success criteria: p99 latency stays under 120 ms after cutover.", "120 ms"),
]
FILLER = ["Let me take a look.", "Sure, checking the logs now.", "Okay, running it again."]


def _round(number: int, planted: list[tuple[str, str]], rng: random.Random) -> Items:
    items: Items = []
    for index, (sentence, _) in enumerate(planted):
        role = rng.choice(["user", "assistant"])
        items.append({"role": role, "content": f"{rng.choice(FILLER)} {sentence}"})
        call_id = f"call_{number}_{index}"
        items.append(
            {"type": "function_call", "call_id": call_id, "name": "run", "arguments": "{}"}
        )
        noise = "\n".join(f"line {n} of a long log" for n in range(40))
        items.append({"type": "function_call_output", "call_id": call_id, "output": noise})
        items.append(message("assistant", rng.choice(FILLER)))
    items.append(user(f"Round {number}: keep going."))
    return items


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", [0, 1])
def test_planted_facts_survive_five_rounds(strategy: str, seed: int) -> None:
    rng = random.Random(seed)
    facts = rng.sample(PLANTED, len(PLANTED))
    summary: str | None = None
    for number in range(5):
        planted = facts[number * 3 : number * 3 + 3]
        summary = summarize(_round(number, planted, rng), strategy, prior=summary, max_tokens=600)
        assert ESTIMATOR.count_text(summary) <= 600
    assert summary is not None
    missing = [key for _, key in PLANTED if key not in summary]
    assert missing == []
    # The rounds' requests are progress, said once with what comes next, not a stale request.
    assert latest_request(summary) is None
    assert "Round 0-4: keep going. (5 times; next: 5)" in summary


def section(text: str, title: str) -> str:
    """The lines under `## title`, up to the next section."""
    return text.split(f"## {title}\n")[1].split("\n\n")[0]


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("Hard constraint: nothing ships after the freeze on 2026-03-01.", "Constraints"),
        ("Non-negotiable: the cutover keeps downtime under 30 seconds.", "Constraints"),
        ("Make sure the CI pipeline finishes within 15 minutes.", "Constraints"),
        ("Keep in mind that customer data stays in the EU.", "Constraints"),
        ("Stick to conventional commit messages, please.", "Preferences"),
        ("What matters for this project is a cache hit rate above 90%.", "Goals"),
        ("Before the release, don't forget to rotate the webhook secret.", "Open actions"),
        ("Open item: I have to ask Priya to review the schema change.", "Open actions"),
    ],
)
def test_common_phrasings_are_filed_where_they_belong(sentence: str, title: str) -> None:
    text = summarize([user(sentence), user("Carry on.")])
    assert f"- {sentence}" in section(text, title)


def test_a_reason_in_the_next_sentence_stays_with_what_it_explains() -> None:
    said = "We'll use SQS FIFO queues instead of Kafka. Reason: ordering per customer matters."
    kafka = summarize([message("assistant", said), user("Go on.")])
    assert f"- {said}" in section(kafka, "Decisions")
    ledger = summarize([message("assistant", said), user("Go on.")], "decision_log")
    expected = "We'll use SQS FIFO queues instead of Kafka. :: Reason: ordering per customer"
    assert f"[S1] {expected} matters. :: - :: -" in ledger
    unfiled = "Redis it is. The reason is that ops already runs it."
    assert f"- {unfiled}" in section(
        summarize([message("assistant", unfiled), user("Go.")]), "Decisions"
    )


def test_a_carried_ledger_entry_is_not_repeated_when_restated() -> None:
    said = message("assistant", "We decided on pgvector because it avoids a second datastore.")
    first = summarize(
        [user("Which store should hold the embeddings?"), said, user("Go.")], "decision_log"
    )
    again = summarize([user("Remind me."), said, user("Next.")], "decision_log", prior=first)
    assert first.count("pgvector") == again.count("pgvector") == 1


def test_questions_are_not_notes_but_what_they_name_is_kept() -> None:
    text = summarize([user("Can you show me why tests/unit/test_flush.py fails?"), user("Go.")])
    assert "show me why" not in text
    assert "- files: tests/unit/test_flush.py" in section(text, "Entities")


def test_facts_that_differ_only_by_a_name_are_both_kept() -> None:
    items = [
        user("We still need to ask Priya to review the schema change once this merges."),
        user("We still need to ask Tomasz to review the schema change once this merges."),
        user("Go."),
    ]
    actions = section(summarize(items), "Open actions")
    assert "Priya" in actions and "Tomasz" in actions


def test_a_markdown_file_under_docs_is_a_file_not_a_branch() -> None:
    text = summarize(
        [user("Update docs/runbooks/billing.md on branch docs/new-layout."), user("Go.")]
    )
    entities = section(text, "Entities")
    assert "- files: docs/runbooks/billing.md" in entities
    assert "- branches: docs/new-layout" in entities


def test_ids_and_branches_outlive_file_names_when_the_budget_is_tight() -> None:
    items = [user("Ticket PAY-123 is on branch feature/rate-limit-7.")]
    items += [message("assistant", f"Looked at src/app/module_{n}.py.") for n in range(30)]
    items.append(user("Go."))
    floor = (
        "## Entities\n- ids: PAY-123\n- branches: feature/rate-limit-7\n\n## Latest request\nGo."
    )
    budget = ESTIMATOR.count_text(floor) + 40  # room for a few file names, not thirty
    text = summarize(items, max_tokens=budget)
    assert ESTIMATOR.count_text(text) <= budget
    assert "PAY-123" in text and "feature/rate-limit-7" in text
    assert "src/app/module_0.py" not in text  # the oldest file name went first


def test_keep_keys_are_pinned_verbatim(login_session: Items) -> None:
    text = summarize(login_session, keep=("Owner: Ana  Souza", "Budget 40h"))
    assert text.startswith("## Pinned facts\n- Owner: Ana Souza\n- Budget 40h\n\n## Goals")


# ---------------------------------------------------------------- budgets


def test_tight_budgets_drop_tool_chatter_and_notes_before_constraints(
    login_session: Items,
) -> None:
    full = summarize(login_session)
    budget = ESTIMATOR.count_text(full) - 150
    text = summarize(login_session, max_tokens=budget)
    assert ESTIMATOR.count_text(text) <= budget
    assert "## Tool results" not in text
    for kept in ("## Constraints", "## Decisions", "## Goals", "## Latest request"):
        assert kept in text


def test_the_latest_request_is_truncated_only_when_it_alone_is_too_long() -> None:
    request = "Please refactor the parser. " * 200
    items = [user("The deadline is Friday."), user(request)]
    text = summarize(items, max_tokens=60)
    assert text.startswith("## Latest request\nPlease refactor the parser.")
    assert text.endswith("…") and ESTIMATOR.count_text(text) <= 60
    assert "deadline" not in text


def test_nothing_to_summarize_says_so() -> None:
    assert summarize([]) == NO_CONTEXT
    assert summarize([{"type": "reasoning", "summary": []}, user("   ")]) == NO_CONTEXT


def support_session(orders: list[int]) -> Items:
    """Issue 14's ordinary support session: look up an order, call the tool, report it."""
    items: Items = []
    for number, order in enumerate(orders):
        items += [
            user(f"Look up order {order}."),
            {
                "type": "function_call",
                "call_id": f"c{number}",
                "name": "lookup_order",
                "arguments": json.dumps({"order_id": order}),
            },
            {
                "type": "function_call_output",
                "call_id": f"c{number}",
                "output": json.dumps({"order_id": order, "status": "shipped"}),
            },
            message("assistant", f"Order {order} has shipped."),
        ]
    return items


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_support_session_names_every_order_and_its_outcome(strategy: str) -> None:
    orders = random.Random(14).sample(range(1000, 9999), 40)
    text = summarize(support_session(orders), strategy)
    assert NO_CONTEXT not in text
    outcomes = [line for line in text.splitlines() if "has shipped" in line]
    assert outcomes, text
    for order in orders:
        assert any(str(order) in line for line in outcomes), order
    assert ESTIMATOR.count_text(text) < 700  # one line per template, not one per turn


def test_templated_lines_collapse_into_one_line_with_their_range() -> None:
    items = [
        message("assistant", f"Continue with step {step}: check item 17.") for step in range(1, 213)
    ]
    text = summarize(items, "brief")
    assert "Continue with step 1-212: check item 17. (212 times; next: 213)" in text
    assert text.count("Continue with step") == 1


@pytest.mark.untraced  # repeats paths the rest of the suite covers (tests/conftest.py)
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "tool"]),
            st.text(st.characters(codec="utf-8"), max_size=60),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(STRATEGIES),
)
def test_no_strategy_writes_no_prior_context_for_a_non_empty_remainder(
    turns: list[tuple[str, str]], strategy: str
) -> None:
    items: Items = []
    for number, (kind, text) in enumerate(turns):
        if kind == "tool":
            items.append(
                {"type": "function_call", "call_id": f"c{number}", "name": "t", "arguments": "{}"}
            )
            items.append({"type": "function_call_output", "call_id": f"c{number}", "output": text})
        else:
            items.append({"role": kind, "content": text})
    summary = summarize(items, strategy)
    if any(kind == "tool" or text.strip() for kind, text in turns):
        assert summary.strip() and summary != NO_CONTEXT, summary
    else:
        assert summary == NO_CONTEXT


def test_odd_items_never_raise() -> None:
    items: list[Any] = [
        None,
        "text",
        {"role": "user", "content": [None, 3, {"type": "input_text", "text": None}]},
        {"type": "function_call", "call_id": "x", "name": "edit", "arguments": "{not json"},
        {"type": "function_call", "call_id": "y", "name": "edit", "arguments": '{"path": 5}'},
        {"type": "function_call_output", "call_id": "y", "output": {"weird": True}},
        {"role": "assistant", "tool_calls": [None, {"id": 3}, {"id": "z", "function": "bad"}]},
        {"role": "tool", "tool_call_id": None, "content": "The orphan must be fixed."},
        {"role": "user", "content": "```\ncode must not count\n```\nSee src/app.py please."},
        {"role": "user", "content": "Continue."},
    ]
    for strategy in STRATEGIES:
        summarize(items, strategy, prior="## Weird\n\n- [S1]\n[R2] :: ::\n## Goals", max_tokens=300)
    text = summarize(items)
    assert "code must not count" not in text
    assert "- See src/app.py please." in text.split("## Notes\n")[1]
    assert "- The orphan must be fixed." in text.split("## Constraints\n")[1]
    assert latest_request(text) == "Continue."


ROLES = st.sampled_from(["user", "assistant", "system", "tool", "developer"])
VOCABULARY = [
    "must", "never", "decided", "because", "TODO", "prefer", "goal", "JIRA-12", "src/a.py",
    "feature/x", "v1.2.3", "staging", "https://x.io/p", "the", "a", "deploy", ".", ",", "!",
    "?", "\n", "```", "café", "🙂", "::", "[S1]", "##", "-", "Goal:", "<COMPACT-SUMMARY v1>",
]  # fmt: skip
WORDS = st.sampled_from(VOCABULARY)
TEXT = st.lists(WORDS, max_size=60).map(" ".join)
ITEM = st.one_of(
    st.builds(lambda r, t: {"role": r, "content": t}, ROLES, TEXT),
    st.builds(
        lambda i, n, a: {"type": "function_call", "call_id": f"c{i}", "name": n, "arguments": a},
        st.integers(0, 3),
        st.sampled_from(["grep", "apply_patch", "write_file"]),
        st.sampled_from(['{"path": "src/b.py"}', "{}", "oops", '{"paths": ["x/y.md", 1]}']),
    ),
    st.builds(
        lambda i, t: {"type": "function_call_output", "call_id": f"c{i}", "output": t},
        st.integers(0, 3),
        TEXT,
    ),
    st.just({"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(ITEM, max_size=25),
    prior=st.one_of(st.none(), TEXT),
    strategy=st.sampled_from(STRATEGIES),
    max_tokens=st.integers(1, 700),
)
def test_summaries_always_fit_max_tokens(
    items: Items, prior: str | None, strategy: str, max_tokens: int
) -> None:
    text = summarize(items, strategy, prior=prior, max_tokens=max_tokens)
    assert ESTIMATOR.count_text(text) <= max_tokens
    assert text == summarize(items, strategy, prior=prior, max_tokens=max_tokens)
    users = [i["content"] for i in items if i.get("role") == "user" and i["content"].strip()]
    if users:
        request = " ".join(users[-1].split())
        alone = f"## Latest request\n{request}"
        if ESTIMATOR.count_text(alone) <= max_tokens and not request.startswith("<COMPACT"):
            assert text.endswith(alone) or f"{alone}\n\n" in text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(ITEM, max_size=25), strategy=st.sampled_from(STRATEGIES))
def test_a_summary_is_a_fixed_point_of_summarizing(items: Items, strategy: str) -> None:
    first = summarize(items, strategy, max_tokens=100_000)
    assert summarize([], strategy, prior=first, max_tokens=100_000) == first


def test_a_heuristic_estimator_is_respected_too(login_session: Items) -> None:
    estimator = HeuristicEstimator(3.0)
    text = ExtractiveSummarizer(estimator).render(
        SummaryRequest(login_session, None, "task_state", "", 120)
    )
    assert estimator.count_text(text) <= 120
    assert "## Latest request" in text


def test_routine_progress_is_evicted_before_the_facts_it_outnumbers() -> None:
    """Issue 14: hundreds of routine turns, collapsed round after round into one line full of
    numbers, must not push out a goal or a code stated once."""
    facts = [
        user("Customer wants to refund order 7697 before Friday."),
        user("The ledger entry is XX69334."),
    ]

    def routine(start: int) -> Items:
        return [
            item
            for order in range(start, start + 200)
            for item in (
                user(f"Look up order {order}."),
                message("assistant", f"Order {order} has shipped."),
            )
        ]

    prior = summarize([*facts, *routine(1000)], "brief")
    assert "(200 times)" in prior and "XX69334" in prior
    full = summarize(routine(3000), "brief", prior=prior)
    budget = ESTIMATOR.count_text(full) // 2
    text = summarize(routine(3000), "brief", prior=prior, max_tokens=budget)
    assert "7697" in text and "XX69334" in text, text
    assert ESTIMATOR.count_text(text) <= budget


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_superseded_fact_gives_way_to_the_statement_that_superseded_it(strategy: str) -> None:
    first = summarize(
        [
            user("Policy reminder: refunds above 500 EUR need manager approval."),
            user("The dataset file is corpus-v3.parquet."),
            user("Look up order 7013."),
        ],
        strategy,
    )
    assert "500 EUR" in first
    retraction = "Refunds above 500 EUR no longer need manager approval; the limit is 800 EUR."
    second = summarize([user(retraction), user("Look up order 7014.")], strategy, prior=first)
    assert "800 EUR" in second
    assert "need manager approval." not in second.replace(retraction, "")  # the old rule is gone
    assert "corpus-v3.parquet" in second  # facts nobody retracted stay


def test_a_progress_line_outlives_the_routine_lines_when_the_summary_is_full() -> None:
    items = [user("I need the quarterly ledger reconciled by March 3.")]
    for step in range(1, 201):
        items.append(user(f"Continue with step {step}: check item 17."))
        items.append(message("assistant", f"Shelf {step % 7} holds crate {step * 13}."))
    text = summarize(items, "task_state", max_tokens=160)
    assert ESTIMATOR.count_text(text) <= 160
    assert "(200 times; next: 201)" in text  # the state of the work stays
    assert "March 3" in text
