"""Every command that prints stored content, on both backends, over hostile stored text.

Output must equal the stored text (markup printed, not applied; control characters shown
escaped), secrets redacted unless --no-redact, and no traceback.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import shlex

import pytest

from sessionstore import SessionStore
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.cli import run
from tests.support.hostile import (
    HOSTILE_SESSION,
    MARKUP,
    SECRETS,
    filler,
    hostile_items,
)

SID = shlex.quote(HOSTILE_SESSION)
# (command, what it must show verbatim)
PRINTING = [
    ("sessions list", [HOSTILE_SESSION]),
    (f"sessions show {SID}", [MARKUP[0], MARKUP[1], "\\x1b[31mred"]),
    (f"sessions show {SID} --history", [MARKUP[0], "stray [/] tag"]),
    (f"sessions show {SID} --json", [MARKUP[0]]),
    (f"sessions export {SID}", [MARKUP[0], "\\u001b[31mred"]),
    ("events --all", [HOSTILE_SESSION]),
    ("query 'SELECT session_id, payload FROM messages ORDER BY seq'", [MARKUP[0]]),
    ("archive list", [HOSTILE_SESSION]),
    (f"archive show {SID}", [MARKUP[0]]),
    (f"archive show {SID} --json", [MARKUP[0]]),
    (f"compact {SID} --dry-run --diff", [MARKUP[0][:12]]),
    (f"compact {SID} --dry-run --json", [HOSTILE_SESSION]),
]


@pytest.fixture
def hostile(db_url: str) -> str:
    """`db_url` with the hostile session: compacted once (archives, a summary), then the
    hostile items again in its active context, followed by plain turns."""

    async def seed() -> None:
        async with SessionStore(db_url, create_tables=True) as store:
            manager = CompactionManager(
                CompactionConfig(
                    store=store,
                    policy=CompactionPolicy(
                        keep_recent_turns=2, keep_tool_io_pairs=0, recent_user_token_budget=0
                    ),
                )
            )
            await manager.append(HOSTILE_SESSION, [*hostile_items(), *filler(16)])
            await manager.compact(HOSTILE_SESSION)
            await store.append(HOSTILE_SESSION, [*hostile_items(), *filler(30)])

    asyncio.run(seed())
    return db_url


def _clean(output: str) -> None:
    assert "Traceback" not in output and "MarkupError" not in output
    assert "\x1b" not in output  # no escape sequence reaches the terminal
    assert "\u202e" not in output  # nor a bidi override (JSON carries it as an escape)


@pytest.mark.parametrize(("command", "verbatim"), PRINTING)
def test_stored_text_is_printed_as_written_and_redacted(
    hostile: str, command: str, verbatim: list[str]
) -> None:
    result = run(*shlex.split(command), "--url", hostile)
    assert result.exit_code == 0, result.output
    _clean(result.output)
    for text in verbatim:
        assert text in result.output, f"{text!r} missing from:\n{result.output}"
    leaked = [kind for secret, kind in SECRETS.items() if secret in result.output]
    assert leaked == []


@pytest.mark.parametrize(
    "command",
    [
        f"sessions show {SID} --no-redact",
        f"sessions export {SID} --no-redact",
        "query 'SELECT payload FROM messages' --no-redact",
        f"archive show {SID} --no-redact",
        f"compact {SID} --dry-run --diff --no-redact",
    ],
)
def test_no_redact_prints_the_secrets_and_says_so(hostile: str, command: str) -> None:
    result = run(*shlex.split(command), "--url", hostile)
    assert result.exit_code == 0, result.output
    _clean(result.output)
    assert "redaction is off" in result.output
    assert "s3cr3t-value-42" in result.output


def test_unicode_is_printed_as_is_and_bidi_overrides_are_escaped(hostile: str) -> None:
    result = run("sessions", "show", HOSTILE_SESSION, "--url", hostile)
    assert "naïve café 日本語 🙂" in result.output
    assert "\\u202e" in result.output and "\u202e" not in result.output


def test_csv_carries_the_stored_text_exactly_redacted(hostile: str) -> None:
    result = run("query", "SELECT session_id, payload FROM messages", "--csv", "--url", hostile)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {row["session_id"] for row in rows} == {HOSTILE_SESSION}
    items = [json.loads(row["payload"]) for row in rows]  # JSON text on both backends
    texts = " ".join(str(item.get("content") or item.get("output")) for item in items)
    assert MARKUP[0] in texts and "\u202e" in texts  # the data, exactly
    assert [kind for secret, kind in SECRETS.items() if secret in result.stdout] == []
