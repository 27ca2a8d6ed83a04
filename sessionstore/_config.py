"""One validated configuration for the whole product (docs/CONFIGURATION.md).

Settings come from defaults, then a YAML/JSON file, then `COMPACT_*` environment variables
(see `ENV_OVERRIDES`), and are validated together so that every problem is reported at once,
each under its dotted field path. `build_store`/`build_manager` turn a config into objects.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Final, Literal, get_args, get_origin
from urllib.parse import urlsplit

import yaml
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ValidationInfo

from ._errors import ConfigError
from ._jobs._retention import RetentionAction, RetentionPolicy
from ._opaque import DEFAULT_PROVIDER, PROVIDER_RULE, normalize_provider
from ._redaction import parse_patterns
from ._security._crypto import KEYS_ENV
from .compaction._policy import CompactionPolicy
from .compaction._summarizers._prompts import BUILTIN_STRATEGIES, resolve_strategy

__all__ = [
    "ENV_OVERRIDES",
    "EnvOverride",
    "KeySettings",
    "RedactionSettings",
    "RetentionPolicySettings",
    "RetentionSettings",
    "SessionStoreConfig",
    "StorageSettings",
    "StoreSettings",
    "SummarizerSettings",
    "TelemetrySettings",
    "load_config",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- sections


class PriceSetting(BaseModel):
    """A model's price, USD per 1M tokens (cached input: the price of a cache hit)."""

    model_config = _FROZEN

    input: float = Field(ge=0)
    cached_input: float = Field(ge=0)
    output: float = Field(ge=0)


class StoreSettings(BaseModel):
    """How SessionStore opens its database and protects what it stores."""

    model_config = _FROZEN

    url: str | None = None  # None: the embedded SQLite file (or $SESSIONSTORE_URL via SessionStore)
    create_tables: bool | None = None  # None: True for SQLite, False for PostgreSQL
    sqlite_busy_timeout_ms: int = Field(5000, ge=0)
    timeout_s: float = Field(60.0, gt=0)  # bounds every wait inside the store
    max_item_bytes: int = Field(64 * 1024 * 1024, gt=0)  # larger items are refused
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    encrypt_payloads: bool = False
    redact_archives: bool = False
    verify_on_load: bool = False  # prove every load of the active context against its chain
    # PostgreSQL: retry an append through a primary failover for up to this long (0: off).
    failover_retry_s: float = Field(0.0, ge=0)
    # USD per 1M tokens by model name, added to (or replacing) the default price table.
    prices: dict[str, PriceSetting] = Field(default_factory=dict)


class SummarizerSettings(BaseModel):
    """Which summarizer compaction uses; the API key is named, never written in the config."""

    model_config = _FROZEN

    kind: Literal["extractive", "openai", "provider"] = "extractive"
    model: str | None = None  # None: the top-level model
    base_url: str | None = None
    api_key_env: str = Field("OPENAI_API_KEY", min_length=1)
    timeout: float = Field(30.0, gt=0)
    seed: int = 42
    api: Literal["chat", "responses"] = "chat"
    # kind "provider": who reads the opaque compaction items (`compactions.provider`).
    provider: str = DEFAULT_PROVIDER

    @field_validator("provider")
    @classmethod
    def _provider_name(cls, value: str, info: ValidationInfo) -> str:
        """Lower case, as the adapters name providers; refused where it would be ignored."""
        try:
            name = normalize_provider(value)
        except ValueError:
            raise PydanticCustomError(
                "provider_name", PROVIDER_RULE + " (got {got})", {"got": repr(value)}
            ) from None
        kind = info.data.get("kind")
        if name != DEFAULT_PROVIDER and kind is not None and kind != "provider":
            raise PydanticCustomError(
                "provider_unused",
                "applies only with kind provider (kind is {kind}, which ignores it): remove "
                "it, or set summarizer.kind to provider",
                {"kind": repr(kind)},
            )
        return name


Exporter = Literal["console", "otlp", "ariadne", "callback"]
ARIADNE_MAX_EXPORT_TIMEOUT_S = 2.0


