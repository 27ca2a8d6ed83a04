"""Does compaction keep the state an agent learned, and drop what was superseded?

    python bench/eval_state.py                  # held-out half, all strategies, masking on/off
    python bench/eval_state.py --split tuning   # the half the summarizer may be tuned on
    python bench/eval_state.py --quick --json   # small sessions, machine-readable
    python bench/eval_state.py --check          # exit 1 below the thresholds
    python bench/eval_state.py --base-url http://127.0.0.1:8000/v1 --model NAME

bench/eval_retention.py and bench/eval_paraphrase.py plant facts that a user states. Real
agents learn most of their state elsewhere: from tool outputs they read once (a config file, a
SQL row, a docs hit) and then rely on without repeating the value ("I'll point the worker at
that replica"), from values that change during the session (the old one must not be shown as
current any more), from remarks with no cue word, from sessions in Spanish or German, from very
long or multi-agent sessions, and from negative constraints. This harness plants ~125 such
facts in 10 sessions of 210 to 1,016 turns (seeded RNG, offline, deterministic) among routine
noise (grep hits full of TODOs, pytest logs, CI JSON, "keep going with the next file",
chit-chat), appends them turn by turn through the real CompactionManager on a temporary SQLite
file (8k-token window, the stingy policy of the other harnesses), compacts at every turn
boundary whose trigger fires, and probes the ACTIVE context after the last compaction: the
summary marker plus the kept items (`load_context`), or, with masking on, the masked view of
them that the model is sent.

A fact is kept when every value its probe names is in that text (case-insensitive, at word
boundaries, so "6.2" does not match "16.2" or "6.2.1"). A negative constraint also needs a
negation in the same sentence as its value. A superseded value is *stale* when it appears in
the active context anywhere but in an annotation (see `is_stale`). Every fact kind has at
least six phrasings per category; even-numbered ones are the tuning half, odd-numbered ones
the held-out half (the default report). The phrasings were written from how agent sessions
read, not from the summarizer's rules.

Scores: "overall" is the share of passed probes (a superseded fact has two: its new value is
kept, its old value is not stale), per category and per kind likewise; the stale rate is
reported on its own. `--check` wants, for every strategy and masking setting, overall >= 90%,
every category >= 80% and a stale rate <= 5%. The default run (10 sessions, 6 strategies,
masking off and on: 12 settings, `--concurrency 2` processes) takes about 2 minutes on a
2-core VM; `--quick` keeps every fact but a fifth of the turns (at least 60) for tests.
With masking on, a fact only in a masked tool output counts as lost (as in eval_masking.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Final, Literal

from eval_masking import MASKING
from eval_paraphrase import POLICY, Split, assistant, user
from eval_retention import MODEL, percent, squash

from sessionstore import SessionStore, text_of
from sessionstore.compaction import (
    BUILTIN_STRATEGIES,
    CompactionConfig,
    CompactionManager,
    ExtractiveSummarizer,
    MaskingPolicy,
    OpenAISummarizer,
    RowMasking,
    Summarizer,
)

Item = dict[str, Any]
Category = Literal[
    "tool_output", "superseded", "cue_free", "multilingual", "long_handoff", "negative"
]
Kind = Literal["goal", "constraint", "preference", "action", "decision", "artifact", "entity"]
Lang = Literal["en", "es", "de"]

CATEGORIES: Final[tuple[Category, ...]] = (
    "tool_output", "superseded", "cue_free", "multilingual", "long_handoff", "negative",
)  # fmt: skip
KINDS: Final[tuple[Kind, ...]] = (
    "goal", "constraint", "preference", "action", "decision", "artifact", "entity",
)  # fmt: skip
WINDOW: Final = 8_000
OVERALL_TARGET: Final = 0.90
CATEGORY_TARGET: Final = 0.80
STALE_LIMIT: Final = 0.05
AGENTS: Final = ("coordinator", "researcher", "engineer")

# ---------------------------------------------------------------- values
# Fact values come from spaces no noise uses (site-role-NN hosts, four-digit numbers, dated
# paths under fact folders); a session never draws the same value twice, and `check_probes`
# proves each probe string occurs only where it was planted.

SITES: Final = ("ams", "fra", "iad", "sin", "gru", "syd", "dub", "waw", "osl", "mad", "yyz")
ROLES: Final = ("web", "pg-replica", "redis", "kafka", "api", "etl", "search", "vault", "batch")
PEOPLE: Final = (
    "Priya", "Mateo", "Ingrid", "Kwame", "Sofia", "Tomasz", "Aiko", "Lena", "Ravi", "Noor",
    "Bjorn", "Chidi", "Elif", "Farah", "Goran", "Hana", "Idris", "Jonas", "Kenji", "Lucia",
    "Marek", "Nadia", "Oskar", "Paulo", "Quinn", "Rosa", "Sven", "Talia", "Umar", "Vera",
    "Wanjiru", "Ximena", "Yusuf", "Zofia", "Anika", "Bruno", "Dalia", "Emeka", "Freya", "Gideon",
)  # fmt: skip
SURNAMES: Final = (
    "Álvarez", "Domínguez", "Iglesias", "Navarro", "Ortega", "Quintana", "Serrano", "Vidal",
    "Bergmann", "Hoffmann", "Krüger", "Lehmann", "Vogt", "Zimmermann", "Brandt", "Keller",
)  # fmt: skip
MONTHS: Final = ("March", "April", "May", "June", "July", "August", "September", "October")
MESES: Final = ("marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre")
MONATE: Final = ("März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober")
FACT_DIRS: Final = ("deploy/overrides", "ops/runbooks", "data/exports", "infra/modules", "docs/adr")
STEMS: Final = ("eu_cutover", "ledger_fix", "tenant_split", "vat_rules", "cold_tier", "sso_map")
PYDIRS: Final = ("billing/jobs", "ledger/sync", "etl/steps", "payouts/core")
SERVICES: Final = ("postgres", "mysql", "node", "mongodb", "clickhouse", "kafka", "elasticsearch")
PROJECTS: Final = ("OPS", "PAY", "CORE", "DATA", "INFRA", "SRCH", "AUTH")
QUEUES: Final = ("NATS JetStream", "RabbitMQ", "Amazon SQS", "Apache Pulsar", "Redpanda")
SEARCHERS: Final = ("Meilisearch", "OpenSearch", "Typesense", "Vespa", "Manticore")
MIGRATORS: Final = ("pgloader", "AWS DMS", "Debezium", "Airbyte", "pg_dump")
LIBRARIES: Final = ("moment.js", "lodash", "jQuery", "Celery", "pandas", "Twisted", "Bluebird")
REGIONS: Final = ("eu-west-1", "eu-central-1", "us-east-2", "ap-south-1", "ca-central-1")
WEEKDAYS: Final = ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays")
TIMEZONES: Final = ("Europe/Lisbon", "America/Denver", "Asia/Kolkata", "Australia/Perth")
LANGUAGES: Final = ("Portuguese", "Dutch", "Finnish", "Polish", "Turkish")
CURRENCIES: Final = ("CHF", "SEK", "NOK", "JPY", "AUD")
CHANNELS: Final = ("#payments-alerts", "#infra-oncall", "#release-train", "#data-quality")


def _hex(rng: random.Random, n: int) -> str:
    while True:
        text = "".join(rng.choice("0123456789abcdef") for _ in range(n))
        if any(c.isalpha() for c in text) and any(c.isdigit() for c in text):
            return text


def _version(rng: random.Random) -> str:
    return f"{rng.randint(3, 19)}.{rng.randint(1, 9)}.{rng.randint(1, 30)}"


SLOTS: Final[dict[str, Callable[[random.Random], str]]] = {
    "host": lambda r: f"{r.choice(SITES)}-{r.choice(ROLES)}-{r.randrange(10, 99)}",
    "person": lambda r: r.choice(PEOPLE),
    "surname": lambda r: r.choice(SURNAMES),
    "num": lambda r: str(r.randrange(1100, 9900)),
    "money": lambda r: f"{r.randrange(12, 99) * 100:,}",
    "eur": lambda r: f"{r.randrange(2, 40)}.{r.randrange(1, 9)}00",
    "gb": lambda r: f"{r.randrange(2, 64)},{r.randrange(1, 9)} GB",
    "ms": lambda r: f"{r.randrange(120, 990, 10)} ms",
    "date": lambda r: f"{r.randint(2, 28)} {r.choice(MONTHS)}",
    "date_es": lambda r: f"{r.randint(2, 28)} de {r.choice(MESES)}",
    "date_de": lambda r: f"{r.randint(2, 28)}. {r.choice(MONATE)}",
    "version": _version,
    "svcver": lambda r: f"{r.choice(SERVICES)} {r.randint(9, 23)}",
    "path": lambda r: f"{r.choice(FACT_DIRS)}/{r.choice(STEMS)}_{r.randrange(10, 99)}.yaml",
    "mdpath": lambda r: f"ops/runbooks/{r.choice(STEMS)}_{r.randrange(10, 99)}.md",
    "pypath": lambda r: f"{r.choice(PYDIRS)}/{r.choice(STEMS)}_{r.randrange(10, 99)}.py",
    "bucket": lambda r: f"s3://acme-exports/{r.choice(STEMS)}/{_hex(r, 6)}.parquet",
    "dir": lambda r: f"{r.choice(('migrations', 'vendor', 'legacy'))}/{r.choice(STEMS)}",
    "ticket": lambda r: f"{r.choice(PROJECTS)}-{r.randrange(1100, 9900)}",
    "sha": lambda r: _hex(r, 8),
    "snap": lambda r: f"snap-{_hex(r, 8)}",
    "release": lambda r: f"rel-{_hex(r, 6)}",
    "queue": lambda r: r.choice(QUEUES),
    "searcher": lambda r: r.choice(SEARCHERS),
    "migrator": lambda r: r.choice(MIGRATORS),
    "lib": lambda r: r.choice(LIBRARIES),
    "region": lambda r: r.choice(REGIONS),
    "weekday": lambda r: r.choice(WEEKDAYS),
    "tz": lambda r: r.choice(TIMEZONES),
    "language": lambda r: r.choice(LANGUAGES),
    "currency": lambda r: r.choice(CURRENCIES),
    "channel": lambda r: r.choice(CHANNELS),
}


def slot_type(name: str) -> str:
    """`host2` draws a host; `old`/`new` are typed by their template."""
    return name.rstrip("0123456789")


# ---------------------------------------------------------------- probes


def _bounded(value: str) -> re.Pattern[str]:
    """The value as a whole token: not inside a longer word, number, version or id."""
    return re.compile(
        r"(?<![\w\-.])" + re.escape(value.lower()) + r"(?![\w]|[.,]\d|-\w)", re.IGNORECASE
    )


def occurs(value: str, text: str) -> bool:
    return _bounded(value).search(text) is not None


NEGATION: Final = re.compile(
    r"\b(?:don't|do not|never|no|not|nothing|avoid|without|mustn't|must not|stop|"
    r"nicht|nie|kein\w*|ningún|ninguna|nunca)\b",
    re.IGNORECASE,
)
SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+|\n|\s-\s")  # sentences, lines, bullets


def negated(value: str, text: str) -> bool:
    """Some sentence of `text` names the value and a negation."""
    return any(
        occurs(value, sentence) and NEGATION.search(sentence)
        for sentence in SENTENCE_END.split(text)
    )


# The stale rule. An occurrence of the old value is an annotation, not a claim, when it is
#  1. inside a parenthetical that starts with a marker word: "(was Alice)", "(previously 6.2)",
#     "(replaced: 4,000)", "(vorher ...)", "(antes ...)";
#  2. the left side of a transition arrow: "Alice -> Bob", "6.2 → 7.2", "4,000 => 6,500";
#  3. right after a retraction: "was", "previously", "formerly", "replaced", "replacing",
#     "replaces", "instead of", "rather than", "not", "no longer", "superseded", "statt",
#     "anstelle von", "en lugar de", "en vez de";
#  4. a "from OLD to ..." transition: "upgraded redis from 6.2.14 to 7.2.4".
# Anything else (a bullet "- pager: Alice", "Budget: 4,000 USD" kept as a fact) is stale.
ANNOTATION_WORDS: Final = (
    "was", "previously", "formerly", "replaced", "replaces", "superseded", "old", "earlier",
    "before", "not", "no longer", "war", "vorher", "früher", "bisher", "antes", "anteriormente",
)  # fmt: skip
RETRACTIONS: Final = (
    "was", "previously", "formerly", "replaced", "replacing", "replaces", "instead of",
    "rather than", "not", "no longer", "superseded", "statt", "anstelle von", "en lugar de",
    "en vez de",
)  # fmt: skip
_PAREN_START: Final = re.compile(
    r"\(\s*(?:" + "|".join(re.escape(w) for w in ANNOTATION_WORDS) + r")\b", re.IGNORECASE
)
_RETRACTED: Final = re.compile(
    r"\b(?:" + "|".join(re.escape(w) for w in RETRACTIONS) + r")\s+(?:the\s+)?$", re.IGNORECASE
)


def _in_annotation(text: str, start: int, end: int) -> bool:
    opened = text.rfind("(", 0, start)
    if opened != -1 and text.find(")", opened, start) == -1:
        closed = text.find(")", end)
        if closed != -1 and _PAREN_START.match(text, opened):
            return True
    after = text[end : end + 4].lstrip()
    if after.startswith(("->", "→", "=>")):
        return True
    before = text[max(0, start - 30) : start]
    if _RETRACTED.search(before):
        return True
    return bool(re.search(r"\bfrom\s+$", before, re.IGNORECASE)) and bool(
        re.match(r"\s+(?:to|->|→)\s", text[end:])
    )


def is_stale(old: str, text: str) -> bool:
    """The old value appears in `text` other than in an annotation (the rule above)."""
    return any(
        not _in_annotation(text, found.start(), found.end())
        for found in _bounded(old).finditer(text)
    )


# ---------------------------------------------------------------- templates

Step = tuple[str, str]  # ("user" | "assistant", text) or ("call", "builder" or "builder:slot")


@dataclass(frozen=True)
class Template:
    """One phrasing of a fact: the steps that state it, the slots its probe requires."""

    category: Category
    kind: Kind
    index: int  # within (category, kind, lang); its parity decides the split
    steps: tuple[Step, ...]
    lang: Lang = "en"
    vtype: str = ""  # superseded: the type of {old} and {new}
    before: tuple[Step, ...] = ()  # superseded: the steps that state the old value

    @property
    def slots(self) -> tuple[str, ...]:
        if self.vtype:
            return ("new",)
        names = re.findall(r"\{(\w+)\}", " ".join(text for _, text in self.steps))
        calls = [text.split(":")[1] for role, text in self.steps if role == "call" and ":" in text]
        return tuple(dict.fromkeys([*names, *calls]))


def _family(
    category: Category, kind: Kind, phrasings: Sequence[tuple[Step, ...]], lang: Lang = "en"
) -> list[Template]:
    return [Template(category, kind, i, steps, lang) for i, steps in enumerate(phrasings)]


def _said(*texts: str, role: str = "user") -> list[tuple[Step, ...]]:
    return [((role, text),) for text in texts]


def _asked(ask: str, call: str, answer: str, *more: str) -> tuple[Step, ...]:
    return (("user", ask), ("call", call), ("assistant", answer), *(("user", m) for m in more))


TOOL_OUTPUT: Final = [
    *_family("tool_output", "entity", [
        _asked("Which replica does the reporting worker read from? Check its env file.",
               "env:host", "Found it. I'll point the new worker at that replica too."),
        _asked("Who owns the billing-export service? The catalog table has it.",
               "catalog:person", "There it is.",
               "ok, assign the cleanup to whoever owns billing-export."),
        _asked("Who picked up the flaky upload bug, #482?", "issue:person",
               "It's assigned and in progress.",
               "ok, assign the follow-up to whoever owns that ticket."),
        _asked("Where did the scheduler pod land?", "kubectl:host",
               "It's running. I'll drain that node last so the scheduler keeps going."),
        _asked("What cache does the session service use in prod?", "helm:host",
               "Good, I'll reuse that cache for the rate limiter as well."),
        _asked("Who's on call for payments this week?", "rota:person",
               "I'll send them the alert summary then."),
        _asked("Who maintains the internal feature-flag SDK?", "docs_maintainer:person",
               "I'll ask that maintainer about the new flag type."),
    ]),
    *_family("tool_output", "constraint", [
        _asked("What rate limit does the partner gateway enforce? It's in the gateway config.",
               "gateway:num", "OK, I'll keep the backfill below that limit."),
        _asked("Is there a cap on the bulk import endpoint?", "docs_cap:num",
               "I'll size the batches to stay under that."),
        _asked("How many jobs can one worker take at once?", "env_jobs:num",
               "Then the load test shouldn't push past that per worker."),
        _asked("What's our monthly API quota? We're on the growth plan.", "plans:num",
               "That's our ceiling for the month then."),
        _asked("Why did the vendor sync stall last night?", "throttle_log:num",
               "The vendor capped us. I'll pace the sync below their limit."),
        _asked("What latency do we promise the gold tier?", "sla_csv:num",
               "I'll set the alert threshold to match the gold SLA."),
        _asked("What's max_connections on the primary?", "pg_settings:num",
               "Then the pool sizes have to fit under that."),
    ]),
    *_family("tool_output", "artifact", [
        _asked("The nightly reconcile job crashed again, can you check the log?",
               "traceback:pypath", "The frame in our code is the one to fix; I'll open it next."),
        _asked("Is there a runbook for a stuck replication slot?", "docs_runbook:mdpath",
               "I'll follow that runbook step by step."),
        _asked("Which snapshot should we restore the orders DB from?", "snapshots:snap",
               "I'll restore from the newest one."),
        _asked("What was the last release that went out cleanly?", "deploys:release",
               "If the canary fails I'll roll back to that one."),
        _asked("Which commit changed the rate limiter?", "gitlog:sha",
               "That's the one; I'll revert it on a branch."),
        _asked("Where did last night's ledger export land?", "exports:bucket",
               "I'll load that file into the notebook."),
    ]),
]  # fmt: skip


def _sup(kind: Kind, vtype: str, before: tuple[Step, ...], after: tuple[Step, ...]) -> Template:
    return Template("superseded", kind, 0, after, vtype=vtype, before=before)


SUPERSEDED_RAW: Final = [
    _sup("entity", "person", (("user", "Heads-up: {old} is on call this week."),),
         (("user", "On-call is now {new}."),)),
    _sup("entity", "host", (("user", "Staging runs on {old}."),),
         (("user", "We moved staging from {old} to {new} last night."),)),
    _sup("entity", "version", (("user", "We're on redis {old} everywhere."),),
         (("user", "we upgraded redis from {old} to {new}"),)),
    _sup("entity", "version",
         _asked("What fastify version are we on?", "package_json:old",
                "That matches the lockfile."),
         _asked("I merged the dependency bump, check package.json again.", "package_json:new",
                "Lockfile is in sync.")),
    _sup("entity", "person", (("user", "{old} is the release manager for this cycle."),),
         (("user", "{new} replaced {old} as release manager."),)),
    _sup("entity", "host", (("user", "The primary database lives on {old}."),),
         (("user", "Primary DB: {new}."),)),
    _sup("entity", "person",
         _asked("Who owns the search indexer?", "codeowners:old", "Noted, I'll tag them."),
         (("user", "Ownership of the indexer changed, {new} has it now."),)),
    _sup("entity", "person", (("user", "Escalations go to {old}."),),
         (("user", "Escalations go to {new} instead."),)),
    _sup("constraint", "money", (("user", "Budget: {old} USD"),),
         (("user", "budget is {new} USD"),)),
    _sup("constraint", "num", (("user", "The partner API allows {old} requests per minute."),),
         (("user", "Partner raised our limit to {new} rpm."),)),
    _sup("constraint", "num",
         _asked("What's max_connections set to?", "pg_settings:old", "OK, the pools fit."),
         (("user", "max_connections is {new} now instead of {old}."),)),
    _sup("constraint", "num", (("user", "Keep the JS bundle under {old} KB."),),
         (("user", "New bundle ceiling: {new} KB."),)),
    _sup("constraint", "num", (("user", "The export job times out after {old} seconds."),),
         (("user", "Update: export timeout is {new} seconds now."),)),
    _sup("constraint", "money", (("user", "We can spend up to {old} USD on GPUs this quarter."),),
         (("user", "Finance approved {new} USD for GPUs."),)),
    _sup("constraint", "num",
         _asked("What does the partner gateway allow per minute?", "gateway:old",
                "OK, I'll stay below it."),
         _asked("Ops changed the gateway config, read it again.", "gateway:new",
                "Got it, I'll adjust the pacing.")),
    _sup("decision", "date", (("user", "The launch is on {old}."),),
         (("user", "The launch moved to {new}."),)),
    _sup("decision", "queue", (("user", "We're going with {old} for the job queue."),),
         (("user", "Switching the job queue to {new} instead of {old}; it couldn't keep up."),)),
    _sup("decision", "date", (("user", "Code freeze starts {old}."),),
         (("user", "Freeze starts {new}, not {old}."),)),
    _sup("decision", "date", (("user", "Demo day is {old}."),),
         (("user", "we pushed demo day to {new}"),)),
    _sup("decision", "migrator", (("user", "Plan: migrate the orders DB with {old}."),),
         (("user", "Change of plan, we'll migrate with {new} rather than {old}."),)),
    _sup("decision", "date", (("user", "Cutover window is {old}, overnight."),),
         (("user", "Cutover window: {new}."),)),
    _sup("decision", "searcher", (("assistant", "I'll use {old} for the search index."),),
         (("user", "Use {new} for the search index, I already set it up."),)),
]  # fmt: skip

CUE_FREE: Final = [
    *_family("cue_free", "entity", _said(
        "btw we're on {svcver} in prod", "the staging box is {host}",
        "{person} handles the vendor contracts", "prod traffic goes through {host} these days",
        "{person}'s team runs the data warehouse",
        "our account manager at the cloud vendor is {person}",
    )),
    *_family("cue_free", "artifact", _said(
        "the dashboards are all in {path}", "the last good build was {release}",
        "logs for that job land in {bucket}", "{ticket} has the full repro",
        "the old tenant data is archived as {bucket}", "that setting came from {path} originally",
    )),
    *_family("cue_free", "action", _said(
        "{person} gets the rollback notes once {ticket} closes",
        "the invoices for {ticket} go out to {person} friday",
        "ping {person} when the reindex is done", "{ticket} gets a backport as well",
        "{host} gets rebooted after the patch", "{person} reviews the schema diff tomorrow morning",
    )),
]  # fmt: skip

NEGATIVE: Final = [
    *_family("negative", "constraint", _said(
        "Don't touch the {dir} folder, another team owns it.",
        "Never deploy on {weekday}.", "No new dependencies in {dir}, please.",
        "Please don't run migrations against {host}.",
        "Nothing gets merged into {ticket}'s branch without two approvals.",
        "We must not restart {host} during business hours.", "Do not bump {lib} in this repo.",
    )),
    *_family("negative", "preference", _said(
        "Please don't use {lib} for anything new.",
        "No emojis in the commit messages for {ticket}.",
        "Don't post to {channel} directly, use a thread.",
        "I'd rather you never reformat files under {dir}.", "Avoid {lib} in the billing code.",
        "Don't write dates in {tz} time, ever.",
    )),
]  # fmt: skip

LONG_HANDOFF: Final = [
    *_family("long_handoff", "goal", _said(
        "The goal for this engagement: cut checkout p95 to {ms}.",
        "We're here to get {ticket} shipped to production.",
        "Success means every tenant is migrated off {host}.",
        "Objective: {num} invoices reconciled by {date}.",
        "What we need out of this is a working importer for {path}.",
        "End state: {svcver} everywhere.",
    )),
    *_family("long_handoff", "constraint", _said(
        "Everything must stay in {region}.",
        "The migration can take at most {num} seconds of downtime.",
        "Spending cap is {money} USD.", "Only {person} may approve prod deploys.",
        "Data older than {num} days must be purged.",
        "All writes go through {host}, no exceptions.",
    )),
    *_family("long_handoff", "preference", _said(
        "Please write timestamps in {tz}.", "Status updates in {language}, please.",
        "Quote amounts in {currency}.", "Prefix PR titles with {ticket}.",
        "I like the summaries posted in {channel}.",
        "Use {person} as the reviewer on anything auth.",
    )),
    *_family("long_handoff", "action", _said(
        "TODO for later: rotate the key on {host}.", "{person} needs {path} before Friday.",
        "Once we're done, open a follow-up for {ticket}.",
        "Remember to tell {person} when {host} is drained.",
        "We still have to re-run the backfill for {date}.", "Afterwards, archive {bucket}.",
    )),
    *_family("long_handoff", "decision", [
        (("user", "Decision: {queue} for the queue, because the team knows it."),),
        (("assistant", "We'll store the exports in {path} rather than in the database."),),
        (("user", "Going with {searcher}; the other engine was too heavy."),),
        (("assistant", "Let's pin {svcver} for now."),),
        (("user", "I settled on batches of {num} rows."),),
        (("assistant", "We'll route the EU tenants through {host}."),),
    ]),
]  # fmt: skip

SPANISH: Final = [
    *_family("multilingual", "goal", _said(
        "El objetivo es tener {ticket} en producción el {date_es}.",
        "Queremos bajar la latencia del checkout a {ms}, p. ej. en horas pico.",
        "Lo que necesitamos es que el informe de {path} funcione antes del {date_es}.",
        "La meta de esta semana es cerrar {ticket}, documentación incl.",
        "Necesito que el importador procese {gb} por noche.",
        "Hay que sacar {host} de servicio antes del {date_es}.",
    ), "es"),
    *_family("multilingual", "constraint", _said(
        "Ojo: el Sr. {surname} tiene que aprobar cualquier gasto de más de {eur} €.",
        "No podemos pasar de {gb} de memoria por pod.",
        "Los datos de clientes se quedan en {region}, sin excepciones.",
        "Como máximo {num} peticiones por minuto al proveedor.",
        "Todo cambio en producción necesita el visto bueno de la Sra. {surname}.",
        "El disco de {host} no debe superar {gb}.",
    ), "es"),
    *_family("multilingual", "action", _said(
        "Pendiente: mandarle el informe a la Sra. {surname} el {date_es}.",
        "Después hay que reiniciar {host}, etc.",
        "Recuérdame revisar {ticket} mañana.",
        "Falta subir {path} al bucket.",
        "{person} tiene que revisar el esquema antes del {date_es}.",
        "Queda borrar los backups de {host} (aprox. {gb}).",
    ), "es"),
    *_family("multilingual", "entity", _said(
        "El servidor de staging es {host}.",
        "Nuestro contacto en el proveedor es el Sr. {surname}.",
        "En producción usamos {svcver}.",
        "La base de datos de informes ocupa {gb}.",
        "El ticket de referencia es {ticket}.",
        "La clave de la API está en {path}.",
    ), "es"),
    *_family("multilingual", "decision", _said(
        "Decidimos usar {queue} para la cola porque ya lo conocemos.",
        "Vamos con {searcher} para las búsquedas.",
        "Migramos con {migrator}, es lo más sencillo.",
        "Nos quedamos con {svcver} hasta el {date_es}.",
        "Al final publicamos el {date_es}.",
        "Elegimos {region} como región principal, p. ej. por la latencia.",
    ), "es"),
]  # fmt: skip

GERMAN: Final = [
    *_family("multilingual", "goal", _said(
        "Ziel ist, dass {ticket} bis zum {date_de} live ist.",
        "Wir wollen die Latenz im Checkout auf {ms} senken, z. B. zu Spitzenzeiten.",
        "Bis zum {date_de} soll der Import von {path} laufen.",
        "Es geht darum, {host} bzw. den alten Cluster abzulösen.",
        "Der Importer muss {gb} pro Nacht schaffen.",
        "Am Ende soll {ticket} geschlossen sein, inkl. Doku.",
    ), "de"),
    *_family("multilingual", "constraint", _said(
        "Achtung: Ausgaben über {eur} € muss Hr. {surname} freigeben.",
        "Pro Pod dürfen wir max. {gb} Speicher nutzen.",
        "Kundendaten bleiben in {region}, d. h. keine Replikation nach außen.",
        "Höchstens {num} Anfragen pro Minute an den Anbieter.",
        "Jede Änderung in Produktion braucht das OK von Fr. {surname}.",
        "Die Platte von {host} darf {gb} nicht überschreiten.",
    ), "de"),
    *_family("multilingual", "action", _said(
        "Offen: den Bericht am {date_de} an Fr. {surname} schicken.",
        "Danach muss {host} neu gestartet werden.",
        "Erinnere mich, {ticket} morgen anzuschauen.",
        "{path} muss noch in den Bucket.",
        "{person} prüft das Schema bis zum {date_de}.",
        "Die Backups auf {host} (ca. {gb}) löschen wir noch.",
    ), "de"),
    *_family("multilingual", "entity", _said(
        "Der Staging-Server ist {host}.",
        "Unser Ansprechpartner beim Anbieter ist Hr. {surname}.",
        "In Produktion läuft {svcver}.",
        "Die Reporting-DB ist {gb} groß.",
        "Das Referenz-Ticket ist {ticket}.",
        "Der API-Schlüssel liegt unter {path}.",
    ), "de"),
    *_family("multilingual", "decision", _said(
        "Wir nehmen {queue} für die Queue, weil das Team es kennt.",
        "Entschieden: {searcher} für die Suche.",
        "Migriert wird mit {migrator}, das ist am einfachsten.",
        "Wir bleiben bis zum {date_de} bei {svcver}.",
        "Wir releasen am {date_de}.",
        "Hauptregion wird {region}, u. a. wegen der Latenz.",
    ), "de"),
]  # fmt: skip


def _numbered(templates: Sequence[Template]) -> list[Template]:
    """Templates indexed within their (category, kind, lang) family."""
    seen: dict[tuple[str, str, str], int] = {}
    numbered = []
    for template in templates:
        key = (template.category, template.kind, template.lang)
        numbered.append(Template(
            template.category, template.kind, seen.get(key, 0), template.steps, template.lang,
            template.vtype, template.before,
        ))  # fmt: skip
        seen[key] = seen.get(key, 0) + 1
    return numbered


TEMPLATES: Final = _numbered(
    [*TOOL_OUTPUT, *SUPERSEDED_RAW, *CUE_FREE, *NEGATIVE, *LONG_HANDOFF, *SPANISH, *GERMAN]
)


def families() -> dict[tuple[Category, Kind, Lang], list[Template]]:
    found: dict[tuple[Category, Kind, Lang], list[Template]] = {}
    for template in TEMPLATES:
        found.setdefault((template.category, template.kind, template.lang), []).append(template)
    return found


def in_split(template: Template, split: Split) -> bool:
    return template.index % 2 == (0 if split == "tuning" else 1)


# ---------------------------------------------------------------- tool outputs
# Each builder returns (tool, arguments, output) with the fact value among many keys or rows
# nobody refers to. Noise values stay out of the fact spaces (small numbers, plain words).


class Draw:
    """A session's value source: every drawn value is new in the session."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def __call__(self, kind: str) -> str:
        for _ in range(500):
            value = SLOTS[kind](self.rng)
            if value.lower() not in self.used:
                self.used.add(value.lower())
                return value
        raise RuntimeError(f"generator bug: the {kind} values ran out")


