"""Exceptions that say what went wrong and how to fix it.

Every error a user can trigger carries an actionable message; none of them ever
includes item payloads or secrets (texts are redacted as they are made), so they are
safe to log. One tree:

    SessionStoreError
    ├── UnsupportedURLError (ValueError)        a URL sessionstore cannot use
    ├── ConfigError (ValueError)                 every configuration problem, by field path
    ├── SchemaError                              the database schema does not fit this code
    │   ├── SchemaMissingError
    │   ├── SchemaOutdatedError
    │   └── SchemaTooNewError
    ├── DatabaseNotFoundError (FileNotFoundError)  a read-only open of a missing SQLite file
    ├── ReadOnlyStoreError                       a store opened read-only was asked to write
    ├── SessionClosedError (RuntimeError)        a session used after close() closed its database
    ├── QueryRejectedError (ValueError)          the database refused a read-only query
    ├── QueryTooLargeError                       a read-only query's result passed its bound
    ├── InvalidItemError (ValueError)            an item or metadata JSON cannot hold as given
    │   └── UnserializableItemError (TypeError)  a value JSON has no type for (as json.dumps)
    ├── InvalidSessionIdError (ValueError)       a session id no backend can store (NUL, ...)
    ├── StoreTimeoutError (TimeoutError)         a bounded wait ran out; names what it waited for
    ├── StoreError                               the database refused an operation
    │   ├── StoreUnavailableError (ConnectionError)  lost database; outcome_known, token
    │   └── DuplicateAppendError                 a replayed batch (handled by the store)
    ├── KeyringError (ValueError)                keys configured wrongly
    ├── MissingKeyError (LookupError)            data sealed under a key the keyring lacks
    ├── KeyIntegrityError                        a wrapped data key failed authentication
    ├── KeyUnavailableError                      a KMS key could not be used
    ├── SealedDataError                          sealed data cannot be opened
    ├── HistoryTamperedError                     a session's rows do not verify against its chain
    ├── CorruptRowError (ValueError)             a stored payload that is not one JSON object
    ├── HistoryPointError (ValueError)           a point of a session's history that is not there
    ├── BranchError (ValueError)                 a fork that cannot be made, a parent still shared
    ├── KeyInUseError                            a key still wraps data and cannot be retired
    ├── ArchiveSinkError                         a file or S3 copy of an archive failed
    ├── ImportSourceError (ValueError)           an SDK database we cannot read
    ├── EncodingUnavailableError (RuntimeError)  no verified tokenizer vocabulary
    ├── CompactionError                          why a compaction failed (`reason`)
    └── SummarizerError                          a summarizer failed (`kind`); compaction falls back
        ├── SummarizerUnavailableError, SummaryTooLongError, SummaryRefusedError,
        └── SummaryToolCallError, SummarizerInputTooLargeError

All of them are defined here and exported from `sessionstore` (the compaction ones
from `sessionstore.compaction` too), so `except sessionstore.SessionStoreError`
catches anything the library raises on purpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final

from ._commands import cli_command

# Where a missing data key can be added (crypto's KEYS_ENV is the same name).
_HOW_TO_ADD: Final = "add it to SESSIONSTORE_KEYS or the key file"


class SessionStoreError(Exception):
    """Base class for every error raised by sessionstore.

    Its text goes through the default redactor as it is made: a message that names a
    field path or a URL cannot carry a key or password into a log or a traceback.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(_redacted(arg) if isinstance(arg, str) else arg for arg in args))


def _redacted(text: str) -> str:
    from ._redaction import default_redactor  # errors sit below everything else at import

    return default_redactor().text(text)


class UnsupportedURLError(SessionStoreError, ValueError):
    """The database URL names a backend sessionstore does not speak."""


class SchemaError(SessionStoreError):
    """The database schema is missing, outdated or newer than this code."""


class SchemaMissingError(SchemaError):
    """The sessionstore tables do not exist in the target database."""


class SchemaOutdatedError(SchemaError):
    """The database is at an older migration than this code needs."""


