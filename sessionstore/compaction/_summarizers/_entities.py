"""Entities: the ids, files, branches, URLs, hosts, environments, versions and commits a text names.

Each costs a few tokens and cannot be guessed again, so summaries list them; the patterns are
ordered so that each span of text goes to one group (a URL's path is not also a file path).
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = ["ENTITY_GROUPS", "entities", "entity_matches"]

_I = re.IGNORECASE
_FILE_EXT = (
    r"py|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|"
    r"sql|md|rst|txt|yaml|yml|json|toml|ini|cfg|conf|env|sh|bash|ps1|html|css|scss|lock|proto|"
    r"tf|xml|csv|log"
)
_FILE_SUFFIX: Final = re.compile(rf"\.(?:{_FILE_EXT})$")
_ENV_STOPWORDS: Final = frozenset(
    re.split(
        r"\s+",
        "the a an this that our your my their its same new old current default local remote whole "
        "each every any other python virtual conda var vars variable variables file",
    )
)
# Ordered: earlier patterns claim their text first (a URL's path is not also a file path).
_ENTITY_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("urls", re.compile(r"\bhttps?://[^\s<>()\[\]{}\"'`]+")),
    ("emails", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    (
        "ids",
        re.compile(
            r"\bCVE-\d{4}-\d+\b|\b(?!UTF-|SHA-)[A-Z][A-Z0-9]{1,9}-\d+\b|(?<![\w#&])#\d+\b|"
            r"\b[A-Za-z]{1,6}_?\d{4,}\b"  # codes of any shape: XX69334, INC0042, acct_1234
        ),
    ),
    (
        "versions",
        re.compile(
            r"\b(?i:PostgreSQL|Postgres|Python|Node(?:\.js)?|Java|Go|Ruby|Rust|MySQL|Redis|Django|"
            r"React|Kubernetes|Ubuntu|Debian|Terraform)\s+v?\d+(?:\.\d+)*\b|"
            r"\bv\d+(?:\.\d+)+(?:[-+][\w.]+)?\b|\b\d+\.\d+\.\d+(?:[-+][\w.]+)?\b"
        ),
    ),
    (
        "branches",
        re.compile(
            r"\b(?:feature|feat|fix|bugfix|hotfix|release|chore|refactor|docs)/[\w./-]*[\w-]|"
            r"(?<=\bbranch )[`'\"]?(?:main|master|develop|trunk|[\w.-]*[-_\d][\w.-]*)\b"
        ),
    ),
    (
        "files",
        re.compile(
            r"(?<![\w/:.@-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*|"
            rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_FILE_EXT})\b|\b(?:Dockerfile|Makefile)\b"
        ),
    ),
    (
        "hosts",
        re.compile(
            r"(?<![\w.@/-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+"
            r"(?:com|net|org|io|dev|app|cloud|ai|internal|local|lan|corp|svc)\b"
        ),
    ),
    # Any other file name: "corpus-v3.parquet", "report.pdf" (after hosts, so a domain stays one).
    ("files", re.compile(r"(?<![\w/.@-])[\w-]+(?:\.[\w-]+)*\.[a-z][a-z0-9]{1,7}\b(?![.@/-]?\w)")),
    ("commits", re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),
    (
        "environments",
        re.compile(
            r"\b(?:production|prod|staging|preprod|pre-prod|uat|sandbox)(?:[-_][a-z0-9]+)*\b|"
            r"\b(?:[a-z0-9]+-)*(?:us|eu|ap|sa|ca|me|af)-(?:east|west|north|south|central|"
            r"northeast|southeast|northwest|southwest)-\d(?:-[a-z0-9]+)*\b|"
            r"\b[\w-]+(?= (?:environment|env|cluster)\b)",
            _I,
        ),
    ),
)
# Display order of the entity groups (the patterns above are in claiming order).
ENTITY_GROUPS: Final = (
    "ids", "files", "branches", "urls", "hosts", "environments", "versions", "commits", "emails",
)  # fmt: skip


@functools.lru_cache(maxsize=16384)
def entity_matches(text: str) -> tuple[tuple[int, int, str, str], ...]:
    """(start, end, group, entity) in order of appearance; each span goes to one pattern
    (cached: a sentence is classified, listed and claimed, round after round)."""
    found: list[tuple[int, int, str, str]] = []
    for group, pattern in _ENTITY_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < b and a < end for a, b, _, _ in found):
                continue
            value = match.group().strip("`'\"").rstrip(".,;:!?")
            if _plausible(group, value):
                found.append((start, end, group, value))
    return tuple(sorted(found))


def entities(text: str) -> list[tuple[str, str]]:
    """(group, entity) pairs in order of appearance."""
    return [(group, value) for _, _, group, value in entity_matches(text)]


def _plausible(group: str, value: str) -> bool:
    """Filters for patterns that are cheap to write loosely: prose like "and/or", "the env"."""
    if group == "files" and "/" in value and not value.startswith(("/", "./", "../", "~")):
        segments = [segment for segment in value.split("/") if segment]
        if value.endswith("/"):  # a directory: "migrations/" but not "w/"
            return len(segments[0]) > 1
        has_letters = any(char.isalpha() for char in value)  # not a date like 1/2/2024
        return has_letters and (len(segments) > 2 or "." in segments[-1].lstrip("."))
    if group == "environments":
        return value.lower() not in _ENV_STOPWORDS
    if group == "branches":  # docs/setup.md is a file, not a branch
        return _FILE_SUFFIX.search(value) is None
    return bool(value)