Tool = tuple[str, dict[str, Any], str]


def _env(d: Draw, key: str, value: str, path: str) -> Tool:
    r = d.rng
    lines = [
        "APP_ENV=production", f"LOG_LEVEL={r.choice(['info', 'warn'])}", "SENTRY_DSN=****",
        f"HTTP_TIMEOUT_S={r.randrange(5, 60)}", "FEATURE_NEW_CHECKOUT=true",
        "REDIS_URL=redis://cache.internal:6379/0", f"DB_POOL_SIZE={r.randrange(5, 40)}",
        "DB_USER=reporting_ro", "DB_PASSWORD=****", f"OTEL_SAMPLE_RATE=0.{r.randrange(1, 9)}",
        "S3_BUCKET=acme-reports", f"RETRY_MAX={r.randrange(2, 9)}", "TZ=UTC",
        f"GUNICORN_WORKERS={r.randrange(2, 16)}",
    ]  # fmt: skip
    lines.insert(r.randrange(3, len(lines)), f"{key}={value}")
    return "read_file", {"path": path}, "\n".join(lines)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], style: str) -> str:
    if style == "csv":
        return "\n".join(",".join(row) for row in [header, *rows])
    if style == "md":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))

    body = [line(header), "-+-".join("-" * w for w in widths), *map(line, rows)]
    return "\n".join([*body, f"({len(rows)} rows)"])


