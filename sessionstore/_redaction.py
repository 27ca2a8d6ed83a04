"""Secret redaction for everything that leaves the store: exports, archives, events.

Redaction is copy-on-write: the stored session stays exactly as the agent wrote it (it is what
gets replayed), and only the copies handed to exporters and storage adapters are scrubbed.
Matching is pattern based, so it is a safety net rather than a guarantee; the hook lets a
deployment plug in a real PII detector.

Every default pattern runs in linear time (no two quantifiers can split the same text, and
token runs start only where a lookbehind says a token starts), because redaction sees whatever
a tool printed, including megabytes of base64.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import accumulate
from typing import Any, Final

from ._events import Event

__all__ = [
    "DEFAULT_PATTERNS",
    "REPLACEMENT",
    "Redactor",
    "parse_patterns",
    "redaction_disabled_event",
]

REPLACEMENT: Final = "<REDACTED>"

# Names whose value is a secret: api_key, password, passwd, passphrase, pwd, private_key, secret,
# secret_key, secret_access_key, token. Only the last word is listed: "client_secret",
# "GITHUB_TOKEN", "db_password" or "x-api-key" match through it, and what precedes it stays as
# context. The "p" names share a branch because each branch costs time at every position.
_SECRET_NAMES: Final = (
    r"api[_-]?key|p(?:ass(?:w(?:or)?d|phrase)|wd|rivate[_-]?key)"
    r"|secret(?:[_-]?access)?(?:[_-]?key)?|token"
)

# What joins a secret name to its value: an optional closing quote (JSON keys, also `\"` in JSON
# nested in a JSON string), then "=", ":", ":=" or "=>".
_SEPARATOR: Final = r"\\?[\"']?\s*(?::=|=>|[:=])"

# The value after a secret name: a quoted string (the quotes are kept; escapes are honoured) or a
# bare run up to whitespace (`\S+`). A bare value is none of: a run starting with "="
# (base64 padding, "...pwd=="), a complete call or subscript (code such as
# `token = tokenizer.encode(text)`), or the next name ("the password: password: hunter2", where
# redacting the second "password:" would leak the password itself).
_VALUE: Final = (
    r'(?:"(?P<secret_dq>(?:[^"\\\n]|\\.)*)"'
    r"|'(?P<secret_sq>(?:[^'\\\n]|\\.)*)'"
    r'|\\"(?P<secret_esc>(?:[^"\\\n]|\\[^"\n])*)\\"'
    r"|(?![A-Za-z_][\w.]*(?:\([^()\s]*\)|\[[^\[\]\s]*\])(?![^\s,;)\]}]))"
    rf"(?!(?i:{_SECRET_NAMES}){_SEPARATOR})"
    r"(?P<secret>[^\s=]\S*))"
)

# One pass in this order is idempotent: every replaced span is maximal for its pattern and
# "<REDACTED>" holds none of the characters a pattern needs next to it, so a replacement never
# creates a match for a pattern that already ran (tests check this property). Token patterns
# put their literal prefix before the boundary lookbehind: a leading literal lets `re` skip
# ahead with a fast string search instead of trying the pattern at every position.
DEFAULT_PATTERNS: Final[tuple[str, ...]] = (
    # PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK): the armor lines stay, the
    # body goes. The body stops at the next "-----", so a truncated key is still redacted.
    r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
    r"(?P<secret>[^-]*(?:-(?!----)[^-]*)*)"
    r"(?:-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----)?",
    # JSON Web Tokens: base64url header and payload (both JSON, so both start "eyJ"), signature.
    r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*",
    # OpenAI-style keys: sk-..., sk-proj-..., sk-svcacct-... (20+ characters with a digit, so
    # that "sk-learn-compatible-estimators" is not a key). A project, service-account or admin
    # key is one without a digit too once it is 40+ characters long (real ones are ~160): such
    # a prefix and length is no prose or kebab-case name.
    r"sk-(?<![A-Za-z0-9_-]sk-)(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"
    r"|(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,})",
    # GitHub tokens: classic PAT ghp_, OAuth gho_, app ghs_/ghu_, refresh ghr_, fine-grained PAT.
    r"g(?<![A-Za-z0-9_]g)(?:h[oprsu]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{30,})",
    # Slack tokens: bot xoxb-, user xoxp-, app-level xoxa-, refresh xoxr-, legacy xoxs-.
    r"xox(?<![A-Za-z0-9-]xox)[abprs]-[A-Za-z0-9-]{10,}",
    # Google API keys: "AIza" and 35 base64url characters.
    r"AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35,}",
    # AWS access key ids: long-term AKIA or temporary ASIA, then 16 upper-case alphanumerics.
    r"A(?<![A-Za-z0-9]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    # Connection-string passwords, scheme://user:PASSWORD@host: user and host stay. The password
    # runs to the last "@" because unencoded "@" in passwords is common in the wild.
    r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@",
    # Authorization headers (and Proxy-Authorization): the scheme stays, the credentials go.
    r"[Aa](?i:uthorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?:(?:basic|bearer|digest|dpop|negotiate|token)[ \t]+)?)"
    r"(?P<secret>[^\s\"'\\=][^\s\"'\\]*)",
    # Bearer tokens outside a header ("curl -H 'Bearer ...'"); requiring 8+ characters with a
    # digit keeps prose ("the bearer of bad news") intact.
    r"[Bb](?<![A-Za-z0-9][Bb])(?i:earer)[ \t]+(?P<secret>(?=[\w.~+/-]*[0-9])[\w.~+/-]{8,}=*)",
    # name=value, name: value, "name": "value", name := value, name => value, for every name in
    # _SECRET_NAMES. Generalises `(?i)api[_-]?key\s*[:=]\s*\S+` and
    # `(?i)password\s*[:=]\s*\S+` (and covers aws_secret_access_key, client_secret,
    # access_token, refresh_token, passwd, pwd) while keeping the name.
    rf"(?i)(?:{_SECRET_NAMES}){_SEPARATOR}\s*{_VALUE}",
    # Command-line flags: --password hunter2, --api-key sk-..., --client-secret "...". A flag
    # or shell syntax after the name ("--with-token < file") is not a value.
    rf"--(?<![\w-]--)(?i:(?:[a-z0-9]+[_-]){{0,3}}(?:{_SECRET_NAMES}))[ \t]+(?![-<>|&;]){_VALUE}",
)

# A mapping key whose string value is a secret: parsed JSON has no "key=" text left for the
# patterns to anchor on, so {"password": "hunter2"} is judged by its key.
_SECRET_KEY: Final = re.compile(rf"(?i)(?:{_SECRET_NAMES}|authorization)\Z")


def parse_patterns(patterns: Sequence[str | re.Pattern[str]]) -> list[re.Pattern[str]]:
    """Compile patterns, naming the index and the regex error of the first bad one (for config)."""
    compiled: list[re.Pattern[str]] = []
    for index, pattern in enumerate(patterns):
        if isinstance(pattern, re.Pattern):
            compiled.append(pattern)
            continue
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(
                f"redaction pattern {index} ({pattern!r}) is not a valid regex: {exc}"
            ) from exc
    return compiled


_DEFAULT_COMPILED: Final = tuple(parse_patterns(DEFAULT_PATTERNS))
# Words every match of a case-insensitive default pattern contains (after _fold): a text
# without any of them is skipped, which is most texts, and the name=value pattern is 100x
# slower per character than the others (no literal prefix lets `re` skip ahead).
_NAME_STEMS: Final = ("api", "pass", "pwd", "private", "secret", "token")
_STEMS: Final[Mapping[str, tuple[str, ...]]] = {
    DEFAULT_PATTERNS[-4]: ("authorization",),
    DEFAULT_PATTERNS[-3]: ("bearer",),
    DEFAULT_PATTERNS[-2]: _NAME_STEMS,
    DEFAULT_PATTERNS[-1]: _NAME_STEMS,
}
_ALL_STEMS: Final = tuple(sorted({s for stems in _STEMS.values() for s in stems}))
# What `re` also matches case-insensitively to an ASCII letter, and lower() does not give.
_FOLD: Final = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


# The default patterns that need no stem (each starts with a literal), and the literals one
# of which every match of them contains: a text holding none of them (most texts) cannot
# hold such a token. Found with `str.find`: an alternation in `re` tries every position and
# scans a text three times slower than a find per literal.
_TOKEN_PATTERNS: Final = frozenset(p for p in DEFAULT_PATTERNS if p not in _STEMS)
_TOKEN_LITERALS: Final = (
    "-----BEGIN ",  # PEM
    "eyJ",  # JWT
    "sk-",  # OpenAI
    "gh",  # GitHub ghp_, gho_, ghr_, ghs_, ghu_
    "github_pat_",
    "xox",  # Slack
    "AIza",  # Google
    "AKIA",  # AWS
    "ASIA",
    "://",  # connection strings
)


@functools.lru_cache(maxsize=64)
def _secret_groups(pattern: re.Pattern[str]) -> list[str]:
    """The groups of `pattern` that hold the secret (none: the whole match is one)."""
    return [name for name in pattern.groupindex if name.startswith("secret")]


def _folded(text: str) -> str:
    """`text` lower-cased the way a case-insensitive pattern sees ASCII letters."""
    return text.translate(_FOLD).lower()


_MIN_SECRET: Final = 4  # shorter matches would scrub ordinary words out of derived text
_KEY_PREFIX: Final = re.compile(r"^[\w.-]{1,64}\s*[:=]\s*")
_TRAILING: Final = ")]}>.,;:'\"`"


class Redactor:
    """Replaces secrets in strings and JSON-like values, without touching the originals.

    Groups named `secret` or `secret_*` are replaced and the rest of the match is kept, so
    `api_key=sk-abc123` becomes `api_key=<REDACTED>`; a pattern without such a group has its
    whole match replaced. With `patterns=None` (the defaults), string values under secret-named
    mapping keys are replaced too. The hook runs after the patterns on every string.
    """

    def __init__(
        self,
        patterns: Sequence[str | re.Pattern[str]] | None = None,
        *,
        extra_patterns: Sequence[str | re.Pattern[str]] = (),
        hook: Callable[[str], str] | None = None,
        enabled: bool = True,
        replacement: str = REPLACEMENT,
    ) -> None:
        base = _DEFAULT_COMPILED if patterns is None else tuple(parse_patterns(patterns))
        self._rules = tuple(
            (pattern, _substituter(pattern, replacement), _STEMS.get(pattern.pattern))
            for pattern in (*base, *parse_patterns(extra_patterns))
        )
        # For secrets_in: the literals that say whether a default token pattern can match.
        self._token_literals = _TOKEN_LITERALS if patterns is None else None
        self._secret_key = _SECRET_KEY if patterns is None else None
        self._hook = hook
        self._enabled = enabled
        self._replacement = replacement

    @property
    def enabled(self) -> bool:
        """False means exports carry raw content: emit `redaction_disabled_event()` first."""
        return self._enabled

    def text(self, s: str) -> str:
        """`s` with every secret replaced; `s` itself when nothing matched."""
        if not self._enabled:
            return s
        redacted = s
        folded: str | None = None
        for pattern, substitute, stems in self._rules:
            if stems is not None:
                folded = _folded(redacted) if folded is None else folded
                if not any(stem in folded for stem in stems):
                    continue
            before = redacted
            redacted = pattern.sub(substitute, redacted)
            if redacted != before:
                folded = None
        if self._hook is not None:
            redacted = self._hook(redacted)
        return s if redacted == s else redacted

    def value(self, obj: Any) -> Any:
        """Deep-redacted copy of a JSON-like value; the very same object when nothing changed.

        Dicts, lists and tuples are copied only along the path to a change (mappings come back
        as dicts), strings are redacted, and every other value is returned as is.
        """
        if not self._enabled:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            redacted = {key: self._entry(key, item) for key, item in obj.items()}
            unchanged = all(redacted[key] is item for key, item in obj.items())
            return obj if unchanged else redacted
        if isinstance(obj, list | tuple):
            values = [self.value(item) for item in obj]
            if all(new is old for new, old in zip(values, obj, strict=True)):
                return obj
            return values if isinstance(obj, list) else tuple(values)
        return obj

    def secrets_in(self, texts: Iterable[str]) -> set[str]:
        """The exact secret values the patterns find in `texts`.

        Text derived from these texts (a summary) can carry a secret without the
        context that made it recognizable (`password: X` summarized as `X`);
        `scrub` removes such known values anywhere.
        """
        found: set[str] = set()
        if not self._enabled:
            return found
        literals = self._token_literals
        for text in self._candidates(list(texts)):
            folded = _folded(text)
            named = any(stem in folded for stem in _ALL_STEMS)
            tokens = literals is None or any(literal in text for literal in literals)
            for pattern, _substitute, stems in self._rules:
                if stems is None:
                    if not tokens and pattern.pattern in _TOKEN_PATTERNS:
                        continue
                elif not named or not any(stem in folded for stem in stems):
                    continue
                names = _secret_groups(pattern)
                for match in pattern.finditer(text):
                    parts = [match.group(n) for n in names] if names else [match.group(0)]
                    found.update(_bare_values(part) for part in parts if part)
        return {secret for secret in found if len(secret) >= _MIN_SECRET}

    def _candidates(self, texts: list[str]) -> list[str]:
        """The texts a default rule can match in, found in all of them joined by newlines: one
        fold and one search for a stem and for a token instead of three per text (most of
        the cost with thousands of texts). No stem or literal holds a newline, so one found
        in the joined texts lies in one text; custom rules run on every text."""
        literals = self._token_literals
        if literals is None or any(
            stems is None and pattern.pattern not in _TOKEN_PATTERNS
            for pattern, _substitute, stems in self._rules
        ):
            return texts
        joined = "\n".join(texts)
        folded = _folded(joined)
        if len(folded) != len(joined):  # a fold changed a length: offsets would not map
            return texts
        starts = [0, *accumulate(len(text) + 1 for text in texts)][:-1]
        hit = _texts_holding(_ALL_STEMS, folded, starts)
        hit |= _texts_holding(literals, joined, starts)
        return [texts[index] for index in sorted(hit)]

    def scrub(self, text: str, secrets: Iterable[str]) -> str:
        """`text` redacted, with every known secret value replaced wherever it appears."""
        redacted = self.text(text)
        for secret in sorted(secrets, key=len, reverse=True):
            redacted = redacted.replace(secret, self._replacement)
        return redacted

    def item(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """A redacted session item (the input itself if it is a dict with nothing to redact)."""
        redacted: Mapping[str, Any] = self.value(item)
        return redacted if isinstance(redacted, dict) else dict(redacted)

    def event(self, event: Event) -> Event:
        """The event with redacted fields (the same event when nothing changed)."""
        fields = self.value(event.fields)
        return event if fields is event.fields else replace(event, fields=fields)

    def _entry(self, key: Any, value: Any) -> Any:
        if (
            self._secret_key is not None
            and isinstance(value, str)
            and value
            and isinstance(key, str)
            and self._secret_key.search(key)
        ):
            return value if value == self._replacement else self._replacement
        return self.value(value)


def _texts_holding(needles: Sequence[str], joined: str, starts: list[int]) -> set[int]:
    """Which of the joined texts (starting at `starts`) hold one of `needles`: per needle,
    one `find` per text that holds it, each resuming at the next text."""
    hit: set[int] = set()
    last = len(starts) - 1
    for needle in needles:
        position = joined.find(needle)
        while position != -1:
            index = bisect_right(starts, position) - 1
            hit.add(index)
            if index == last:
                break
            position = joined.find(needle, starts[index + 1])
    return hit


def _bare_values(found: str) -> str:
    """The secret itself: without a `key=`/`key:` prefix or trailing punctuation, which a
    whole-match pattern or a greedy value captures but a summary would not repeat."""
    value = _KEY_PREFIX.sub("", found.strip())
    return value.rstrip(_TRAILING)


def _substituter(pattern: re.Pattern[str], replacement: str) -> Callable[[re.Match[str]], str]:
    """The `re.sub` callback for one pattern (secret groups looked up once, not per match)."""
    groups = tuple(
        number for name, number in pattern.groupindex.items() if name.startswith("secret")
    )
    if not groups:  # a zero-width match (possible in a custom pattern) has nothing to hide
        return lambda match: replacement if match.end() > match.start() else ""

    def substitute(match: re.Match[str]) -> str:
        text = match.string
        position, stop = match.span()
        redacted = ""
        # Groups that did not take part span (-1, -1); sorting plus the position check keeps a
        # group nested in another from being replaced twice.
        for start, end in sorted(map(match.span, groups)):
            if position <= start < end:
                redacted += text[position:start] + replacement
                position = end
        return redacted + text[position:stop]

    return substitute


def redaction_disabled_event(session_id: str | None = None) -> Event:
    """The high-severity warning the spec requires before exporting with redaction turned off."""
    return Event(
        "compact.warning",
        session_id,
        severity="high",
        fields={
            "warning": "redaction_disabled",
            "redaction_enabled": False,
            "message": (
                "redaction is disabled: exported events and archived transcripts are written "
                "as-is and may contain secrets or personal data"
            ),
        },
    )


@functools.cache
def default_redactor() -> Redactor:
    """One Redactor with the default patterns, for texts that have no configured one."""
    return Redactor()
