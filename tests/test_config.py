"""Tests for sessionstore._config (docs/CONFIGURATION.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore._config import ENV_OVERRIDES, SessionStoreConfig, load_config
from sessionstore._errors import ConfigError, SessionStoreError
from sessionstore._jobs._retention import RetentionAction
from tests.support.paths import REPO_ROOT


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    text = json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- loading


def test_defaults_without_a_file_are_the_spec_values() -> None:
    config = load_config(environ={})
    policy = config.policy
    assert (policy.trigger_pct, policy.hard_cap_buffer) == (0.85, 1500)
    assert (policy.keep_recent_turns, policy.keep_tool_io_pairs) == (6, 4)
    assert policy.roles_never_prune == ("system", "developer")
    assert policy.strategy == "task_state"
    assert (config.model, config.max_context_tokens) == ("gpt-4o", 128_000)
    assert config.storage.path == ".compact/archive"
    assert config.redaction.enabled is True
    assert config.redaction.patterns is None
    assert config.summarizer.kind == "extractive"
    assert config == SessionStoreConfig()


@pytest.mark.parametrize("name", ["compact.yaml", "compact.yml", "compact.json"])
def test_file_loading(tmp_path: Path, name: str) -> None:
    data = {
        "model": "gpt-4.1",
        "policy": {"trigger_pct": 0.7, "strategy": "brief"},
        "telemetry": {"exporters": ["otlp"], "otlp_endpoint": "http://collector:4317"},
        "redaction": {"patterns": [r"(?i)password\s*[:=]\s*\S+"]},
    }
    config = load_config(write(tmp_path, name, data), environ={})
    assert config.model == "gpt-4.1"
    assert config.policy.trigger_pct == 0.7
    assert config.policy.strategy == "brief"
    assert config.policy.keep_recent_turns == 6  # unset fields keep their defaults
    assert config.telemetry.exporters == ("otlp",)
    assert config.redaction.patterns == [r"(?i)password\s*[:=]\s*\S+"]


def test_empty_yaml_file_means_defaults(tmp_path: Path) -> None:
    path = tmp_path / "compact.yaml"
    path.write_text("# nothing set\n", encoding="utf-8")
    assert load_config(path, environ={}) == SessionStoreConfig()


def test_example_compact_yaml_loads_every_section() -> None:
    config = load_config(REPO_ROOT / "compact.yaml", environ={})
    raw = yaml.safe_load((REPO_ROOT / "compact.yaml").read_text(encoding="utf-8"))
    assert set(raw) == set(SessionStoreConfig.model_fields)  # the example shows every section
    assert config.policy == SessionStoreConfig().policy
    assert config.retention.policies[0].action is RetentionAction.DELETE_ARCHIVES
    assert config.redaction.extra_patterns


# ---------------------------------------------------------------- environment


def test_env_beats_file(tmp_path: Path) -> None:
    path = write(tmp_path, "compact.yaml", {"policy": {"trigger_pct": 0.85}})
    config = load_config(path, environ={"COMPACT_TRIGGER_PCT": "0.9"})
    assert config.policy.trigger_pct == 0.9


def test_every_env_override_reaches_its_field() -> None:
    values = {
        "COMPACT_MODEL": ("gpt-4.1", "gpt-4.1"),
        "COMPACT_MAX_CONTEXT_TOKENS": ("64000", 64000),
        "COMPACT_TRIGGER_PCT": ("0.5", 0.5),
        "COMPACT_HARD_CAP_BUFFER": ("100", 100),
        "COMPACT_KEEP_RECENT_TURNS": ("2", 2),
        "COMPACT_KEEP_TOOL_IO_PAIRS": ("1", 1),
        "COMPACT_STRATEGY": ("brief", "brief"),
        "SESSIONSTORE_URL": ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        "COMPACT_REDACTION_ENABLED": ("false", False),
        "COMPACT_SUMMARIZER": ("provider", "provider"),  # the kind that reads a provider
        "COMPACT_SUMMARIZER_MODEL": ("gpt-4o-mini", "gpt-4o-mini"),
        "COMPACT_SUMMARIZER_BASE_URL": ("http://llm:8000/v1", "http://llm:8000/v1"),
        "COMPACT_SUMMARIZER_PROVIDER": ("azure-openai", "azure-openai"),
        "COMPACT_EXPORTERS": ("console, otlp", ("console", "otlp")),
        "COMPACT_OTLP_ENDPOINT": ("http://otel:4317", "http://otel:4317"),
        "COMPACT_ARIADNE_URL": ("http://ariadne", "http://ariadne"),
        "COMPACT_STORAGE_ADAPTER": ("fs", "fs"),
        "COMPACT_STORAGE_PATH": ("/var/archive", "/var/archive"),
    }
    assert set(values) == {override.var for override in ENV_OVERRIDES}
    config = load_config(environ={var: raw for var, (raw, _) in values.items()}).model_dump()
    for override in ENV_OVERRIDES:
        value: Any = config
        for part in override.path.split("."):
            value = value[part]
        assert value == values[override.var][1], override.var


def test_empty_env_value_is_no_override(tmp_path: Path) -> None:
    path = write(tmp_path, "compact.json", {"model": "gpt-4.1"})
    assert load_config(path, environ={"COMPACT_MODEL": "  "}).model == "gpt-4.1"


def test_real_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPACT_KEEP_RECENT_TURNS", "9")
    assert load_config().policy.keep_recent_turns == 9


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("data", "environ", "expected"),
    [
        (
            {"policy": {"trigger_pct": 1.5}},
            {},
            "policy.trigger_pct must be 0.0-1.0 (got 1.5)",
        ),
        (
            {"policy": {"hard_cap_buffer": -1}},
            {},
            "policy.hard_cap_buffer must be >= 0 (got -1)",
        ),
        (
            {"telemetry": {"exporters": ["console", "zipkin"]}},
            {},
            "telemetry.exporters.1 must be one of console, otlp, ariadne, callback (got 'zipkin')",
        ),
        (
            {"policy": {"strategy": "haiku"}},
            {},
            "policy.strategy must be one of brief, code_delta, decision_log",
        ),
        (
            {"redaction": {"extra_patterns": ["ok", "(unclosed"]}},
            {},
            "redaction.extra_patterns must be valid regexes: redaction pattern 1 ('(unclosed')",
        ),
        (
            {"summarizer": {"kind": "provider", "provider": "open ai"}},
            {},
            "summarizer.provider must name who reads the compaction items: letters, digits and "
            "_ . : - only, e.g. 'openai' or 'azure-openai' (case is ignored) (got 'open ai')",
        ),
        (
            {"summarizer": {"provider": "azure-openai"}},
            {},
            "summarizer.provider applies only with kind provider (kind is 'extractive', which "
            "ignores it): remove it, or set summarizer.kind to provider",
        ),
        (
            {"summarizer": {"kind": "openai"}},
            {"COMPACT_SUMMARIZER_PROVIDER": "azure-openai"},
            "summarizer.provider applies only with kind provider (kind is 'openai', which "
            "ignores it): remove it, or set summarizer.kind to provider "
            "(from COMPACT_SUMMARIZER_PROVIDER)",
        ),
        ({"polcy": {}}, {}, "polcy is not a known setting (known: model, max_context_tokens"),
        ({"store": {"pool": 3}}, {}, "store.pool is not a known setting (known: url"),
        ({"max_context_tokens": "many"}, {}, "max_context_tokens must be an integer (got 'many')"),
        ({"max_context_tokens": 0}, {}, "max_context_tokens must be > 0 (got 0)"),
        ({"policy": ["trigger_pct"]}, {}, "policy must be a mapping (got ['trigger_pct'])"),
        ({"storage": {"adapter": "s3"}}, {}, "storage.s3_bucket is required when adapter is 's3'"),
        (
            {"telemetry": {"exporters": ["ariadne"], "export_timeout_s": 5}},
            {},
            "telemetry.export_timeout_s must be <= 2.0 when the ariadne exporter is enabled",
        ),
        (
            {"retention": {"policies": [{"name": "x", "action": "delete_events"}]}},
            {},
            "retention.policies.0.older_than_days is required",
        ),
        (
            {"store": {"sqlite_synchronous": "fast"}},
            {},
            "store.sqlite_synchronous must be one of OFF, NORMAL, FULL, EXTRA (got 'fast')",
        ),
        (
            {"policy": {"soft_limit_tokens": 5, "hard_limit_tokens": 3}},
            {},
            "policy soft_limit_tokens (5) must not exceed hard_limit_tokens (3)",
        ),
        (
            {"redaction": {"patterns": ["[a-"]}},
            {},
            "redaction.patterns must be valid regexes: redaction pattern 0 ('[a-')",
        ),
        (
            {
                "retention": {
                    "policies": [
                        {"name": "x", "action": "delete_events", "older_than_days": 1},
                        {"name": "x", "action": "delete_archives", "older_than_days": 2},
                    ]
                }
            },
            {},
            "retention.policies names must be unique (repeated: ['x'])",
        ),
        ({"model": ""}, {}, "model must have at least 1 character (got '')"),
        (
            {"telemetry": {"exporters": ["otlp"]}},
            {},
            "telemetry.otlp_endpoint is required when the otlp exporter is enabled",
        ),
        (
            {"telemetry": {"exporters": ["ariadne"]}},
            {},
            "telemetry.ariadne_url is required when the ariadne exporter is enabled",
        ),
        (
            {"telemetry": {"ariadne_url": "ariadne:8080"}},
            {},
            "telemetry.ariadne_url must be an http(s) URL such as http://127.0.0.1:4318",
        ),
        (
            {"telemetry": {"exporters": ["callback"]}},
            {},
            "telemetry.callback is required when the callback exporter is enabled",
        ),
        (
            {"telemetry": {"callback": "mymodule.handler"}},
            {},
            "telemetry.callback must look like 'package.module:function' (got 'mymodule.handler')",
        ),
        (
            {},
            {"COMPACT_TRIGGER_PCT": "abc"},
            "policy.trigger_pct must be a number (got 'abc') (from COMPACT_TRIGGER_PCT)",
        ),
        (
            {},
            {"COMPACT_EXPORTERS": "console,zipkin"},
            "telemetry.exporters.1 must be one of console, otlp, ariadne, callback (got 'zipkin')"
            " (from COMPACT_EXPORTERS)",
        ),
        (
            {"policy": {"keep_recent_turns": 2}},
            {"COMPACT_KEEP_RECENT_TURNS": "-3"},
            "policy.keep_recent_turns must be >= 0 (got '-3') (from COMPACT_KEEP_RECENT_TURNS)",
        ),
    ],
)
def test_validation_errors_name_the_field(
    tmp_path: Path, data: dict[str, Any], environ: dict[str, str], expected: str
) -> None:
    path = write(tmp_path, "compact.yaml", data)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=environ)
    assert any(problem.startswith(expected) for problem in caught.value.problems), str(caught.value)
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, SessionStoreError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("data", "environ", "expected"),
    [
        ({"kind": "provider", "provider": "OpenAI"}, {}, "openai"),
        ({"kind": "provider"}, {"COMPACT_SUMMARIZER_PROVIDER": " Azure-OpenAI "}, "azure-openai"),
        ({"provider": "OpenAI"}, {}, "openai"),  # the default whatever the kind: nothing ignored
    ],
)
def test_provider_names_are_lower_case(
    tmp_path: Path, data: dict[str, Any], environ: dict[str, str], expected: str
) -> None:
    """Compaction items are bound to this name and compared with the adapter's ('openai')."""
    path = write(tmp_path, "compact.yaml", {"summarizer": data})
    assert load_config(path, environ=environ).summarizer.provider == expected