def _with_row(rows: list[list[str]], row: list[str], rng: random.Random) -> list[list[str]]:
    rows.insert(rng.randrange(len(rows) + 1), row)
    return rows


def _catalog(d: Draw, value: str) -> Tool:
    names = ["auth-gateway", "search-api", "ledger-sync", "notify", "pdf-render", "fx-rates"]
    rows = [[n, d("person"), d.rng.choice(["1", "2", "3"]), "#team-" + n] for n in names]
    rows = _with_row(rows, ["billing-export", value, "2", "#team-billing"], d.rng)
    query = "SELECT service, owner, tier, channel FROM service_catalog ORDER BY service;"
    return "run_sql", {"query": query}, _table(["service", "owner", "tier", "channel"], rows, "sql")


def _issue(d: Draw, value: str) -> Tool:
    comments = [
        {"author": d("person"), "body": "Still happening on the latest build."},
        {"author": d("person"), "body": "Upload retries look fine locally."},
    ]
    issue = {
        "number": 482, "title": "Flaky upload in the import wizard", "state": "open",
        "labels": ["bug", "flaky", "frontend"], "assignee": {"name": value, "team": "web"},
        "milestone": "Q4 cleanup", "created_at": "2026-11-02T09:14:00Z", "comments": comments,
        "reactions": {"+1": 3}, "linked_prs": [],
    }  # fmt: skip
    return "get_issue", {"number": 482}, json.dumps(issue, indent=2, ensure_ascii=False)


