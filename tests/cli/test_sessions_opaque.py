"""`sessionstore sessions show|export` of a session whose marker is a provider's opaque
compaction item: shown as what it is (type, id, provider, model, size), never its blob."""

from __future__ import annotations

import asyncio
import json

import pytest

from sessionstore import SessionStore
from tests.support.cli import run
from tests.support.openai_server import OpenAIServer, ok
from tests.support.provider import BOUND_MODEL, ProviderManagers, history_with_fact

BLOB = "opaque:CIPHERTEXT-ONLY-THE-PROVIDER-READS"


@pytest.fixture
def provider_compacted(db_url: str) -> str:
    """`db_url` holding session 'p', compacted into a provider item whose content is BLOB."""

    async def seed() -> None:
        with OpenAIServer() as server:
            managers = ProviderManagers(server)
            async with SessionStore(db_url, create_tables=True) as store:
                manager = managers.make(store)
                await manager.append("p", history_with_fact())
                server.enqueue(ok(BLOB.removeprefix("opaque:")))
                await manager.compact("p")
            await managers.aclose()

    asyncio.run(seed())
    return db_url


def test_show_describes_the_item_and_never_prints_its_content(provider_compacted: str) -> None:
    table = run("sessions", "show", "p", "--url", provider_compacted)
    assert table.exit_code == 0, table.output
    assert BLOB not in table.output
    squeezed = " ".join(table.output.replace("│", " ").split())
    assert f"opaque compaction item cmp_1 (openai {BOUND_MODEL}), {len(BLOB)} bytes" in squeezed
    for args in ([], ["--history"]):
        shown = run("sessions", "show", "p", "--url", provider_compacted, "--json", *args)
        assert BLOB not in shown.stdout
        [marker] = [row for row in json.loads(shown.stdout) if row["item_type"] == "compaction"]
        assert marker["item"] == {
            "type": "compaction",
            "id": "cmp_1",
            "opaque": True,
            "provider": "openai",
            "model": BOUND_MODEL,
            "encrypted_bytes": len(BLOB),
        }


def test_export_keeps_the_item_only_when_redaction_is_off(provider_compacted: str) -> None:
    redacted = run("sessions", "export", "p", "--url", provider_compacted)
    assert redacted.exit_code == 0, redacted.output
    first = json.loads(redacted.stdout.splitlines()[0])
    assert first["opaque"] is True and BLOB not in redacted.stdout
    raw = run("sessions", "export", "p", "--url", provider_compacted, "--no-redact")
    assert json.loads(raw.stdout.splitlines()[0])["encrypted_content"] == BLOB  # replayable