def test_a_bad_provider_is_one_problem_saying_what_is_allowed(tmp_path: Path) -> None:
    path = write(tmp_path, "compact.yaml", {"summarizer": {"kind": "provider", "provider": "a b"}})
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    [problem] = caught.value.problems
    assert problem.startswith("summarizer.provider must name who reads the compaction items")
    assert "String should match pattern" not in str(caught.value)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    data = {"policy": {"trigger_pct": -0.1, "keep_tool_io_pairs": "four"}, "extra": 1}
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, "compact.json", data), environ={})
    assert len(caught.value.problems) == 3
    assert str(caught.value).startswith(f"invalid configuration ({tmp_path / 'compact.json'}): 3")


def test_file_value_is_not_blamed_on_an_unrelated_env_var(tmp_path: Path) -> None:
    path = write(tmp_path, "compact.yaml", {"policy": {"trigger_pct": 2}})
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={"COMPACT_HARD_CAP_BUFFER": "10"})
    assert caught.value.problems == ("policy.trigger_pct must be 0.0-1.0 (got 2)",)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("compact.toml", "model = 'x'", "unknown file type '.toml'; use .yaml, .yml or .json"),
        ("compact.yaml", "policy: [unclosed", "not valid YAML"),
        ("compact.json", "{", "not valid JSON"),
        ("compact.yaml", "- a list", "the top level must be a mapping of sections (got list)"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_config(path, environ={})


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "absent.yaml", environ={})