def _kubectl(d: Draw, value: str) -> Tool:
    r = d.rng
    ip = f"10.0.{r.randrange(1, 9)}.{r.randrange(10, 250)}"
    text = (
        f"Name:         scheduler-0\nNamespace:    jobs\nPriority:     0\n"
        f"Node:         {value}/{ip}\nStart Time:   Wed, 25 Nov 2026 03:12:44 +0000\n"
        f"Labels:       app=scheduler\n              controller-revision-hash=scheduler-7c9\n"
        f"Status:       Running\nIP:           10.244.{r.randrange(1, 9)}.{r.randrange(10, 99)}\n"
        f"Containers:\n  scheduler:\n    Image:   registry.internal/scheduler:stable\n"
        f"    Limits:  cpu: 500m  memory: 512Mi\n    Ready:   True\n    Restart Count: 0\n"
        f"Events:       <none>"
    )
    return "kubectl", {"args": "describe pod scheduler-0 -n jobs"}, text


def _helm(d: Draw, value: str) -> Tool:
    r = d.rng
    text = (
        f"replicaCount: {r.randrange(2, 9)}\nimage:\n  repository: registry.internal/session-svc\n"
        f"  tag: stable\nresources:\n  limits:\n    cpu: 750m\n    memory: 768Mi\n"
        f"cache:\n  host: {value}\n  port: 6379\n  tls: true\n  db: {r.randrange(0, 9)}\n"
        f"ingress:\n  enabled: true\n  className: nginx\nautoscaling:\n  enabled: true\n"
        f"  maxReplicas: {r.randrange(10, 30)}\npodDisruptionBudget:\n  minAvailable: 1"
    )
    return "read_file", {"path": "charts/session-svc/values-prod.yaml"}, text


def _rota(d: Draw, value: str) -> Tool:
    rows = [["W45", d("person"), d("person")], ["W46", d("person"), d("person")]]
    rows += [["W47 (this week)", value, d("person")], ["W48", d("person"), d("person")]]
    text = _table(["week", "primary", "secondary"], rows, "md")
    return "read_file", {"path": "docs/oncall/payments.md"}, "# Payments on-call\n\n" + text


def _hits(hits: Sequence[dict[str, str]], query: str) -> Tool:
    return "search_docs", {"q": query}, json.dumps({"query": query, "hits": hits}, indent=2)


NOISE_HITS: Final = (
    {"title": "Getting started", "path": "docs/guides/intro.md", "snippet": "Install the CLI."},
    {"title": "Release process", "path": "docs/guides/release.md", "snippet": "Tag, then ship."},
    {"title": "Glossary", "path": "docs/guides/glossary.md", "snippet": "Terms we use."},
    {"title": "FAQ", "path": "docs/guides/faq.md", "snippet": "Common questions and answers."},
)