class SchemaTooNewError(SchemaError):
    """The database was migrated by a newer sessionstore than this one."""


class DatabaseNotFoundError(SessionStoreError, FileNotFoundError):
    """The database named does not exist (nothing was created): a SQLite file a read-only
    store was pointed at, or a PostgreSQL database name the server does not have."""


class ReadOnlyStoreError(SessionStoreError):
    """A store opened read-only was asked to write."""


class SessionClosedError(SessionStoreError, RuntimeError):
    """A session object that closed its own database was used again (the SDK's stores raise
    a RuntimeError then too)."""


class QueryRejectedError(SessionStoreError, ValueError):
    """The database refused a read-only query (a syntax error, no such table): its words."""


class QueryTooLargeError(SessionStoreError):
    """A read-only query's result passed the bound `sessionstore query` holds (bytes or a
    single value): stopped, not printed, so a runaway value cannot exhaust the process."""


class InvalidItemError(SessionStoreError, ValueError):
    """An item handed to the store cannot be stored as-is."""


class UnserializableItemError(InvalidItemError, TypeError):
    """An item holds a value JSON cannot (a datetime, bytes, an object): a TypeError too, as
    `json.dumps` and the Agents SDK's stores raise for it."""


class InvalidSessionIdError(SessionStoreError, ValueError):
    """A session id no backend or archive sink could store as given (a NUL, a lone surrogate),
    refused before anything is written."""


class StoreTimeoutError(SessionStoreError, TimeoutError):
    """A bounded wait inside the store ran out; the message says what it waited for."""


class StoreError(SessionStoreError):
    """The database refused an operation (a constraint, a type, a limit).

    The message names the kind of failure, never SQL text, parameters or values.
    """


class UnavailableReason(StrEnum):
    """Why the database was unavailable (`StoreUnavailableError.reason`)."""

    UNREACHABLE = "unreachable"  # nothing answered (refused, timed out)
    CONNECTION_LOST = "connection_lost"  # a connection broke or the server ended it
    # Every host answered, none as a writable primary: a failover in progress (a standby,
    # asyncpg's TargetServerAttributeNotMatched, a read-only transaction refusing a write).
    NO_WRITABLE_PRIMARY = "no_writable_primary"


class StoreUnavailableError(StoreError, ConnectionError):
    """The database could not be reached, or the connection broke during an operation.

    `outcome_known` says whether a write is known not to have happened (True: nothing
    was written, retrying is safe) or may have committed (False). `token` is the append
    batch's idempotency token: `append(..., token=error.token)` stores it at most once.
    `reason` (an `UnavailableReason`) says which kind of unavailability it was.
    """

    def __init__(
        self,
        message: str,
        *,
        outcome_known: bool,
        token: str | None = None,
        reason: UnavailableReason = UnavailableReason.CONNECTION_LOST,
    ):
        super().__init__(message)
        self.outcome_known = outcome_known
        self.token = token
        self.reason = reason


class DuplicateAppendError(StoreError):
    """An append batch with this idempotency token is already stored (the store replays it)."""


class ConfigError(SessionStoreError, ValueError):
    """The configuration is invalid; `problems` lists each one as `<field.path> <problem>`."""

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        self.problems = tuple(problems)
        where = f" ({source})" if source else ""
        count = len(self.problems)
        header = f"invalid configuration{where}: {count} problem{'s' if count != 1 else ''}"
        super().__init__("\n  - ".join([header, *self.problems]))
        # The same on one line, as the command line prints it.
        # each problem redacted alone: a secret's pattern never runs on into the next one
        problems = "; ".join(_redacted(problem) for problem in self.problems)
        self.one_line = f"invalid configuration{_redacted(where)}: {problems}"


class KeyringError(SessionStoreError, ValueError):
    """The keyring configuration (env, key file or arguments) is unusable."""


class MissingKeyError(SessionStoreError, LookupError):
    """Data was sealed under a key id the keyring does not hold."""

    def __init__(self, key_id: str) -> None:
        super().__init__(f"key {key_id!r} is not in the keyring: {_HOW_TO_ADD}")
        self.key_id = key_id


