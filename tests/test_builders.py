"""Building working objects from a config: store, exporters, sinks and manager in one call.

Everything runs for real: SQLite files, an OTLP/HTTP receiver and a validating Ariadne
/ingest server on 127.0.0.1, a moto S3 server, and a callback imported by path.
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
import sqlalchemy as sa
import yaml

from sessionstore._builders import (
    build_event_bus,
    build_manager,
    build_sinks,
    build_store,
    manager_from_file,
)
from sessionstore._config import SessionStoreConfig
from sessionstore._errors import ConfigError
from sessionstore._redaction import Redactor
from sessionstore._schema import events
from sessionstore.compaction._summarizers._openai import OpenAISummarizer
from sessionstore.exporters._bus import EventBus
from tests.support.histories import coding_session
from tests.support.servers import AriadneIngest, OtlpReceiver, serve

KEY = "k1:" + base64.b64encode(bytes(range(32))).decode("ascii")


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    text = json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data)
    path.write_text(text, encoding="utf-8")
    return path


def _store_config(tmp_path: Path, **sections: Any) -> SessionStoreConfig:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"
    return SessionStoreConfig.model_validate({"store": {"url": url}, **sections})


async def test_build_store_applies_store_settings(tmp_path: Path) -> None:
    config = _store_config(
        tmp_path,
        model="gpt-4.1",
        store={
            "url": f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}",
            "encrypt_payloads": True,
            "redact_archives": True,
        },
        redaction={"enabled": False},
        keys={"keys_env": "APP_KEYS"},
    )
    store = build_store(config, environ={"APP_KEYS": KEY})
    try:
        assert store.model == "gpt-4.1"
        assert store.url.database == str(tmp_path / "sessions.db")
        assert store.redactor.enabled is False
        assert store.redact_archives is True
        assert store.session_keys.encrypt_new is True
        assert store.keyring is not None
        assert store.keyring.active.key_id == "k1"
    finally:
        await store.close()


async def test_build_store_redaction_patterns(tmp_path: Path) -> None:
    config = _store_config(tmp_path, redaction={"patterns": [r"code=(?P<secret>\d+)"]})
    store = build_store(config, environ={})
    try:
        assert store.keyring is None
        assert store.redactor.text("code=1234 sk=x") == "code=<REDACTED> sk=x"
    finally:
        await store.close()


def test_encryption_without_keys_fails(tmp_path: Path) -> None:
    config = _store_config(tmp_path, store={"encrypt_payloads": True})
    with pytest.raises(ValueError, match="encrypt_payloads needs a keyring"):
        build_store(config, environ={})


async def test_build_manager_uses_policy_and_summarizer(tmp_path: Path) -> None:
    config = _store_config(
        tmp_path,
        max_context_tokens=32_000,
        policy={"trigger_pct": 0.6, "keep_recent_turns": 2},
        summarizer={"kind": "openai", "model": "gpt-4o-mini", "api_key_env": "MY_KEY"},
        record_idle_decisions=False,
    )
    manager = build_manager(config, environ={"MY_KEY": "sk-test"})
    try:
        assert manager.policy.trigger_pct == 0.6
        assert manager.policy.keep_recent_turns == 2
        assert manager.config.max_context_tokens == 32_000
        assert manager.config.record_idle_decisions is False
        assert isinstance(manager.summarizer, OpenAISummarizer)
        assert manager.summarizer.model == "gpt-4o-mini"
        assert manager.summarizer._client.api_key == "sk-test"
        await manager.summarizer.aclose()
    finally:
        await manager.store.close()


async def test_build_manager_reuses_a_given_store(tmp_path: Path) -> None:
    config = _store_config(tmp_path)
    store = build_store(config, environ={})
    try:
        manager = build_manager(config, store)
        assert manager.store is store
        assert manager.summarizer.name == "extractive"
    finally:
        await store.close()


async def test_manager_from_file(tmp_path: Path) -> None:
    data = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"},
        "policy": {"trigger_pct": 0.85},
    }
    path = write(tmp_path, "compact.yaml", data)
    manager = manager_from_file(path, environ={"COMPACT_TRIGGER_PCT": "0.9"})
    try:
        assert manager.policy.trigger_pct == 0.9
        assert manager.store.url.database == str(tmp_path / "m.db")
    finally:
        await manager.store.close()


# ---------------------------------------------------------------- exporters and sinks


CALLBACK_MODULE = """
received = []


def collect(event):
    received.append(event)
"""


@pytest.fixture
def callback_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real module on sys.path whose `collect` the config names by import path."""
    name = f"collector_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(CALLBACK_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


async def _compact_once(manager: Any, session_id: str = "s1") -> None:
    await manager.store.append(session_id, coding_session(12))
    outcome = await manager.compact(session_id, trigger="manual")
    assert outcome.compacted


