"""Stored text that tries to be something else: markup, terminal escapes, secrets, unicode.

Every command that prints stored content must print it as written (secrets redacted
unless --no-redact), never interpret it, and never fail on it.
"""

from __future__ import annotations

from typing import Any, Final

from tests.support.histories import Item, call, output

# Rich markup that must be printed, not applied, and text that breaks markup parsers.
MARKUP: Final = ("[bold red]alarm[/]", "total += arr[i] * w[b]; regex [a-z]+", "stray [/] tag")
ANSI: Final = "\x1b[31mred\x1b[0m and a bell\x07"
UNICODE: Final = "naïve café 日本語 🙂 ‮rtl‬"
# One secret per default redaction pattern family (the value part must never be printed).
SECRETS: Final = {
    "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3": "openai key",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789": "github token",
    "xoxb-1234567890-abcdefghij": "slack token",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv": "google key",
    "AKIAIOSFODNN7EXAMPLE": "aws key id",
    "hunter2-pass": "password in a URL",
    "s3cr3t-value-42": "password=",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl": "jwt",
}
HOSTILE_SESSION: Final = "[bold]x[/bold]"


def hostile_items() -> list[Item]:
    """A short session whose every text field is hostile."""
    secrets = " ".join(
        [
            "keys: sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3 ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "xoxb-1234567890-abcdefghij AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "AKIAIOSFODNN7EXAMPLE postgresql://app:hunter2-pass@db/x password=s3cr3t-value-42",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        ]
    )
    items: list[Item] = [
        {"role": "user", "content": f"{MARKUP[0]} {MARKUP[1]} {MARKUP[2]}"},
        {"role": "assistant", "content": f"{ANSI} {UNICODE}"},
        {"role": "user", "content": secrets},
        call("c_[/]", "grep[bold]", pattern="[a-z]+"),
        output("c_[/]", f"{MARKUP[0]} {ANSI} password=s3cr3t-value-42"),
    ]
    return items


def filler(count: int) -> list[dict[str, Any]]:
    """Plain turns after the hostile ones, so a compaction summarizes the hostile ones."""
    return [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"step {n} " + "word " * 60}
        for n in range(count)
    ]
