"""Reading a prior summary back into facts, so each is carried line for line."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...._schema import SUMMARY_LINE
from .._entities import ENTITY_GROUPS, entities
from .._subjects import (
    strip_was,
)
from ._facts import (
    KIND_OF_TAG,
    LEDGER_TITLES,
    NO_CONTEXT,
    REQUEST_TITLE,
    SECTION_KINDS,
    TAGS,
    Fact,
    FactKind,
)
from ._merge import dedupe
from ._rules import (
    BULLET,
    CHANGE_BODY,
    HEADER,
    LEDGER_ID,
    LEDGER_SEPARATOR,
    STATE_KEY,
    TAGGED,
    classify,
    sentences,
    squash,
)


@dataclass(slots=True)
class Prior:
    facts: list[Fact] = field(default_factory=list)
    request: str | None = None


def _section_title(line: str) -> str | None:
    match = HEADER.match(line)
    if match is None:
        return None
    return next(group for group in match.groups() if group is not None).strip().lower()


def parse_summary(text: str) -> Prior:
    """Facts of a summary this class wrote (exactly) or of other text (sentence by sentence)."""
    prior = Prior()
    title: str | None = None
    for raw in SUMMARY_LINE.sub("", text).splitlines():
        line = raw.strip()
        if not line or line == NO_CONTEXT:
            continue
        if title == REQUEST_TITLE.lower() and prior.request is None:
            prior.request = squash(line)
            continue
        new_title = _section_title(line)
        if new_title is not None:
            title = new_title
            continue
        body = BULLET.sub("", LEDGER_ID.sub("", line))
        prior.facts.extend(_parse_line(body, SECTION_KINDS.get(title or "", None), title))
    return prior


def _parse_line(body: str, kind: FactKind | None, title: str | None) -> list[Fact]:
    known_mixed = title in SECTION_KINDS and kind is None
    tagged = TAGGED.match(body)
    if tagged and tagged.group(1) in ENTITY_GROUPS and (kind == "entity" or known_mixed):
        values = tagged.group(2).split(", ")
        return [Fact("entity", value, label=tagged.group(1)) for value in values if value]
    if kind == "entity":  # written by someone else: keep what it names
        found = entities(body)
        return [Fact("entity", v, label=g) for g, v in found] or [Fact("note", body)]
    if known_mixed and tagged and tagged.group(1).lower() in KIND_OF_TAG:
        kind, body = KIND_OF_TAG[tagged.group(1).lower()], tagged.group(2)
    if kind == "decision" and title in LEDGER_TITLES and LEDGER_SEPARATOR in body:
        # A ledger line: keep it as written, but compare the decision by what it says, so
        # the same decision read again from the transcript is recognized as a duplicate.
        decision, rationale = [*body.split(LEDGER_SEPARATOR), "-"][:2]
        said = decision if rationale == "-" else f"{decision} {rationale}"
        return [Fact("decision", said, ledger=body)]
    if kind == "change":
        change = CHANGE_BODY.match(body)
        return [
            Fact("change", change.group(2), label=change.group(1)) if change else Fact(kind, body)
        ]
    if kind == "state":  # "deploy/prod.yaml: database.read_replica = db-7": keyed by its key
        keyed = STATE_KEY.match(strip_was(body))
        label = next((group for group in keyed.groups() if group), "") if keyed else ""
        return [Fact(kind, body, label=label)]
    if kind is not None:
        return [Fact(kind, body)]
    facts = [Fact(classify(sentence) or "note", sentence) for sentence in sentences(body)]
    return facts + [Fact("entity", value, label=group) for group, value in entities(body)]


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
    parsed = sorted(parse_summary(text).facts, key=lambda fact: fact.kind == "note")
    for fact in dedupe(parsed):
        if fact.kind == "entity":
            sheet.append(SheetLine("entity", fact.text, f"{fact.label}: {fact.text}"))
        else:
            said = fact.body()
            sheet.append(SheetLine(fact.kind, said, f"{TAGS[fact.kind]}: {said}"))
    return sheet
