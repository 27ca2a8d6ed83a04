"""What a fact is about, and when a later fact replaces it: one current value per subject.

A fact that states a value (a person, a host, a date, an amount, a version, an id) is a
claim about a subject: the words around its values ("on-call", "read replica", "redis",
"launch"). A later claim with a value of the same type about the same subject replaces the
earlier one, whether or not it names the old value or says "now" in any language: "the
pager is Ana's" then "Marco has the pager"; "we pin redis to 6.2" then "upgraded redis from
6.2 to 7.2". The old values are retired: the summary says "(was 6.2)" beside the new one and
states them nowhere else as current.

Subjects are compared by the content words next to the values, not by phrase lists, so the
rule holds in German and Spanish as in English: two claims share a subject when they share
one of those words and at least a third of them, and neither names an environment the other
excludes (the staging box and the prod box are two subjects).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ._entities import entity_matches

__all__ = [
    "Claim", "Settled", "Statement", "claim_of", "retired_by", "settle", "strip_was",
    "value_types", "values_in", "was_note", "with_transition",
]  # fmt: skip

_MONTHS: Final = (
    "jan(?:uary|uar|\\.)?|feb(?:ruary|ruar|rero|\\.)?|mar(?:ch|zo|\\.)?|märz|apr(?:il|\\.)?|"
    "abril|may(?:o)?|mai|jun(?:e|i|io|\\.)?|jul(?:y|i|io|\\.)?|aug(?:ust|\\.)?|agosto|"
    "sep(?:t(?:ember|iembre)?)?\\.?|setiembre|oct(?:ober|ubre|\\.)?|okt(?:ober)?|"
    "nov(?:ember|iembre|\\.)?|dec(?:ember|\\.)?|dez(?:ember)?|dic(?:iembre)?|ene(?:ro)?"
)
# Values the entity patterns do not name, in claiming order: dates, amounts, numbers, names.
_VALUES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "date",
        re.compile(
            rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}(?:\.|st|nd|rd|th)?\s+(?:de\s+)?(?:{_MONTHS})"
            rf"\b(?:\s+(?:de\s+)?\d{{4}})?|\b(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
            rf"(?:,?\s+\d{{4}})?|\bQ[1-4](?:\s+\d{{4}})?\b",
            re.IGNORECASE,
        ),
    ),
    (
        "amount",
        re.compile(
            r"[$€£]\s?\d[\d.,]*(?:\s?[kKmM]\b)?|\b\d[\d.,]*\s?(?:%|[kKmM]?[A-Z]{3}\b|"
            r"(?:ms|s|sec|min|h|GB|MB|KB|TB|GiB|MiB|rps|rpm|qps|req/s|k|K)\b)"
        ),
    ),
    # Codes of any shape: "ams-web-04", "db_replica_2", "build 4411" is a number.
    ("id", re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+\b")),
    ("number", re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w.]\w)")),
    # Capitalized words: names, and in German every noun, so they are also subject words.
    # CamelCase product names too: "RabbitMQ", "OpenSearch" (not "USD": no small letter).
    (
        "name",
        re.compile(r"(?<![\w-])[A-ZÀ-Þ][a-zà-ÿ]+(?:[A-Z][A-Za-z]*)?(?:\s[A-ZÀ-Þ][a-zà-ÿ]+)?\b"),
    ),
    ("quoted", re.compile(r"`[^`\n]{1,60}`")),
)
# How entity groups compare: environments qualify a subject rather than answer it.
_TYPES: Final = {
    "urls": "url", "emails": "person", "ids": "id", "versions": "version", "branches": "branch",
    "files": "path", "hosts": "host", "commits": "commit", "environments": "qualifier",
    "name": "person",
}  # fmt: skip
# Where something is, not what it is: a file or a link names a subject, never its value.
_NOT_STATES: Final = frozenset({"path", "url", "commit", "quoted"})
_TOKEN: Final = re.compile(r"[^\W\d_][^\W_]*(?:['\u2019-][^\W_]+)*")
# Function words and verbs of change in English, German and Spanish: they say that a value
# changed, never what it is about.
_STOP: Final = frozenset(
    re.split(
        r"\s+",
        "the a an and or but of to in on at by for from with into onto as is are was were be "
        "been being am it its it's this that these those there here we our us you your they "
        "their them he she his her i me my now still just also only then than so very all any "
        "some no not new old current currently today yesterday tomorrow again next last since "
        "under over above below within less more least most "
        "until per via has have had do does did will would shall should can could may might "
        "must let let's set moved move changed change changes updated update upgraded upgrade "
        "downgraded switched switch bumped bump pinned pin use using used run runs running "
        "going gone got get gets went goes is's isn't aren't wasn't don't doesn't won't actually "
        "btw fyi we'll i'll you'll they'll we're i'm you're they're we've i've i'd we'd it's "
        "that's what's there's here's instead reason rather "
        "ok okay please thanks yes der die das den dem des ein eine einer einen einem und oder "
        "aber von zu im in am an auf aus bei mit nach für ist sind war waren wird werden wurde "
        "wurden hat haben hatte jetzt noch nun auch nur schon nicht kein keine wir uns unser "
        "unsere ihr sie es er ich mich mein bitte danke verschoben geändert aktualisiert "
        "umgestellt gewechselt neu neue neuen alte alten heute morgen gestern seit bis über "
        "unter zum zur vom beim dass el la los las un una unos unas y o pero de del al a en con "
        "por para es son era fue está están estaba ser sido ahora todavía ya también solo sólo "
        "no nuestro nuestra nosotros usted ustedes ellos ellas se lo le les mi mis su sus hoy "
        "mañana ayer desde hasta que cambiado cambió movido movió actualizado actualizamos "
        "pasado pasamos nuevo nueva",
    )
)
_WAS: Final = re.compile(r"\s*\(was [^()]*\)")
# Between two values: "from 6.2 to 7.2", "von Ana auf Marco", "de 4.000 a 6.500", "6.2 -> 7.2".
_FROM: Final = re.compile(r"(?:\b(?:from|von|de|desde|vom)\s*)?$", re.IGNORECASE)
_TO: Final = re.compile(r"^\s*(?:to|auf|nach|zu|a|al|hasta|->|→|=>)\s*$", re.IGNORECASE)
# A bare integer right after a word names which one ("order 7697", "step 212"), it is no value.
_IDENTIFIED: Final = re.compile(r"([^\W\d_]{2,}) $")
_QUANTITIES: Final = frozenset({"amount", "number", "date"})
_DIGITS: Final = re.compile(r"(?<![\d.,])\d+(?![\d.,]*\d)")  # a counter, not 8.0 or 4,100
_DIRECTORY: Final = re.compile(r"/$|/[^./]+$")  # a folder, not a file: its names are topics
# "Typesense was replaced by Vespa", "Kafka wurde durch Redpanda ersetzt".
_REPLACED_BY: Final = re.compile(
    r"([^\W\d][\w.-]*\w)\s+(?:was|is|got|has been|have been|wurde|wird|fue|ha sido)\s+"
    r"(?:replaced|superseded|swapped out|retired|dropped|ersetzt|abgelöst|reemplazad[oa]|"
    r"sustituid[oa])\b",
    re.IGNORECASE,
)
# Words that say a value changed, in English, German and Spanish (closed-class words and
# verbs of change, not topics): what a goal, a rule or a to-do needs to replace a sibling.
_CHANGE: Final = re.compile(
    r"\b(?:now|no longer|any ?more|instead|changed|moved|switched|updated|update:|"
    r"replac(?:ed|es|ing)|took over|takes over|upgraded|downgraded|bumped|raised|lowered|"
    r"increased|decreased|extended|postponed|pushed (?:back|out)|revised|reassigned|renamed|"
    r"from now on|going forward|jetzt|nun|ab sofort|nicht mehr|stattdessen|geändert|"
    r"verschoben|erhöht|gesenkt|übernimmt|übernommen|aktualisiert|umgestellt|ahora|ya no|"
    r"en cambio|cambiamos|cambió|cambiado|movimos|movido|movió|subimos|bajamos|aumentamos|"
    r"pospuest[oa]|pasa a|reemplaz(?:a|ó|ado|amos)|actualizad[oa])\b",
    re.IGNORECASE,
)
_GIVEN_UP: Final = re.compile(
    r"\b(?:rather than|instead of|statt|anstatt|anstelle von|en vez de|en lugar de|"
    r"replaced|replaces|took over from|takes over from|dropped|dropping|ditched|abandoned|"
    r"moved off|moved away from|migrated off|got rid of|ersetzt|löst|abgeschafft|"
    r"reemplaza a|reemplazó a|sustituye a|sustituyó a|dejamos|abandonamos|quitamos)\s+"
    r"(?:the\s+|den\s+|die\s+|das\s+|el\s+|la\s+)?([^\W\d][\w.-]*\w)",
    re.IGNORECASE,
)
# What precedes a value that was given up: "pgloader rather than Debezium", "statt Kafka".
_INSTEAD: Final = re.compile(
    r"\b(?:rather than|instead of|not|no longer|off|away from|statt|anstatt|anstelle von|"
    r"nicht mehr|weg von|en vez de|en lugar de|ya no)\s+"
    r"(?:the\s+|den\s+|die\s+|das\s+|el\s+|la\s+)?$",
    re.IGNORECASE,
)
# "picked Debezium over pgloader": a choice given up; "over 500" is a figure, not one.
_OVER: Final = re.compile(r"\b(?:over|über|sobre)\s+$", re.IGNORECASE)
# A first word that is a name: an English verb of the third person in -s follows it ("Idris
# owns"; "is" would make "Retention is 30 days" a person), and it is no past participle or
# gerund itself ("Decided", "Checking").
_NAMED_FIRST: Final = re.compile(r"[A-ZÀ-Þ][a-zà-ÿ]+(?<!ed)(?<!ing)\s+[a-zà-ÿ]{2,}(?<!s)s\b")
# Inflections (English; German and Spanish nouns rarely inflect in these positions).
_INFLECTIONS: Final = ("ings", "ing", "als", "al", "es", "ed", "s")
_STEM_MIN: Final = 4
_NEAR_BEFORE: Final = 4
_NEAR_AFTER: Final = 4
_HEAD_BEFORE: Final = 2
_HEAD_AFTER: Final = 1


@dataclass(frozen=True, slots=True)
class Claim:
    """A fact's values by type and the content words around them."""

    near: frozenset[str]
    values: dict[str, frozenset[str]]  # type -> values, lower-cased
    qualifiers: frozenset[str]
    former: frozenset[str]  # values it says were replaced ("from 6.2 to 7.2")
    head: frozenset[str] = frozenset()  # the words right next to its values: "latency"
    changes: bool = False  # says that something changed ("now", "moved", "ya no", "jetzt")

    def all_values(self) -> frozenset[str]:
        return frozenset(value for values in self.values.values() for value in values)