class TelemetrySettings(BaseModel):
    """Where trace events are exported."""

    model_config = _FROZEN

    exporters: tuple[Exporter, ...] = ("console",)
    otlp_endpoint: str | None = Field(
        None, validate_default=True
    )  # e.g. http://host:4318/v1/traces
    ariadne_url: str | None = Field(None, validate_default=True)  # /ingest is appended
    callback: str | None = Field(None, validate_default=True)  # "package.module:function"
    queue_size: int = Field(1000, ge=1)
    export_timeout_s: float = Field(ARIADNE_MAX_EXPORT_TIMEOUT_S, gt=0)

    @field_validator("otlp_endpoint", "ariadne_url")
    @classmethod
    def _http_endpoint(cls, value: str | None, info: ValidationInfo) -> str | None:
        # An enabled exporter with nowhere to send would silently export nothing.
        exporter = "otlp" if info.field_name == "otlp_endpoint" else "ariadne"
        if value is None:
            if exporter in info.data.get("exporters", ()):
                raise PydanticCustomError(
                    "endpoint_required",
                    "is required when the {name} exporter is enabled",
                    {"name": exporter},
                )
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PydanticCustomError(
                "http_url",
                "must be an http(s) URL such as http://127.0.0.1:4318 (got {got})",
                {"got": repr(value)},
            )
        return value

    @field_validator("callback")
    @classmethod
    def _import_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            if "callback" in info.data.get("exporters", ()):
                raise PydanticCustomError(
                    "callback_required", "is required when the callback exporter is enabled"
                )
            return None
        module, _, attribute = value.partition(":")
        if not module.strip() or not attribute.strip():
            raise PydanticCustomError(
                "import_path",
                "must look like 'package.module:function' (got {got})",
                {"got": repr(value)},
            )
        return value

    @field_validator("export_timeout_s")
    @classmethod
    def _ariadne_is_fast(cls, value: float, info: ValidationInfo) -> float:
        # Ariadne export runs on the agent's path: a slow collector must not stall a turn.
        if "ariadne" in info.data.get("exporters", ()) and value > ARIADNE_MAX_EXPORT_TIMEOUT_S:
            raise PydanticCustomError(
                "ariadne_timeout",
                "must be <= {limit} when the ariadne exporter is enabled (got {got})",
                {"limit": ARIADNE_MAX_EXPORT_TIMEOUT_S, "got": value},
            )
        return value


