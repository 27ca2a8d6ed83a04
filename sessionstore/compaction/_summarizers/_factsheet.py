"""The fact sheet carried beside a rolling summary, checked after every round.

Any summarizer, an LLM above all, can drop a fact of the prior summary while rewriting it,
and a dropped fact never comes back. After each round the prior summary's standing facts
(pinned facts, goals, constraints, preferences, decisions and the identifiers it names) are
looked for in the new summary; each one missing is re-inserted, as written, under
"Carried facts" while the summary's token allowance allows, unless the summarized part of the
conversation superseded it (_supersede.py); the compaction event says which came back, which
were superseded and how many did not fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._extractive import CARRIED_TITLE, SheetLine, stated_sentences, summary_facts
from ._subjects import Statement, settle, values_in
from ._supersede import superseding

__all__ = ["Carried", "carry_forward", "is_kept", "standing_facts"]

# Most important first: that is also the order in which they are re-inserted.
_STANDING: Final = ("pinned", "goal", "state", "constraint", "preference", "decision", "entity")
_TOKEN: Final = re.compile(r"[\w][\w.@/:+-]*[\w]|\w")
_MAX_MISFITS: Final = 8
_LISTED: Final = frozenset({"goal", "constraint", "preference"})
_WAS: Final = re.compile(r"\(was ([^()]*)\)")
_KEPT_SHARE: Final = 0.6  # a paraphrase keeps most words; every number and name exactly


@dataclass(frozen=True, slots=True)
class Carried:
    """The outcome of one round's check."""

    text: str  # the summary to store
    checked: int  # standing facts of the prior summary
    reinserted: tuple[SheetLine, ...]  # dropped by the summarizer, put back
    left_out: tuple[SheetLine, ...]  # dropped and too long to put back within the allowance
    superseded: tuple[SheetLine, ...] = ()  # dropped because the conversation replaced them


def standing_facts(prior: str | None) -> list[SheetLine]:
    """The prior summary's facts that must survive the round, most important first."""
    if not prior:
        return []
    facts = [fact for fact in summary_facts(prior) if fact.kind in _STANDING]
    return sorted(facts, key=lambda fact: _STANDING.index(fact.kind))


def _tokens(text: str) -> list[str]:
    return [token.lower() for token in _TOKEN.findall(text)]


def is_kept(fact: SheetLine, summary: str) -> bool:
    """Whether `summary` still states `fact`: verbatim, or a close paraphrase that keeps
    every number, identifier and name of it exactly."""
    flat = " ".join(summary.split()).lower()
    said = " ".join(fact.text.split()).lower()
    if said in flat:
        return True
    if fact.kind == "entity":
        return False
    present = set(_tokens(summary))
    words = [token for token in _tokens(fact.text) if len(token) > 3 or not token.isalpha()]
    marks = [token for token in words if not token.isalpha()]
    names = [name.lower() for name in re.findall(r"(?<=\w )[A-Z][a-z]+\b", fact.text)]
    if any(mark not in present for mark in [*marks, *names]):
        return False
    return not words or sum(word in present for word in words) / len(words) >= _KEPT_SHARE


def _still_standing(fact: SheetLine, summary: str, sheet: Sequence[SheetLine]) -> bool:
    """Kept, and kept as the same kind (`sheet` is the summary's own standing facts): a goal
    the summarizer filed under "State" would be read back as a note next round and could
    then be dropped unnoticed."""
    if fact.kind == "entity":
        return is_kept(fact, summary)
    return any(new.kind == fact.kind and is_kept(fact, new.text) for new in sheet)


def carry_forward(
    prior: str | None,
    summary: str,
    count: Callable[[str], int],
    max_tokens: int,
    summarized: Sequence[Mapping[str, Any]] = (),
) -> Carried:
    """`summary` with every standing fact of `prior` it dropped re-inserted while the
    result's `count` stays within `max_tokens`; a fact that something said in the
    `summarized` items supersedes is left out on purpose."""
    facts = standing_facts(prior)
    sheet = standing_facts(summary) if facts else []
    dropped = [fact for fact in facts if not _still_standing(fact, summary, sheet)]
    said = stated_sentences(summarized) if dropped else []
    replaced = _replaced(dropped, summary, said)
    superseded = [
        fact
        for index, fact in enumerate(dropped)
        if index in replaced or (fact.kind != "entity" and superseding(fact.text, said))
    ]
    missing = [fact for fact in dropped if fact not in superseded]
    reinserted: list[SheetLine] = []
    left_out: list[SheetLine] = []
    misfits = 0
    for fact in missing:
        # Each check counts the whole summary: stop trying once the allowance is clearly spent.
        candidate = _with_lines(summary, [*reinserted, fact])
        if misfits < _MAX_MISFITS and count(candidate) <= max_tokens:
            reinserted.append(fact)
        else:
            misfits += 1
            left_out.append(fact)
    text = _with_lines(summary, reinserted) if reinserted else summary
    return Carried(text, len(facts), tuple(reinserted), tuple(left_out), tuple(superseded))


def _replaced(dropped: Sequence[SheetLine], summary: str, said: Sequence[str]) -> set[int]:
    """Indexes of dropped facts that the new summary, or what was said, replaced: a claim
    about the same subject with another value (_subjects.py), or a value the summary marks
    "(was X)". Putting such a fact back would state a retired value as current."""
    if not dropped:
        return set()
    newer = [fact.text for fact in summary_facts(summary) if fact.kind != "entity"]
    statements = [
        Statement(None if fact.kind == "entity" else fact.text, listed=fact.kind in _LISTED)
        for fact in dropped
    ]
    # Only what shares a word with a dropped fact can replace it: the rest is not settled.
    words = {w for fact in dropped for w in _TOKEN.findall(fact.text.lower()) if len(w) > 3}
    relevant = [text for text in said if words & set(_TOKEN.findall(text.lower()))]
    settled = settle(
        [*statements, *(Statement(text) for text in [*newer, *relevant])], len(dropped)
    )
    retired = settled.retired | {
        value.strip().lower() for note in _WAS.findall(summary) for value in note.split(", ")
    }
    return {
        index
        for index, fact in enumerate(dropped)
        if index in settled.replaced or values_in(fact.text) & retired
    }


def _with_lines(summary: str, facts: Sequence[SheetLine]) -> str:
    lines = "\n".join(f"- {fact.line}" for fact in facts)
    return f"{summary.rstrip()}\n\n## {CARRIED_TITLE}\n{lines}"