def strip_was(text: str) -> str:
    """A fact without the "(was X)" it carries from an earlier round."""
    return _WAS.sub("", text)


def was_note(text: str, retired: Iterable[str]) -> str:
    """`text` with what it replaced, newest first: "(was 6.2)"."""
    values = ", ".join(dict.fromkeys(retired))
    return f"{strip_was(text).rstrip()} (was {values})" if values else text


@functools.lru_cache(maxsize=16384)
def _spans(text: str) -> tuple[tuple[int, int, str, str], ...]:
    """(start, end, type, value) of every value in `text`, each span claimed once (cached:
    a fact is looked at by its claim, its values and its transitions, round after round)."""
    found = []
    for start, end, group, value in entity_matches(text):
        if group == "versions" and " " in value:  # "Postgres 16": a subject and its number
            start += value.rindex(" ") + 1
            value = value.rsplit(" ", 1)[1]
        found.append((start, end, _TYPES.get(group, group), value))
    for kind, pattern in _VALUES:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < b and a < end for a, b, _, _ in found):
                continue
            value = match.group().strip("`")
            if kind == "name":  # "Use Vespa": the name is what is left of the stop words
                words = value.split()
                while words and words[0].lower() in _STOP:
                    start += len(words.pop(0)) + 1
                if not words or any(word.lower() in _STOP for word in words):
                    continue
                value = " ".join(words)
            found.append((start, end, _TYPES.get(kind, kind), value))
    return tuple(sorted(found))