class KeyIntegrityError(SessionStoreError):
    """A wrapped data key failed authentication: altered, other context, or other KEK."""


class KeyUnavailableError(SessionStoreError):
    """A KMS key could not be used (missing, disabled, access denied, unreachable)."""


class SealedDataError(SessionStoreError):
    """Sealed data cannot be opened; `label` says which row, `reason` says why."""

    def __init__(self, label: str, reason: str) -> None:
        super().__init__(f"cannot open {label}: {reason}")
        self.label = label
        self.reason = reason


class HistoryTamperedError(SessionStoreError):
    """A session's rows do not verify against its hash chain; `problems` names rows, never
    their content."""

    def __init__(self, session_id: str, problems: Sequence[str]) -> None:
        shown = "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else "")
        super().__init__(
            f"the history of session {session_id!r} does not verify: {shown} (nothing was "
            f"returned; `{cli_command('verify', session_id)}` reports every problem)"
        )
        self.session_id = session_id
        self.problems = list(problems)


class CorruptRowError(SessionStoreError, ValueError):
    """A stored payload is not one JSON object: the row was written or edited outside
    sessionstore (the store only writes objects it has validated). Names the problem, never
    the text."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"a stored message payload is not one JSON object ({why}): the row was written or "
            "edited outside sessionstore; `sessionstore verify SESSION` names the row"
        )


class HistoryPointError(SessionStoreError, ValueError):
    """A time-travel read or rewind named a point the session's history does not have (past
    its end, an unknown compaction version or turn), or whose rows retention purged."""

    def __init__(self, session_id: str, point: object, why: str) -> None:
        super().__init__(f"session {session_id!r} has no {point} to go back to: {why}")
        self.session_id = session_id


class BranchError(SessionStoreError, ValueError):
    """A fork or branch operation that cannot be done: the branch's id is taken, the parent
    does not exist, or a session with live branches was to be deleted."""


class KeyInUseError(SessionStoreError):
    """A key cannot be retired while sealed rows still reference it."""


class ArchiveSinkError(SessionStoreError):
    """A sink could not write an artifact; the message names where, never what."""


class ImportSourceError(SessionStoreError, ValueError):
    """The source is not an Agents SDK session database that can be read; nothing was done."""


class EncodingUnavailableError(SessionStoreError, RuntimeError):
    """No source yielded a verified vocabulary; ``failures`` names every source and its error."""

    def __init__(self, name: str, failures: Sequence[str]) -> None:
        self.name = name
        self.failures = tuple(failures)
        super().__init__(f"no verified {name} vocabulary could be loaded: {'; '.join(failures)}")


class CompactionErrorReason(StrEnum):
    """Why compaction gave up (the design's `CompactionError(InsufficientBudget)` and friends)."""

    INSUFFICIENT_BUDGET = "InsufficientBudget"
    COMPACTION_LOOP = "CompactionLoop"
    CONFLICT = "Conflict"


class CompactionError(SessionStoreError):
    """Compaction failed; `reason` says why and the message says what to do about it."""

    def __init__(self, reason: CompactionErrorReason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason


class SummarizerError(SessionStoreError):
    """The summarizer could not produce a usable summary; `kind` names why.

    The compaction service catches these and falls back (see docs/COMPACTION.md); they
    reach callers only from a summarizer used on its own.
    """

    kind = "error"


class SummarizerUnavailableError(SummarizerError):
    """Network failure, timeout, 5xx, rate limit: nothing usable came back."""

    kind = "unavailable"


class SummaryTooLongError(SummarizerError):
    """The reply was cut at max_tokens or exceeds it."""

    kind = "too_long"


class SummaryRefusedError(SummarizerError):
    """The model refused (content policy or an explicit refusal)."""

    kind = "refused"


class SummaryToolCallError(SummarizerError):
    """The model answered with tool calls: summarization must be tool-free."""

    kind = "tool_calls"


class SummarizerInputTooLargeError(SummarizerError):
    """The request exceeded the summarizer's own context window."""

    kind = "input_too_large"
