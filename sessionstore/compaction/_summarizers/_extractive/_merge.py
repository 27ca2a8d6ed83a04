"""Merging carried and new facts (latest value per subject) and rendering them in budget."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .._collapse import collapse_lines
from .._entities import ENTITY_GROUPS
from .._prompts import Entry, transcript_entries
from .._subjects import (
    Statement,
    claim_of,
    settle,
    values_in,
    was_note,
    with_transition,
    without_replaced,
)
from .._supersede import superseding
from ._facts import (
    ELLIPSIS,
    HEAD_CHARS,
    MAX_SENTENCE_CHARS,
    PRIORITY,
    REQUEST,
    TAGS,
    Fact,
    Layout,
    Section,
)
from ._reader import is_summary
from ._rules import (
    AS_REASON,
    LEDGER_SEPARATOR,
    NAME,
    RATIONALE,
    WORD,
    clip,
    sentences,
    squash,
)


def stated(entries: Sequence[Entry]) -> list[str]:
    """The participants' sentences, oldest first (tool output states nothing here)."""
    return [
        sentence
        for entry in entries
        if entry.kind == "message" and not is_summary(entry)
        for sentence in sentences(entry.text)
    ]


def stated_sentences(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the participants said in `items`, sentence by sentence: what can supersede a fact."""
    return stated(transcript_entries(items))


def current(prior: Sequence[Fact], said: Sequence[str], kept: Sequence[str]) -> list[Fact]:
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
            current.append(Fact(fact.kind, newer))
    return current


# Entities are listed, not stated; tool chatter is history, not state. A code change is
# history too, but one that states a value ("bumped node to 14.5.10 in the Dockerfile")
# makes it current: it replaces what it updated (Statement.history).
_NOT_CLAIMS: Final = frozenset({"entity", "tool", "pinned"})


# Kinds a session holds several of at once: a sibling with another value adds, not replaces.
_LISTED: Final = frozenset({"goal", "constraint", "action", "preference"})


def _states_retired(fact: Fact, retired: frozenset[str]) -> bool:
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
    decision, rationale, *rest = [*ledger.split(LEDGER_SEPARATOR), "-", "-"]
    context = ["-" if values_in(part) & retired else part for part in rest[:2]]
    decision = was_note(with_transition(decision), was)
    return LEDGER_SEPARATOR.join([decision, rationale, *context])


def _claimed(fact: Fact) -> str:
    """What a fact claims: its main clause, not its reason ("the express courier, since it
    costs 61% less" states what "the express courier, as it costs 42% less" did; "Debezium
    choked on the blobs, so the copy runs on Maxwell" is claimed whole: reason and outcome)."""
    text = fact.body()
    if fact.kind == "state":
        return text
    reason = RATIONALE.search(text) or AS_REASON.search(text)
    return text[: reason.start()] if reason else text


def settled(facts: Sequence[Fact], later: Sequence[str], fresh_from: int) -> list[Fact]:
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
            history=fact.kind == "change",
        )
        for fact, text in zip(facts, texts, strict=True)
    ]
    statements += [Statement(_claimed(Fact("note", text)), strict=True) for text in later]
    settled = settle(statements, fresh_from)
    # A value nobody used is shown once it replaces one that was shown: it is the current
    # value of a subject that mattered ("WORKER_MAX_INFLIGHT" read again, now 6000).
    promoted = {
        new for old, new in settled.by.items() if old < len(facts) and not facts[old].silent
    }
    # A value that replaced one the conversation used is the current value of a subject
    # that mattered, however it was read: it ranks as the one it replaced.
    strong = {new for old, new in settled.by.items() if old < len(facts) and not facts[old].weak}
    kept: list[Fact] = []
    for index, fact in enumerate(facts):
        if index in settled.replaced or (fact.silent and index not in promoted):
            continue
        if settled.retired and index not in settled.was and _states_retired(fact, settled.retired):
            continue
        text = with_transition(fact.text)
        if index in settled.was:
            text = was_note(without_replaced(text, settled.was[index]), settled.was[index])
        ledger = _ledger(fact.ledger, settled.was.get(index, ()), settled.retired)
        weak = fact.weak and index not in strong
        if text != fact.text or ledger != fact.ledger or weak != fact.weak:
            fact = Fact(fact.kind, text, fact.label, ledger, weak)
        kept.append(fact)
    return kept


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def dedupe(facts: Iterable[Fact]) -> list[Fact]:
    """First occurrence wins, so a carried line is never replaced by a restatement of it."""
    kept: list[Fact] = []
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
        marks.update(name.lower() for name in NAME.findall(fact.body()))  # people, products
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


