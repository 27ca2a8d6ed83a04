"""Facts the conversation took back: a later statement that replaces a standing fact.

A rolling summary keeps every standing fact for any number of rounds, except one the
conversation superseded ("refunds above 500 EUR no longer need a manager; the limit is now
800 EUR", "cancel the refund of order 7697"). Carrying the old fact forward would state
something the conversation retracted, so the superseding statement takes its place.

A statement supersedes a fact when it says so (a retraction cue, not merely "actually")
and is about the same thing: it shares two of the fact's content words, one of them and one
of its numbers, or one of its identifiers (a file name, an id with letters). Both conditions
are strict on purpose: a false match loses a fact, a missed one only keeps a stale line next
to its correction.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Final

__all__ = ["superseding"]

_CUE: Final = re.compile(
    r"\b(?:no longer|not anymore|instead\b|scratch that|never ?mind|"
    r"forget (?:about )?(?:the|that|it|what)\b|cancel(?:s|led|ed)?\b|call(?:ed)? off\b|"
    r"changed? (?:\w+ ){0,3}to\b|switch(?:ed)? (?:from|to)\b|replace[sd]?\b|"
    r"supersede[sd]?\b|revised?\b|overrid(?:e|es|den)\b|withdraw[ns]?\b|update[sd]?:)",
    re.IGNORECASE,
)
_TOKEN: Final = re.compile(r"[a-z0-9]+(?:[._/:-][a-z0-9]+)*")
# Words too common to say two sentences are about the same thing.
_COMMON_WORDS: Final = (
    "that this with from have will would should could must need needs into than then there "
    "their them they what when where which while your about above below after before more "
    "less only also just like been being were does done make made take keep please thanks "
    "okay sure still anything everything something nothing instead longer anymore changed "
    "change changes now"
)
_COMMON: Final = frozenset(_COMMON_WORDS.split())


def _content(text: str) -> tuple[set[str], set[str]]:
    """(content words, marks): words of 4+ letters not in _COMMON; numbers and identifiers."""
    tokens = set(_TOKEN.findall(text.lower()))
    marks = {token for token in tokens if not token.isalpha()}
    words = {token for token in tokens - marks if len(token) >= 4 and token not in _COMMON}
    return {_singular(word) for word in words}, marks


def _singular(word: str) -> str:
    """ "refunds" and "refund" are the same subject."""
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


@functools.lru_cache(maxsize=4096)
def _retraction(statement: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """A statement's (content words, marks) if it retracts something, else None (cached:
    every prior fact is checked against the same statements)."""
    if not _CUE.search(statement):
        return None
    words, marks = _content(statement)
    return frozenset(words), frozenset(marks)


def superseding(fact: str, statements: Iterable[str]) -> str | None:
    """The last of `statements` (oldest first) that retracts or replaces `fact`, if any."""
    words, marks = _content(fact)
    found = None
    for statement in statements:
        retraction = None if statement == fact else _retraction(statement)
        if retraction is None:
            continue
        other_words, other_marks = retraction
        shared = len(words & other_words)
        common_marks = marks & other_marks
        named = any(not mark.isdigit() for mark in common_marks)  # a file, an id: not "500"
        if shared >= 2 or (shared >= 1 and common_marks) or named:
            found = statement
    return found