def _transitions(
    text: str, spans: Sequence[tuple[int, int, str, str]]
) -> list[tuple[int, int, str, str]]:
    """(start, end, old, new) of each "from OLD to NEW" between two values of one type."""
    found = []
    for (a, b, kind, old), (c, d, other, new) in itertools.pairwise(spans):
        if kind == other and _TO.match(text[b:c]):
            lead = _FROM.search(text[:a])
            found.append((lead.start() if lead else a, d, old, new))
    return found


def _pieces(word: str) -> list[str]:
    parts = word.split("-")
    return (
        [part for part in parts if len(part) >= 3 and part not in _STOP] if len(parts) > 1 else []
    )


def _opening(text: str) -> set[str]:
    """The first word, lower-cased: capitalized by the sentence, not by being a name, unless
    a verb in -s follows it ("Idris owns the doc")."""
    first = re.search(r"[^\W\d_]+", text)
    if first is None or first.start() >= 3 or _NAMED_FIRST.match(text, first.start()):
        return set()
    return {first.group().lower()}


def _stem(word: str) -> str:
    """One form per inflection when subjects are compared: "approvals" and "approves",
    "searching" and "search", "deploys" and "deploy" (an inflection stripped, never a
    prefix cut: "config" and "confirmation" stay two words)."""
    if " " in word:  # "order 7697": which one, compared whole
        return word
    for suffix in _INFLECTIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= _STEM_MIN:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > _STEM_MIN else word


