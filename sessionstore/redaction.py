"""Secret redaction for everything that leaves the store: exports, archives, events.

Redaction is copy-on-write: the stored session stays exactly as the agent wrote it (it is what
gets replayed), and only the copies handed to exporters and storage adapters are scrubbed.
Matching is pattern based, so it is a safety net rather than a guarantee; the hook lets a
deployment plug in a real PII detector.

Every default pattern runs in linear time (unbounded runs only start where a lookbehind says a
token starts), because redaction sees whatever a tool printed, including megabytes of base64.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from .events import Event

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

# The value after a secret name: a quoted string (the quotes are kept; escapes are honoured, and
# `\"` covers JSON nested in a JSON string) or a bare run up to whitespace, the seed's `\S+`. A
# bare value may not start with "=" so that base64 padding ("...pwd==") never matches, and a
# complete call or subscript is code (`token = tokenizer.encode(text)`), not a secret.
_VALUE: Final = (
    r'(?:"(?P<secret_dq>(?:[^"\\\n]|\\.)*)"'
    r"|'(?P<secret_sq>(?:[^'\\\n]|\\.)*)'"
    r'|\\"(?P<secret_esc>(?:[^"\\\n]|\\[^"\n])*)\\"'
    r"|(?![A-Za-z_][\w.]*(?:\([^()\s]*\)|\[[^\[\]\s]*\])(?![^\s,;)\]}]))"
    r"(?P<secret>[^\s=]\S*))"
)

DEFAULT_PATTERNS: Final[tuple[str, ...]] = (
    # PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK): the armor lines stay, the
    # body goes. The body stops at the next "-----", so a truncated key is still redacted.
    r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
    r"(?P<secret>[^-]*(?:-(?!----)[^-]*)*)"
    r"(?:-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----)?",
    # JSON Web Tokens: base64url header and payload (both JSON, so both start "eyJ"), signature.
    r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*",
    # OpenAI-style keys: sk-..., sk-proj-..., sk-svcacct-... (20+ characters with a digit, so
    # that "sk-learn-compatible-estimators" is not a key).
    r"sk-(?<![A-Za-z0-9_-]sk-)(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}",
    # GitHub tokens: classic PAT ghp_, OAuth gho_, app ghs_/ghu_, refresh ghr_, fine-grained PAT.
    r"gh(?<![A-Za-z0-9_]gh)(?:[oprsu]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{30,})",
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
    r"[Aa](?i:uthorization\\?[\"']?\s*[:=]\s*\\?[\"']?"
    r"(?:(?:basic|bearer|digest|dpop|negotiate|token)\s+)?)"
    r"(?P<secret>[^\s\"'\\=][^\s\"'\\]*)",
    # Bearer tokens outside a header ("curl -H 'Bearer ...'"); requiring 8+ characters with a
    # digit keeps prose ("the bearer of bad news") intact.
    r"[Bb](?<![A-Za-z0-9][Bb])(?i:earer)\s+(?P<secret>(?=[\w.~+/-]*[0-9])[\w.~+/-]{8,}=*)",
    # name=value, name: value, "name": "value", name := value, name => value, for every name in
    # _SECRET_NAMES. Generalises the seed's `(?i)api[_-]?key\s*[:=]\s*\S+` and
    # `(?i)password\s*[:=]\s*\S+` (and covers aws_secret_access_key, client_secret,
    # access_token, refresh_token, passwd, pwd) while keeping the name.
    rf"(?i)(?:{_SECRET_NAMES})\\?[\"']?\s*(?::=|=>|[:=])\s*{_VALUE}",
    # Command-line flags: --password hunter2, --api-key sk-..., --client-secret "...".
    rf"--(?<![\w-]--)(?i:(?:[a-z0-9]+[_-]){{0,3}}(?:{_SECRET_NAMES}))[ \t]+{_VALUE}",
)

# A mapping key whose string value is a secret: parsed JSON has no "key=" text left for the
# patterns to anchor on, so {"password": "hunter2"} is judged by its key.
_SECRET_KEY: Final = re.compile(rf"(?i)(?:{_SECRET_NAMES}|authorization)\Z")

# Later patterns can expose a match to an earlier one (a quoted value collapsing inside a URL),
# so text is redacted to a fixed point; the cap stops a custom pattern that matches its own
# replacement from looping forever.
_MAX_PASSES: Final = 4


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
            (pattern, _substituter(pattern, replacement))
            for pattern in (*base, *parse_patterns(extra_patterns))
        )
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
        current = s
        for _ in range(_MAX_PASSES):
            redacted = current
            for pattern, substitute in self._rules:
                redacted = pattern.sub(substitute, redacted)
            if redacted == current:
                break
            current = redacted
        if self._hook is not None:
            current = self._hook(current)
        return s if current == s else current

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


def _substituter(pattern: re.Pattern[str], replacement: str) -> Callable[[re.Match[str]], str]:
    """The `re.sub` callback for one pattern (secret groups looked up once, not per match)."""
    groups = tuple(
        number for name, number in pattern.groupindex.items() if name.startswith("secret")
    )
    if not groups:
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