# ---------------------------------------------------------------- round trip

configs = st.builds(
    lambda model, window, policy, store, summarizer, telemetry, storage, redaction: (
        SessionStoreConfig.model_validate(
            {
                "model": model,
                "max_context_tokens": window,
                "policy": policy,
                "store": store,
                "summarizer": summarizer,
                "telemetry": telemetry,
                "storage": storage,
                "redaction": redaction,
            }
        )
    ),
    st.sampled_from(["gpt-4o", "gpt-4.1", "o3"]),
    st.integers(1, 2_000_000),
    st.fixed_dictionaries(
        {
            "trigger_pct": st.floats(0.0, 1.0, allow_nan=False),
            "hard_cap_buffer": st.integers(0, 100_000),
            "keep_recent_turns": st.integers(0, 50),
            "keep_tool_io_pairs": st.integers(0, 50),
            "strategy": st.sampled_from(["task_state", "brief"]),
            "summary_role": st.sampled_from(["assistant", "user"]),
        }
    ),
    st.fixed_dictionaries(
        {
            "sqlite_busy_timeout_ms": st.integers(0, 60_000),
            "sqlite_synchronous": st.sampled_from(["OFF", "NORMAL", "FULL", "EXTRA"]),
            "encrypt_payloads": st.booleans(),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["extractive", "openai"]),
            "timeout": st.floats(0.1, 600, allow_nan=False),
            "api": st.sampled_from(["chat", "responses"]),
        }
    ),
    st.fixed_dictionaries(
        {
            "exporters": st.lists(
                st.sampled_from(["console", "otlp", "ariadne", "callback"]), max_size=4
            ),
            "otlp_endpoint": st.just("http://127.0.0.1:4318/v1/traces"),
            "ariadne_url": st.just("http://127.0.0.1:8080"),
            "callback": st.just("json:dumps"),
            "queue_size": st.integers(1, 100_000),
            "export_timeout_s": st.floats(0.1, 2.0, allow_nan=False),
        }
    ),
    st.one_of(
        st.fixed_dictionaries({"adapter": st.sampled_from(["sql", "fs"])}),
        st.fixed_dictionaries(
            {
                "adapter": st.just("s3"),
                "s3_bucket": st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=3),
                "s3_kms_key_id": st.none() | st.just("alias/sessionstore"),
            }
        ),
    ),
    st.fixed_dictionaries({"enabled": st.booleans()}),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(config=configs, suffix=st.sampled_from([".yaml", ".json"]))
def test_round_trip_through_a_file(tmp_path: Path, config: SessionStoreConfig, suffix: str) -> None:
    path = write(tmp_path, f"compact{suffix}", config.model_dump(mode="json"))
    assert load_config(path, environ={}) == config


def test_docs_list_every_env_override_and_section() -> None:
    docs = (REPO_ROOT / "docs" / "CONFIGURATION.md").read_text(encoding="utf-8")
    for override in ENV_OVERRIDES:
        assert f"| `{override.var}` | `{override.path}`" in docs, override.var
    for section in SessionStoreConfig.model_fields:
        assert f"`{section}`" in docs, section