@functools.lru_cache(maxsize=16384)
def claim_of(text: str) -> Claim | None:
    """The claim a fact makes, or None when it states no value or no subject."""
    text = strip_was(text)
    spans = _spans(text)
    given_up = {m.group(1).lower() for m in _GIVEN_UP.finditer(text)} - _STOP
    if not spans and not given_up:
        return None
    tokens = [(m.start(), m.end(), m.group().lower()) for m in _TOKEN.finditer(text)]
    # "Ana owns billing", "Marco owns search": the verb after a name says what the name
    # does, not what the claim is about.
    named = len(tokens) > 1 and tokens[0][2] not in _STOP and _NAMED_FIRST.match(text, tokens[0][0])
    verb = tokens[1][0] if named else -1
    content = [
        (start, word)
        for start, end, word in tokens
        if len(word) >= 3
        and word not in _STOP
        and start != verb
        and not any(a <= start < b and kind != "person" for a, b, kind, _ in spans)
    ]
    near: set[str] = set()
    head: set[str] = set()
    values: dict[str, set[str]] = {}
    qualifiers: set[str] = set()
    for start, end, kind, value in spans:
        if kind in _NOT_STATES:  # where, not what: "/search/indexer/" is about the indexer
            if kind == "path" and _DIRECTORY.search(value):
                folders = [w for w in _TOKEN.findall(value.lower()) if len(w) >= 3]
                near.update(w for w in folders if w not in _STOP)
                head.update(w for w in folders if w not in _STOP)
            continue
        named = _IDENTIFIED.search(text[:start]) if kind == "number" and value.isdigit() else None
        if named and named.group(1).lower() not in _STOP:
            near.add(f"{named.group(1).lower()} {value}")  # "order 7697" is which order
            continue
        if kind == "qualifier":
            qualifiers.add(value.lower())
            continue
        # A version is a number to compare with ("postgres 14", then "Postgres 16").
        values.setdefault("number" if kind == "version" else kind, set()).add(value.lower())
        if kind == "branch":  # "release/2.4" is about releases
            parts = [word for word in _TOKEN.findall(value.lower()) if word not in _STOP]
            near.update(parts)
            head.update(parts)
        before = [word for position, word in content if position < start][-_NEAR_BEFORE:]
        after = [word for position, word in content if position >= end][:_NEAR_AFTER]
        near.update(before, after)
        head.update(before[-_HEAD_BEFORE:], after[:_HEAD_AFTER])
    near.update(piece for word in list(near) for piece in _pieces(word))  # "on-call": "call"
    head.update(piece for word in list(head) for piece in _pieces(word))
    near, head = {_stem(word) for word in near}, {_stem(word) for word in head}
    if given_up and not values:  # "pg_dump rather than pgloader": the words are the subject
        words = {_stem(word) for _, word in content} - {_stem(word) for word in given_up}
        return Claim(
            frozenset(words),
            {},
            frozenset(qualifiers),
            frozenset(given_up),
            frozenset(words),
            changes=True,
        )
    if not values or not near:
        return None
    opening = _opening(text)
    if opening & values.get("person", set()):
        # "Decided to ...", "Look up ...": capitalized by the sentence, not by being a name.
        values["person"] -= opening
        values = {kind: found for kind, found in values.items() if found}
        if not values:
            return None
    former = frozenset(old.lower() for _, _, old, _ in _transitions(text, spans))
    former |= {value.lower() for a, _, _, value in spans if _INSTEAD.search(text[:a])}
    former |= {
        value.lower()
        for a, _, kind, value in spans
        if kind not in _QUANTITIES and _OVER.search(text[:a])
    }
    former |= given_up
    former |= {m.group(1).lower() for m in _REPLACED_BY.finditer(text)}
    current = {kind: frozenset(v - former) for kind, v in values.items() if v - former}
    changes = bool(former) or _CHANGE.search(text) is not None
    return Claim(frozenset(near), current, frozenset(qualifiers), former, frozenset(head), changes)


