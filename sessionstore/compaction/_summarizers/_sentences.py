"""Sentence splitting that survives German, Spanish and English punctuation habits.

A period ends a sentence only when what follows starts one (an upper-case letter, a digit,
an opening quote, "¿" or "¡") and what precedes it is not something a period also marks:
an ordinal or a date ("am 3. September", "1.2."), a single letter ("z. B.", "J. Smith"), a
decimal number ("3,5" or "3.5" never has a space), or a common abbreviation of the three
languages ("bzw.", "Dr.", "Sra.", "etc.", "p. ej."). Whatever the language, a wrong split
cuts a fact in two halves that each mean nothing; a missed split only makes a line longer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = ["split_sentences"]

# Candidate ends: terminal punctuation (with closing quotes or brackets) and white space.
_CANDIDATE: Final = re.compile(r"[.!?…]+[\"'\u201d\u2019)\]]*\s+")
_OPENERS: Final = frozenset("\"'\u201c\u2018([¿¡#`*")
# Abbreviations that take a period in English, German and Spanish prose (lower-cased,
# without their final period). Closed-class words, not topic words: they never carry a fact.
_ABBREVIATIONS: Final = frozenset(
    re.split(
        r"\s+",
        "e.g i.e etc vs approx incl excl esp dept est fig no nos mr mrs ms dr prof sr jr st inc "
        "ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat "
        "sun z.b z bzw usw d.h ca ggf evtl inkl zzgl nr str vgl sog u.a o.ä dt jh mio mrd bspw "
        "abs fr hr frl hrn sra srta dra núm num pág pag aprox ej p.ej ud uds vd vds av avda "
        "ee.uu etc cía dto "
        "tel",
    )
)
_MONTHS: Final = frozenset(
    re.split(
        r"\s+",
        "januar jänner februar märz april mai juni juli august september oktober november "
        "dezember enero febrero marzo abril mayo junio julio agosto septiembre setiembre "
        "octubre noviembre diciembre january february march may june july october december",
    )
)
_LAST_WORD: Final = re.compile(r"(\S+)$")


def _starts_sentence(rest: str) -> bool:
    first = rest[:1]
    return bool(first) and (first.isupper() or first.isdigit() or first in _OPENERS)


def _ends_sentence(before: str, rest: str) -> bool:
    """Whether the period at the end of `before` closes a sentence, given the text after it."""
    if not _starts_sentence(rest):
        return False
    if not before.endswith("."):
        return True  # "!" and "?" are not abbreviations
    match = _LAST_WORD.search(before[:-1])
    word = match.group(1).lstrip("\"'\u201c\u2018([¿¡") if match else ""
    lowered = word.lower()
    if len(word) == 1 and word.isalpha():
        return False  # an initial or "z. B."
    if lowered in _ABBREVIATIONS or lowered.rstrip(".") in _ABBREVIATIONS:
        return False
    if word.isdigit() and len(word) <= 2:
        # "am 3. September", "der 2. Versuch": an ordinal. "It was 42. Then" ends a
        # sentence, and so does a small number before a capitalized word that is no month.
        next_word = rest.split(None, 1)[0].strip(".,;:").lower() if rest.split() else ""
        return next_word not in _MONTHS and not next_word[:1].isdigit()
    return not re.fullmatch(r"\d{1,2}\.\d{1,2}", word)  # a date written "3.9." before its year


def split_sentences(line: str) -> Iterator[str]:
    """The sentences of one line of prose, stripped, in order."""
    start = 0
    for match in _CANDIDATE.finditer(line):
        end = match.end()
        before = line[start : match.start() + len(match.group().rstrip())]
        if _ends_sentence(before.rstrip("\"'\u201d\u2019)]"), line[end:]):
            sentence = before.strip()
            if sentence:
                yield sentence
            start = end
    tail = line[start:].strip()
    if tail:
        yield tail
