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
from dataclasses import dataclass, field
from typing import Final

from ._entities import entity_matches

__all__ = [
    "Claim", "Settled", "Statement", "claim_of", "retired_by", "settle", "strip_was",
    "value_types", "values_in", "was_note", "with_transition", "without_replaced",
]  # fmt: skip

_MONTHS: Final = (
    "jan(?:uary|uar|\\.)?|feb(?:ruary|ruar|rero|\\.)?|mar(?:ch|zo|\\.)?|märz|apr(?:il|\\.)?|"
    "abril|may(?:o)?|mai|jun(?:e|i|io|\\.)?|jul(?:y|i|io|\\.)?|aug(?:ust|\\.)?|agosto|"
    "sep(?:t(?:ember|iembre)?)?\\.?|setiembre|oct(?:ober|ubre|\\.)?|okt(?:ober)?|"
    "nov(?:ember|iembre|\\.)?|dec(?:ember|\\.)?|dez(?:ember)?|dic(?:iembre)?|ene(?:ro)?"
)
_MONTH_ONLY: Final = re.compile(rf"(?:{_MONTHS})", re.IGNORECASE)
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
    # CamelCase product names too: "RabbitMQ", "OpenSearch" (not "USD": no small letter),
    # and a name's acronym: "Amazon SQS".
    (
        "name",
        re.compile(
            r"(?<![\w-])[A-ZÀ-Þ][a-zà-ÿ]+(?:[A-Z][A-Za-z]*)?(?:\s(?:[A-ZÀ-Þ][a-zà-ÿ]+|[A-Z]{2,5}))?\b"
        ),
    ),
    # Chat channels and tags: "#payments-alerts" (not "#123", an issue number).
    ("channel", re.compile(r"(?<![\w#])#[^\W\d_][\w-]*")),
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
# Words that bound a figure rather than name which one: "Max 40 exports", "up to 9851".
_QUANTIFIERS: Final = frozenset(
    re.split(
        r"\s+",
        "max maximum min minimum limit cap höchstens mindestens maximal minimal máximo mínimo",
    )
)
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
    r"^\W*(?:please\s+)?(?:raise|lower|increase|decrease|bump|extend)\b|"  # "Raise the cap: 40"
    r"\b(?:now|no longer|any ?more|instead|changed|moved|switched|"
    r"updated|update:|replac(?:ed|es|ing)|took over|takes over|upgraded|downgraded|"
    r"bumped|raised|lowered|increased|decreased|extended|postponed|"
    r"push(?:ed|es)? (?:back|out|to)|(?:went|gone|goes|go) (?:up|down)|"
    r"revised|reassigned|renamed|"
    r"from now on|going forward|jetzt|nun|ab sofort|nicht mehr|stattdessen|geändert|"
    r"verschoben|erhöht|gesenkt|übernimmt|übernommen|aktualisiert|umgestellt|ahora|ya no|"
    r"en cambio|cambiamos|cambió|cambiado|movimos|movido|movió|subimos|bajamos|aumentamos|"
    r"pospuest[oa]|pasa a|reemplaz(?:a|ó|ado|amos)|actualizad[oa])\b",
    re.IGNORECASE,
)
_GIVEN_UP: Final = re.compile(
    r"\b(?:rather than|instead of|statt|anstatt|anstelle von|en vez de|en lugar de|"
    r"replaced|replaces|replacing|took over from|takes over from|dropped|dropping|ditched|"
    r"abandoned|"
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
# "Zofia is our DBA contact": a first word that names a person, not a thing (no suffix
# of an abstract noun: "Retention is", "Caching is", "Compliance is" are no people).
_NAMED_IS: Final = re.compile(
    r"\s*[A-ZÀ-Þ][a-zà-ÿ]+(?<!ion)(?<!ing)(?<!ed)(?<!ity)(?<!ment)(?<!ness)(?<!ance)(?<!ence)"
    r"(?<!ure)(?<!ism)(?<!ogy)(?<!age)\s+(?:is|was|ist|war|es|era|está)\s"
)
_VERB_AFTER: Final = re.compile(r"\s+([a-zà-ÿ]{2,}(?<!s)s)\b")
# A cloud region alone ("eu-west-1"), not an environment ("prod", "qa-eu-west-1").
_REGION: Final = re.compile(r"(?:us|eu|ap|sa|ca|me|af)-[a-z]+-\d", re.IGNORECASE)
# Where a clause ends: a mark of punctuation before a space, a dash, a conjunction that
# starts another statement ("so", "but", "because", "aber", "pero", ...).
_CLAUSE: Final = re.compile(
    r"[,;:.!?](?=\s)|\s[-\u2013\u2014]\s|\s(?:so(?! far\b)|but|because|since|while|whereas|"
    r"aber|weil|denn|pero|porque|así que)\s",
    re.IGNORECASE,
)
_DEFINED: Final = re.compile(
    r"(?:\b(?:is|are|was|were|ist|sind|es|son|beträgt)(?:\s+(?:now|still|currently|jetzt|"
    r"ahora))?|[:=])\s*$",
    re.IGNORECASE,
)
# A clause that says a value still holds: "but 300 s stays for the CDN", "sigue reservado".
_STAYS: Final = re.compile(
    r"\b(?:still|stays?|stayed|remains?|remained|keeps?|bleibt|bleiben|noch|sigue|siguen|"
    r"todavía|aún)\b",
    re.IGNORECASE,
)
# Words that join two clauses, which a clause cut from a line must not leave dangling.
_JOINS: Final = (
    r"(?:so|but|and|or|because|since|while|whereas|aber|und|oder|weil|denn|pero|y|o|porque|"
    r"así que)"
)
_TRAILING_JOIN: Final = re.compile(rf"(?:[\s,;:-]+|\s+{_JOINS})+$", re.IGNORECASE)
_LEADING_JOIN: Final = re.compile(
    rf"^(?:[,;:.!?]\s*|[-\u2013\u2014]\s+|{_JOINS}\s+)+", re.IGNORECASE
)
_LABEL_END: Final = re.compile(r":\s*(?:[^\W\d_]+\s+){0,2}$")  # "owner changed: ask Emeka"
# A value something was changed to: "got cut to 7,000", "was moved to Friday".
_CHANGED_TO: Final = re.compile(
    r"\b(?:got|gets|was|were|has been|have been|had been)\s+[a-z]{2,}\s+(?:down\s+|up\s+)?to\s",
    re.IGNORECASE,
)
# Inflections (English; German and Spanish nouns rarely inflect in these positions).
_INFLECTIONS: Final = ("ings", "ing", "ions", "ion", "als", "al", "es", "ed", "s")
_STEM_MIN: Final = 4
_POSSESSIVE: Final = re.compile(r"['\u2019]s?$")
# A tool output's value as the state reader files it: "deploy/prod.yaml: cache.host = db-7",
# "tickets row OPS-12: owner alice, task migrate cron".
_KEYED: Final = re.compile(
    r"^(?P<source>.*?)(?::\s+(?P<key>[^=]+?)\s+=\s+|\s+row\s+(?P<row>[^:]+):\s+)"
)
_KEY_WORD: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")  # cache.host, maxReplicas, DB_HOST
_CELL: Final = re.compile(r"(?:^|,\s+)([^\W\d]\w*)\s+")  # "owner alice, tier 2": the columns
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
    # each value's clause: its content words ("Debezium choked on the blobs, so the copy
    # runs on Maxwell": Debezium's clause names no copy)
    clauses: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # says what its subject IS ("Budget: 2,000 USD", "budget is 8,600 USD"), not a bound
    # on it ("spend stays under $4,000", "a hit rate above 87%"), which may stand beside
    # another bound
    defines: bool = False
    staying: frozenset[str] = frozenset()  # values its clause says still hold ("300 s stays")

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
                if _MONTH_ONLY.fullmatch(value):
                    continue  # "until March": a time, not a name
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
    word = _POSSESSIVE.sub("", word)  # "the chart's cache": the chart
    for suffix in _INFLECTIONS:
        if word.endswith(suffix) and len(word) - len(suffix) >= _STEM_MIN:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > _STEM_MIN else word


def _verbs_after_names(text: str, spans: Sequence[tuple[int, int, str, str]]) -> set[int]:
    """Where a verb in -s follows a name ("Chidi signs off", "Ana owns billing"): it says
    what the person does, not what the claim is about."""
    found = set()
    for _, end, kind, _ in spans:
        verb = _VERB_AFTER.match(text, end) if kind == "person" else None
        if verb and verb.group(1).lower() not in _STOP:
            found.add(verb.start(1))
    return found


def _clause_span(text: str, at: int) -> tuple[int, int]:
    """Where the clause around position `at` starts and ends."""
    starts = [m.end() for m in _CLAUSE.finditer(text, 0, at)]
    following = _CLAUSE.search(text, at)
    return (starts[-1] if starts else 0), (following.start() if following else len(text))


def _ends_its_clause(text: str, end: int, content: Sequence[tuple[int, str]]) -> bool:
    """No content word follows position `end` in its clause ("budget is 8,600 USD.")."""
    clause_end = _clause_span(text, end)[1]
    return not any(end <= position < clause_end for position, _ in content)


def _label(text: str, at: int, content: Sequence[tuple[int, str]]) -> list[str]:
    """The words of a label the value follows ("p99 target for the API: 340 ms"): all of
    them name the subject, not only the two next to the value."""
    colon = _LABEL_END.search(text, 0, at)
    if colon is None:
        return []
    start = _clause_span(text, colon.start())[0]
    return [word for position, word in content if start <= position < colon.start()]


def _key_words(text: str) -> set[str]:
    """The words of a key or a row id: "max_connections", "cache.host", "maxReplicas"."""
    words = {word.lower() for word in _KEY_WORD.findall(text)}
    return {_stem(word) for word in words if len(word) >= 3 and word not in _STOP}


@functools.lru_cache(maxsize=16384)
def keyed_claim(text: str) -> Claim | None:
    """The claim of a value read from a tool output, by its structure rather than as prose:
    its key (and the file or table it came from) is the subject, the value after it the
    value; a row's columns name its values ("owner alice": alice is the owner)."""
    text = strip_was(text)
    found = _KEYED.match(text)
    if found is None:
        return None
    rest = text[found.end() :]
    source = _key_words(found["source"].rsplit("/", 1)[-1])
    key = _key_words(found["key"] or found["row"])
    if not key:
        return None
    values: dict[str, set[str]] = {}
    clauses: dict[str, frozenset[str]] = {}
    qualifiers = {
        value.lower() for _, _, kind, value in _spans(found["source"]) if kind == "qualifier"
    }
    cells = [(m.end(), _key_words(m.group(1))) for m in _CELL.finditer(rest)] or [(0, set())]
    for start, _, kind, value in _spans(rest):
        if kind in _NOT_STATES or kind == "qualifier":
            continue
        column = max((c for c in cells if c[0] <= start), default=cells[0], key=lambda c: c[0])
        values.setdefault("number" if kind == "version" else kind, set()).add(value.lower())
        clauses[value.lower()] = frozenset(column[1] or key)  # a row's cells: their columns
    if not values:
        return None
    columns = {word for _, words in cells for word in words}
    return Claim(
        frozenset(key | source | columns),
        {kind: frozenset(found) for kind, found in values.items()},
        frozenset(qualifiers),
        frozenset(),
        frozenset(key),
        clauses=clauses,
    )


@functools.lru_cache(maxsize=16384)
def claim_of(text: str) -> Claim | None:
    """The claim a fact makes, or None when it states no value or no subject."""
    text = strip_was(text)
    if text.rstrip().endswith("?"):
        return None  # "Who owns billing?" asks; it states no value
    spans = _spans(text)
    given_up = {m.group(1).lower() for m in _GIVEN_UP.finditer(text)} - _STOP
    if not spans and not given_up:
        return None
    tokens = [(m.start(), m.end(), m.group().lower()) for m in _TOKEN.finditer(text)]
    # "Ana owns billing", "Marco owns search": the verb after a name says what the name
    # does, not what the claim is about.
    named = len(tokens) > 1 and tokens[0][2] not in _STOP and _NAMED_FIRST.match(text, tokens[0][0])
    verbs = {tokens[1][0]} if named else set()
    verbs.update(_verbs_after_names(text, spans))  # "From now on Chidi signs off"
    content = [
        (start, word)
        for start, end, word in tokens
        if len(word) >= 3
        and word not in _STOP
        and start not in verbs
        and not any(a <= start < b and kind != "person" for a, b, kind, _ in spans)
    ]
    near: set[str] = set()
    head: set[str] = set()
    values: dict[str, set[str]] = {}
    qualifiers: set[str] = set()
    clauses: dict[str, frozenset[str]] = {}
    staying: set[str] = set()
    # A cloud region is where something is ("the eu-west-1 replica is db-7"), unless it is
    # all the sentence states ("The new cluster goes to ca-central-1"): then it is the value.
    opening = _opening(text)
    placed = not any(
        kind not in _NOT_STATES and kind != "qualifier" and value.lower() not in opening
        for _, _, kind, value in spans
    )
    for start, end, kind, value in spans:
        if kind == "qualifier" and placed and _REGION.fullmatch(value):
            kind = "region"
        if kind in _NOT_STATES:  # where, not what: "/search/indexer/" is about the indexer
            if kind == "path" and _DIRECTORY.search(value):
                folders = [w for w in _TOKEN.findall(value.lower()) if len(w) >= 3]
                near.update(w for w in folders if w not in _STOP)
                head.update(w for w in folders if w not in _STOP)
            continue
        named = _IDENTIFIED.search(text[:start]) if kind == "number" and value.isdigit() else None
        if named and named.group(1).lower() not in _STOP | _QUANTIFIERS:
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
        clause_start, clause_end = _clause_span(text, start)
        clauses[value.lower()] = frozenset(
            _stem(word) for position, word in content if clause_start <= position < clause_end
        )
        if _STAYS.search(text, clause_start, clause_end):
            staying.add(value.lower())
        near.update(before, after)
        # "Max 40 concurrent exports": a bound is next to the figure, the subject after it
        head.update(
            [word for word in before if word not in _QUANTIFIERS][-_HEAD_BEFORE:],
            [word for word in after if word not in _QUANTIFIERS][:_HEAD_AFTER],
        )
        head.update(_label(text, start, content))
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
    if opening & values.get("person", set()) and not (
        len(values) == 1 and len(values["person"]) > 1 and _NAMED_IS.match(text)
    ):
        # "Decided to ...", "Look up ...": capitalized by the sentence, not by being a name
        # (unless it opens a list of names and "is" follows: "Ana is on call, Ben next week";
        # alone, "Ana is reviewing PR 112" and "Ben is reviewing PR 118" would be one subject).
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
    changes = bool(former or _CHANGE.search(text) or _CHANGED_TO.search(text))
    defines = any(
        value.lower() not in former
        and _DEFINED.search(text[:start])
        and _ends_its_clause(text, end, content)
        for start, end, kind, value in spans
        if kind not in _NOT_STATES and kind != "qualifier"
    )  # "budget is 8,600 USD": the value ends its clause ("...: 5x fewer pages" describes)
    return Claim(
        frozenset(near),
        current,
        frozenset(qualifiers),
        former,
        frozenset(head),
        changes,
        clauses,
        defines,
        frozenset(staying),
    )


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
    fewest = min(len(new.near), len(old.near))
    # strict: two shared words, or all the words of the briefer one ("Backups now go to X")
    if len(shared) < (min(2, fewest) if strict else 1) or len(shared) * 3 < fewest:
        return frozenset()
    current = new.all_values() - _named_aside(new, old)
    subject = shared - {_stem(w) for v in old.all_values() for w in _TOKEN.findall(v)}
    retired: set[str] = set()
    for kind in types:
        # Of several ("Ana is primary on call, Ben is secondary"), the ones whose clause has
        # the words that tell them apart and that the new claim is about ("primary").
        clauses = [old.clauses.get(value, frozenset()) for value in old.values[kind]]
        telling = subject - frozenset.intersection(*clauses) if len(clauses) > 1 else subject
        retired.update(
            value
            for value, clause in zip(old.values[kind], clauses, strict=True)
            if value not in current and (len(clauses) == 1 or not telling or clause & telling)
        )
    return frozenset(retired)


def _named_aside(new: Claim, old: Claim) -> frozenset[str]:
    """The old values `new` names in a clause of their own, beside another value of their
    type in the clause about the subject: "OpenSearch kept falling over, so product search
    is on Typesense now" says what replaced OpenSearch; "Ana is on call this week, Ben
    next week" keeps Ana on call (her clause names the subject)."""
    aside: set[str] = set()
    shared = new.near & old.near
    for kind in set(new.values) & set(old.values):
        repeated = new.values[kind] & old.values[kind]
        # the subject's words, not the values' own ("Amazon SQS" is no subject word)
        subject = shared - {_stem(w) for v in new.values[kind] for w in _TOKEN.findall(v)}
        clauses = {v: new.clauses.get(v, frozenset()) & subject for v in new.values[kind]}
        about = {v for v in new.values[kind] - repeated if clauses[v]}
        if about:  # "..., but 300 s stays for the CDN" still holds
            aside.update(v for v in repeated if not clauses[v] and v not in new.staying)
    return frozenset(aside)


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


def without_replaced(text: str, replaced: Iterable[str]) -> str:
    """`text` (without its "(was X)") minus the clauses that name a value it replaced and
    no value of its own ("OpenSearch kept falling over, so product search is on Typesense
    now" -> "Product search is on Typesense now"): the old value is then only ever shown as
    "(was X)", which `was_note` adds."""
    body = strip_was(text)
    gone = [
        re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w]|[.,-]\w)", re.IGNORECASE)
        for value in replaced
    ]
    cuts = [0, *(m.end() for m in _CLAUSE.finditer(body)), len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(cuts)]
    kept = [
        piece
        for piece in pieces
        if not any(pattern.search(piece) for pattern in gone)
        or _GIVEN_UP.search(piece)  # "rather than X": it already says X was replaced
        or values_in(piece) - {value.lower() for value in replaced}
    ]
    if len(kept) == len(pieces) or not any(values_in(piece) for piece in kept):
        return body
    joined = _LEADING_JOIN.sub("", re.sub(r"\s+", " ", " ".join(kept)).strip())
    joined = _TRAILING_JOIN.sub("", joined)
    return joined[:1].upper() + joined[1:]


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
    history: bool = False  # a change made ("bumped node to 14.5.10"): replaces a claim it
    # updates, is never replaced (it stays what happened) and replaces no other change


