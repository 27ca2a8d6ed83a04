"""The keyword rules that file a sentence under a kind, and the text helpers they use."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from .._entities import entities, entity_matches
from .._sentences import split_sentences
from .._subjects import claim_of
from ._facts import ELLIPSIS, HEAD_CHARS, MAX_SENTENCE_CHARS, FactKind

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


AS_REASON = re.compile(r"[,;]\s+(?:as|since|weil|da|porque|ya que|pues)\b", re.IGNORECASE)


RATIONALE = re.compile(r"\b(?:because|since|so that|given that|due to|instead of|rationale)\b", _I)


# A sentence that only explains the one before it: "Use X. Reason: Y." is one fact, not two.
REASON_LEAD = re.compile(
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


WRITE_TOOL = re.compile(
    r"write|edit|patch|apply|create|update|replace|delete|remove|rename|move|insert|append|save",
    _I,
)


PATH_KEYS: Final = ("path", "paths", "file", "file_path", "filepath", "filename", "target_file")


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
    ("decision", RATIONALE),
    ("action", _ACTION),
)


# Pleasantries and narration: never worth a note on their own.
_FILLER = re.compile(
    r"^(?:sure|ok(?:ay)?|thanks?|thank you|great|got it|will do|sounds good|let me|i'll|"
    r"here is|here's|checking|running|looking|that looks)\b",
    _I,
)


_CODE_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)


BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")


HEADER = re.compile(r"^(?:#{1,6}\s+(.+?)|\*\*(.+?)\*\*|([A-Z][A-Za-z /-]{1,40}):)\s*:?\s*$")


LEDGER_ID = re.compile(r"^\[[A-Za-z]*\d+\]\s*")


TAGGED = re.compile(r"^([A-Za-z]+):\s+(.*)$")


CHANGE_BODY = re.compile(r"^(\S+): (.*)$")


LEDGER_SEPARATOR: Final = " :: "


STATE_KEY: Final = re.compile(r"^(.+?) = |^(\S.*? row [^:]+):")


# A number or an id of any shape ("order 7697", "500 EUR", "step 212", "INC0042"): a sentence
# that names one says something that cannot be guessed again.
_IDENTIFIER = re.compile(r"\b\w*\d\w*\b")


WORD = re.compile(r"[a-z0-9]+(?:[._/:-][a-z0-9]+)*")


NAME = re.compile(r"[\w,;)] ([A-Z][a-z]+)\b")  # capitalized inside a sentence: a name


def squash(text: str) -> str:
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary; short text is returned unchanged."""
    text = squash(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut + ELLIPSIS


def sentences(text: str) -> Iterator[str]:
    """Prose sentences of a message; code blocks are not prose and are skipped."""
    for line in _CODE_FENCE.sub("\n", text).splitlines():
        for sentence in split_sentences(BULLET.sub("", line.strip())):
            if any(char.isalnum() for char in sentence):
                yield clip(sentence, MAX_SENTENCE_CHARS)


def classify(sentence: str) -> FactKind | None:
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


def worth_noting(sentence: str, *, user: bool) -> bool:
    """Unfiled sentences are kept when they name something, state a value of a subject
    ("Support rotation: Sven."), or when the user said them.

    Questions are not: once answered they are history, and what they name is kept as
    entities anyway.
    """
    if sentence.rstrip().endswith("?"):
        return False
    if entities(sentence) or _IDENTIFIER.search(sentence):
        return True
    if not user or _FILLER.match(sentence):
        return False
    return len(sentence.split()) >= 4 or claim_of(sentence) is not None


def head(text: str, limit: int = HEAD_CHARS) -> str:
    """The first non-empty line, clipped: enough to recognize a tool result."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return clip(first, limit) or "(empty)"