def _section_lines(section: Section, facts: Sequence[Fact]) -> list[str]:
    stated = [fact for fact in facts if fact.kind != "entity"]
    if section.mixed and not section.ledger:  # ledgers stay chronological
        stated.sort(key=lambda fact: section.kinds.index(fact.kind))
    bodies = []
    for fact in stated:
        body = (fact.ledger if section.ledger else "") or fact.body()
        bodies.append(f"{TAGS[fact.kind]}: {body}" if section.mixed else body)
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


def render(layout: Layout, facts: Sequence[Fact], request: str | None) -> str:
    blocks = []
    for section in layout.sections:
        if section is REQUEST:
            if request:
                blocks.append(f"## {section.title}\n{request}")
            continue
        members = [fact for fact in facts if fact.kind in section.kinds]
        if members:
            blocks.append("\n".join([f"## {section.title}", *_section_lines(section, members)]))
    return "\n\n".join(blocks)


def _masked(text: str) -> str:
    """A tool output as its head and tail with its size: enough to recognize, never a dump."""
    flat = squash(text)
    if len(flat) <= 2 * HEAD_CHARS:
        return flat or "(empty)"
    return f"{flat[:HEAD_CHARS]} {ELLIPSIS} {flat[-HEAD_CHARS // 2 :]} ({len(text)} chars)"


def condensed(entries: Sequence[Entry]) -> list[Fact]:
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
            notes.append(f"{entry.label or 'tool'} {clip(entry.text, 80)} -> {result}")
        elif entry.kind == "tool_output" and entry.call_id not in called:
            notes.append(f"{entry.label or 'tool'} -> {_masked(entry.text)}")
        elif entry.kind == "message" and entry.label == "user":
            notes.append(f"user: {clip(entry.text, MAX_SENTENCE_CHARS)}")
        elif entry.kind != "tool_output" and entry.text.strip():
            said = [*sentences(entry.text)] or [clip(entry.text, MAX_SENTENCE_CHARS)]
            notes.append(f"{entry.label}: {said[-1]}")
    return [Fact("note", note, weak=True) for note in dict.fromkeys(notes)]


def salience(facts: Sequence[Fact]) -> list[int]:
    """How many of each fact's words no other fact uses: a rare token (an id, a name, a
    number) is what makes a fact worth keeping, whatever words state it."""
    words = [_words(fact.body()) for fact in facts]
    seen: dict[str, int] = {}
    for found in words:
        for word in found:
            seen[word] = seen.get(word, 0) + 1
    return [sum(1 for word in found if seen[word] == 1) for found in words]


def drop_order(
    fact: Fact, salience: int, age: int, routine: bool
) -> tuple[bool, int, bool, int, int]:
    """Lowest first: routine progress (a template seen 3+ times), then priority by kind, then
    weak facts, then the least salient; age only breaks ties (never oldest-first: the goal
    is usually the oldest fact).

    Ids, branches, URLs, environments and commits rank with the goals: each costs a few
    tokens and, unlike a file name, cannot be found again by searching the repository.
    """
    priority = PRIORITY[fact.kind]
    if fact.kind == "entity" and fact.label != "files":
        priority = PRIORITY["goal"]
    elif fact.kind == "state" and fact.weak:  # a value read, acknowledged, never named
        priority = PRIORITY["note"]
    elif "(was " in fact.text:  # the current value of a subject that changed
        priority = max(priority, PRIORITY["state"])
    elif fact.kind == "note" and claim_of(fact.body()) is not None:
        priority = PRIORITY["entity"]  # says what something is, in whatever words
    return (not routine, priority, not fact.weak, salience, age)