def retired_by(
    new: Claim, old: Claim, *, strict: bool = False, skip: frozenset[str] = frozenset()
) -> frozenset[str]:
    """The values of `old` that `new` replaces (empty when they are about other things).
    `strict` asks for two shared subject words, not one; types in `skip` are compared not."""
    types = (set(new.values) & set(old.values)) - skip
    dropped = old.all_values() & new.former  # "pgloader rather than Debezium"
    if dropped:
        return dropped  # named as given up: no doubt what it is about
    if not types:
        return frozenset()
    if new.qualifiers and old.qualifiers and not new.qualifiers & old.qualifiers:
        return frozenset()
    shared = new.near & old.near
    if not new.head & old.head:  # "p99 latency under 340 ms", "error rate under 0.5%"
        return frozenset()
    if len(shared) < (2 if strict else 1) or len(shared) * 3 < min(len(new.near), len(old.near)):
        return frozenset()
    current = new.all_values()
    retired = {value for kind in types for value in old.values[kind] if value not in current}
    return frozenset(retired)


def with_transition(text: str) -> str:
    """ "Upgraded redis from 6.2 to 7.2" -> "Upgraded redis to 7.2 (was 6.2)": an old value
    only ever appears marked as old."""
    stripped = strip_was(text)
    found = _transitions(stripped, _spans(stripped))
    if not found:
        return text
    retired = []
    for start, end, old, new in reversed(found):
        stripped = f"{stripped[:start].rstrip()} {new} {stripped[end:].lstrip()}".strip()
        retired.append(old)
    return was_note(stripped.rstrip(" ."), retired)


def value_types(text: str) -> frozenset[str]:
    """The types of the values `text` states: "person", "number", "date", "host", ..."""
    return frozenset(kind for _, _, kind, _ in _spans(strip_was(text)))


def values_in(text: str) -> frozenset[str]:
    """Every value `text` states as current, lower-cased: not where things are (files,
    links), not environments, not the word that opens it ("Stick to ...")."""
    text = strip_was(text)
    opening = _opening(text)
    return frozenset(
        value.lower()
        for _, _, kind, value in _spans(text)
        if kind not in _NOT_STATES and kind != "qualifier" and value.lower() not in opening
    )


@dataclass(frozen=True, slots=True)
class Settled:
    """What a pass over facts in order found: which were replaced, and by what."""

    replaced: frozenset[int]  # indexes of facts a later one replaced
    was: Mapping[int, tuple[str, ...]]  # a replacing fact's index -> the values it replaced
    retired: frozenset[str]  # values (lower-cased) no fact states as current any more
    by: Mapping[int, int]  # a replaced fact's index -> the index of the fact that replaced it


def _shown(value: str, text: str) -> str:
    """`value` as `text` writes it (claims compare values lower-cased)."""
    found = re.search(re.escape(value), text, re.IGNORECASE)
    return found.group() if found else value


def _progress(old: str, new: str) -> bool:
    """ "Round 3: keep going" after "Round 2: keep going" is progress, not a new value: the
    routine lines collapse into one ("(3 times; next: 4)") instead (_collapse.py)."""
    if _DIGITS.sub("#", old) != _DIGITS.sub("#", new):
        return False
    steps = [
        int(b) - int(a)
        for a, b in zip(_DIGITS.findall(old), _DIGITS.findall(new), strict=False)
        if a != b
    ]
    return bool(steps) and all(step == 1 for step in steps)


def _tail_values(text: str | None) -> set[str]:
    """The values of a `subject = value` line (its value whole when it names none)."""
    if not text:
        return set()
    tail = strip_was(text).split(" = ", 1)[-1].split(": ", 1)[-1].strip().lower()
    values = values_in(tail)
    return set(values) if len(values) == 1 else {tail}  # one value, or the line as a whole


