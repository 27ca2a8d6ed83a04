"""A deterministic, offline summarizer: the embedded default and the fallback of last resort.

It never paraphrases. Sentences are kept verbatim (a reason stays with the sentence it
explains) and filed into sections by keyword rules; the prior summary is parsed back into the
same facts and carried line for line, so a fact survives any number of rounds (no
summary-of-summary drift) until the token budget forces the lowest-priority lines out: tool
chatter first, then notes and file names, then preferences and actions; goals, ids,
constraints and decisions last; the latest user request never (it is only truncated when it
alone is too long).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ...._tokens import TokenEstimator, estimator_for_model
from ..._marker import SUMMARY_LINE
from .._collapse import collapse_lines, is_progress, routine, templates_of
from .._entities import ENTITY_GROUPS, entities, entity_matches
from .._prompts import Entry, transcript_entries
from .._sentences import split_sentences
from .._subjects import (
    Statement,
    claim_of,
    settle,
    strip_was,
    values_in,
    was_note,
    with_transition,
)
from .._summarizer import SummaryRequest, SummaryResult
from .._supersede import superseding
from .._tool_state import tool_facts

__all__ = [
    "CARRIED_TITLE", "NO_CONTEXT", "ExtractiveSummarizer", "SheetLine", "current_state",
    "summary_facts",
]  # fmt: skip

NO_CONTEXT: Final = "No prior context: the compacted history held nothing to keep."

FactKind = Literal[
    "pinned", "goal", "state", "entity", "constraint", "decision", "change", "action",
    "preference", "note", "tool",
]  # fmt: skip

# Lower drops first when the summary must shrink.
_PRIORITY: Final[Mapping[FactKind, int]] = {
    "tool": 0,
    "note": 1,
    "entity": 2,
    "preference": 3,
    "action": 4,
    "change": 4,
    "goal": 5,
    "state": 5,
    "decision": 6,
    "constraint": 6,
    "pinned": 7,
}
_TAGS: Final[Mapping[FactKind, str]] = {kind: kind.capitalize() for kind in _PRIORITY}

_KIND_OF_TAG: Final[Mapping[str, FactKind]] = {tag.lower(): kind for kind, tag in _TAGS.items()}

_MAX_SENTENCE_CHARS: Final = 400
_HEAD_CHARS: Final = 100
_ELLIPSIS: Final = "…"


@dataclass(frozen=True, slots=True)
class _Fact:
    kind: FactKind
    text: str  # verbatim: a sentence, an entity, or a line carried from the prior summary
    label: str = ""  # the entity's group ("files"), or the file a change touched
    ledger: str = ""  # decision :: rationale :: inputs :: outputs, for the decision log
    weak: bool = False  # read from a tool output or reasoning, not stated by a participant
    silent: bool = False  # never shown: a tool output's value that may only replace others

    def body(self) -> str:
        return f"{self.label}: {self.text}" if self.kind == "change" and self.label else self.text


# ---------------------------------------------------------------- layouts


@dataclass(frozen=True, slots=True)
class _Section:
    title: str
    kinds: tuple[FactKind, ...]
    ledger: str = ""  # id prefix ("S" -> [S1], [S2], ...); empty renders "- " bullets

    @property
    def mixed(self) -> bool:
        """Sections holding several kinds tag each line with its kind."""
        return len([kind for kind in self.kinds if kind != "entity"]) > 1


@dataclass(frozen=True, slots=True)
class _Layout:
    sections: tuple[_Section, ...]
    tool_limit: int | None  # most recent tool results kept; None keeps all


_REQUEST_TITLE: Final = "Latest request"
_REQUEST: Final = _Section(_REQUEST_TITLE, ())
_TOOLS: Final = _Section("Tool results", ("tool",))
# Values read from tool outputs and used afterwards, one current value per subject.
_STATE: Final = _Section("Current state", ("state",))


def _context(*kinds: FactKind) -> _Section:
    return _Section("Context", (*kinds, "entity"))


_LAYOUTS: Final[Mapping[str, _Layout]] = {
    "task_state": _Layout(
        (
            _Section("Pinned facts", ("pinned",)),
            _Section("Goals", ("goal",)),
            _STATE,
            _Section("Entities", ("entity",)),
            _Section("Constraints", ("constraint",)),
            _Section("Decisions", ("decision",)),
            _Section("Changes", ("change",)),
            _Section("Open actions", ("action",)),
            _Section("Preferences", ("preference",)),
            _Section("Notes", ("note",)),
            _REQUEST,
            _TOOLS,
        ),
        tool_limit=6,
    ),
    "brief": _Layout(
        (
            _Section(
                "Brief",
                ("pinned", "goal", "constraint", "decision", "change", "action", "preference"),
            ),
            _STATE,
            _REQUEST,
            _Section("Refs", ("entity",)),
            _Section("Notes", ("note",)),
        ),
        tool_limit=0,
    ),
    "decision_log": _Layout(
        (
            _Section("Decision ledger", ("decision",), ledger="S"),
            _STATE,
            _context("pinned", "goal", "constraint", "change", "action", "preference", "note"),
            _REQUEST,
        ),
        tool_limit=0,
    ),
    "code_delta": _Layout(
        (
            _Section("Code changes", ("change",)),
            _STATE,
            _Section("Follow-ups", ("action",)),
            _context("pinned", "goal", "constraint", "decision", "preference", "note"),
            _REQUEST,
            _TOOLS,
        ),
        tool_limit=6,
    ),
    "step_ledger": _Layout(
        (
            _Section("Steps", ("tool", "change"), ledger="S"),
            _STATE,
            _Section("Open actions", ("action",)),
            _context("pinned", "goal", "constraint", "decision", "preference", "note"),
            _REQUEST,
        ),
        tool_limit=None,
    ),
    "requirements_ledger": _Layout(
        (
            _Section("Requirements", ("goal", "constraint", "preference"), ledger="R"),
            _STATE,
            _Section("Decisions", ("decision",)),
            _Section("Open actions", ("action",)),
            _context("pinned", "change", "note"),
            _REQUEST,
        ),
        tool_limit=0,
    ),
}

# Parsing a prior summary: single-kind sections take their lines verbatim, mixed sections
# read the kind from each line's tag. Derived from the layouts so the two never disagree.
# The fact sheet's re-inserted lines (factsheet.py) are tagged like a mixed section's.
CARRIED_TITLE: Final = "Carried facts"
_SECTION_KINDS: Final[Mapping[str, FactKind | None]] = {
    **{
        section.title.lower(): None if section.mixed else section.kinds[0]
        for layout in _LAYOUTS.values()
        for section in layout.sections
        if section.kinds
    },
    CARRIED_TITLE.lower(): None,
}

# Ledger lines ("decision :: rationale :: inputs :: outputs") are carried as written.
_LEDGER_TITLES: Final = frozenset(
    section.title.lower()
    for layout in _LAYOUTS.values()
    for section in layout.sections
    if section.ledger
)


# ---------------------------------------------------------------- rules

_I = re.IGNORECASE
_PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|preference|please (?:always|never)|always (?:use|run|write|add|"
    r"include|keep|prefer)|i (?:really )?(?:like|love|hate|dislike)|(?:don't|do not) like|"
    r"likes|dislikes|i'd rather|would rather|rather than|stick (?:to|with))\b",
    _I,
)
_GOAL = re.compile(
    r"\b(?:goals?|objectives?|the aim|aim(?:ing)? to|success criteri(?:a|on)|acceptance "
    r"criteri(?:a|on)|definition of done|done when|the task is|deliverables?|we want to|"
    r"i want to|i'd like to|we'd like to|trying to|target is|what matters|matters most|"
    r"(?:top|main) priority)\b",
    _I,
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|(?<!keep )(?<!continue )go(?:ing)? with|chose|chosen|"
    r"choose to|opted|opt for|"
    r"settled on|will use|we'll use|i'll use|let's use|switch(?:ed)? to|agreed|picked)\b|"
    r"^(?:ok(?:ay)?,? )?(?:please )?use\b",
    _I,
)
_CHANGE = re.compile(
    r"\b(?:added|changed|modified|updated|refactored|renamed|removed|deleted|fixed|created|"
    r"moved|implemented|introduced|replaced|rewrote|rewritten|edited|patched|bumped|extracted|"
    r"reverted|migrated|wrote)\b",
    _I,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|shall|never|should not|shouldn't|require[sd]?|requirements?|mandatory|"
    r"constraints?|non-negotiable|make sure|ensure|keep in mind|"
    r"not allowed|forbidden|prohibited|only use|deadline|due (?:by|on|date)|no later than|"
    r"budgets?|cost cap|slas?|slos?|p9\d|latency|uptime|compliance|compliant|gdpr|hipaa|pci|"
    r"soc ?2|iso ?27001|security|encrypt\w*|pii|at most|at least|no more than|limit(?:ed)? to|"
    r"capped at)\b|^(?:please )?(?:do not|don't)\b(?! forget)|"
    r"\bby (?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|eod|end of (?:day|week|month|quarter|"
    r"sprint))\b",
    _I,
)
_AS_REASON = re.compile(r"[,;]\s+(?:as|since|so|weil|da|porque|ya que|pues)\b", re.IGNORECASE)
_RATIONALE = re.compile(r"\b(?:because|since|so that|given that|due to|instead of|rationale)\b", _I)
# A sentence that only explains the one before it: "Use X. Reason: Y." is one fact, not two.
_REASON_LEAD = re.compile(
    r"^(?:(?:the )?(?:reasons?|rationale|why)\s*:|the reason (?:is|being|was)\b|"
    r"(?:that|this|it)(?:'s| is| was) because\b|because\b)",
    _I,
)
_ACTION = re.compile(
    r"\b(?:todo|to-do|fixme|next steps?|need to|needs to|still need|have to|has to|blocked|"
    r"blockers?|blocking|pending|waiting (?:on|for)|follow[- ]ups?|remaining|outstanding|"
    r"action items?|open (?:items?|questions?)|not yet|unresolved|tbd|will need|should|"
    r"(?:don't|do not) forget|remember to)\b",
    _I,
)
_WRITE_TOOL = re.compile(
    r"write|edit|patch|apply|create|update|replace|delete|remove|rename|move|insert|append|save",
    _I,
)
_PATH_KEYS: Final = ("path", "paths", "file", "file_path", "filepath", "filename", "target_file")

# Checked in order on the sentence with its entities masked ("requirements-dev.txt" is a file,
# not a requirement): an explicit label wins, then the first keyword rule that matches.
_RULES: Final[tuple[tuple[FactKind, re.Pattern[str]], ...]] = (
    ("goal", re.compile(r"^(?:goals?|objectives?|(?:success|acceptance) criteri(?:a|on)):", _I)),
    ("constraint", re.compile(r"^(?:constraints?|requirements?):", _I)),
    ("decision", re.compile(r"^decisions?:", _I)),
    (
        "action",
        re.compile(r"^(?:todo|fixme|next steps?|blockers?|blocked|(?:action|open) items?):", _I),
    ),
    ("preference", re.compile(r"^preferences?:", _I)),
    ("preference", _PREFERENCE),
    ("goal", _GOAL),
    ("decision", _DECISION),
    ("change", _CHANGE),  # only when the sentence names a file
    ("constraint", _CONSTRAINT),
    ("decision", _RATIONALE),
    ("action", _ACTION),
)

# Pleasantries and narration: never worth a note on their own.
_FILLER = re.compile(
    r"^(?:sure|ok(?:ay)?|thanks?|thank you|great|got it|will do|sounds good|let me|i'll|"
    r"here is|here's|checking|running|looking|that looks)\b",
    _I,
)

_CODE_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_HEADER = re.compile(r"^(?:#{1,6}\s+(.+?)|\*\*(.+?)\*\*|([A-Z][A-Za-z /-]{1,40}):)\s*:?\s*$")
_LEDGER_ID = re.compile(r"^\[[A-Za-z]*\d+\]\s*")
_TAGGED = re.compile(r"^([A-Za-z]+):\s+(.*)$")
_CHANGE_BODY = re.compile(r"^(\S+): (.*)$")
_LEDGER_SEPARATOR: Final = " :: "
_STATE_KEY: Final = re.compile(r"^(.+?) = |^(\S.*? row [^:]+):")
# A number or an id of any shape ("order 7697", "500 EUR", "step 212", "INC0042"): a sentence
# that names one says something that cannot be guessed again.
_IDENTIFIER = re.compile(r"\b\w*\d\w*\b")
_WORD = re.compile(r"[a-z0-9]+(?:[._/:-][a-z0-9]+)*")
_NAME = re.compile(r"[\w,;)] ([A-Z][a-z]+)\b")  # capitalized inside a sentence: a name


def _squash(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary; short text is returned unchanged."""
    text = _squash(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut + _ELLIPSIS


def _sentences(text: str) -> Iterator[str]:
    """Prose sentences of a message; code blocks are not prose and are skipped."""
    for line in _CODE_FENCE.sub("\n", text).splitlines():
        for sentence in split_sentences(_BULLET.sub("", line.strip())):
            if any(char.isalnum() for char in sentence):
                yield _clip(sentence, _MAX_SENTENCE_CHARS)


def _classify(sentence: str) -> FactKind | None:
    """The section a sentence belongs to; the order settles sentences that fit several."""
    if sentence.rstrip().endswith("?"):
        return None  # a question decides nothing; once answered it is history
    found = entity_matches(sentence)
    masked, names_file = sentence, False
    for start, end, group, _ in reversed(found):
        masked = masked[:start] + "\u00a7" + masked[end:]
        names_file = names_file or group == "files"
    return next(
        (
            kind
            for kind, pattern in _RULES
            if pattern.search(masked) and (kind != "change" or names_file)
        ),
        None,
    )


def _worth_noting(sentence: str, *, user: bool) -> bool:
    """Unfiled sentences are kept when they name something, or when the user said them.

    Questions are not: once answered they are history, and what they name is kept as
    entities anyway.
    """
    if sentence.rstrip().endswith("?"):
        return False
    if entities(sentence) or _IDENTIFIER.search(sentence):
        return True
    return user and len(sentence.split()) >= 4 and not _FILLER.match(sentence)


def _head(text: str, limit: int = _HEAD_CHARS) -> str:
    """The first non-empty line, clipped: enough to recognize a tool result."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _clip(first, limit) or "(empty)"


# ---------------------------------------------------------------- reading the prior summary


@dataclass(slots=True)
class _Prior:
    facts: list[_Fact] = field(default_factory=list)
    request: str | None = None


def _section_title(line: str) -> str | None:
    match = _HEADER.match(line)
    if match is None:
        return None
    return next(group for group in match.groups() if group is not None).strip().lower()


def _parse_summary(text: str) -> _Prior:
    """Facts of a summary this class wrote (exactly) or of other text (sentence by sentence)."""
    prior = _Prior()
    title: str | None = None
    for raw in SUMMARY_LINE.sub("", text).splitlines():
        line = raw.strip()
        if not line or line == NO_CONTEXT:
            continue
        if title == _REQUEST_TITLE.lower() and prior.request is None:
            prior.request = _squash(line)
            continue
        new_title = _section_title(line)
        if new_title is not None:
            title = new_title
            continue
        body = _BULLET.sub("", _LEDGER_ID.sub("", line))
        prior.facts.extend(_parse_line(body, _SECTION_KINDS.get(title or "", None), title))
    return prior


def _parse_line(body: str, kind: FactKind | None, title: str | None) -> list[_Fact]:
    known_mixed = title in _SECTION_KINDS and kind is None
    tagged = _TAGGED.match(body)
    if tagged and tagged.group(1) in ENTITY_GROUPS and (kind == "entity" or known_mixed):
        values = tagged.group(2).split(", ")
        return [_Fact("entity", value, label=tagged.group(1)) for value in values if value]
    if kind == "entity":  # written by someone else: keep what it names
        found = entities(body)
        return [_Fact("entity", v, label=g) for g, v in found] or [_Fact("note", body)]
    if known_mixed and tagged and tagged.group(1).lower() in _KIND_OF_TAG:
        kind, body = _KIND_OF_TAG[tagged.group(1).lower()], tagged.group(2)
    if kind == "decision" and title in _LEDGER_TITLES and _LEDGER_SEPARATOR in body:
        # A ledger line: keep it as written, but compare the decision by what it says, so
        # the same decision read again from the transcript is recognized as a duplicate.
        decision, rationale = [*body.split(_LEDGER_SEPARATOR), "-"][:2]
        said = decision if rationale == "-" else f"{decision} {rationale}"
        return [_Fact("decision", said, ledger=body)]
    if kind == "change":
        change = _CHANGE_BODY.match(body)
        return [
            _Fact("change", change.group(2), label=change.group(1)) if change else _Fact(kind, body)
        ]
    if kind == "state":  # "deploy/prod.yaml: database.read_replica = db-7": keyed by its key
        keyed = _STATE_KEY.match(strip_was(body))
        label = next((group for group in keyed.groups() if group), "") if keyed else ""
        return [_Fact(kind, body, label=label)]
    if kind is not None:
        return [_Fact(kind, body)]
    facts = [_Fact(_classify(sentence) or "note", sentence) for sentence in _sentences(body)]
    return facts + [_Fact("entity", value, label=group) for group, value in entities(body)]


@dataclass(frozen=True, slots=True)
class SheetLine:
    """One fact of a summary's fact sheet, as a line that parses back into the same fact."""

    kind: str
    text: str  # what must still be said: the sentence, or the entity's value
    line: str  # "Goal: ...", or "files: corpus-v3.parquet" for an entity


def summary_facts(text: str) -> list[SheetLine]:
    """The facts a summary states (written by any summarizer), deduplicated, in order."""
    sheet: list[SheetLine] = []
    # A fact stated twice (in prose, and tagged among the carried facts) keeps its kind.
    parsed = sorted(_parse_summary(text).facts, key=lambda fact: fact.kind == "note")
    for fact in _dedupe(parsed):
        if fact.kind == "entity":
            sheet.append(SheetLine("entity", fact.text, f"{fact.label}: {fact.text}"))
        else:
            said = fact.body()
            sheet.append(SheetLine(fact.kind, said, f"{_TAGS[fact.kind]}: {said}"))
    return sheet


# ---------------------------------------------------------------- reading the items


def _json_object(text: str) -> Mapping[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _paths_in(arguments: str) -> list[str]:
    """File paths a tool call names in its arguments (top level or one object down)."""
    args = _json_object(arguments)
    scopes = [args, *(value for value in args.values() if isinstance(value, Mapping))]
    paths: list[str] = []
    for scope in scopes:
        for key in _PATH_KEYS:
            value = scope.get(key)
            values = value if isinstance(value, list) else [value]
            paths.extend(_squash(v) for v in values if isinstance(v, str) and v.strip())
    return list(dict.fromkeys(paths))


def _is_summary(entry: Entry) -> bool:
    return entry.kind == "message" and SUMMARY_LINE.match(entry.text) is not None


@dataclass(slots=True)
class _Reader:
    """Turns transcript entries into facts, remembering what each decision was based on."""

    entries: list[Entry]
    facts: list[_Fact] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)  # summaries found among the items
    last_input: str = "-"

    def read(self, skip: Entry | None, kept: Sequence[str] = ()) -> None:
        """File every entry; `kept` is what is said after them (it can use a tool's value)."""
        outputs: dict[str | None, Entry] = {
            e.call_id: e for e in self.entries if e.kind == "tool_output" and e.call_id
        }
        called = {e.call_id for e in self.entries if e.kind == "tool_call"}
        paths = {
            e.call_id: found[0]
            for e in self.entries
            if e.kind == "tool_call" and (found := _paths_in(e.text))
        }
        used: dict[int, list[_Fact]] = {}
        for at, fact in tool_facts(self.entries, paths, kept):
            subject = fact.subject if fact.keyed else ""
            state = _Fact(
                "state", fact.line(), label=subject, weak=not fact.used, silent=fact.silent
            )
            used.setdefault(at, []).append(state)
        for position, entry in enumerate(self.entries):
            if entry is skip:
                continue
            if _is_summary(entry):
                self.embedded.append(entry.text)
            elif entry.kind == "tool_call":
                self._call(entry, outputs.get(entry.call_id))
            elif entry.kind == "tool_output":
                if entry.call_id not in called:
                    self.facts.append(
                        _Fact("tool", f"{entry.label or 'tool'}: {_head(entry.text)}")
                    )
                # Read by its structure, not as prose: only the values used afterwards.
                self.facts.extend(used.get(position, ()))
                self.last_input = f"{entry.label or 'tool'} output: {_head(entry.text, 60)}"
            else:
                user = entry.kind == "message" and entry.label == "user"
                self.read_text(entry.text, position, weak=entry.kind != "message", user=user)
                if user:
                    self.last_input = f"user: {_head(entry.text, 60)}"

    def read_text(self, text: str, position: int, *, weak: bool, user: bool = False) -> None:
        """File each sentence; participants' sentences also yield entities and notes."""
        previous: tuple[str, FactKind | None, int | None] | None = None  # sentence, kind, fact
        for sentence in _sentences(text):
            # In tool output a reason only joins a fact already kept, never starts one.
            if (
                previous is not None
                and (not weak or previous[2] is not None)
                and _REASON_LEAD.match(sentence)
            ):
                self._explain(previous, sentence, position, weak)
                previous = None
                continue
            kind = _classify(sentence)
            if weak and kind == "change":
                # Tool output and reasoning: keep the rules and decisions they state, not
                # every file they happen to mention.
                kind = None
            elif not weak and kind is None and _worth_noting(sentence, user=user):
                kind = "note"
            index = None
            if kind is not None:
                index = len(self.facts)
                self.facts.append(self._fact(kind, sentence, position, weak))
            previous = (sentence, kind, index)
        if not weak:
            self.facts.extend(
                _Fact("entity", value, label=group) for group, value in entities(text)
            )

    def _explain(
        self,
        previous: tuple[str, FactKind | None, int | None],
        reason: str,
        position: int,
        weak: bool,
    ) -> None:
        """Join a reason to the sentence it explains; an explained unfiled remark is a decision."""
        sentence, kind, index = previous
        if kind is None or kind == "note":
            kind = "decision"
        fact = self._fact(kind, sentence, position, weak, reason=reason)
        if index is None:
            self.facts.append(fact)
        else:
            self.facts[index] = fact

    def _fact(
        self, kind: FactKind, sentence: str, position: int, weak: bool, reason: str = ""
    ) -> _Fact:
        text = f"{sentence} {reason}" if reason else sentence
        if kind == "change":
            path = next(value for group, value in entities(sentence) if group == "files")
            return _Fact(kind, text, label=path, weak=weak)
        if kind != "decision":
            return _Fact(kind, text, weak=weak)
        split = None if reason else _RATIONALE.search(sentence)
        decision = sentence[: split.start()].rstrip(" ,;:-") if split else sentence
        rationale = reason or (sentence[split.start() :] if split else "-")
        ledger = _LEDGER_SEPARATOR.join(
            [decision or sentence, rationale, self.last_input, self._later(position)]
        )
        return _Fact(kind, text, ledger=ledger, weak=weak)

    def _later(self, position: int) -> str:
        """Tools called after a decision, up to the next user message: what it led to."""
        names: list[str] = []
        for entry in self.entries[position + 1 :]:
            if entry.kind == "message" and entry.label == "user":
                break
            if entry.kind == "tool_call" and entry.label not in names:
                names.append(entry.label)
        return ", ".join(names[:3]) or "-"

    def _call(self, call: Entry, output: Entry | None) -> None:
        result = _head(output.text) if output else "no output yet"
        paths = _paths_in(call.text)
        self.facts.extend(_Fact("entity", path, label="files") for path in paths)
        if paths and _WRITE_TOOL.search(call.label):
            # An edit is a change to the code, not tool chatter.
            changes = (_Fact("change", f"{call.label} -> {result}", label=p) for p in paths)
            self.facts.extend(changes)
            return
        name = " ".join(part for part in (call.label or "tool", _clip(call.text, 80)) if part)
        self.facts.append(_Fact("tool", f"{name}: {result}"))


# ---------------------------------------------------------------- merging and rendering


def _stated(entries: Sequence[Entry]) -> list[str]:
    """The participants' sentences, oldest first (tool output states nothing here)."""
    return [
        sentence
        for entry in entries
        if entry.kind == "message" and not _is_summary(entry)
        for sentence in _sentences(entry.text)
    ]


def stated_sentences(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the participants said in `items`, sentence by sentence: what can supersede a fact."""
    return _stated(transcript_entries(items))


def _current(prior: Sequence[_Fact], said: Sequence[str], kept: Sequence[str]) -> list[_Fact]:
    """The prior summary's facts less those the conversation has since retracted. One that
    what stays verbatim (`kept`) retracted is replaced by that statement, filed as the
    same kind; one that the summarized items (`said`) retracted is dropped: the statement is
    read from them in its place, in the order it was said."""
    statements = [*said, *kept]
    read_again = set(said)
    current = []
    for fact in prior:
        newer = None
        if fact.kind not in ("entity", "tool", "pinned") and statements:
            newer = superseding(fact.text, statements)
        if newer is None:
            current.append(fact)
        elif newer not in read_again:
            current.append(_Fact(fact.kind, newer))
    return current


# Entities are listed, not stated; tool chatter and code changes are history, not state.
_NOT_CLAIMS: Final = frozenset({"entity", "tool", "pinned", "change"})
# Kinds a session holds several of at once: a sibling with another value adds, not replaces.
_LISTED: Final = frozenset({"goal", "constraint", "action", "preference"})


def _states_retired(fact: _Fact, retired: frozenset[str]) -> bool:
    """An entity or a subject-less line that still names a replaced value as if current."""
    if fact.kind == "entity":  # "redis 4.2.9" states 4.2.9
        return fact.text.lower() in retired or bool(values_in(fact.text) & retired)
    if fact.kind == "pinned" or claim_of(fact.body()) is not None:
        return False  # a claim of its own was settled by its subject
    return bool(values_in(fact.body()) & retired)


def _ledger(ledger: str, was: Sequence[str], retired: frozenset[str]) -> str:
    """A ledger line with its decision as settled, and "-" for an input or an output that
    still names a replaced value."""
    if not ledger:
        return ledger
    decision, rationale, *rest = [*ledger.split(_LEDGER_SEPARATOR), "-", "-"]
    context = ["-" if values_in(part) & retired else part for part in rest[:2]]
    decision = was_note(with_transition(decision), was)
    return _LEDGER_SEPARATOR.join([decision, rationale, *context])


def _claimed(fact: _Fact) -> str:
    """What a fact claims: its main clause, not its reason ("the express courier, since it
    costs 61% less" states what "the express courier, as it costs 42% less" did)."""
    text = fact.body()
    if fact.kind == "state":
        return text
    reason = _RATIONALE.search(text) or _AS_REASON.search(text)
    return text[: reason.start()] if reason else text


def _settled(facts: Sequence[_Fact], later: Sequence[str], fresh_from: int) -> list[_Fact]:
    """One current value per subject: a fact a later one replaced is gone, the later one
    says what it replaced, and a replaced value is stated nowhere else (an entity list, a
    note). `later` (what stays verbatim after the summary) can replace but is not kept."""
    texts = [None if fact.kind in _NOT_CLAIMS else _claimed(fact) for fact in facts]
    statements = [
        Statement(
            text,
            fact.label if fact.kind == "state" else "",
            keyed_only=fact.silent,
            listed=fact.kind in _LISTED,
            chosen=fact.kind == "decision",
        )
        for fact, text in zip(facts, texts, strict=True)
    ]
    statements += [Statement(_claimed(_Fact("note", text)), strict=True) for text in later]
    settled = settle(statements, fresh_from)
    # A value nobody used is shown once it replaces one that was shown: it is the current
    # value of a subject that mattered ("WORKER_MAX_INFLIGHT" read again, now 6000).
    promoted = {
        new for old, new in settled.by.items() if old < len(facts) and not facts[old].silent
    }
    kept: list[_Fact] = []
    for index, fact in enumerate(facts):
        if index in settled.replaced or (fact.silent and index not in promoted):
            continue
        if settled.retired and index not in settled.was and _states_retired(fact, settled.retired):
            continue
        text = with_transition(fact.text)
        if index in settled.was:
            text = was_note(text, settled.was[index])
        ledger = _ledger(fact.ledger, settled.was.get(index, ()), settled.retired)
        if text != fact.text or ledger != fact.ledger:
            fact = _Fact(fact.kind, text, fact.label, ledger, fact.weak)
        kept.append(fact)
    return kept


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _dedupe(facts: Iterable[_Fact]) -> list[_Fact]:
    """First occurrence wins, so a carried line is never replaced by a restatement of it."""
    kept: list[_Fact] = []
    seen_entities: set[str] = set()
    seen_texts: set[str] = set()
    # Near-duplicates share their marks exactly: only facts with the same marks are compared
    # (a pass over thousands of facts stays linear in practice, not quadratic).
    by_marks: dict[frozenset[str], list[set[str]]] = {}
    for fact in facts:
        if fact.silent:  # never shown, so never the copy a shown fact is dropped for
            kept.append(fact)
            continue
        if fact.kind == "entity":
            key = fact.text.lower()
            if key not in seen_entities:
                seen_entities.add(key)
                kept.append(fact)
            continue
        words = _words(fact.body())
        key = " ".join(sorted(words)) or fact.body()
        marks = {word for word in words if not word.isalpha()}  # numbers, ids, paths
        marks.update(name.lower() for name in _NAME.findall(fact.body()))  # people, products
        siblings = by_marks.setdefault(frozenset(marks), [])
        if key in seen_texts or any(_near(words, other) for other in siblings):
            continue
        seen_texts.add(key)
        siblings.append(words)
        kept.append(fact)
    return kept


def _near(words: set[str], other: set[str]) -> bool:
    """Near-duplicates (with the same marks) share almost all their words."""
    if not words:
        return False
    return len(words & other) / len(words | other) >= 0.85


def _section_lines(section: _Section, facts: Sequence[_Fact]) -> list[str]:
    stated = [fact for fact in facts if fact.kind != "entity"]
    if section.mixed and not section.ledger:  # ledgers stay chronological
        stated.sort(key=lambda fact: section.kinds.index(fact.kind))
    bodies = []
    for fact in stated:
        body = (fact.ledger if section.ledger else "") or fact.body()
        bodies.append(f"{_TAGS[fact.kind]}: {body}" if section.mixed else body)
    lines = [
        f"[{section.ledger}{number}] {body}" if section.ledger else f"- {body}"
        for number, body in enumerate(collapse_lines(bodies), start=1)
    ]
    groups: dict[str, list[str]] = {}
    for fact in facts:
        if fact.kind == "entity":
            groups.setdefault(fact.label, []).append(fact.text)
    for group in sorted(groups, key=ENTITY_GROUPS.index):
        lines.append(f"- {group}: {', '.join(groups[group])}")
    return lines


def _render(layout: _Layout, facts: Sequence[_Fact], request: str | None) -> str:
    blocks = []
    for section in layout.sections:
        if section is _REQUEST:
            if request:
                blocks.append(f"## {section.title}\n{request}")
            continue
        members = [fact for fact in facts if fact.kind in section.kinds]
        if members:
            blocks.append("\n".join([f"## {section.title}", *_section_lines(section, members)]))
    return "\n\n".join(blocks)


def _masked(text: str) -> str:
    """A tool output as its head and tail with its size: enough to recognize, never a dump."""
    flat = _squash(text)
    if len(flat) <= 2 * _HEAD_CHARS:
        return flat or "(empty)"
    return f"{flat[:_HEAD_CHARS]} {_ELLIPSIS} {flat[-_HEAD_CHARS // 2 :]} ({len(text)} chars)"


def _condensed(entries: Sequence[Entry]) -> list[_Fact]:
    """Every entry as a note: user words verbatim (clipped), each tool call with its arguments
    and masked output, each other participant's conclusion (its last sentence)."""
    outputs: dict[str | None, Entry] = {
        e.call_id: e for e in entries if e.kind == "tool_output" and e.call_id
    }
    called = {e.call_id for e in entries if e.kind == "tool_call"}
    notes: list[str] = []
    for entry in entries:
        if entry.kind == "tool_call":
            output = outputs.get(entry.call_id)
            result = _masked(output.text) if output else "no output yet"
            notes.append(f"{entry.label or 'tool'} {_clip(entry.text, 80)} -> {result}")
        elif entry.kind == "tool_output" and entry.call_id not in called:
            notes.append(f"{entry.label or 'tool'} -> {_masked(entry.text)}")
        elif entry.kind == "message" and entry.label == "user":
            notes.append(f"user: {_clip(entry.text, _MAX_SENTENCE_CHARS)}")
        elif entry.kind != "tool_output" and entry.text.strip():
            said = [*_sentences(entry.text)] or [_clip(entry.text, _MAX_SENTENCE_CHARS)]
            notes.append(f"{entry.label}: {said[-1]}")
    return [_Fact("note", note, weak=True) for note in dict.fromkeys(notes)]


def _salience(facts: Sequence[_Fact]) -> list[int]:
    """How many of each fact's words no other fact uses: a rare token (an id, a name, a
    number) is what makes a fact worth keeping, whatever words state it."""
    words = [_words(fact.body()) for fact in facts]
    seen: dict[str, int] = {}
    for found in words:
        for word in found:
            seen[word] = seen.get(word, 0) + 1
    return [sum(1 for word in found if seen[word] == 1) for found in words]


def _drop_order(
    fact: _Fact, salience: int, age: int, routine: bool
) -> tuple[bool, int, bool, int, int]:
    """Lowest first: routine progress (a template seen 3+ times), then priority by kind, then
    weak facts, then the least salient; age only breaks ties (never oldest-first: the goal
    is usually the oldest fact).

    Ids, branches, URLs, environments and commits rank with the goals: each costs a few
    tokens and, unlike a file name, cannot be found again by searching the repository.
    """
    priority = _PRIORITY[fact.kind]
    if fact.kind == "entity" and fact.label != "files":
        priority = _PRIORITY["goal"]
    elif fact.kind == "state" and fact.weak:  # a value read, acknowledged, never named
        priority = _PRIORITY["note"]
    elif "(was " in fact.text:  # the current value of a subject that changed
        priority = max(priority, _PRIORITY["state"])
    elif fact.kind == "note" and claim_of(fact.body()) is not None:
        priority = _PRIORITY["entity"]  # says what something is, in whatever words
    return (not routine, priority, not fact.weak, salience, age)


def current_state(request: SummaryRequest) -> list[str]:
    """The state lines of `request` as this summarizer settles them: each tool-output value
    the conversation used and each statement that replaced an earlier value, newest only.
    What a model summarizer is given to keep (SummaryRequest.state)."""
    facts, _ = ExtractiveSummarizer()._collect(request, transcript_entries(request.items))
    return [
        fact.body()
        for fact in facts
        if (fact.kind == "state" and not fact.weak and not fact.silent) or "(was " in fact.text
    ]


class ExtractiveSummarizer:
    """Rule-based summaries: no network, no model, identical output for identical input."""

    name = "extractive"
    input_window: int | None = None

    def __init__(self, estimator: TokenEstimator | None = None) -> None:
        self._estimator = estimator or estimator_for_model("gpt-4o")

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Carry the prior summary's facts, add the new ones, and fit them in max_tokens.

        On a worker thread: summarizing thousands of items would stall the event loop.
        """
        text = await asyncio.to_thread(self.render, request)
        return SummaryResult(text=text, output_tokens=self._estimator.count_text(text))

    def render(self, request: SummaryRequest) -> str:
        """The summary text (synchronous: there is nothing to wait for)."""
        layout = _LAYOUTS.get(request.strategy, _LAYOUTS["task_state"])
        entries = transcript_entries(request.items)
        facts, latest = self._collect(request, entries)
        kinds = {kind for section in layout.sections for kind in section.kinds}
        tools = [fact for fact in facts if fact.kind == "tool"]
        limit = len(tools) if layout.tool_limit is None else layout.tool_limit
        stale = set(tools[: len(tools) - limit])
        facts = [fact for fact in facts if fact.kind in kinds and fact not in stale]
        if not facts and latest is None:
            facts = _dedupe(_condensed(entries))  # nothing matched a rule: the transcript
        if not facts and latest is None:
            return self._clip_to(NO_CONTEXT, request.max_tokens) or ""
        return self._fit(layout, facts, latest, request.max_tokens)

    def _collect(
        self, request: SummaryRequest, entries: list[Entry]
    ) -> tuple[list[_Fact], str | None]:
        users = [
            e for e in entries if e.kind == "message" and e.label == "user" and not _is_summary(e)
        ]
        latest = users[-1] if users else None
        kept = stated_sentences(request.kept)
        reader = _Reader(entries)
        reader.read(skip=latest, kept=[*([latest.text] if latest else []), *kept])
        prior = _Prior()
        for summary in [request.prior_summary or "", *reader.embedded]:
            parsed = _parse_summary(summary)
            prior.facts.extend(parsed.facts)
            prior.request = parsed.request or prior.request
        request_text = _squash(latest.text) if latest else prior.request
        if latest is not None and prior.request and prior.request != request_text:
            # The earlier request is history now: keep what it said, filed like any message.
            demoted = _Reader([])
            demoted.read_text(prior.request, 0, weak=False, user=True)
            prior.facts.extend(demoted.facts)
        pinned = [_Fact("pinned", _squash(key)) for key in request.keep_keys if key.strip()]
        carried = _current(prior.facts, _stated(entries), kept)
        later = [latest.text] if latest else []
        standing = _dedupe([*pinned, *carried])  # each other's current state already
        facts = _settled(_dedupe([*standing, *reader.facts]), [*later, *kept], len(standing))
        bodies = [fact.body() for fact in facts]
        if request_text and routine(request_text, templates_of([*bodies, request_text])):
            # "Continue with step 212" is progress, not a request to remember as the latest:
            # it joins its template's line, which says what was done and what comes next.
            demoted = _Reader([])
            demoted.read_text(request_text, len(entries), weak=False, user=True)
            return _dedupe([*facts, *demoted.facts]), None
        return facts, request_text

    def _fit(
        self, layout: _Layout, facts: list[_Fact], request: str | None, max_tokens: int
    ) -> str:
        """Drop the lowest-priority, least salient facts until the summary fits."""
        count = self._estimator.count_text
        full = _render(layout, facts, request)
        estimate = count(full)
        if estimate <= max_tokens:
            return full
        salience = _salience(facts)
        counts = templates_of([fact.body() for fact in facts])
        routines = [routine(fact.body(), counts) and not is_progress(fact.body()) for fact in facts]
        order = sorted(
            range(len(facts)),
            key=lambda i: _drop_order(facts[i], salience[i], i, routines[i]),
        )

        def without(drops: int) -> str | None:
            """The summary less the first `drops` facts of the order, if it fits."""
            gone = set(order[:drops])
            text = _render(layout, [f for i, f in enumerate(facts) if i not in gone], request)
            return text if count(text) <= max_tokens else None

        # Generous, so the estimate never hides room that is really there: the first prefix
        # it says fits is the least that could. Only an exact count of the rendered text
        # decides, found by bisection (a line collapsed with its template saves less than its
        # own length, and re-rendering after every further drop cost hundreds of renders).
        least = None
        for drops, index in enumerate(order, start=1):
            estimate -= count(facts[index].ledger or facts[index].body()) + 4
            if estimate <= max_tokens:
                least = drops
                break
        if least is not None:
            text = without(least)
            if text is not None:
                return text
            low, high, best = least, len(order), without(len(order))
            while best is not None and high - low > 1:
                middle = (low + high) // 2
                found = without(middle)
                if found is None:
                    low = middle
                else:
                    high, best = middle, found
            if best is not None:
                return best
        if request:
            clipped = self._clip_to(request, max_tokens, lambda r: _render(layout, [], r))
            if clipped is not None:
                return clipped
        return self._clip_to(full, max_tokens) or ""

    def _clip_to(self, text: str, max_tokens: int, wrap: Callable[[str], str] = str) -> str | None:
        """wrap(text), or wrap(longest prefix + "…") that fits; None if not even "…" fits."""
        if self._estimator.count_text(wrap(text)) <= max_tokens:
            return wrap(text)

        def fits(size: int) -> bool:
            return self._estimator.count_text(wrap(text[:size].rstrip() + _ELLIPSIS)) <= max_tokens

        if not fits(0):
            return None
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        return wrap(text[:low].rstrip() + _ELLIPSIS)
