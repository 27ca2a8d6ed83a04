"""One current value per subject: claims, what replaces what, and rolling summaries."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore.compaction._summarizers._extractive import ExtractiveSummarizer
from sessionstore.compaction._summarizers._factsheet import carry_forward
from sessionstore.compaction._summarizers._prompts import transcript_entries
from sessionstore.compaction._summarizers._subjects import (
    Statement,
    claim_of,
    keyed_claim,
    retired_by,
    settle,
    was_note,
    with_transition,
    without_replaced,
)
from sessionstore.compaction._summarizers._summarizer import SummaryRequest
from tests.support.histories import Item, assistant, user

SUMMARIZER = ExtractiveSummarizer()


def replaced(old: str, new: str) -> frozenset[str]:
    before, after = claim_of(old), claim_of(new)
    assert before is not None and after is not None, (before, after)
    return retired_by(after, before)


@pytest.mark.parametrize(
    ("old", "new", "gone"),
    [
        ("The on-call for payments is Priya.", "Now Marco has the payments on-call.", "priya"),
        ("Budget: 4,000 USD.", "The budget is now 6,500 USD.", "4,000 usd"),
        ("We pin redis to 6.2 for now.", "Upgraded redis from 6.2 to 7.2 last night.", "6.2"),
        ("btw we are on postgres 14 in prod", "Prod runs Postgres 16 now.", "14"),
        (
            "Der Launch ist am 3. September.",
            "Der Launch wurde auf den 14. Oktober verschoben.",
            "3. september",
        ),
        ("El presupuesto es de 4.000 EUR.", "Subimos el presupuesto a 6.500 EUR.", "4.000 eur"),
        ("The release branch is release/2.3.", "We cut release/2.4 today.", "release/2.3"),
    ],
)
def test_a_later_claim_about_the_same_subject_retires_the_old_value(
    old: str, new: str, gone: str
) -> None:
    assert gone in replaced(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The staging box is ams-web-04.", "The prod box is ams-web-09."),  # another environment
        ("Budget: 4,000 USD for the campaign.", "The campaign launch is 14 October."),  # types
        ("p99 checkout latency under 340 ms", "error rate under 25 ms"),  # other head words
        ("Look up order 7697.", "Look up order 3199."),  # a number that names which order
        ("Ana owns billing.", "Marco owns search."),  # the verb after a name is no subject
        ("Ana leads the mobile team.", "Marco leads the web team."),
        ("Ana owns the billing runbook for the migration.",
         "Marco owns the search runbook for the migration."),
        ("Config review with Ana on May 3.", "Confirmation call with Marco on May 10."),
    ],
)  # fmt: skip
def test_claims_about_other_subjects_replace_nothing(old: str, new: str) -> None:
    before, after = claim_of(old), claim_of(new)
    assert before is None or after is None or not retired_by(after, before)


@pytest.mark.parametrize(
    ("old", "new", "gone"),
    [
        # the old value named again in a clause of its own, beside the new one
        ("product search runs on OpenSearch",
         "OpenSearch kept falling over, so product search is on Typesense now", "opensearch"),
        ("we agreed to ship the billing rewrite on 16 October",
         "billing rewrite ships 14 October; 16 October was too tight", "16 october"),
        ("Events go through Amazon SQS.",
         "We're replacing Amazon SQS: events go through Apache Pulsar from now on.", "amazon sqs"),
        # a name after the opening words, a verb in -s after it
        ("Jonas signs off on prod deploys.", "From now on Chidi signs off on prod deploys.",
         "jonas"),
        ("Our DBA contact for the migration is Zofia.",
         "DBA contact for the migration changed: ask Emeka.", "zofia"),  # a label's words
        ("alerts for this go to #payments-alerts", "route those alerts to #data-quality instead",
         "#payments-alerts"),  # a channel
        ("Backups are stored in eu-central-1.", "Backups now go to us-east-2.", "eu-central-1"),
        ("Max 4487 concurrent exports per tenant.",
         "per-tenant concurrent exports limit went up to 9851", "4487"),  # a bound, no id
        ("We deprecate the v1 API on 22 October.",
         "v1 API deprecation pushed to 8 August, partners need more time", "22 october"),
        ("Monthly cloud budget is 2,800 USD.", "Cloud budget got cut to 7,000 USD a month.",
         "2,800 usd"),
    ],
)  # fmt: skip
def test_subjects_are_found_by_structure_in_new_phrasings(old: str, new: str, gone: str) -> None:
    assert gone in replaced(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Ana is on call this week.", "Ana is on call this week, Ben next week."),  # both stand
        ("Deploy only to qa-eu-west-1 for now.", "Deploy only to stg-eu-central-1 for now."),
        ("Noor is out until March.", "Elif does design review sign-off in March."),
    ],
)
def test_a_value_named_in_the_subjects_own_clause_stays(old: str, new: str) -> None:
    before, after = claim_of(old), claim_of(new)
    assert before is None or after is None or not retired_by(after, before)


def test_a_replacing_line_drops_the_clause_that_names_the_old_value() -> None:
    line = "OpenSearch kept falling over, so product search is on Typesense now"
    assert without_replaced(line, ["OpenSearch"]) == "Product search is on Typesense now"
    kept = "Switching the queue to Kafka instead of NATS; it could not keep up."
    assert without_replaced(kept, ["NATS"]) == kept  # "instead of" already says it
    settled = settle([Statement("product search runs on OpenSearch"), Statement(line)])
    assert settled.replaced == {0} and "opensearch" in settled.retired


def test_a_defined_value_replaces_a_listed_one_and_a_bound_does_not() -> None:
    assert settle(
        [Statement("Budget: 2,000 USD", listed=True), Statement("budget is 8,600 USD")]
    ).replaced == {0}
    goals = [
        Statement("The goal is a cache hit rate above 87%.", listed=True),
        Statement("We're done when we see a cache hit rate above 93%."),
    ]
    assert not settle(goals).replaced  # two bounds: both stand
    described = [
        Statement("To confirm the target we agreed on: 5x fewer pages to on-call.", listed=True),
        Statement("To confirm the target we agreed on: 5000 concurrent clients per node."),
    ]
    assert not settle(described).replaced  # the value does not end its clause


def test_an_imperative_of_change_is_a_change_and_a_noun_is_not() -> None:
    assert settle(
        [Statement("the worker pool is capped at 9120 threads", listed=True),
         Statement("Raise the worker pool cap: 6914 threads.")]
    ).replaced == {0}  # fmt: skip
    tomasz = "This stays blocked until we ask Tomasz to review the schema change."
    aiko = "This stays blocked until we ask Aiko to review the schema change."
    assert not settle([Statement(tomasz, listed=True), Statement(aiko)]).replaced


@pytest.mark.parametrize(
    ("old", "new", "gone"),
    [
        ("pg_settings row max_connections: setting 6501", "DBA raised max_connections to 7747.",
         "6501"),
        ("service_catalog row billing-export: owner Hana, tier 2, channel #team-billing",
         "billing-export changed hands, Bruno owns it now", "hana"),  # tier and channel stay
    ],
)  # fmt: skip
def test_a_value_read_from_a_tool_is_replaced_by_what_is_said_later(
    old: str, new: str, gone: str
) -> None:
    assert keyed_claim(old) is not None
    settled = settle([Statement(old, subject=old.rsplit(" ", 1)[0]), Statement(new)])
    assert settled.replaced == {0} and settled.retired == {gone}


def test_of_several_values_only_the_one_about_the_subject_is_retired() -> None:
    assert replaced(
        "Ana is primary on call, Ben is secondary on call.", "Now Carl is primary on call."
    ) == {"ana"}


@pytest.mark.parametrize(
    "statements",
    [
        [Statement("Ana is reviewing PR 112."), Statement("Ben is reviewing PR 118.")],
        [Statement("Request timeout: 30 s.", listed=True), Statement("Connect timeout: 5 s.")],
        [Statement("Ask Tomasz to review the schema change by 14 October.", listed=True),
         Statement("Ask Aiko to review the API change by 14 October.")],
        [Statement("Move the billing cron to worker-3.", listed=True),
         Statement("Move the search cron to worker-5.")],
        [Statement("config/app.yaml: database.host = pg-main-01", subject="database.host"),
         Statement("Grafana's host is mon-02.")],
        [Statement("deploy/worker.yaml: spec.replicas = 3", subject="spec.replicas"),
         Statement("The api deployment runs 6 replicas now.")],
    ],
)  # fmt: skip
def test_siblings_that_share_a_word_or_a_value_both_stand(statements: list[Statement]) -> None:
    assert not settle(statements).replaced


def test_a_value_a_clause_says_still_holds_is_not_replaced_nor_cut() -> None:
    line = "The cache TTL is 60 s now, but 300 s stays for the CDN."
    settled = settle([Statement("The cache TTL is 300 s."), Statement(line)])
    assert "300 s" not in settled.retired
    cut = "The cache TTL is 60 s now, but 300 s was too long for the CDN."
    assert without_replaced(cut, ["300 s"]) == "The cache TTL is 60 s now"  # no dangling "but"


def test_a_change_made_replaces_what_it_updated_and_stays_history() -> None:
    pinned = Statement("node is pinned at 9.7.5 in the Dockerfile")
    bumped = Statement("Dockerfile: bumped node to 14.5.10 in the Dockerfile", history=True)
    again = Statement("Dockerfile: bumped node to 16.2.0 in the Dockerfile", history=True)
    settled = settle([pinned, bumped, again])
    assert settled.replaced == {0}  # the first change made is not undone by the second


def test_a_value_given_up_retires_any_line_that_names_it() -> None:
    plan = "Plan: migrate the orders DB with pgloader."
    settled = settle([Statement(plan), Statement("We migrate with pg_dump rather than pgloader.")])
    assert settled.replaced == {0} and settled.was[1] == ("pgloader",)


def test_a_name_that_opens_a_sentence_is_a_value_only_before_a_verb_in_s() -> None:
    """A known limit: "Marco took over ..." reads like "Check the ...", so the opening
    word is a name only when a verb of the third person in -s follows it ("Idris owns");
    other sentences replace nothing (docs/QUALITY.md)."""
    assert claim_of("Marco took over the payments on-call.") is None
    assert claim_of("Check the payments on-call rota.") is None
    assert claim_of("Decided the payments on-call rota.") is None
    owns = claim_of("Idris owns the incident review doc.")
    assert owns is not None and owns.values == {"person": frozenset({"idris"})}


@pytest.mark.parametrize(
    ("old", "new", "gone"),
    [
        # Word forms: "approves" and "approvals", "deploys" and "deploy".
        ("Ingrid approves prod deploys.", "Prod deploy approvals: Noor handles them.", "ingrid"),
        # CamelCase product names are values.
        ("Let's use Redpanda for the event bus.", "Event bus: going with RabbitMQ.", "redpanda"),
        # Verbs of change around the value are not what the claim is about.
        ("Cap spending on the load test at 9,300 USD.", "The load test cap went up to 5,900 USD.",
         "9,300 usd"),
        ("Searching goes through Vespa for now.", "We dropped Vespa; search runs on Typesense.",
         "vespa"),
        ("The queue workers run on ams-web-12.", "Moved the queue workers off ams-web-12 onto "
         "fra-etl-33.", "ams-web-12"),
        ("For alerts we use Kafka.", "For alerts we picked NATS over Kafka.", "kafka"),
    ],
)  # fmt: skip
def test_subjects_match_across_word_forms_and_verbs_of_change(
    old: str, new: str, gone: str
) -> None:
    assert gone in replaced(old, new)


def test_contractions_and_figures_after_over_name_no_subject() -> None:
    """ "We'll use a Postgres advisory lock" and "We'll use DuckDB instead of pandas" share
    only "we'll"; "over 500" is a figure, not a choice given up."""
    lock = claim_of("We'll use a Postgres advisory lock.")
    duck = claim_of("We'll use DuckDB instead of pandas.")
    assert lock is not None and duck is not None and not retired_by(duck, lock)
    over = claim_of("Alert when the queue holds over 500 jobs.")
    assert over is not None and not over.former


def test_a_short_user_statement_of_a_value_is_kept_when_it_stops_being_the_request() -> None:
    first = SUMMARIZER.render(
        SummaryRequest([user("Support rotation: Sven.")], None, "task_state", "", 400)
    )
    assert "Latest request" in first and "Sven" in first
    second = SUMMARIZER.render(SummaryRequest([user("ok, go on")], first, "task_state", "", 400))
    assert "Support rotation: Sven." in second.split("## Latest request")[0]


def test_a_value_read_again_ranks_as_the_used_value_it_replaced() -> None:
    """The first read answered "Who ...?" (used); the second was only acknowledged (weak),
    yet it is the current value of a subject that mattered."""
    read = SUMMARIZER.render(
        SummaryRequest(_owner_read("Who owns billing?", "Farah", 1), None,
                       "task_state", "", 400)
    )  # fmt: skip
    again = _owner_read("The owners file changed, look again.", "Kenji", 2)
    facts, _ = SUMMARIZER._collect(
        SummaryRequest(again, read, "task_state", "", 400), transcript_entries(again)
    )
    current = [fact for fact in facts if "Kenji" in fact.text]
    assert current and not any(fact.weak for fact in current), facts
    assert all("Farah" not in fact.text or "(was Farah)" in fact.text for fact in facts)


def _owner_read(question: str, owner: str, number: int) -> list[Item]:
    output = f"owners:\n  billing: {owner}\n  docs: Lena\n  search: Bruno"
    return [
        user(question),
        {"type": "function_call", "call_id": f"c{number}", "name": "read_file",
         "arguments": '{"path": "teams/owners.yaml"}'},
        {"type": "function_call_output", "call_id": f"c{number}", "output": output},
        assistant("Okay."),
    ]  # fmt: skip


def test_siblings_in_a_list_stand_unless_a_change_is_said() -> None:
    tomasz = "This stays blocked until we ask Tomasz to review the schema change."
    aiko = "This stays blocked until we ask Aiko to review the schema change."
    assert not settle([Statement(tomasz, listed=True), Statement(aiko)]).replaced
    now = "Now we ask Aiko to review the schema change instead."
    assert settle([Statement(tomasz, listed=True), Statement(now)]).replaced == {0}


def test_a_key_read_again_replaces_only_its_own_value() -> None:
    line = "deploy/prod.yaml: database.read_replica = {}"
    other = "deploy/prod.yaml: database.primary = db-9.internal"
    key = "deploy/prod.yaml: database.read_replica"
    settled = settle(
        [
            Statement(line.format("db-2.internal"), key),
            Statement(other, "deploy/prod.yaml: database.primary"),
            Statement(line.format("db-7.internal"), key),
        ]
    )
    assert settled.replaced == {0}
    assert settled.was[2] == ("db-2.internal",)


def test_progress_is_no_new_value_and_a_prior_round_settles_nothing() -> None:
    steps = [Statement("Continue with step 211."), Statement("Continue with step 212.")]
    assert not settle(steps).replaced
    prior = [Statement("Heads-up: Noor is on call."), Statement("On-call is now Gideon.")]
    assert not settle(prior, fresh_from=2).replaced
    assert settle(prior).replaced == {0}


def test_old_values_are_only_ever_shown_as_old() -> None:
    assert with_transition("Upgraded redis from 6.2 to 7.2") == "Upgraded redis 7.2 (was 6.2)"
    assert was_note("Marco has the pager (was Ana)", ["Priya"]) == "Marco has the pager (was Priya)"


# ---------------------------------------------------------------- rolling summaries

# Subjects with their own words and a phrasing for a first statement and for an update.
SUBJECTS = (
    ("The payments on-call is {}.", "Now {} has the payments on-call."),
    ("The checkout budget is {} USD.", "The checkout budget changed to {} USD."),
    ("We pin redis to {}.", "Redis is now on {}."),
    ("The launch is on {}.", "The launch moved to {}."),
    ("The staging box is {}.", "Staging moved to box {}."),
)
VALUES = (
    ("Priya", "Marco", "Ana", "Lucia", "Bjorn", "Noor", "Gideon", "Farah"),
    ("4,100", "5,200", "6,300", "7,400", "8,500", "9,600", "1,700", "2,800"),
    ("6.2", "7.0", "7.2", "7.4", "8.0", "8.1", "9.2", "9.4"),
    (
        "3 September",
        "14 October",
        "2 November",
        "9 December",
        "12 January",
        "5 March",
        "7 April",
        "21 May",
    ),
    (
        "ams-web-04",
        "ams-web-17",
        "osl-web-22",
        "gru-web-36",
        "syd-web-41",
        "yyz-web-58",
        "lhr-web-63",
        "fra-web-77",
    ),
)


def rounds(updates: list[int], cuts: list[int]) -> tuple[list[list[Item]], list[str]]:
    """Turns that state each update (first statement, then an update phrasing), split into
    rounds at `cuts`, and the latest value of every subject stated."""
    said: dict[int, int] = {}
    turns: list[list[Item]] = []
    for subject in updates:
        count = said.get(subject, 0)
        said[subject] = count + 1
        phrasing = SUBJECTS[subject][0 if count == 0 else 1]
        value = VALUES[subject][count]
        turns.append([user(phrasing.format(value)), assistant("Noted.")])
    bounds = sorted({0, *[cut % (len(turns) + 1) for cut in cuts], len(turns)})
    chunks = [
        [item for turn in turns[a:b] for item in turn] + [user("ok, carry on")]
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    latest = [VALUES[subject][count - 1] for subject, count in said.items()]
    return chunks, latest


def summarize(chunks: list[list[Item]], strategy: str) -> str:
    prior: str | None = None
    for items in chunks:
        request = SummaryRequest(items, prior, strategy, "", 2048)
        text = SUMMARIZER.render(request)
        prior = carry_forward(prior, text, SUMMARIZER._estimator.count_text, 2048, items).text
    assert prior is not None
    return prior


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    updates=st.lists(st.integers(0, len(SUBJECTS) - 1), min_size=1, max_size=24).filter(
        lambda updates: all(updates.count(s) <= len(VALUES[s]) for s in set(updates))
    ),
    cuts=st.lists(st.integers(0, 30), max_size=4),
    strategy=st.sampled_from(["task_state", "brief", "decision_log", "requirements_ledger"]),
)
def test_however_updates_interleave_the_summary_holds_exactly_the_latest_values(
    updates: list[int], cuts: list[int], strategy: str
) -> None:
    chunks, latest = rounds(updates, cuts)
    text = summarize(chunks, strategy)
    current = re.sub(r"\(was [^()]*\)", "", text)
    for value in latest:
        assert value in current, (value, text)
    stated = {VALUES[s][n] for s in set(updates) for n in range(updates.count(s))}
    for old in stated - set(latest):
        assert not re.search(rf"(?<![\w.,-]){re.escape(old)}(?![\w.,-]*\d)", current), (old, text)