class StorageSettings(BaseModel):
    """Where archives of compacted messages go."""

    model_config = _FROZEN

    adapter: Literal["sql", "fs", "s3"] = "sql"
    path: str = ".compact/archive"  # the fs adapter's directory
    s3_prefix: str = ""
    s3_kms_key_id: str | None = None  # SSE-KMS key; None: the bucket's default encryption
    s3_endpoint_url: str | None = None  # a non-AWS endpoint (MinIO, a local test server)
    s3_bucket: str | None = Field(None, validate_default=True)

    @field_validator("s3_bucket")
    @classmethod
    def _bucket_for_s3(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("adapter") == "s3" and not value:
            raise PydanticCustomError("s3_bucket", "is required when adapter is 's3'")
        return value


def _valid_patterns(patterns: list[str] | None) -> list[str] | None:
    """Fail at load time, not at the first redaction, on a pattern that does not compile."""
    if patterns is not None:
        try:
            parse_patterns(patterns)
        except ValueError as exc:
            raise PydanticCustomError(
                "regex", "must be valid regexes: {error}", {"error": exc}
            ) from None
    return patterns


class RedactionSettings(BaseModel):
    """Secret scrubbing of stored events and exports."""

    model_config = _FROZEN

    enabled: bool = True
    patterns: list[str] | None = None  # None: sessionstore._redaction.DEFAULT_PATTERNS
    extra_patterns: list[str] = Field(default_factory=list)  # added to patterns (or defaults)

    _check_patterns = field_validator("patterns", "extra_patterns")(_valid_patterns)


class KeySettings(BaseModel):
    """Where the keyring that seals archives and payloads comes from."""

    model_config = _FROZEN

    key_file: str | None = None  # JSON key file (chmod 600); wins over keys_env
    keys_env: str = Field(KEYS_ENV, min_length=1)  # env var holding id:base64secret[,...]


class RetentionPolicySettings(BaseModel):
    """One retention policy (a row of `retention_policies`)."""

    model_config = _FROZEN

    name: str = Field(min_length=1, max_length=64)
    action: RetentionAction
    older_than_days: int = Field(gt=0)
    keep_archives: bool = True
    enabled: bool = True

    def to_policy(self) -> RetentionPolicy:
        """The policy `sessionstore.set_policy` stores."""
        return RetentionPolicy(**self.model_dump())


class RetentionSettings(BaseModel):
    """Retention policies to install."""

    model_config = _FROZEN

    policies: list[RetentionPolicySettings] = Field(default_factory=list)

    @field_validator("policies")
    @classmethod
    def _unique_names(
        cls, policies: list[RetentionPolicySettings]
    ) -> list[RetentionPolicySettings]:
        # Policies are stored by name: a second one would silently replace the first.
        names = [policy.name for policy in policies]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise PydanticCustomError(
                "duplicate_names", "names must be unique (repeated: {names})", {"names": duplicates}
            )
        return policies


def _known_strategy(policy: CompactionPolicy) -> CompactionPolicy:
    """CompactionManager rejects an unknown strategy; the config says so at load time instead."""
    try:
        resolve_strategy(policy.strategy, policy.custom_strategies)
    except ValueError:
        choices = ", ".join(sorted({*BUILTIN_STRATEGIES, *policy.custom_strategies}))
        raise PydanticCustomError(
            "unknown_strategy",
            "must be one of {choices} (got {got})",
            {"field": "strategy", "choices": choices, "got": repr(policy.strategy)},
        ) from None
    return policy


class SessionStoreConfig(BaseModel):
    """Every setting of sessionstore; the defaults are documented in docs/CONFIGURATION.md."""

    model_config = _FROZEN

    model: str = Field("gpt-4o", min_length=1)
    max_context_tokens: int = Field(128_000, gt=0)
    record_idle_decisions: bool = True
    policy: CompactionPolicy = Field(default_factory=CompactionPolicy)
    store: StoreSettings = Field(default_factory=StoreSettings)
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    redaction: RedactionSettings = Field(default_factory=RedactionSettings)
    keys: KeySettings = Field(default_factory=KeySettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)

    _check_strategy = field_validator("policy")(_known_strategy)


# ---------------------------------------------------------------- environment


@dataclass(frozen=True, slots=True)
class EnvOverride:
    """An environment variable that overrides one field; `is_list` splits it on commas."""

    var: str
    path: str
    is_list: bool = False


# The single source of the env-override table (docs/CONFIGURATION.md mirrors it).
ENV_OVERRIDES: tuple[EnvOverride, ...] = (
    EnvOverride("COMPACT_MODEL", "model"),
    EnvOverride("COMPACT_MAX_CONTEXT_TOKENS", "max_context_tokens"),
    EnvOverride("COMPACT_TRIGGER_PCT", "policy.trigger_pct"),
    EnvOverride("COMPACT_HARD_CAP_BUFFER", "policy.hard_cap_buffer"),
    EnvOverride("COMPACT_KEEP_RECENT_TURNS", "policy.keep_recent_turns"),
    EnvOverride("COMPACT_KEEP_TOOL_IO_PAIRS", "policy.keep_tool_io_pairs"),
    EnvOverride("COMPACT_STRATEGY", "policy.strategy"),
    EnvOverride("SESSIONSTORE_URL", "store.url"),
    EnvOverride("COMPACT_REDACTION_ENABLED", "redaction.enabled"),
    EnvOverride("COMPACT_SUMMARIZER", "summarizer.kind"),
    EnvOverride("COMPACT_SUMMARIZER_MODEL", "summarizer.model"),
    EnvOverride("COMPACT_SUMMARIZER_BASE_URL", "summarizer.base_url"),
    EnvOverride("COMPACT_SUMMARIZER_PROVIDER", "summarizer.provider"),
    EnvOverride("COMPACT_EXPORTERS", "telemetry.exporters", is_list=True),
    EnvOverride("COMPACT_OTLP_ENDPOINT", "telemetry.otlp_endpoint"),
    EnvOverride("COMPACT_ARIADNE_URL", "telemetry.ariadne_url"),
    EnvOverride("COMPACT_STORAGE_ADAPTER", "storage.adapter"),
    EnvOverride("COMPACT_STORAGE_PATH", "storage.path"),
)


def _apply_env(data: dict[str, Any], environ: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """Set each overridden field in `data` (in place); returns field path -> env var name."""
    sources: dict[tuple[str, ...], str] = {}
    for override in ENV_OVERRIDES:
        raw = environ.get(override.var, "").strip()
        if not raw:  # unset and empty both mean "no override"
            continue
        *parents, leaf = override.path.split(".")
        section = data
        for name in parents:
            child = section.setdefault(name, {})
            if not isinstance(child, dict):
                break  # the file's section is malformed; validation reports it
            section = child
        else:
            value: Any = [part.strip() for part in raw.split(",")] if override.is_list else raw
            section[leaf] = value
            sources[(*parents, leaf)] = override.var
    return sources


# ---------------------------------------------------------------- errors


def _walk(loc: Sequence[int | str]) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The model owning the last named field of `loc`, and that field (None when unknown)."""
    model: type[BaseModel] | None = SessionStoreConfig
    owner, info = None, None
    for part in loc:
        if isinstance(part, int):
            continue  # a list index: its items are the field's element type
        if model is None or part not in model.model_fields:
            return model, None
        owner, info = model, model.model_fields[part]
        model = _model_in(info.annotation)
    return owner, info


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _choices(annotation: Any) -> list[str]:
    """The allowed values of a Literal or Enum anywhere inside `annotation`."""
    if get_origin(annotation) is Literal:
        return [str(arg) for arg in get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(member.value) for member in annotation]
    return [choice for arg in get_args(annotation) for choice in _choices(arg)]


def _range(info: FieldInfo | None) -> str | None:
    """`0.0-1.0`, `>= 0`, `> 0 and <= 2` ... from a field's numeric constraints."""
    if info is None:
        return None
    ge = gt = le = lt = None
    for item in info.metadata:
        if isinstance(item, Ge):
            ge = item.ge
        elif isinstance(item, Gt):
            gt = item.gt
        elif isinstance(item, Le):
            le = item.le
        elif isinstance(item, Lt):
            lt = item.lt
    if ge is not None and le is not None:
        return f"{ge}-{le}"
    bounds = ((">=", ge), (">", gt), ("<=", le), ("<", lt))
    return " and ".join(f"{op} {value}" for op, value in bounds if value is not None) or None


_TYPE_WORDS: Final = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_BOUNDS: Final = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}


def _problem(error: ErrorDetails) -> tuple[tuple[int | str, ...], str]:
    """A pydantic error as (field path, problem in words)."""
    loc, kind, ctx = tuple(error["loc"]), error["type"], error.get("ctx", {})
    got = f" (got {error['input']!r})"
    owner, info = _walk(loc)
    if "field" in ctx:  # a section validator naming the field at fault
        return (*loc, ctx["field"]), error["msg"]
    if kind in _BOUNDS:
        bounds = _range(info) or error["msg"].lower().removeprefix("input should be ")
        return loc, f"must be {bounds}{got}"
    if kind in {"literal_error", "enum"}:
        choices = _choices(info.annotation if info else None)
        return loc, f"must be one of {', '.join(choices)}{got}"
    if kind == "missing":
        return loc, "is required"
    if kind == "extra_forbidden":
        known = ", ".join(owner.model_fields) if owner is not None else ""
        return loc, f"is not a known setting (known: {known})"
    if kind == "value_error":
        return loc, str(ctx.get("error", error["msg"]))
    if kind in {"string_too_short", "string_too_long"}:
        return loc, error["msg"].lower().replace("string should", "must") + got
    if kind in _TYPE_WORDS:
        return loc, f"must be {_TYPE_WORDS[kind]}{got}"
    return loc, error["msg"]


def _validate(
    data: Any, sources: Mapping[tuple[str, ...], str], origin: str | None
) -> SessionStoreConfig:
    try:
        return SessionStoreConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc, text = _problem(error)
            path = ".".join(str(part) for part in loc) or "(top level)"
            var = next((v for p, v in sources.items() if tuple(loc[: len(p)]) == p), None)
            problems.append(f"{path} {text}" + (f" (from {var})" if var else ""))
        raise ConfigError(problems, origin) from None


# ---------------------------------------------------------------- loading


def _read_file(path: Path) -> dict[str, Any]:
    """The file's top-level mapping; an empty file is an empty mapping."""
    suffix = path.suffix.lower()
    if suffix not in {".yaml", ".yml", ".json"}:
        raise ConfigError([f"unknown file type {suffix or '(none)'!r}; use .yaml, .yml or .json"])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"cannot read the file ({exc})"], str(path)) from None
    try:
        data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        where = " ".join(str(exc).split())  # YAML's message spans lines (it quotes the text)
        raise ConfigError([f"not valid {suffix[1:].upper()}: {where}"], str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        problem = f"the top level must be a mapping of sections (got {type(data).__name__})"
        raise ConfigError([problem], str(path))
    return data


def load_config(
    path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> SessionStoreConfig:
    """Defaults, then the YAML/JSON file at `path` (if any), then `ENV_OVERRIDES`; validated."""
    env = os.environ if environ is None else environ
    data = {} if path is None else _read_file(Path(path))
    sources = _apply_env(data, env)
    return _validate(data, sources, None if path is None else os.fspath(path))