async def test_configured_exporters_all_receive_the_compaction(
    tmp_path: Path, callback_module: str
) -> None:
    with serve(OtlpReceiver) as otlp, serve(AriadneIngest) as ariadne:
        path = write(
            tmp_path,
            "compact.yaml",
            {
                "store": {"url": f"sqlite:///{tmp_path / 'e.db'}"},
                "telemetry": {
                    "exporters": ["otlp", "ariadne", "callback"],
                    "otlp_endpoint": f"{otlp.url}/v1/traces",
                    "ariadne_url": ariadne.url,
                    "callback": f"{callback_module}:collect",
                },
            },
        )
        manager = manager_from_file(path, environ={})
        await _compact_once(manager)
        await manager.store.close()  # flushes the bus: everything is delivered on return

        received = sys.modules[callback_module].received
        assert "compact.trigger_decision" in [event["event"] for event in received]
        assert ariadne.accepted and not ariadne.rejected
        names = [
            span_event.name
            for request in otlp.accepted
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
            for span_event in span.events
        ]
        assert "compact.trigger_decision" in names


def test_no_exporters_means_no_bus(tmp_path: Path) -> None:
    config = SessionStoreConfig.model_validate({"telemetry": {"exporters": []}})
    assert build_event_bus(config) is None
    default = build_event_bus(SessionStoreConfig())
    assert isinstance(default, EventBus)
    assert [exporter.name for exporter in default.exporters] == ["console"]
    default.close()


@pytest.mark.parametrize(
    ("callback", "expected"),
    [
        ("no_such_module_xyz:collect", "telemetry.callback cannot be imported"),
        ("json:no_such_function", "telemetry.callback cannot be imported"),
        ("json:__name__", "telemetry.callback must name a function"),
    ],
)
def test_unusable_callback_is_a_config_error(callback: str, expected: str) -> None:
    config = SessionStoreConfig.model_validate(
        {"telemetry": {"exporters": ["callback"], "callback": callback}}
    )
    with pytest.raises(ConfigError, match=expected):
        build_event_bus(config)


async def test_fs_storage_writes_the_seed_layout(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    config = _store_config(
        tmp_path, telemetry={"exporters": []}, storage={"adapter": "fs", "path": str(archive)}
    )
    manager = build_manager(config, environ={})
    try:
        await _compact_once(manager, "proj/1")
        files = sorted(path.name for path in archive.rglob("*") if path.is_file())
        assert files == ["events.jsonl", "summary-001.json", "transcript-pre-compact-001.jsonl"]
        async with manager.store.engine.connect() as conn:
            names = (await conn.execute(sa.select(events.c.event))).scalars().all()
        assert "compact.archival" in names
    finally:
        await manager.store.close()


async def test_s3_storage_uploads_with_credentials_from_the_environment(
    tmp_path: Path, aws_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The standard AWS variables, as a deployment would set them; nothing is in the config.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-access-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    bucket = f"cfg-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3", endpoint_url=aws_endpoint)
    s3.create_bucket(Bucket=bucket)
    config = _store_config(
        tmp_path,
        telemetry={"exporters": []},
        storage={
            "adapter": "s3",
            "s3_bucket": bucket,
            "s3_prefix": "team",
            "s3_endpoint_url": aws_endpoint,
        },
    )
    manager = build_manager(config, environ={})
    try:
        await _compact_once(manager)
    finally:
        await manager.store.close()
    listed = s3.list_objects_v2(Bucket=bucket)["Contents"]
    keys = sorted(item["Key"] for item in listed)
    assert "team/s1/transcript-pre-compact-001.jsonl" in keys
    assert "team/s1/summary-001.json" in keys


def test_sql_storage_has_no_extra_sinks() -> None:
    assert build_sinks(SessionStoreConfig(), Redactor()) == []


async def test_build_manager_makes_the_provider_summarizer(tmp_path: Path) -> None:
    from sessionstore.compaction._summarizers._provider import ProviderSummarizer

    config = _store_config(
        tmp_path,
        model="gpt-5",
        summarizer={"kind": "provider", "provider": "azure-openai", "api_key_env": "MY_KEY"},
    )
    manager = build_manager(config, environ={"MY_KEY": "sk-test"})
    try:
        assert isinstance(manager.summarizer, ProviderSummarizer)
        assert (manager.summarizer.provider, manager.summarizer.model) == ("azure-openai", "gpt-5")
        assert manager.summarizer.name == "provider:azure-openai:gpt-5"
        assert manager.summarizer._client.api_key == "sk-test"
        await manager.summarizer.aclose()
    finally:
        await manager.store.close()


@pytest.mark.parametrize("provider", ["", "two words", "a/b"])
def test_a_provider_name_must_be_one_identifier(tmp_path: Path, provider: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"summarizer\.provider"):
        _store_config(tmp_path, summarizer={"kind": "provider", "provider": provider})
