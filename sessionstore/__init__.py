"""sessionstore: a storage-centric session store for LLM agents with automatic compaction.

This package's `__all__` is the public API of the kernel; the modules behind it
(`sessionstore._store`, ...) are private and may change. The documented subpackages
add their own public names: `sessionstore.compaction` (the compaction manager,
policies, summarizers), `sessionstore.archive` (archive sinks), `sessionstore.exporters`
(event exporters), `sessionstore.adapters.agents_sdk` (the OpenAI Agents SDK) and
`sessionstore.adapters.chat` (a plain chat loop). docs/ARCHITECTURE.md maps them.

Only the exception tree is imported eagerly; every other name (the store, its rows
and readers, configuration, builders, keys, retention, the importer, and `SQLSession`,
which needs the `[agents]` extra) loads on first use. So `import sessionstore` stays
cheap and works without the Agents SDK, and the command line (a subpackage, which
imports this module first) starts without SQLAlchemy until a command needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import (
    ArchiveSinkError,
    BranchError,
    CompactionError,
    CompactionErrorReason,
    ConfigError,
    CorruptRowError,
    DatabaseNotFoundError,
    DuplicateAppendError,
    EncodingUnavailableError,
    HistoryPointError,
    HistoryTamperedError,
    ImportSourceError,
    InvalidItemError,
    InvalidSessionIdError,
    KeyIntegrityError,
    KeyInUseError,
    KeyringError,
    KeyUnavailableError,
    MissingKeyError,
    QueryRejectedError,
    QueryTooLargeError,
    ReadOnlyStoreError,
    SchemaError,
    SchemaMissingError,
    SchemaOutdatedError,
    SchemaTooNewError,
    SealedDataError,
    SessionClosedError,
    SessionStoreError,
    StoreError,
    StoreTimeoutError,
    StoreUnavailableError,
    SummarizerError,
    SummarizerInputTooLargeError,
    SummarizerUnavailableError,
    SummaryRefusedError,
    SummaryToolCallError,
    SummaryTooLongError,
    UnserializableItemError,
    UnsupportedURLError,
)

if TYPE_CHECKING:
    from ._arguments import check_agent_name, check_session_id, item_list
    from ._builders import build_event_bus, build_manager, build_store, manager_from_file
    from ._config import SessionStoreConfig, load_config
    from ._events import Event
    from ._history._branches import Fork
    from ._history._model_calls import CallUsage, ModelCall
    from ._history._prices import Price
    from ._history._search import SearchHit
    from ._history._time_travel import HistoryPoint, Rewind
    from ._history._turns import Turn, UserTurn
    from ._history._verify import ChainReport
    from ._items import text_of, tool_name_of
    from ._jobs._importer import ImportReport, import_sdk_sessions
    from ._jobs._key_rotation import RotationReport, check_retirable, key_usage, rotate_keys
    from ._jobs._retention import (
        RetentionAction,
        RetentionPolicy,
        RetentionReport,
        delete_policy,
        list_policies,
        run_retention,
        set_policy,
    )
    from ._jobs._sdk_first_access import SdkHistory, SdkTables
    from ._redaction import Redactor
    from ._rows import SessionInfo, StoredRow, decode_payload, visible_rows
    from ._security._crypto import AwsKmsKey, Keyring, LocalKey
    from ._store import SessionStore
    from ._tokens import TokenEstimator, estimator_for_model
    from .adapters.agents_sdk import SQLSession

_LAZY: dict[str, str] = {
    "check_agent_name": "._arguments",
    "check_session_id": "._arguments",
    "item_list": "._arguments",
    "Fork": "._history._branches",
    "Event": "._events",
    "ChainReport": "._history._verify",
    "text_of": "._items",
    "tool_name_of": "._items",
    "CallUsage": "._history._model_calls",
    "ModelCall": "._history._model_calls",
    "Price": "._history._prices",
    "SdkHistory": "._jobs._sdk_first_access",
    "SdkTables": "._jobs._sdk_first_access",
    "SessionInfo": "._rows",
    "StoredRow": "._rows",
    "decode_payload": "._rows",
    "visible_rows": "._rows",
    "SearchHit": "._history._search",
    "SessionStore": "._store",
    "HistoryPoint": "._history._time_travel",
    "Rewind": "._history._time_travel",
    "Turn": "._history._turns",
    "UserTurn": "._history._turns",
    "build_event_bus": "._builders",
    "build_manager": "._builders",
    "build_store": "._builders",
    "manager_from_file": "._builders",
    "SessionStoreConfig": "._config",
    "load_config": "._config",
    "AwsKmsKey": "._security._crypto",
    "Keyring": "._security._crypto",
    "LocalKey": "._security._crypto",
    "ImportReport": "._jobs._importer",
    "import_sdk_sessions": "._jobs._importer",
    "RotationReport": "._jobs._key_rotation",
    "check_retirable": "._jobs._key_rotation",
    "key_usage": "._jobs._key_rotation",
    "rotate_keys": "._jobs._key_rotation",
    "Redactor": "._redaction",
    "RetentionAction": "._jobs._retention",
    "RetentionPolicy": "._jobs._retention",
    "RetentionReport": "._jobs._retention",
    "delete_policy": "._jobs._retention",
    "list_policies": "._jobs._retention",
    "run_retention": "._jobs._retention",
    "set_policy": "._jobs._retention",
    "TokenEstimator": "._tokens",
    "estimator_for_model": "._tokens",
    "SQLSession": ".adapters.agents_sdk",
}

__all__ = [
    "ArchiveSinkError",
    "AwsKmsKey",
    "BranchError",
    "CallUsage",
    "ChainReport",
    "CompactionError",
    "CompactionErrorReason",
    "ConfigError",
    "CorruptRowError",
    "DatabaseNotFoundError",
    "DuplicateAppendError",
    "EncodingUnavailableError",
    "Event",
    "Fork",
    "HistoryPoint",
    "HistoryPointError",
    "HistoryTamperedError",
    "ImportReport",
    "ImportSourceError",
    "InvalidItemError",
    "InvalidSessionIdError",
    "KeyInUseError",
    "KeyIntegrityError",
    "KeyUnavailableError",
    "Keyring",
    "KeyringError",
    "LocalKey",
    "MissingKeyError",
    "ModelCall",
    "Price",
    "QueryRejectedError",
    "QueryTooLargeError",
    "ReadOnlyStoreError",
    "Redactor",
    "RetentionAction",
    "RetentionPolicy",
    "RetentionReport",
    "Rewind",
    "RotationReport",
    "SQLSession",
    "SchemaError",
    "SchemaMissingError",
    "SchemaOutdatedError",
    "SchemaTooNewError",
    "SdkHistory",
    "SdkTables",
    "SealedDataError",
    "SearchHit",
    "SessionClosedError",
    "SessionInfo",
    "SessionStore",
    "SessionStoreConfig",
    "SessionStoreError",
    "StoreError",
    "StoreTimeoutError",
    "StoreUnavailableError",
    "StoredRow",
    "SummarizerError",
    "SummarizerInputTooLargeError",
    "SummarizerUnavailableError",
    "SummaryRefusedError",
    "SummaryTooLongError",
    "SummaryToolCallError",
    "TokenEstimator",
    "Turn",
    "UnserializableItemError",
    "UnsupportedURLError",
    "UserTurn",
    "build_event_bus",
    "build_manager",
    "build_store",
    "check_agent_name",
    "check_retirable",
    "check_session_id",
    "decode_payload",
    "delete_policy",
    "estimator_for_model",
    "import_sdk_sessions",
    "item_list",
    "key_usage",
    "list_policies",
    "load_config",
    "manager_from_file",
    "rotate_keys",
    "run_retention",
    "set_policy",
    "text_of",
    "tool_name_of",
    "visible_rows",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
