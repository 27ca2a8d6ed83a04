"""No secret leaves through an export, while the live session keeps the originals."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import sqlalchemy as sa
from typer.testing import CliRunner

from sessionstore import SessionStore
from sessionstore._redaction import Redactor
from sessionstore._schema import events
from sessionstore.cli import app
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy

SECRETS = {
    "api key": "api_key=sk-proj-Abc123Def456Ghi789Jkl012",
    "password": "password: hunter2-Correct-Horse",
    "bearer": "Authorization: Bearer abcdef0123456789abcdef0123456789",
    "aws key id": "AKIAIOSFODNN7EXAMPLE",
    "aws secret": "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n"
    "-----END RSA PRIVATE KEY-----",
}
NEEDLES = [
    "sk-proj-Abc123Def456Ghi789Jkl012",
    "hunter2-Correct-Horse",
    "abcdef0123456789abcdef0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "MIIEowIBAAKCAQEA7x",
]


def transcript() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n, (kind, secret) in enumerate(SECRETS.items()):
        items += [
            {"role": "user", "content": f"step {n}: here is the {kind}: {secret}"},
            {"role": "assistant", "content": f"Stored the {kind} ({secret}) for deploy {n}."},
        ]
    return items * 2


def test_events_and_cli_output_carry_no_secret(db_url: str) -> None:
    asyncio.run(_compact_and_check_events(db_url))
    shown = CliRunner().invoke(app, ["archive", "show", "s", "--url", db_url, "--json"])
    assert shown.exit_code == 0, shown.output
    assert "<REDACTED>" in shown.output
    for needle in NEEDLES:
        assert needle not in shown.output, needle


async def _compact_and_check_events(db_url: str) -> None:
    async with SessionStore(db_url, create_tables=True) as store:
        manager = CompactionManager(
            CompactionConfig(
                max_context_tokens=100_000,
                store=store,
                policy=CompactionPolicy(keep_recent_turns=1, recent_user_token_budget=0),
            )
        )
        await manager.append("s", transcript())
        outcome = await manager.compact("s")
        # The stored summary is scrubbed too (issue 18): only the archive keeps the originals.
        assert outcome.summary is not None and "<REDACTED>" in outcome.summary
        assert not any(needle in outcome.summary for needle in NEEDLES)
        async with store.engine.connect() as conn:
            stored_events = json.dumps(
                [row for (row,) in await conn.execute(sa.select(events.c.payload))], default=str
            )
        assert "compact.summary_created" in stored_events
        for needle in NEEDLES:
            assert needle not in stored_events, needle
        history = json.dumps([row.item for row in await store.history("s")])
        assert all(needle in history for needle in NEEDLES)  # the live session is untouched


async def test_turning_redaction_off_warns_before_anything_is_exported(sqlite_url: str) -> None:
    async with (
        SessionStore(sqlite_url, redactor=Redactor(enabled=False)) as store,
        store.engine.connect() as conn,
    ):
        first = (
            await conn.execute(sa.select(events.c.event, events.c.severity).order_by(events.c.id))
        ).first()
    assert first is not None and tuple(first) == ("compact.warning", "high")


def test_redact_archives_scrubs_the_archived_copies(sqlite_url: str) -> None:
    async def compact() -> None:
        async with SessionStore(sqlite_url, redact_archives=True) as store:
            manager = CompactionManager(
                CompactionConfig(store=store, policy=CompactionPolicy(keep_recent_turns=1))
            )
            await manager.append("s", transcript())
            await manager.compact("s")

    asyncio.run(compact())
    raw = CliRunner().invoke(
        app, ["archive", "show", "s", "--url", sqlite_url, "--json", "--no-redact"]
    )
    assert raw.exit_code == 0
    for needle in NEEDLES:
        assert needle not in raw.output, needle
