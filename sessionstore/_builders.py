"""Turn a validated `SessionStoreConfig` into working objects in one call.

`build_store` wires the database, keyring, redaction and the event bus with the
configured exporters; `build_manager` adds the policy, summarizer and archive
sinks. Anything the file names but this machine cannot provide (an unimportable
callback, boto3 missing for S3) is a `ConfigError` naming the field, at build time.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ._config import KeySettings, SessionStoreConfig, load_config
from ._errors import ConfigError
from ._history._prices import Price
from ._redaction import Redactor
from ._security._crypto import ACTIVE_KEY_ENV, KEY_FILE_ENV, KEYS_ENV, Keyring

if TYPE_CHECKING:
    from ._store import SessionStore
    from .archive import ArchiveSink
    from .compaction._manager import CompactionManager
    from .compaction._summarizers._summarizer import Summarizer
    from .exporters._bus import EventBus, Exporter

__all__ = ["build_event_bus", "build_manager", "build_sinks", "build_store", "manager_from_file"]


def _keyring(keys: KeySettings, env: Mapping[str, str]) -> Keyring | None:
    """key_file, else $keys_env, else $SESSIONSTORE_KEY_FILE, else None (archives stay plain)."""
    if keys.key_file is not None:
        return Keyring.from_file(keys.key_file)
    raw = env.get(keys.keys_env, "").strip()
    if raw:
        return Keyring.from_env({KEYS_ENV: raw, ACTIVE_KEY_ENV: env.get(ACTIVE_KEY_ENV, "")})
    key_file = env.get(KEY_FILE_ENV, "").strip()
    return Keyring.from_file(key_file) if key_file else None


def _callback(path: str) -> Callable[[dict[str, Any]], None]:
    """The function named by `telemetry.callback` ("package.module:function")."""
    module_name, _, attribute = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name.strip())
        for part in attribute.strip().split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError([f"telemetry.callback cannot be imported: {path!r} ({exc})"]) from None
    if not callable(target):
        raise ConfigError([f"telemetry.callback must name a function (got {path!r})"])
    return target  # type: ignore[no-any-return]


def _exporter(name: str, config: SessionStoreConfig) -> Exporter:
    telemetry = config.telemetry
    if name == "console":
        from .exporters._console import ConsoleExporter

        return ConsoleExporter()
    if name == "otlp":
        from .exporters._otlp import OtlpExporter

        assert telemetry.otlp_endpoint is not None  # the config requires it with "otlp"
        return OtlpExporter(telemetry.otlp_endpoint, timeout=telemetry.export_timeout_s)
    if name == "ariadne":
        from .exporters._ariadne import AriadneExporter

        assert telemetry.ariadne_url is not None  # the config requires it with "ariadne"
        return AriadneExporter(telemetry.ariadne_url, timeout=telemetry.export_timeout_s)
    from .exporters._callback import CallbackExporter

    assert telemetry.callback is not None  # the config requires it with "callback"
    return CallbackExporter(_callback(telemetry.callback))


def build_event_bus(config: SessionStoreConfig) -> EventBus | None:
    """The bus that fans stored events out to `telemetry.exporters` (None when there are none)."""
    if not config.telemetry.exporters:
        return None
    from .exporters._bus import EventBus

    exporters = [_exporter(name, config) for name in dict.fromkeys(config.telemetry.exporters)]
    return EventBus(exporters, maxsize=config.telemetry.queue_size)


def build_store(
    config: SessionStoreConfig,
    *,
    environ: Mapping[str, str] | None = None,
    read_only: bool = False,
) -> SessionStore:
    """A SessionStore with the config's database, keyring, redaction and exporters
    (`read_only`: see SessionStore; the config's create_tables is then ignored)."""
    from ._store import SessionStore

    env = os.environ if environ is None else environ
    redaction = config.redaction
    return SessionStore(
        config.store.url,
        model=config.model,
        create_tables=None if read_only else config.store.create_tables,
        read_only=read_only,
        sqlite_busy_timeout_ms=config.store.sqlite_busy_timeout_ms,
        timeout_s=config.store.timeout_s,
        max_item_bytes=config.store.max_item_bytes,
        sqlite_synchronous=config.store.sqlite_synchronous,
        keyring=_keyring(config.keys, env),
        redactor=Redactor(
            redaction.patterns,
            extra_patterns=redaction.extra_patterns,
            enabled=redaction.enabled,
        ),
        redact_archives=config.store.redact_archives,
        encrypt_payloads=config.store.encrypt_payloads,
        verify_on_load=config.store.verify_on_load,
        failover_retry_s=config.store.failover_retry_s,
        prices={
            name: Price(price.input, price.cached_input, price.output)
            for name, price in config.store.prices.items()
        },
        publisher=build_event_bus(config),
    )


def _s3_client(endpoint_url: str | None) -> Any:
    """A boto3 S3 client from the standard AWS credential chain (never from the config)."""
    try:
        import boto3
    except ImportError:
        problem = "storage.adapter 's3' needs boto3: pip install 'sessionstore[s3]'"
        raise ConfigError([problem]) from None
    return boto3.client("s3", endpoint_url=endpoint_url)


def build_sinks(config: SessionStoreConfig, redactor: Redactor) -> list[ArchiveSink]:
    """Copies of each compaction beyond SQL: the `storage` section's filesystem or S3 sink."""
    storage = config.storage
    if storage.adapter == "fs":
        from .archive._filesystem import FilesystemSink

        return [FilesystemSink(storage.path, redactor=redactor)]
    if storage.adapter == "s3":
        from .archive._s3 import S3Sink

        assert storage.s3_bucket is not None  # the config requires it with "s3"
        client = _s3_client(storage.s3_endpoint_url)
        return [
            S3Sink(
                storage.s3_bucket,
                prefix=storage.s3_prefix,
                client=client,
                kms_key_id=storage.s3_kms_key_id,
                redactor=redactor,
            )
        ]
    return []  # "sql": the archives table already holds every replaced row


def _summarizer(config: SessionStoreConfig, env: Mapping[str, str]) -> Summarizer | None:
    """The OpenAI or provider summarizer, or None so CompactionManager uses the extractive
    one."""
    settings = config.summarizer
    if settings.kind == "extractive":
        return None
    if settings.kind == "provider":
        from .compaction._summarizers._provider import ProviderSummarizer

        return ProviderSummarizer(
            settings.model or config.model,
            provider=settings.provider,
            base_url=settings.base_url,
            api_key=env.get(settings.api_key_env) or None,
            timeout=settings.timeout,
        )
    from .compaction._summarizers._openai import OpenAISummarizer

    return OpenAISummarizer(
        settings.model or config.model,
        base_url=settings.base_url,
        api_key=env.get(settings.api_key_env) or None,
        timeout=settings.timeout,
        seed=settings.seed,
        api=settings.api,
    )


def build_manager(
    config: SessionStoreConfig,
    store: SessionStore | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> CompactionManager:
    """A CompactionManager over `store` (default: `build_store(config)`) with the config's
    policy, summarizer and archive sinks."""
    from .compaction._manager import CompactionManager
    from .compaction._outcome import CompactionConfig

    env = os.environ if environ is None else environ
    session_store = store or build_store(config, environ=env)
    return CompactionManager(
        CompactionConfig(
            model=config.model,
            max_context_tokens=config.max_context_tokens,
            policy=config.policy,
            store=session_store,
            summarizer=_summarizer(config, env),
            record_idle_decisions=config.record_idle_decisions,
            sinks=build_sinks(config, session_store.redactor),
        )
    )


def manager_from_file(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> CompactionManager:
    """Load, validate and build in one call; its store is `manager.store`."""
    return build_manager(load_config(path, environ=environ), environ=environ)