def _settle_claim(
    new: int,
    claim: Claim,
    claims: Sequence[Claim | None],
    statements: Sequence[Statement],
    candidates: Iterable[Mapping[str, list[int]]],
    replaced: set[int],
    replace: Callable[[int, int, Iterable[str]], None],
) -> None:
    """Replace every earlier claim `claim` retires, among `candidates` (earlier claims by
    their subject words)."""
    this = statements[new]
    earlier = {o for by_word in candidates for word in claim.near for o in by_word.get(word, ())}
    for old in sorted(earlier - replaced):
        previous, that = claims[old], statements[old]
        if previous is None:
            continue
        # Naming the old value again beside a new one says something changed ("ships 14
        # October; 16 October was too tight"); whether it is retired, retired_by decides.
        changes = (
            claim.changes
            or bool(_named_aside(claim, previous))
            # "Budget: 2,000 USD", then "budget is 8,600 USD" (not "Connect timeout: 5 s"
            # after "Request timeout: 30 s": another label)
            or (claim.defines and previous.defines and previous.near <= claim.near)
        )
        if that.listed and not changes:
            continue  # "ask Aiko to review" after "ask Tomasz to review": both stand
        # A decision restated with another figure ("the target we agreed: below 0.26%" after
        # "below 0.33%") adds a figure unless it says something changed; another choice
        # ("use Vespa" after "use Typesense") replaces it.
        skip = _QUANTITIES if that.chosen and not changes else frozenset()
        # a value read from a tool output is replaced only by a statement that shares two of
        # its key's words ("Grafana's host is mon-02" is not about `database.host`)
        gone = retired_by(claim, previous, strict=this.strict or bool(that.subject), skip=skip)
        if gone and not _progress(that.text or "", this.text or ""):
            replace(old, new, gone)


