"""`sessionstore compact` with the config file's `provider` summarizer: the server compacts,
its opaque item becomes the marker, and `--base-url` keeps the kind the file chose."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sessionstore import SessionStore
from tests.support.cli import assert_refused, db_state, run
from tests.support.openai_server import OpenAIServer, ok
from tests.support.provider import compaction_rows


def test_the_config_files_provider_summarizer_compacts_into_an_opaque_marker(
    uncompacted: str, write_config: Callable[..., Path]
) -> None:
    with OpenAIServer() as server:
        server.enqueue(ok("server-side state"))
        config = write_config(
            uncompacted,
            model="gpt-5",
            summarizer={"kind": "provider", "provider": "openai", "api_key_env": "NO_SUCH_KEY"},
        )
        result = run(
            "compact", "work", "--config", str(config), "--base-url", server.base_url, "--json"
        )
        assert result.exit_code == 0, result.output
        assert [r.path for r in server.requests] == ["/v1/responses/compact"]
        assert server.requests[0].body["model"] == "gpt-5"
    reported = json.loads(result.stdout)
    assert reported["compacted"] is True and "opaque:" not in result.stdout

    async def stored() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        async with SessionStore(uncompacted) as store:
            return await store.load_context("work"), await compaction_rows(store, "work")

    context, [row] = asyncio.run(stored())
    assert context[0] == {
        "type": "compaction",
        "id": "cmp_1",
        "encrypted_content": "opaque:server-side state",
    }
    assert (row["provider"], row["model"], row["summarizer"]) == (
        "openai",
        "gpt-5",
        "provider:openai:gpt-5",
    )


@pytest.mark.parametrize(
    ("summarizer", "problem"),
    [
        (
            {"kind": "provider", "provider": "open ai"},
            "summarizer.provider must name who reads the compaction items: letters, digits and "
            "_ . : - only, e.g. 'openai' or 'azure-openai' (case is ignored) (got 'open ai')",
        ),
        (
            {"kind": "extractive", "provider": "azure-openai"},
            "summarizer.provider applies only with kind provider (kind is 'extractive'",
        ),
    ],
)
def test_a_bad_or_ignored_provider_is_one_line_and_exit_2(
    uncompacted: str,
    write_config: Callable[..., Path],
    summarizer: dict[str, str],
    problem: str,
) -> None:
    before = db_state(uncompacted)
    config = write_config(uncompacted, summarizer=summarizer)
    result = run("compact", "work", "--config", str(config))
    assert_refused(result, 2, problem)
    assert "should match pattern" not in result.output
    assert db_state(uncompacted) == before