def _docs(d: Draw, hit: dict[str, str], query: str) -> Tool:
    hits = list(d.rng.sample(NOISE_HITS, 3))
    hits.insert(d.rng.randrange(4), hit)
    return _hits(hits, query)


def _docs_maintainer(d: Draw, value: str) -> Tool:
    snippet = f"Flag SDK for Python and Go. Maintainer: {value}. Ask in #flags."
    hit = {"title": "Feature flag SDK", "path": "docs/sdk/flags.md", "snippet": snippet}
    return _docs(d, hit, "feature flag sdk maintainer")


def _docs_cap(d: Draw, value: str) -> Tool:
    snippet = f"POST /v2/bulk accepts at most {value} records per request; larger bodies get 413."
    hit = {"title": "Bulk import API", "path": "docs/api/bulk.md", "snippet": snippet}
    return _docs(d, hit, "bulk import limit")


def _docs_runbook(d: Draw, value: str) -> Tool:
    hit = {"title": "Replication slot stuck", "path": value, "snippet": "Drop and recreate."}
    return _docs(d, hit, "replication slot stuck runbook")


def _gateway(d: Draw, value: str) -> Tool:
    r = d.rng
    text = (
        f'listen: 0.0.0.0:8443\ntls:\n  min_version: "1.2"\npartners:\n  auth: mtls\n'
        f"  requests_per_minute: {value}\n  burst: {r.randrange(10, 99)}\n"
        f"  retry_after_s: {r.randrange(5, 60)}\n  log_bodies: false\nupstreams:\n"
        f"  - name: orders\n    timeout_ms: {r.randrange(100, 900)}\n  - name: ledger\n"
        f"    timeout_ms: {r.randrange(100, 900)}\nhealthcheck:\n  path: /healthz\n  interval_s: 10"
    )
    return "read_file", {"path": "gateway/partners.yaml"}, text


def _plans(d: Draw, value: str) -> Tool:
    r = d.rng
    rows = [["starter", str(r.randrange(100, 900)), "0.40"], ["team", "25000", "0.25"]]
    rows += [["growth", value, "0.18"], ["enterprise", "unlimited", "0.00"]]
    query = "SELECT plan, monthly_quota, overage_usd FROM plans;"
    return (
        "run_sql",
        {"query": query},
        _table(["plan", "monthly_quota", "overage_usd"], rows, "sql"),
    )


def _throttle(d: Draw, value: str) -> Tool:
    r = d.rng
    lines = [
        f"02:{m:02d}:{r.randrange(60):02d} INFO vendor-sync batch={r.randrange(100, 999)} ok"
        for m in sorted(r.sample(range(60), 9))
    ]
    warn = f"02:59:{r.randrange(60):02d} WARN upstream throttled: limit={value} req/h exceeded"
    lines.insert(r.randrange(4, 9), warn)
    lines.append("03:00:02 ERROR vendor-sync giving up after 5 retries")
    return "read_logs", {"service": "vendor-sync", "since": "24h"}, "\n".join(lines)


def _sla(d: Draw, value: str) -> Tool:
    r = d.rng
    rows = [["bronze", "99.5", str(r.randrange(600, 999)), "email"]]
    rows += [
        ["silver", "99.9", str(r.randrange(300, 599)), "chat"],
        ["gold", "99.95", value, "phone"],
    ]
    text = _table(["tier", "availability", "p99_ms", "support"], rows, "csv")
    return "read_file", {"path": "contracts/sla.csv"}, text


def _pg_settings(d: Draw, value: str) -> Tool:
    r = d.rng
    rows = [
        ["shared_buffers", "8GB"], ["work_mem", "64MB"], ["max_connections", value],
        ["max_wal_size", "4GB"], ["wal_level", "logical"], ["statement_timeout", "30s"],
        ["idle_in_transaction_session_timeout", "60s"],
        ["max_worker_processes", str(r.randrange(8, 64))],
    ]  # fmt: skip
    r.shuffle(rows)
    query = (
        "SELECT name, setting FROM pg_settings WHERE category LIKE 'Resource%' OR name LIKE 'max%';"
    )
    return "run_sql", {"query": query}, _table(["name", "setting"], rows, "sql")


def _traceback(d: Draw, value: str) -> Tool:
    r = d.rng
    frames = [
        ("/usr/lib/python3.11/asyncio/runners.py", 118, "run"),
        ("/usr/lib/python3.11/asyncio/base_events.py", 653, "run_until_complete"),
        (f"/app/{value}", r.randrange(40, 400), "reconcile"),
        ("/app/.venv/lib/python3.11/site-packages/sqlalchemy/engine/base.py", 1969, "_execute"),
        ("/app/.venv/lib/python3.11/site-packages/asyncpg/connection.py", 1722, "_execute"),
    ]  # fmt: skip
    lines = [f"03:1{i}:0{i} INFO reconcile step {i} done" for i in range(1, 6)]
    lines.append("Traceback (most recent call last):")
    lines += [f'  File "{path}", line {line}, in {name}' for path, line, name in frames]
    lines.append(
        "asyncpg.exceptions.UniqueViolationError: duplicate key value violates unique constraint"
    )
    return "read_logs", {"service": "reconcile", "since": "12h"}, "\n".join(lines)


def _snapshots(d: Draw, value: str) -> Tool:
    snaps = [
        {"DBSnapshotIdentifier": d("snap"), "SnapshotCreateTime": f"2026-11-{day}T03:00:00Z",
         "Status": "available", "AllocatedStorage": 500}
        for day in ("22", "23", "24")
    ]  # fmt: skip
    snaps.append({"DBSnapshotIdentifier": value, "SnapshotCreateTime": "2026-11-25T03:00:00Z",
                  "Status": "available", "AllocatedStorage": 500})  # fmt: skip
    args = {"args": "rds describe-db-snapshots --db-instance-identifier orders"}
    return "aws", args, json.dumps({"DBSnapshots": snaps}, indent=2)


def _deploys(d: Draw, value: str) -> Tool:
    rows = [
        [d("release"), "failed", "2026-11-25 16:02"],
        [d("release"), "rolled_back", "2026-11-25 11:40"],
    ]
    rows += [[value, "succeeded", "2026-11-24 15:12"], [d("release"), "failed", "2026-11-24 09:30"]]
    query = "SELECT release_id, status, finished_at FROM deploys ORDER BY finished_at DESC LIMIT 4;"
    return "run_sql", {"query": query}, _table(["release_id", "status", "finished_at"], rows, "sql")


def _gitlog(d: Draw, value: str) -> Tool:
    messages = [
        "chore: bump dev dependencies", "docs: fix typo in README", "test: cover empty cart",
        "refactor(api): split handlers", "ci: cache pip downloads", "feat(search): facet counts",
    ]  # fmt: skip
    lines = [f"{d('sha')} {message}" for message in messages]
    lines.insert(d.rng.randrange(1, 6), f"{value} fix(ratelimit): count bursts per client")
    return "git", {"args": "log --oneline -7"}, "\n".join(lines)


def _exports(d: Draw, value: str) -> Tool:
    rows = [["2026-11-26", "nightly-ledger", value, "ok"]]
    rows += [
        ["2026-11-26", "crm-sync", "(skipped)", "skipped"],
        ["2026-11-25", "crm-sync", "(none)", "failed"],
    ]
    return (
        "list_exports",
        {"since": "2d"},
        _table(["date", "job", "location", "status"], rows, "md"),
    )


def _package_json(d: Draw, value: str) -> Tool:
    deps = {
        "@fastify/cors": "^8.4.2", "fastify": value, "pino": "^8.16.1", "zod": "^3.22.4",
        "undici": "^5.28.2", "dotenv": "^16.3.1",
    }  # fmt: skip
    body = {"name": "storefront-api", "private": True, "type": "module", "dependencies": deps,
            "scripts": {"start": "node server.js", "test": "vitest run"}}  # fmt: skip
    return "read_file", {"path": "package.json"}, json.dumps(body, indent=2)


def _codeowners(d: Draw, value: str) -> Tool:
    lines = [
        "# CODEOWNERS", f"/api/            {d('person')}", f"/web/            {d('person')}",
        f"/search/indexer/ {value}", f"/infra/          {d('person')}",
        "*.md             docs-team",
    ]  # fmt: skip
    return "read_file", {"path": ".github/CODEOWNERS"}, "\n".join(lines)


BUILDERS: Final[dict[str, Callable[[Draw, str], Tool]]] = {
    "env": lambda d, v: _env(d, "DB_READ_REPLICA_HOST", v, "deploy/reporting-worker/.env"),
    "env_jobs": lambda d, v: _env(d, "WORKER_MAX_INFLIGHT", v, "deploy/worker/.env"),
    "catalog": _catalog, "issue": _issue, "kubectl": _kubectl, "helm": _helm, "rota": _rota,
    "docs_maintainer": _docs_maintainer, "docs_cap": _docs_cap, "docs_runbook": _docs_runbook,
    "gateway": _gateway, "plans": _plans, "throttle_log": _throttle, "sla_csv": _sla,
    "pg_settings": _pg_settings, "traceback": _traceback, "snapshots": _snapshots,
    "deploys": _deploys, "gitlog": _gitlog, "exports": _exports, "package_json": _package_json,
    "codeowners": _codeowners,
}  # fmt: skip