def _words(text: str | None) -> set[str]:
    return {w.lower() for w in _TOKEN.findall(strip_was(text))} - _STOP if text else set()


@dataclass(frozen=True, slots=True)
class Statement:
    """One fact as settling sees it, oldest first."""

    text: str | None  # None: states no value (an entity list, a pinned fact)
    subject: str = ""  # a tool output's key: the same key read again is the same subject
    strict: bool = False  # replaces only on two shared subject words (what stays verbatim)
    keyed_only: bool = False  # replaces only its own key's value (a value nobody used)
    listed: bool = False  # one of several of its kind (goals, rules, to-dos): replaced
    # only by a statement that says something changed, not by a sibling with another value
    chosen: bool = False  # a decision: another choice replaces it, another figure needs a change


def _settle_claim(
    new: int,
    claim: Claim,
    claims: Sequence[Claim | None],
    statements: Sequence[Statement],
    by_word: Mapping[str, list[int]],
    replaced: set[int],
    replace: Callable[[int, int, Iterable[str]], None],
) -> None:
    """Replace every earlier claim `claim` retires (a keyed fact only by its own key)."""
    this = statements[new]
    for old in sorted({o for word in claim.near for o in by_word.get(word, ())}):
        previous, that = claims[old], statements[old]
        if old in replaced or previous is None or (this.subject and that.subject):
            continue  # two keyed values (a tool output's) are one subject only by their keys
        if that.listed and not claim.changes:
            continue  # "ask Aiko to review" after "ask Tomasz to review": both stand
        # A decision restated with another figure ("the target we agreed: below 0.26%" after
        # "below 0.33%") adds a figure unless it says something changed; another choice
        # ("use Vespa" after "use Typesense") replaces it.
        skip = _QUANTITIES if that.chosen and not claim.changes else frozenset()
        gone = retired_by(claim, previous, strict=this.strict, skip=skip)
        if gone and not _progress(that.text or "", this.text or ""):
            replace(old, new, gone)


def settle(statements: Sequence[Statement], fresh_from: int = 0) -> Settled:
    """Statements oldest first; one with the same explicit subject as an earlier one (a
    tool output's key read again), or a claim about the same subject with another value,
    replaces it. Statements before `fresh_from` were settled in an earlier round (a prior
    summary lists them by section, not in the order they were said): they replace nothing."""
    texts = [statement.text for statement in statements]
    claims = [None if text is None else claim_of(text) for text in texts]
    tokens = [_words(text) for text in texts]
    by_word: dict[str, list[int]] = {}
    by_token: dict[str, list[int]] = {}
    by_subject: dict[str, int] = {}
    replaced: set[int] = set()
    by: dict[int, int] = {}
    was: dict[int, tuple[str, ...]] = {}
    retired: set[str] = set()

    def _replace(old: int, new: int, gone: Iterable[str], *, keyed: bool = False) -> None:
        """`keyed`: a key read again, whose old value is shown "(was X)" but retires no
        value elsewhere (its line may hold any words, not one typed value)."""
        replaced.add(old)
        by[old] = new
        gone = sorted(gone)
        if not keyed:
            retired.update(gone)
        if gone:
            was[new] = tuple(_shown(value, texts[old] or "") for value in gone)

    for new, claim in enumerate(claims):
        subject = statements[new].subject
        fresh = new >= fresh_from
        if fresh and subject and subject in by_subject and by_subject[subject] not in replaced:
            old = by_subject[subject]  # the same key read again: always the newer value
            gone = _tail_values(texts[old]) - _tail_values(texts[new])
            _replace(old, new, gone, keyed=True)
        by_subject[subject] = new
        if claim is not None:
            retired.update(claim.former)
            if fresh and not statements[new].keyed_only:
                _settle_claim(new, claim, claims, statements, by_word, replaced, _replace)
                for value in claim.former:  # "pg_dump rather than pgloader": any line naming it
                    for old in by_token.get(value, ()):
                        if old not in replaced and len(tokens[old] & tokens[new]) >= 2:
                            _replace(old, new, [value])
            for word in claim.near:
                by_word.setdefault(word, []).append(new)
        for token in tokens[new]:
            by_token.setdefault(token, []).append(new)
    current = {
        value
        for index, claim in enumerate(claims)
        if claim is not None and index not in replaced
        for value in claim.all_values()
    }
    return Settled(frozenset(replaced), was, frozenset(retired - current), by)