def settle(statements: Sequence[Statement], fresh_from: int = 0) -> Settled:
    """Statements oldest first; one with the same explicit subject as an earlier one (a
    tool output's key read again), or a claim about the same subject with another value,
    replaces it. Statements before `fresh_from` were settled in an earlier round (a prior
    summary lists them by section, not in the order they were said): they replace nothing."""
    texts = [statement.text for statement in statements]
    claims = [
        None
        if text is None
        else (keyed_claim(text) if statement.subject else None) or claim_of(text)
        for text, statement in zip(texts, statements, strict=True)
    ]
    tokens = [_words(text) for text in texts]
    # Earlier claims by subject word: what was said, and values read from tool outputs (two
    # of those are one subject only by their keys, so a keyed claim looks at the first only).
    # A change made (history) is never replaced, so it is not looked up at all.
    said: dict[str, list[int]] = {}
    read: dict[str, list[int]] = {}
    by_token: dict[str, list[int]] = {}
    by_subject: dict[str, int] = {}
    replaced: set[int] = set()
    by: dict[int, int] = {}
    was: dict[int, tuple[str, ...]] = {}
    retired: set[str] = set()

    gone_from: dict[int, set[str]] = {}  # values a claim names only as replaced

    def _replace(old: int, new: int, gone: Iterable[str], *, keyed: bool = False) -> None:
        """`keyed`: a key read again, whose old value is shown "(was X)" but retires no
        value elsewhere (its line may hold any words, not one typed value)."""
        replaced.add(old)
        by[old] = new
        gone = sorted(gone)
        if not keyed:
            retired.update(gone)
            gone_from.setdefault(new, set()).update(gone)
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
                candidates = (said,) if subject else (said, read)
                _settle_claim(new, claim, claims, statements, candidates, replaced, _replace)
                for value in claim.former:  # "pg_dump rather than pgloader": any line naming it
                    for old in by_token.get(value, ()):
                        if (
                            old not in replaced
                            and not statements[old].history
                            and len(tokens[old] & tokens[new]) >= 2
                        ):
                            _replace(old, new, [value])
            if not statements[new].history:
                for word in claim.near:
                    (read if subject else said).setdefault(word, []).append(new)
        for token in tokens[new]:
            by_token.setdefault(token, []).append(new)
    current = {
        value
        for index, claim in enumerate(claims)
        if claim is not None and index not in replaced
        for value in claim.all_values() - gone_from.get(index, set())
    }
    return Settled(frozenset(replaced), was, frozenset(retired - current), by)