# ---------------------------------------------------------------- noise

TODOS: Final = (
    "handle the empty case", "remove after the refactor", "this should be configurable",
    "we must keep this backwards compatible", "decide whether to cache this", "flaky on CI",
    "rename once the API settles", "don't forget the docs", "check with the team",
)  # fmt: skip
NOISE_MODULES: Final = (
    "helpers", "settings", "http_client", "timeutils", "pagination", "serializers", "cache",
    "retry", "logging_setup", "fixtures", "db_session", "feature_flags", "validators",
)  # fmt: skip
NOISE_TEXT: Final[dict[Lang, dict[str, tuple[str, ...]]]] = {
    "en": {
        "next": ("keep going with the next file", "next one", "ok continue", "go on with the rest",
                 "keep going", "carry on with the next module please"),
        "chat": ("thanks, looks good", "ok cool", "lol fair", "nice", "great, thanks!", "hmm ok",
                 "sounds right", "perfect"),
        "ack": ("Sure.", "Will do.", "Glad it helps.", "Okay."),
        "tests": ("run the tests", "rerun the suite", "tests again please"),
        "ci": ("how's CI looking?", "is the pipeline green?", "check CI"),
        "grep": ("any TODOs left in there?", "grep for TODOs", "what TODOs are left?"),
        "done_file": ("Cleaned up {mod}.py; nothing else stands out.", "{mod}.py looks fine now.",
                      "Tidied {mod}.py, moving on."),
        "done_tests": ("All green.", "Suite passes.", "Tests pass, {n} of them."),
        "done_ci": ("CI is green on main.", "Pipeline passed.", "Latest run succeeded."),
        "done_grep": ("{n} TODOs, none blocking.", "Found {n} TODOs; nothing urgent.",
                      "A few TODOs ({n}), all cosmetic."),
        "noted": ("Noted.", "Got it.", "Okay, noted.", "Understood."),
    },
    "es": {
        "next": ("sigue con el siguiente archivo", "el siguiente", "vale, continúa", "sigue",
                 "adelante con el resto", "sigue con el próximo módulo, porfa"),
        "chat": ("gracias, se ve bien", "vale", "jaja, bueno", "genial", "perfecto, gracias",
                 "ok", "me parece bien", "de acuerdo"),
        "ack": ("Claro.", "Hecho.", "De nada.", "Vale."),
        "tests": ("corre los tests", "vuelve a pasar la suite", "tests otra vez, porfa"),
        "ci": ("¿cómo va la CI?", "¿está verde el pipeline?", "mira la CI"),
        "grep": ("¿quedan TODOs ahí?", "busca los TODOs", "¿qué TODOs quedan?"),
        "done_file": ("Limpié {mod}.py; nada más que destacar.", "{mod}.py ya está bien.",
                      "Ordené {mod}.py, sigo."),
        "done_tests": ("Todo en verde.", "La suite pasa.", "Pasan los tests, {n} en total."),
        "done_ci": ("La CI está verde en main.",
        "El pipeline pasó.", "La última ejecución fue bien."),
        "done_grep": ("{n} TODOs, ninguno bloquea.", "Hay {n} TODOs; nada urgente.",
                      "Unos pocos TODOs ({n}), todos cosméticos."),
        "noted": ("Entendido.", "Apuntado.", "Vale, anotado.", "De acuerdo."),
    },
    "de": {
        "next": ("weiter mit der nächsten Datei", "die nächste", "ok, weiter", "mach weiter",
                 "weiter mit dem Rest", "bitte mit dem nächsten Modul weitermachen"),
        "chat": ("danke, sieht gut aus", "ok cool", "haha, passt", "super", "perfekt, danke!",
                 "hm ok", "klingt gut", "passt"),
        "ack": ("Gern.", "Mache ich.", "Freut mich.", "Okay."),
        "tests": ("lass die Tests laufen", "Suite nochmal bitte", "nochmal testen"),
        "ci": ("wie sieht die CI aus?", "ist die Pipeline grün?", "schau mal in die CI"),
        "grep": ("noch TODOs drin?", "such nach TODOs", "welche TODOs sind übrig?"),
        "done_file": ("{mod}.py aufgeräumt; sonst fällt nichts auf.", "{mod}.py passt jetzt.",
                      "{mod}.py bereinigt, weiter geht's."),
        "done_tests": ("Alles grün.", "Die Suite läuft durch.", "Tests laufen, {n} Stück."),
        "done_ci": ("CI ist grün auf main.", "Pipeline bestanden.", "Letzter Lauf erfolgreich."),
        "done_grep": ("{n} TODOs, keins blockiert.", "{n} TODOs gefunden; nichts Dringendes.",
                      "Ein paar TODOs ({n}), alle kosmetisch."),
        "noted": ("Verstanden.", "Notiert.", "Okay, notiert.", "Alles klar."),
    },
}  # fmt: skip


class Noise:
    """Routine turns: grep hits, pytest logs, CI JSON, file reads, chit-chat. Like a real
    repository, the session's TODOs and test files stay put (a TODO goes once its file is
    cleaned up), so repeated greps and test runs repeat themselves."""

    def __init__(self, rng: random.Random, lang: Lang) -> None:
        self.rng, self.text, self.calls = rng, NOISE_TEXT[lang], 0
        spots = rng.sample([(m, n) for m in NOISE_MODULES for n in range(10, 800, 7)], 36)
        self.todos = sorted((m, n, rng.choice(TODOS)) for m, n in spots)
        self.tests = [(m, rng.randrange(5, 40)) for m in rng.sample(NOISE_MODULES, 8)]

    def say(self, key: str, **values: Any) -> str:
        return self.rng.choice(self.text[key]).format(**values)

    def call(self, name: str, arguments: dict[str, Any], output: str) -> list[Item]:
        self.calls += 1
        call_id = f"call_n{self.calls}"
        return [
            {"type": "function_call", "call_id": call_id, "name": name,
             "arguments": json.dumps(arguments)},
            {"type": "function_call_output", "call_id": call_id, "output": output},
        ]  # fmt: skip

    def turn(self) -> list[Item]:
        r = self.rng
        kind = r.choices(("grep", "tests", "ci", "file", "chat"), (3, 4, 3, 6, 3))[0]
        mod = r.choice(NOISE_MODULES)
        if kind == "chat":
            return [user(self.say("chat")), assistant(self.say("ack"))]
        if kind == "grep":
            hits = [f"src/common/{m}.py:{n}:    # TODO: {todo}" for m, n, todo in self.todos]
            output = "\n".join(hits) or "(no matches)"
            call = self.call("grep", {"pattern": "TODO", "path": "src/"}, output)
            return [user(self.say("grep")), *call, assistant(self.say("done_grep", n=len(hits)))]
        if kind == "tests":
            n = sum(dots for _, dots in self.tests)
            log = [
                "============ test session starts ============",
                "platform linux -- Python 3.11.9, pytest-8.3.3",
                f"collected {n} items",
                "",
            ]
            log += [
                f"tests/unit/test_{m}.py {'.' * dots} [{(i + 1) * 100 // len(self.tests):3d}%]"
                for i, (m, dots) in enumerate(self.tests)
            ]
            log.append(f"============ {n} passed, {r.randrange(1, 9)} warnings in "
                       f"{r.randrange(2, 90)}.{r.randrange(10, 99)}s ============")  # fmt: skip
            call = self.call("run_tests", {"args": "-q"}, "\n".join(log))
            return [user(self.say("tests")), *call, assistant(self.say("done_tests", n=n))]
        if kind == "ci":
            runs = [{"id": r.randrange(10**9, 10**10), "name": "ci", "head_branch": "main",
                     "head_sha": "".join(r.choice("0123456789abcdef") for _ in range(40)),
                     "status": "completed", "conclusion": "success",
                     "run_attempt": 1, "event": "push"} for _ in range(2)]  # fmt: skip
            call = self.call("ci_status", {"branch": "main"}, json.dumps({"workflow_runs": runs}))
            return [user(self.say("ci")), *call, assistant(self.say("done_ci"))]
        code = [f"def {mod}_{i}(value):\n    return value  # simplified" for i in range(6)]
        code += [f"# TODO: {todo}" for m, _, todo in self.todos if m == mod]
        self.todos = [todo for todo in self.todos if todo[0] != mod]  # cleaned up
        call = self.call("read_file", {"path": f"src/common/{mod}.py"}, "\n\n".join(code))
        return [user(self.say("next")), *call, assistant(self.say("done_file", mod=mod))]


# ---------------------------------------------------------------- sessions


@dataclass(frozen=True)
class Fact:
    """A planted fact: the values its probe requires, and the old value for a supersession."""

    category: Category
    kind: Kind
    template: int
    lang: Lang
    values: tuple[str, ...]
    old: str | None = None
    negative: bool = False

    def kept(self, text: str) -> bool:
        if self.negative:
            return all(negated(value, text) for value in self.values)
        return all(occurs(value, text) for value in self.values)

    def stale(self, text: str) -> bool:
        return self.old is not None and is_stale(self.old, text)


@dataclass(frozen=True)
class SessionSpec:
    name: str
    lang: Lang
    turns: int
    plan: tuple[tuple[Category, int], ...]
    agents: bool = False  # a three-agent handoff session


