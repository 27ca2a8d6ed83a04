"""Compaction quality: how many planted key facts survive 1..N compaction rounds (seed KR4).

    python bench/eval_retention.py                    # offline, extractive summarizer
    python bench/eval_retention.py --check            # exit 1 below the 90% target
    python bench/eval_retention.py --json             # machine-readable
    python bench/eval_retention.py --base-url http://127.0.0.1:8000/v1 --model NAME

Sessions come from a seeded RNG: realistic filler (user/assistant turns, tool calls and their
outputs, as Responses items) with planted facts of every kind a summary must
keep. Each round appends new content, then an agent-like tool loop fills the context until
the real CompactionManager's trigger fires (a SessionStore on a temporary SQLite file); after the
compaction, probes check the ACTIVE context: the summary marker plus the kept items, exactly
what `load_context` returns and the model would see. A fact is retained when every string its
probe requires is in that text. The policy keeps few items verbatim on purpose, so the numbers
measure the summary; the share of retained facts that only the summary held is reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from sessionstore import SessionStore, text_of
from sessionstore.compaction import (
    BUILTIN_STRATEGIES,
    SUMMARY_START,
    CompactionConfig,
    CompactionManager,
    CompactionPolicy,
    ExtractiveSummarizer,
    OpenAISummarizer,
    Summarizer,
)

Item = dict[str, Any]
FactKind = Literal[
    "goal", "constraint", "preference", "artifact", "decision", "open_action", "latest_request"
]  # fmt: skip
ProbeKind = Literal["recall", "artifact", "continuation", "decision"]

PROBE_OF: Final[dict[FactKind, ProbeKind]] = {
    "goal": "recall",
    "constraint": "recall",
    "preference": "recall",
    "artifact": "artifact",
    "decision": "decision",
    "open_action": "continuation",
    "latest_request": "continuation",
}
FACT_KINDS: Final = tuple(PROBE_OF)
PROBE_KINDS: Final[tuple[ProbeKind, ...]] = ("recall", "artifact", "continuation", "decision")

TARGET: Final = 0.90  # seed KR4: summaries retain more than 90% of the key facts
MODEL: Final = "gpt-4o"  # whose tokenizer the store counts with
WINDOW: Final = 16_000  # small, so a run is quick; every round still compacts
# Stingy on purpose: little survives verbatim, so the summary has to carry the facts.
POLICY: Final = CompactionPolicy(
    keep_recent_turns=2, keep_tool_io_pairs=2, recent_user_token_budget=0
)
PER_ROUND: Final[dict[FactKind, tuple[int, int]]] = {  # planted in round 1, in each later round
    "goal": (2, 1),
    "constraint": (2, 1),
    "preference": (2, 1),
    "artifact": (4, 2),
    "decision": (2, 1),
    "open_action": (2, 1),
}
SUMMARY_MARK: Final = SUMMARY_START
SLOT: Final = re.compile(r"\{(\w+)\}")


def squash(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- facts and probes


@dataclass(frozen=True, slots=True)
class Fact:
    """A planted fact and the strings its probe requires in the active context."""

    kind: FactKind
    required: tuple[str, ...]
    round: int  # the round whose content stated it (1-based)

    @property
    def probe(self) -> ProbeKind:
        return PROBE_OF[self.kind]

    def found_in(self, text: str) -> bool:
        """Artifacts must match exactly, other probes ignoring case; text is squashed."""
        if self.probe == "artifact":
            return all(value in text for value in self.required)
        lowered = text.lower()
        return all(value.lower() in lowered for value in self.required)


@dataclass(frozen=True, slots=True)
class Planted:
    fact: Fact
    items: list[Item]  # the turn that states the fact


@dataclass(frozen=True, slots=True)
class Observation:
    """One probe after one round."""

    kind: FactKind
    round: int
    retained: bool
    summary_only: bool  # retained, and no kept verbatim item holds it


# ---------------------------------------------------------------- catalogues
# Planted values never occur in filler (filler files live under src/common and tests/unit,
# planted ones under the session's service); every round re-checks this for its content.
# {slots} are filled per fact from SLOTS; "{service}" is the session's service.

REGIONS: Final = ("eu-west-1", "eu-central-1", "us-east-2", "us-west-2", "ap-southeast-1")
SLUGS: Final = (
    "retry-backoff", "ledger-v2", "idempotent-refunds", "fx-cache", "quota-metering",
    "outbox-relay", "sku-cleanup", "dunning-rework", "webhook-signing", "report-export",
)  # fmt: skip
MODULES: Final = (
    "ledger_sync", "webhook_router", "rate_guard", "refund_worker", "invoice_renderer",
    "outbox_relay", "index_builder", "token_cache", "fx_rates", "dunning_scheduler",
    "export_job", "fraud_rules", "settlement_report", "quota_meter", "sku_mapper",
)  # fmt: skip
SLOTS: Final[dict[str, Callable[[random.Random], str]]] = {
    "ms": lambda r: str(r.randrange(120, 900, 10)),
    "small": lambda r: str(r.randint(2, 9)),
    "minutes": lambda r: str(r.randint(8, 55)),
    "seconds": lambda r: str(r.randint(10, 90)),
    "pct": lambda r: str(r.randint(81, 98)),
    "rate": lambda r: str(r.randint(5, 60)),
    "clients": lambda r: str(r.randrange(2000, 9000, 250)),
    "money": lambda r: f"{r.randint(2, 9)},{r.randint(100, 999)}",
    "date": lambda r: f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    "version": lambda r: f"2.{r.randint(2, 5)}.{r.randint(0, 9)}",
    "region": lambda r: r.choice(REGIONS),
    "slug": lambda r: r.choice(SLUGS),
    "module": lambda r: r.choice(MODULES),
    "area": lambda r: r.choice(("api", "jobs", "core", "adapters")),
    "number": lambda r: str(r.randint(10, 9999)),
    "ticket": lambda r: r.choice(("PAY", "OPS", "CORE", "SRCH", "AUTH", "DATA", "INFRA")),
    "sha": lambda r: "".join(r.choice("0123456789abcdef") for _ in range(7)) + r.choice("abc"),
    "stage": lambda r: r.choice(("stg", "prod", "qa")),
    "records": lambda r: r.choice(("invoices", "refunds", "payouts", "shipments")),
    "secrets": lambda r: r.choice(("card numbers", "session tokens", "tax ids")),
    "licence": lambda r: r.choice(("MIT", "BSD", "Apache-2.0")),
    "table": lambda r: r.choice(("ledger_entries", "refund_events", "invoice_lines")),
    "secret": lambda r: r.choice(("STRIPE_WEBHOOK", "GITHUB_APP", "SMTP_RELAY")),
    "metric": lambda r: r.choice(("queue_depth_max", "http_5xx_ratio", "lag_seconds")),
    "flag": lambda r: r.choice(("legacy_checkout", "old_search_ui", "v1_exports")),
    "person": lambda r: r.choice(("Priya", "Tomasz", "Aiko", "Jonas")),
    "team": lambda r: r.choice(("mobile", "data", "partner")),
    "suite": lambda r: r.choice(("unit", "integration", "contract")),
}

Templates = tuple[tuple[str, str], ...]  # (who says it, the sentence with {v} for the value)


@dataclass(frozen=True, slots=True)
class Catalogue:
    values: tuple[str, ...]
    templates: Templates


CATALOGUES: Final[dict[FactKind, Catalogue]] = {
    "goal": Catalogue(
        (
            "p99 checkout latency under {ms} ms",
            "an error rate below 0.{small}{small}%",
            "the nightly import finishing in under {minutes} minutes",
            "a cache hit rate above {pct}%",
            "zero duplicate {records}",
            "{clients} concurrent websocket clients per node",
            "cold starts below {small}.{small} seconds",
            "{small}x fewer pages to on-call per week",
        ),
        (
            ("user", "The goal is {v}."),
            ("user", "Success criteria: {v}, measured over a full week."),
            ("user", "We're done when we see {v}."),
            ("user", "What matters for this project is {v}."),
            ("user", "Acceptance criterion for the release: {v}."),
            ("assistant", "To confirm the target we agreed on: {v}."),
        ),
    ),
    "constraint": Catalogue(
        (
            "the monthly cloud spend stays under ${money}",
            "customer data never leaves {region}",
            "we send at most {rate} requests per second to the card processor",
            "nothing ships after the freeze on {date}",
            "{secrets} are never logged",
            "the cutover keeps downtime under {seconds} seconds",
            "new dependencies must be {licence} licensed",
            "the CI pipeline finishes within {minutes} minutes",
        ),
        (
            ("user", "Hard constraint: {v}."),
            ("user", "Keep in mind that {v}."),
            ("user", "Compliance requires that {v}."),
            ("user", "Non-negotiable: {v}."),
            ("user", "Make sure {v}."),
        ),
    ),
    "preference": Catalogue(
        (
            "conventional commit messages",
            "squash merges over merge commits",
            "British spelling in user-facing docs",
            "pytest parametrize instead of copy-pasted tests",
            "f-strings over str.format",
            "structlog for any new logging code",
            "dataclasses rather than plain dicts for records",
            "explicit return types on public functions",
            "short bullet-point status updates",
            "one logical change per commit",
            "table-driven tests for the parsers",
            "early returns instead of nested ifs",
        ),
        (
            ("user", "I prefer {v}."),
            ("user", "Please always use {v}."),
            ("user", "For the record, I like {v}."),
            ("user", "I'd rather see {v}."),
            ("user", "Stick to {v}, please."),
        ),
    ),
    "open_action": Catalogue(
        (
            "backfill the {table} table",
            "rotate the {secret} secret",
            "update the runbook at docs/runbooks/{slug}.md",
            "add an alert on {metric}",
            "remove the {flag} flag",
            "ask {person} to review the schema change",
            "bump urllib3 to {version}",
            "write a migration note for the {team} team",
        ),
        (
            ("user", "TODO: {v}."),
            ("user", "We still need to {v}."),
            ("assistant", "Open item: I have to {v} once this merges."),
            ("user", "Before the release, don't forget to {v}."),
            ("assistant", "This stays blocked until we {v}."),
        ),
    ),
    # "edit" and "commit" turns touch the artifact with a tool, then the assistant reports.
    "artifact": Catalogue(
        ("{ticket}-{number}", "feature/{slug}-{number}", "fix/{slug}-{number}"),
        (
            ("user", "This is tracked in {v}."),
            ("user", "Link everything to {v}, please."),
            ("user", "Work on branch {v}."),
            ("assistant", "I pushed the work so far to {v}."),
        ),
    ),
}
# Artifacts whose value decides how they are stated: (value, templates).
MORE_ARTIFACTS: Final[tuple[Catalogue, ...]] = (
    Catalogue(
        ("src/{service}/{area}/{module}.py",),
        (
            ("edit", "Done: the handler now falls back instead of returning None."),
            ("assistant", "The bug is in {v}."),
            ("assistant", "The retry logic lives in {v}."),
        ),
    ),
    Catalogue(("{sha}{small}",), (("commit", "Committed as {v}."),)),
    Catalogue(
        ("{stage}-{region}",),
        (("user", "Deploy only to {v} for now."), ("user", "QA runs against the {v} cluster.")),
    ),
    Catalogue(
        ("https://grafana.example.io/d/{slug}-{number}",),
        (("user", "The dashboard to watch is {v}."),),
    ),
)
DECISIONS: Final = (  # (choice, the alternative it beat)
    ("SQS FIFO queues", "Kafka"),
    ("a Postgres advisory lock", "a Redis lock"),
    ("pgvector", "a separate vector database"),
    ("server-sent events", "websockets"),
    ("a nightly batch job", "a streaming pipeline"),
    ("optimistic locking", "row-level locks"),
    ("Celery beat", "cron on the host"),
    ("gRPC", "REST"),
    ("ULIDs", "UUIDv4"),
    ("Argo Rollouts", "plain Deployments"),
    ("DuckDB", "pandas"),
    ("httpx", "requests"),
    ("zstd compression", "gzip"),
)
REASONS: Final = (
    "the team already operates it in production",
    "it keeps retries idempotent",
    "the vendor throttles bursts above 40 requests per second",
    "it avoids running a second datastore",
    "ordering per customer matters more than throughput",
    "it halved the p95 in the load test",
    "the alternative is AGPL licensed",
    "on-call asked for fewer moving parts",
    "it works behind the corporate proxy",
    "the schema changes every sprint",
    "it lets us roll back in one command",
    "the old client leaks sockets under load",
    "sorting by creation time is needed for pagination",
    "it is already in the base image",
)
DECISION_TEMPLATES: Final = (  # {c} choice ({C} capitalized), {a} alternative, {r} reason
    ("user", "Let's go with {c} because {r}."),
    ("assistant", "I decided on {c} over {a} since {r}."),
    ("user", "Decision: {c}, not {a}, because {r}."),
    ("assistant", "We'll use {c} instead of {a}. Reason: {r}."),
    ("user", "{C} it is; {a} is out because {r}."),
)
REQUESTS: Final = (  # (the request, the phrase its probe requires besides the file)
    ("Next, add retry with jitter to the client in {v} and run the {suite} tests.", "retry with"),
    ("Now please split the handler in {v} into parse and apply steps.", "parse and apply"),
    ("Can you add pagination to the list endpoint next? It lives in {v}.", "add pagination"),
    ("Please make the export in {v} stream rows instead of buffering them.", "stream rows"),
    ("Next up: cache the exchange rates in {v} for ten minutes.", "cache the exchange rates"),
    ("Now port the validation in {v} to the new schema types.", "port the validation"),
    ("Please add structured error codes to {v} and document them.", "structured error codes"),
)

# Catalogues of fixed size bound the rounds a session can plant new, distinct facts for.
MAX_ROUNDS: Final = 1 + min(
    len(CATALOGUES["preference"].values) - PER_ROUND["preference"][0],
    len(DECISIONS) - PER_ROUND["decision"][0],
)

# ---------------------------------------------------------------- filler
# Templates, so filler varies like real chatter ({path}, {func}, {test}, {n}). About a third
# of the narration uses the words a real agent's does ("should", "need to", "must", "decided
# ... because"): distractors that compete with the planted facts for the summary's budget.

FILLER_MODULES: Final = (
    "helpers", "settings", "http_client", "timeutils", "pagination_utils", "serializers",
    "cache_backend", "retry_utils", "logging_setup", "fixtures", "db_session", "feature_flags",
)  # fmt: skip
CODE_NAMES: Final = (
    "load_config", "parse_row", "retry", "flush", "build_query", "emit_metric", "close_pool",
    "chunked", "normalize_key", "to_json", "backoff", "open_session",
)  # fmt: skip
FILLER_USER: Final = (
    "Thanks, that looks right.",
    "Go ahead.",
    "Fine by me.",
    "Can you show me why {test} fails?",
    "Hmm, why is {func} so slow?",
    "What does the stack trace in {test} say?",
    "Is {path} still used anywhere?",
    "OK, continue with {path}.",
    "Did the linter complain about {path}?",
    "Can you double-check the imports in {path}?",
    "What does {func} return for an empty payload?",
    "Show me where {func} is called.",
    "Why does {test} take {n} seconds now?",
    "Does {func} need the timeout argument at all?",
)
FILLER_ASSISTANT: Final = (
    "Let me look at {path} first.",
    "I'll run {test} again.",
    "{func} is called from {n} places, so I'll check each of them.",
    "That import in {path} is unused, so I removed it.",
    "Tests pass locally now: {n} passed.",
    "Here is what I found: {func} re-reads the config on every call.",
    "The helper in {path} swallows exceptions, which hides the real error.",
    "{test} was flaky because it depends on wall-clock time.",
    "The diff in {path} is small: a renamed argument and a new default.",
    "I'm checking whether anything else imports {func}.",
    "{path} has about {n} lines of dead code.",
    "I should also check {func} in {path}.",
    "I need to update {test} after this change.",
    "We must keep {func} backwards compatible for now.",
    "I decided to leave {func} alone because only {test} calls it.",
    "The failure in {test} comes from a stale fixture; I should regenerate it.",
    "{func} has to handle None before the retry wrapper sees it.",
)
OPENERS: Final = ("", "", "One more thing.", "Quick note.", "Before I forget.", "Also relevant.")
ACKS: Final = ("Noted.", "Got it, I'll keep that in mind.", "Understood.", "Okay, noted.")
SERVICES: Final = ("billing", "checkout", "ledger", "payouts", "catalog", "ingest", "search")


def user(text: str) -> Item:
    return {"role": "user", "content": text}


def assistant(text: str) -> Item:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}


class Generator:
    """One session's content, identical for every strategy: each round has its own RNG.

    The agent's tool loop (`work_step`) draws from a separate stream per round, because how
    much of it is needed to reach the trigger depends on the strategy's summary size.
    """

    def __init__(self, seed: int, session: int) -> None:
        self.seed, self.session = seed, session
        first = random.Random(f"{seed}:{session}")
        self.service = first.choice(SERVICES)
        self.first_request = first.randrange(len(REQUESTS))  # then one after the other
        self.used: set[str] = set()  # planted values: no two facts share a probe string
        self.planted: list[Fact] = []
        self.work_rng = random.Random()
        self.round_tag, self.call_prefix, self.calls, self.steps = "", "", 0, 0

    def call(self, name: str, arguments: dict[str, Any], output: str) -> list[Item]:
        self.calls += 1
        call_id = f"call_{self.session}_{self.call_prefix}_{self.calls}"
        return [
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(arguments),
            },
            {"type": "function_call_output", "call_id": call_id, "output": output},
        ]

    def fill(self, pattern: str, rng: random.Random) -> str:
        """`pattern` with every {slot} drawn from SLOTS; {service} is this session's."""

        def draw(match: re.Match[str]) -> str:
            name = match.group(1)
            return self.service if name == "service" else SLOTS[name](rng)

        return SLOT.sub(draw, pattern)

    def unique(self, patterns: Sequence[str], rng: random.Random) -> str:
        """A value from one of `patterns` that no earlier fact of this session used."""
        for _ in range(200):
            value = self.fill(rng.choice(patterns), rng)
            if value not in self.used:
                self.used.add(value)
                return value
        raise RuntimeError(f"catalogue exhausted ({patterns[0]!r}...): add values or plant fewer")

    # ------------------------------------------------------------ filler

    def chatter(self, rng: random.Random, templates: Sequence[str]) -> str:
        func = rng.choice(CODE_NAMES)
        return rng.choice(templates).format(
            path=self.filler_path(rng), func=func, test=f"test_{func}", n=rng.randint(2, 60)
        )

    def filler_path(self, rng: random.Random) -> str:
        module = rng.choice(FILLER_MODULES)
        return rng.choice((f"src/common/{module}.py", f"tests/unit/test_{module}.py"))

    def code(self, rng: random.Random) -> str:
        lines = ["from __future__ import annotations", "", "import logging", ""]
        for _ in range(rng.randint(4, 9)):
            name, other = rng.sample(CODE_NAMES, 2)
            lines += [
                f"def {name}(payload, timeout={rng.randint(1, 30)}):",
                f'    """Wrap {other} for the caller."""',
                f"    value = {other}(payload, attempts={rng.randint(1, 5)})",
                "    if value is None:",
                f"        logging.getLogger(__name__).debug('{name}: empty')",
                "        return None",
                "    return value",
                "",
            ]
        return "\n".join(lines)

    def tool_step(self, rng: random.Random) -> list[Item]:
        """One tool call with a realistic output: a file read, a grep, a test run or git."""
        kind = rng.randrange(4)
        if kind == 0:
            return self.call("read_file", {"path": self.filler_path(rng)}, self.code(rng))
        if kind == 1:
            name = rng.choice(CODE_NAMES)
            hits = [
                f"{self.filler_path(rng)}:{rng.randint(5, 300)}:    value = {name}(payload)"
                for _ in range(rng.randint(3, 12))
            ]
            return self.call("grep", {"pattern": name, "path": "src/"}, "\n".join(hits))
        if kind == 2:
            test = f"tests/unit/test_{rng.choice(FILLER_MODULES)}.py"
            log = [f"{test} " + "".join(rng.choice("....F.") for _ in range(rng.randint(20, 60)))]
            failed = rng.randint(0, 2)
            if failed:
                log.append(f"FAILED {test}::test_{rng.choice(CODE_NAMES)} - AssertionError")
            log.append(f"{failed} failed, {rng.randint(20, 80)} passed in {rng.randint(2, 40)}s")
            return self.call("run_tests", {"args": f"-q {test}"}, "\n".join(log))
        changed = [f"\tmodified:   {self.filler_path(rng)}" for _ in range(rng.randint(1, 4))]
        status = "\n".join(["On branch main", "Changes not staged for commit:", *changed])
        return self.call("shell", {"cmd": "git status"}, status)

    def filler_turn(self, rng: random.Random) -> list[Item]:
        items = [user(self.chatter(rng, FILLER_USER))]
        for _ in range(rng.randint(0, 2)):
            items += self.tool_step(rng)
        narration = (self.chatter(rng, FILLER_ASSISTANT) for _ in range(rng.randint(1, 3)))
        return [*items, assistant(" ".join(narration))]

    def work_step(self) -> list[Item]:
        """The agent working on the latest request: a tool call, now and then a progress note."""
        rng = self.work_rng
        self.steps += 1
        self.call_prefix, self.calls = f"{self.round_tag}w{self.steps}", 0
        items = self.tool_step(rng)
        if rng.random() < 0.3:
            items.append(assistant(self.chatter(rng, FILLER_ASSISTANT)))
        check_probes(self.planted, items)
        return items

    # ------------------------------------------------------------ planted facts

    def stated(self, role: str, sentence: str, value: str, rng: random.Random) -> list[Item]:
        """A turn that states `sentence` amid ordinary conversation."""
        if role == "user":
            opener = rng.choice(OPENERS)
            return [user(squash(f"{opener} {sentence}")), assistant(rng.choice(ACKS))]
        ask = user(self.chatter(rng, FILLER_USER))
        if role == "edit":  # the value is a file the agent patched
            patch = "@@ -12,7 +12,9 @@\n-    return None\n+    return fallback"
            edit = self.call("apply_patch", {"path": value, "patch": patch}, f"Patched {value}")
            return [ask, *edit, assistant(sentence)]
        if role == "commit":  # the value is the commit's hash
            output = f"[main {value}] fix: fall back on empty payloads\n 1 file changed"
            commit = self.call("shell", {"cmd": "git commit -a"}, output)
            return [user("Commit it."), *commit, assistant(sentence)]
        narration = self.chatter(rng, FILLER_ASSISTANT)
        return [ask, *self.tool_step(rng), assistant(f"{narration} {sentence}")]

    def plant(self, kind: FactKind, number: int, rng: random.Random) -> Planted:
        if kind == "decision":
            return self.decision(number, rng)
        catalogue = CATALOGUES[kind]
        if kind == "artifact":
            catalogue = rng.choice((catalogue, *MORE_ARTIFACTS))
        value = self.unique(catalogue.values, rng)
        role, template = rng.choice(catalogue.templates)
        items = self.stated(role, template.format(v=value), value, rng)
        return Planted(Fact(kind, (value,), number), items)

    def decision(self, number: int, rng: random.Random) -> Planted:
        free = [pair for pair in DECISIONS if pair[0] not in self.used]
        reasons = [reason for reason in REASONS if reason not in self.used]
        if not free or not reasons:
            raise RuntimeError("decision catalogue exhausted: add choices and reasons")
        (choice, alternative), reason = rng.choice(free), rng.choice(reasons)
        self.used.update((choice, reason))
        role, template = rng.choice(DECISION_TEMPLATES)
        capital = choice[0].upper() + choice[1:]
        sentence = template.format(c=choice, C=capital, a=alternative, r=reason)
        items = self.stated(role, sentence, choice, rng)
        return Planted(Fact("decision", (choice, reason), number), items)

    def request(self, number: int, rng: random.Random) -> Planted:
        template, phrase = REQUESTS[(self.first_request + number) % len(REQUESTS)]
        path = self.unique(("src/{service}/{area}/{module}.py",), rng)
        text = template.format(v=path, suite=SLOTS["suite"](rng))
        return Planted(
            Fact("latest_request", (phrase, path), number), [user(text), assistant("On it.")]
        )

    def round(self, number: int) -> tuple[list[Item], list[Fact]]:
        """A round's content: planted turns shuffled among filler, then the latest request."""
        rng = random.Random(f"{self.seed}:{self.session}:{number}")
        self.work_rng = random.Random(f"{self.seed}:{self.session}:{number}:work")
        self.round_tag = self.call_prefix = f"r{number}"
        self.calls = self.steps = 0
        planted = [
            self.plant(kind, number, rng)
            for kind, counts in PER_ROUND.items()
            for _ in range(counts[0] if number == 1 else counts[1])
        ]
        turns = [entry.items for entry in planted]
        turns += [self.filler_turn(rng) for _ in range(len(planted) // 2)]
        rng.shuffle(turns)
        planted.append(self.request(number, rng))
        items = [item for turn in turns for item in turn] + planted[-1].items
        for entry in planted:
            own = {id(item) for item in entry.items}
            check_probes([entry.fact], entry.items, present=True)
            check_probes([entry.fact], [item for item in items if id(item) not in own])
        # Earlier requests are not probed any more (and may share their wording).
        self.planted = [fact for fact in self.planted if fact.kind != "latest_request"]
        check_probes(self.planted, items)
        self.planted += [entry.fact for entry in planted]
        return items, [entry.fact for entry in planted]


def check_probes(facts: Iterable[Fact], items: Sequence[Item], *, present: bool = False) -> None:
    """Each probe string is in its own turn (`present`) and nowhere else, or it proves nothing."""
    texts = [squash(text_of(item)) for item in items]
    for fact in facts:
        for value in fact.required:
            probe = Fact(fact.kind, (value,), fact.round)
            if present and not probe.found_in(" ".join(texts)):
                raise RuntimeError(f"generator bug: the {fact.kind} does not state {value!r}")
            if not present and any(probe.found_in(text) for text in texts):
                raise RuntimeError(f"generator bug: {value!r} also occurs outside its fact")


# ---------------------------------------------------------------- running


@dataclass(frozen=True, slots=True)
class EvalConfig:
    seed: int
    sessions: int
    rounds: int
    strategies: tuple[str, ...]
    concurrency: int  # sessions in flight at once; the numbers do not depend on it


def active_text(context: Sequence[Item]) -> tuple[str, str]:
    """(summary text, kept items' text) of an active context, whitespace-squashed."""
    summary: list[str] = []
    kept: list[str] = []
    for item in context:
        text = text_of(item)
        (summary if text.startswith(SUMMARY_MARK) else kept).append(text)
    return squash("\n".join(summary)), squash("\n".join(kept))


async def run_session(
    manager: CompactionManager, session_id: str, generator: Generator, rounds: int
) -> list[Observation]:
    """Append each round, work until the trigger fires, compact, probe."""
    store = manager.store
    facts: list[Fact] = []
    observed: list[Observation] = []
    for number in range(1, rounds + 1):
        items, planted = generator.round(number)
        # An earlier request is history once a new one arrives: only the newest is probed.
        facts = [fact for fact in facts if fact.kind != "latest_request"] + planted
        await manager.append(session_id, items)
        while not manager.decide(await store.context_tokens(session_id)).triggered:
            await manager.append(session_id, generator.work_step())
        outcome = await manager.maybe_compact(session_id)
        if outcome is None or not outcome.compacted or outcome.summary is None:
            fallback = outcome.fallback if outcome else "not triggered"
            raise RuntimeError(f"round {number} of {session_id} made no summary ({fallback})")
        summary, kept = active_text(await store.load_context(session_id))
        for fact in facts:
            retained = fact.found_in(f"{summary} {kept}")
            observed.append(
                Observation(fact.kind, number, retained, retained and not fact.found_in(kept))
            )
    return observed


async def run_strategy(
    store: SessionStore, strategy: str, config: EvalConfig, summarizer: Summarizer
) -> list[Observation]:
    """Every session under one strategy, a few at a time; results in session order."""
    manager = CompactionManager(
        CompactionConfig(
            model=MODEL,
            max_context_tokens=WINDOW,
            policy=POLICY.model_copy(update={"strategy": strategy}),
            store=store,
            summarizer=summarizer,
            record_idle_decisions=False,
        )
    )
    limit = asyncio.Semaphore(config.concurrency)

    async def one(session: int) -> list[Observation]:
        async with limit:
            generator = Generator(config.seed, session)
            return await run_session(manager, f"{strategy}-{session}", generator, config.rounds)

    found = await asyncio.gather(*(one(session) for session in range(config.sessions)))
    return [observation for observations in found for observation in observations]


async def evaluate(config: EvalConfig, summarizer: Summarizer) -> dict[str, list[Observation]]:
    """Every strategy over the same generated sessions, in one temporary SQLite database."""
    with tempfile.TemporaryDirectory(prefix="eval-retention-") as folder:
        url = f"sqlite:///{Path(folder) / 'eval.db'}"
        # A throw-away database: durability buys nothing, so skip the fsyncs.
        async with SessionStore(url, model=MODEL, keyring=None, sqlite_synchronous="OFF") as store:
            return {
                strategy: await run_strategy(store, strategy, config, summarizer)
                for strategy in config.strategies
            }


# ---------------------------------------------------------------- reporting


@dataclass(slots=True)
class Tally:
    retained: int = 0
    probes: int = 0
    summary_only: int = 0

    @classmethod
    def of(cls, observations: Iterable[Observation]) -> Tally:
        found = cls()
        for observation in observations:
            found.probes += 1
            found.retained += observation.retained
            found.summary_only += observation.summary_only
        return found

    @property
    def rate(self) -> float | None:
        return None if not self.probes else round(self.retained / self.probes, 4)

    @property
    def summary_share(self) -> float | None:
        """Of the retained facts, the share that no kept verbatim item held."""
        return None if not self.retained else round(self.summary_only / self.retained, 4)


def select(
    observations: Iterable[Observation],
    *,
    kind: FactKind | None = None,
    number: int | None = None,
    probe: ProbeKind | None = None,
) -> Tally:
    """The tally of the observations that match every given filter."""
    return Tally.of(
        o
        for o in observations
        if (kind is None or o.kind == kind)
        and (number is None or o.round == number)
        and (probe is None or PROBE_OF[o.kind] == probe)
    )


def strategy_report(observations: Sequence[Observation], rounds: int) -> dict[str, Any]:
    """Retention per fact kind and round, per probe kind, per round, and overall."""
    numbers = range(1, rounds + 1)
    kinds: dict[str, Any] = {}
    for kind in FACT_KINDS:
        total = select(observations, kind=kind)
        kinds[kind] = {
            "probe": PROBE_OF[kind],
            "rounds": [select(observations, kind=kind, number=n).rate for n in numbers],
            "overall": total.rate,
            "retained": total.retained,
            "probes": total.probes,
            "summary_only": total.summary_share,
        }
    overall = Tally.of(observations)
    return {
        "kinds": kinds,
        "probes": {probe: select(observations, probe=probe).rate for probe in PROBE_KINDS},
        "rounds": [select(observations, number=n).rate for n in numbers],
        "overall": overall.rate,
        "retained": overall.retained,
        "probes_total": overall.probes,
        "summary_only": overall.summary_share,
    }


def build_report(
    config: EvalConfig, summarizer: str, results: dict[str, list[Observation]], target: float
) -> dict[str, Any]:
    strategies = {name: strategy_report(obs, config.rounds) for name, obs in results.items()}
    overall = Tally.of(o for observations in results.values() for o in observations).rate
    below = [name for name, report in strategies.items() if (report["overall"] or 0) < target]
    return {
        "summarizer": summarizer,
        "seed": config.seed,
        "sessions": config.sessions,
        "rounds": config.rounds,
        "window": WINDOW,
        "policy": POLICY.model_dump(
            include={
                "keep_recent_turns",
                "keep_tool_io_pairs",
                "recent_user_token_budget",
                "summary_max_tokens",
                "trigger_pct",
            }
        ),
        "target": target,
        "strategies": strategies,
        "overall": overall,
        "below_target": below,
        "passed": not below and (overall or 0) >= target,
    }


def percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}%"


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (what docs/QUALITY.md shows)."""
    heads = [f"r{r}" for r in range(1, report["rounds"] + 1)]
    lines = [
        f"summarizer {report['summarizer']}, seed {report['seed']}, {report['sessions']} "
        f"sessions x {report['rounds']} rounds, window {report['window']} tokens",
    ]
    for name, data in report["strategies"].items():
        lines += [
            "",
            f"### {name}",
            "",
            "| fact kind | probe | " + " | ".join(heads) + " | all | retained | summary alone |",
            "| --- | --- | " + " | ".join("---:" for _ in heads) + " | ---: | ---: | ---: |",
        ]
        for kind, row in data["kinds"].items():
            cells = " | ".join(percent(rate) for rate in row["rounds"])
            lines.append(
                f"| {kind} | {row['probe']} | {cells} | {percent(row['overall'])} | "
                f"{row['retained']}/{row['probes']} | {percent(row['summary_only'])} |"
            )
        cells = " | ".join(f"**{percent(rate)}**" for rate in data["rounds"])
        lines.append(
            f"| **overall** | | {cells} | **{percent(data['overall'])}** | "
            f"{data['retained']}/{data['probes_total']} | {percent(data['summary_only'])} |"
        )
    lines += [
        "",
        "### All strategies",
        "",
        "| strategy | " + " | ".join(PROBE_KINDS) + " | overall | summary alone |",
        "| --- | " + " | ".join("---:" for _ in PROBE_KINDS) + " | ---: | ---: |",
    ]
    for name, data in report["strategies"].items():
        cells = " | ".join(percent(data["probes"][probe]) for probe in PROBE_KINDS)
        lines.append(
            f"| {name} | {cells} | {percent(data['overall'])} | {percent(data['summary_only'])} |"
        )
    verdict = "PASS" if report["passed"] else "FAIL"
    below = ", ".join(report["below_target"]) or "none"
    lines += [
        "",
        f"Overall retention {percent(report['overall'])}, target {percent(report['target'])}: "
        f"{verdict} (strategies below target: {below}).",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure how many planted key facts survive compaction rounds."
    )
    parser.add_argument("--sessions", type=int, default=20, help="sessions per strategy")
    parser.add_argument("--rounds", type=int, default=5, help="compaction rounds per session")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--strategy",
        action="append",
        choices=sorted(BUILTIN_STRATEGIES),
        help="a strategy to evaluate (repeatable; default: every built-in strategy)",
    )
    parser.add_argument("--concurrency", type=int, default=4, help="sessions run at once")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--check", action="store_true", help="exit 1 when below --target")
    parser.add_argument("--target", type=float, default=TARGET, help="share to reach (0-1)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (needs --model)")
    parser.add_argument("--model", help="summarize with this model instead of extractively")
    parser.add_argument("--api-key", help="key for the endpoint (default: $OPENAI_API_KEY)")
    args = parser.parse_args(argv)
    if min(args.sessions, args.rounds, args.concurrency) < 1:
        parser.error("--sessions, --rounds and --concurrency must be at least 1")
    if args.rounds > MAX_ROUNDS:
        parser.error(f"--rounds is at most {MAX_ROUNDS}: the catalogues run out of new facts")
    if not 0 <= args.target <= 1:
        parser.error(f"--target is a share between 0 and 1 (0.9 means 90%), not {args.target}")
    if (args.base_url or args.api_key) and not args.model:
        parser.error("--base-url and --api-key need --model NAME (the model to summarize with)")
    return args


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    config = EvalConfig(
        seed=args.seed,
        sessions=args.sessions,
        rounds=args.rounds,
        strategies=tuple(dict.fromkeys(args.strategy or BUILTIN_STRATEGIES)),
        concurrency=args.concurrency,
    )
    if not args.model:
        extractive = ExtractiveSummarizer()
        return build_report(
            config, extractive.name, await evaluate(config, extractive), args.target
        )
    remote = OpenAISummarizer(args.model, base_url=args.base_url, api_key=args.api_key)
    try:
        return build_report(config, remote.name, await evaluate(config, remote), args.target)
    finally:
        await remote.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    report = asyncio.run(measure(args))
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    if args.check and not report["passed"]:
        below = ", ".join(report["below_target"]) or "all strategies together"
        print(f"retention below {percent(args.target)}: {below}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