SPECS: Final = (
    SessionSpec("ops-a", "en", 210, (("tool_output", 4),
                                     ("superseded", 3), ("cue_free", 3), ("negative", 3))),
    SessionSpec("web-b", "en", 260, (("tool_output", 5),
                                     ("superseded", 4), ("cue_free", 2), ("negative", 2))),
    SessionSpec("data-c", "en", 300, (("tool_output", 4),
                                      ("superseded", 4), ("cue_free", 3), ("negative", 2))),
    SessionSpec("es", "es", 240, (("multilingual", 10),)),
    SessionSpec("handoff", "en", 320, (("long_handoff", 10),), agents=True),
    SessionSpec("infra-d", "en", 350, (("tool_output", 5),
                                       ("superseded", 3), ("cue_free", 3), ("negative", 3))),
    SessionSpec("de", "de", 280, (("multilingual", 10),)),
    SessionSpec("pay-e", "en", 420, (("tool_output", 4),
                                     ("superseded", 4), ("cue_free", 3), ("negative", 3))),
    SessionSpec("long", "en", 1016, (("long_handoff", 12),)),
    SessionSpec("sup-f", "en", 240, (("tool_output", 5),
                                     ("superseded", 4), ("cue_free", 2), ("negative", 2))),
)  # fmt: skip
QUICK_SCALE: Final = 5  # --quick: a fifth of the turns (at least 60), same facts


@dataclass
class Session:
    """One generated session: its turns (agent, items) and its facts."""

    spec: SessionSpec
    turns: list[tuple[str | None, list[Item]]]
    facts: list[Fact]
    fact_turns: list[list[int]]  # per fact, the turns that state it
    tail: list[list[Item]] = field(default_factory=list)  # more work, if no compaction came


TAIL: Final = 150  # noise turns an agent may still work for until the compaction comes


def _fill(text: str, values: Mapping[str, str]) -> str:
    return text.format(**values)


class Generator:
    """A session from its spec, split and seed; values never repeat within it."""

    def __init__(self, spec: SessionSpec, split: Split, seed: int, turns: int) -> None:
        self.spec, self.split, self.turns = spec, split, turns
        self.rng = random.Random(f"{seed}:{spec.name}:{split}")
        self.draw = Draw(self.rng)
        self.noise = Noise(random.Random(f"{seed}:{spec.name}:noise"), spec.lang)
        self.calls = 0

    def pick(self, category: Category, count: int) -> list[Template]:
        """`count` templates of the category, kinds in turn, from this split's half."""
        mine = [t for t in TEMPLATES if t.category == category and in_split(t, self.split)]
        if category == "multilingual":
            mine = [t for t in mine if t.lang == self.spec.lang]
        kinds = sorted({t.kind for t in mine}, key=KINDS.index)
        self.rng.shuffle(kinds)
        decks = {kind: [t for t in mine if t.kind == kind] for kind in kinds}
        for deck in decks.values():
            self.rng.shuffle(deck)
        # Kinds in turn, each kind's phrasings in turn: no phrasing twice while others are left.
        return [decks[kinds[i % len(kinds)]][i // len(kinds) % len(decks[kinds[i % len(kinds)]])]
                for i in range(count)]  # fmt: skip

    def steps(self, steps: Sequence[Step], values: Mapping[str, str]) -> list[Item]:
        items: list[Item] = []
        for role, text in steps:
            if role == "call":
                name, _, slot = text.partition(":")
                tool, arguments, output = BUILDERS[name](self.draw, values[slot])
                self.calls += 1
                call_id = f"call_f{self.calls}"
                items += [
                    {"type": "function_call", "call_id": call_id, "name": tool,
                     "arguments": json.dumps(arguments)},
                    {"type": "function_call_output", "call_id": call_id, "output": output},
                ]  # fmt: skip
            else:
                filled = _fill(text, values)
                items.append(user(filled) if role == "user" else assistant(filled))
        return items

    def state(self, template: Template) -> tuple[Fact, list[list[Item]]]:
        """The fact and the turn(s) that state it (two for a supersession)."""
        if template.vtype:
            old, new = self.draw(template.vtype), self.draw(template.vtype)
            if template.vtype == "version":
                old, new = sorted((old, new), key=lambda v: tuple(map(int, v.split("."))))
            values = {"old": old, "new": new}
            turns = [self.steps(template.before, values), self.steps(template.steps, values)]
            fact = Fact(
                template.category, template.kind, template.index, template.lang, (new,), old
            )
        else:
            values = {slot: self.draw(slot_type(slot)) for slot in template.slots}
            turns = [self.steps(template.steps, values)]
            fact = Fact(
                template.category, template.kind, template.index, template.lang,
                tuple(values.values()), negative=template.category == "negative",
            )  # fmt: skip
        for items in turns:
            if not any(item.get("type") == "function_call" for item in items):
                items.append(assistant(self.noise.say("noted")))
        return fact, turns

    def build(self) -> Session:
        templates = [t for category, n in self.spec.plan for t in self.pick(category, n)]
        self.rng.shuffle(templates)
        last = int(self.turns * 0.8)  # the rest is noise, so compactions follow every fact
        free = list(range(2, last))
        planned: dict[int, list[Item]] = {}
        facts: list[Fact] = []
        fact_turns: list[list[int]] = []
        for template in templates:
            fact, stated = self.state(template)
            if len(stated) == 1:
                spots = [self.rng.choice(free)]
            else:
                early = [t for t in free if t < last - 20]
                first = self.rng.choice(early[: max(1, len(early) * 2 // 3)])
                spots = [first, self.rng.choice([t for t in free if t > first + 12])]
            for spot, items in zip(spots, stated, strict=True):
                free.remove(spot)
                planned[spot] = items
            facts.append(fact)
            fact_turns.append(spots)
        agent = AGENTS[0] if self.spec.agents else None
        turns: list[tuple[str | None, list[Item]]] = []
        for turn in range(self.turns):
            if agent is not None and turn and turn % 23 == 0:  # hand off to the next agent
                handoff = AGENTS[(AGENTS.index(agent) + 1) % len(AGENTS)]
                output = json.dumps({"assistant": handoff})
                turns.append((agent, self.noise.call(f"transfer_to_{handoff}", {}, output)))
                agent = handoff
            turns.append((agent, planned.get(turn) or self.noise.turn()))
        tail = [self.noise.turn() for _ in range(TAIL)]
        session = Session(self.spec, turns, facts, [], tail)
        session.fact_turns = [
            [self._index(turns, planned[s]) for s in spots] for spots in fact_turns
        ]
        check_probes(session)
        return session

    @staticmethod
    def _index(turns: Sequence[tuple[str | None, list[Item]]], items: list[Item]) -> int:
        return next(i for i, (_, mine) in enumerate(turns) if mine is items)


def check_probes(session: Session) -> None:
    """Every probe string occurs in its fact's own turns and nowhere else, or it proves nothing."""
    every = [items for _, items in session.turns] + session.tail
    texts = [squash(" ".join(text_of(item) for item in items)) for items in every]
    for fact, spots in zip(session.facts, session.fact_turns, strict=True):
        for value in (*fact.values, *([fact.old] if fact.old else [])):
            if not any(occurs(value, texts[spot]) for spot in spots):
                raise RuntimeError(f"generator bug: the {fact.kind} does not state {value!r}")
            for index, text in enumerate(texts):
                if index not in spots and occurs(value, text):
                    raise RuntimeError(f"generator bug: {value!r} also occurs in turn {index}")


def build_session(spec: SessionSpec, split: Split, seed: int, quick: bool) -> Session:
    return Generator(spec, split, seed, build_turns(spec, quick)).build()


# ---------------------------------------------------------------- running

Masking = Literal["off", "on"]


@dataclass(frozen=True, slots=True)
class Observation:
    """One fact after the last compaction of its session, under one strategy and masking."""

    session: str
    category: Category
    kind: Kind
    kept: bool
    stale: bool | None  # None: nothing was superseded


@dataclass(frozen=True, slots=True)
class RunConfig:
    split: Split
    seed: int
    sessions: int
    quick: bool
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None

    def specs(self) -> list[tuple[SessionSpec, int]]:
        """The session specs (cycled past ten, with the next seed) and their seeds."""
        return [(SPECS[i % len(SPECS)], self.seed + i // len(SPECS)) for i in range(self.sessions)]


@dataclass
class ConfigResult:
    strategy: str
    masking: Masking
    observations: list[Observation] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)


async def probe_text(store: SessionStore, session_id: str, view: RowMasking | None) -> str:
    """The active context as the model gets it: the masked view with masking on."""
    if view is None:
        items = await store.load_context(session_id)
    else:
        items = view.view(session_id, await store.context_rows(session_id)).items
    return squash("\n".join(text_of(item) for item in items))


async def run_session(
    manager: CompactionManager, session: Session, session_id: str, view: RowMasking | None
) -> tuple[list[Observation], int]:
    """Append turn by turn, compact at each turn boundary, probe after the last compaction."""
    text, compactions, probed_at = "", 0, -1
    last_fact = max(spot for spots in session.fact_turns for spot in spots)
    agent = session.turns[-1][0]
    more = [(agent, items) for items in session.tail]
    for index, (agent, items) in enumerate([*session.turns, *more]):
        if index >= len(session.turns) and probed_at > last_fact:
            break  # the last fact was compacted: the session may end here
        said = [item for item in items if item.get("role") == "user"]
        done = [item for item in items if item.get("role") != "user"]
        if said:
            await manager.append(session_id, said)
        if done:
            await manager.append(session_id, done, agent=agent)
        outcome = await manager.maybe_compact(session_id)
        if outcome is not None and outcome.compacted:
            compactions += 1
            text, probed_at = await probe_text(manager.store, session_id, view), index
    if probed_at < last_fact:
        raise RuntimeError(f"{session_id}: no compaction after the last fact (turn {last_fact})")
    found = [
        Observation(
            session.spec.name,
            fact.category,
            fact.kind,
            fact.kept(text),
            fact.stale(text) if fact.old else None,
        )
        for fact in session.facts
    ]
    return found, compactions


def summarizer_for(config: RunConfig) -> Summarizer:
    if config.model:
        return OpenAISummarizer(config.model, base_url=config.base_url, api_key=config.api_key)
    return ExtractiveSummarizer()


async def run_config(config: RunConfig, strategy: str, masking: Masking) -> ConfigResult:
    """Every session under one strategy and masking setting, in its own SQLite file."""
    mask = MASKING if masking == "on" else MaskingPolicy()
    policy = POLICY.model_copy(update={"strategy": strategy, "masking": mask})
    result = ConfigResult(strategy, masking)
    summarizer = summarizer_for(config)
    with tempfile.TemporaryDirectory(prefix="eval-state-") as folder:
        url = f"sqlite:///{Path(folder) / 'eval.db'}"
        async with SessionStore(url, model=MODEL, keyring=None, sqlite_synchronous="OFF") as store:
            manager = CompactionManager(
                CompactionConfig(
                    model=MODEL, max_context_tokens=WINDOW, policy=policy, store=store,
                    summarizer=summarizer, record_idle_decisions=False,
                )
            )  # fmt: skip
            view = RowMasking(mask, policy, manager.estimator) if mask.enabled else None
            for number, (spec, seed) in enumerate(config.specs()):
                session = build_session(spec, config.split, seed, config.quick)
                found, count = await run_session(manager, session, f"{spec.name}-{number}", view)
                result.observations += found
                result.compactions.append(count)
    close = getattr(summarizer, "aclose", None)
    if close is not None:
        await close()
    return result


def _run_config_sync(config: RunConfig, strategy: str, masking: Masking) -> ConfigResult:
    return asyncio.run(run_config(config, strategy, masking))


def evaluate(
    config: RunConfig, strategies: Sequence[str], maskings: Sequence[Masking], concurrency: int
) -> list[ConfigResult]:
    """Every (strategy, masking) pair, `concurrency` processes at once; results in order."""
    jobs = [(config, strategy, masking) for strategy in strategies for masking in maskings]
    if concurrency <= 1 or len(jobs) == 1:
        return [_run_config_sync(*job) for job in jobs]
    with ProcessPoolExecutor(concurrency, mp_context=get_context("fork")) as pool:
        futures = [pool.submit(_run_config_sync, *job) for job in jobs]
        return [future.result() for future in futures]


# ---------------------------------------------------------------- reporting


def rate(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return round(sum(values) / len(values), 4) if values else None


def probes(observations: Iterable[Observation]) -> list[bool]:
    """Every probe's pass: kept, and for a superseded fact also not stale."""
    passed: list[bool] = []
    for o in observations:
        passed.append(o.kept)
        if o.stale is not None:
            passed.append(not o.stale)
    return passed


def summary(observations: Sequence[Observation]) -> dict[str, Any]:
    stale = [o.stale for o in observations if o.stale is not None]
    passed = probes(observations)
    return {
        "overall": rate(passed),
        "passed": sum(passed),
        "probes": len(passed),
        "facts": len(observations),
        "categories": {
            c: rate(probes(o for o in observations if o.category == c)) for c in CATEGORIES
        },
        "kinds": {k: rate(probes(o for o in observations if o.kind == k)) for k in KINDS},
        "stale_rate": rate(stale),
        "stale": sum(stale),
        "superseded": len(stale),
    }  # fmt: skip


def failures(row: Mapping[str, Any]) -> list[str]:
    found = []
    if (row["overall"] or 0) < OVERALL_TARGET:
        found.append(f"overall {percent(row['overall'])} < {OVERALL_TARGET:.0%}")
    for category, value in row["categories"].items():
        if value is not None and value < CATEGORY_TARGET:
            found.append(f"{category} {percent(value)} < {CATEGORY_TARGET:.0%}")
    if (row["stale_rate"] or 0) > STALE_LIMIT:
        found.append(f"stale rate {percent(row['stale_rate'])} > {STALE_LIMIT:.0%}")
    return found


def build_report(
    config: RunConfig, summarizer: str, results: Sequence[ConfigResult]
) -> dict[str, Any]:
    every = [o for result in results for o in result.observations]
    rows = []
    for result in results:
        row = {
            "strategy": result.strategy,
            "masking": result.masking,
            **summary(result.observations),
        }
        row["compactions"] = result.compactions
        row["failures"] = failures(row)
        rows.append(row)
    total = summary(every)
    return {
        "summarizer": summarizer,
        "split": config.split,
        "seed": config.seed,
        "sessions": [f"{spec.name} ({spec.lang}, {build_turns(spec, config.quick)} turns)"
                     for spec, _ in config.specs()],
        "quick": config.quick,
        "window": WINDOW,
        "facts_per_setting": len(results[0].observations) if results else 0,
        "total": total,
        "configs": rows,
        "passed": all(not row["failures"] for row in rows),
    }  # fmt: skip


def build_turns(spec: SessionSpec, quick: bool) -> int:
    return max(60, spec.turns // QUICK_SCALE) if quick else spec.turns


def markdown(report: Mapping[str, Any]) -> str:
    total = report["total"]
    lines = [
        f"summarizer {report['summarizer']}, split {report['split']}, seed {report['seed']}, "
        f"window {report['window']} tokens, {len(report['sessions'])} sessions "
        f"({report['facts_per_setting']} facts per setting): " + ", ".join(report["sessions"]),
        "",
        f"**Overall {percent(total['overall'])}** ({total['passed']}/{total['probes']} probes "
        f"over every strategy and masking setting); **stale rate {percent(total['stale_rate'])}** "
        f"({total['stale']}/{total['superseded']} superseded values still shown as current).",
        "",
        "| category | kept |", "| --- | ---: |",
        *(f"| {c} | {percent(v)} |" for c, v in total["categories"].items() if v is not None),
        "", "| kind | kept |", "| --- | ---: |",
        *(f"| {k} | {percent(v)} |" for k, v in total["kinds"].items() if v is not None),
        "",
        "| strategy | masking | overall | " + " | ".join(CATEGORIES) + " | stale | compactions |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in CATEGORIES) + " | ---: | ---: |",
    ]  # fmt: skip
    for row in report["configs"]:
        cells = " | ".join(percent(row["categories"][c]) for c in CATEGORIES)
        lines.append(
            f"| {row['strategy']} | {row['masking']} | {percent(row['overall'])} | {cells} | "
            f"{percent(row['stale_rate'])} | {sum(row['compactions'])} |"
        )
    targets = (
        f"Targets per strategy and masking: overall >= {OVERALL_TARGET:.0%}, every category >= "
        f"{CATEGORY_TARGET:.0%}, stale rate <= {STALE_LIMIT:.0%}: "
    )
    return "\n".join([*lines, "", targets + ("PASS." if report["passed"] else "FAIL.")])


# ---------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[1].strip())
    parser.add_argument("--split", choices=("tuning", "heldout"), default="heldout")
    parser.add_argument(
        "--sessions",
        type=int,
        default=len(SPECS),
        help=f"sessions per setting (default {len(SPECS)}; past that, new seeds)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a {QUICK_SCALE}th of the turns (at least 60), the same facts",
    )
    parser.add_argument(
        "--strategy",
        action="append",
        choices=sorted(BUILTIN_STRATEGIES),
        help="repeatable; default: every built-in strategy",
    )
    parser.add_argument("--masking", choices=("on", "off", "both"), default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=2,
        help="settings run at once, one process each (does not change the numbers)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--check", action="store_true", help="exit 1 below the thresholds")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (needs --model)")
    parser.add_argument("--model", help="summarize with this model instead of extractively")
    parser.add_argument("--api-key", help="key for the endpoint (default: $OPENAI_API_KEY)")
    args = parser.parse_args(argv)
    if min(args.sessions, args.concurrency) < 1:
        parser.error("--sessions and --concurrency must be at least 1")
    if (args.base_url or args.api_key) and not args.model:
        parser.error("--base-url and --api-key need --model NAME (the model to summarize with)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    config = RunConfig(
        args.split, args.seed, args.sessions, args.quick, args.model, args.base_url, args.api_key
    )
    strategies = tuple(dict.fromkeys(args.strategy or BUILTIN_STRATEGIES))
    maskings: tuple[Masking, ...] = ("off", "on") if args.masking == "both" else (args.masking,)
    results = evaluate(config, strategies, maskings, args.concurrency)
    name = f"openai:{args.model}" if args.model else ExtractiveSummarizer().name
    report = build_report(config, name, results)
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    for row in report["configs"]:
        for line in row["failures"]:
            print(
                f"below threshold: {row['strategy']} masking {row['masking']}: {line}",
                file=sys.stderr,
            )
    return 1 if args.check and not report["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
