"""Exceptions that say what went wrong and how to fix it.

Every error a user can trigger carries an actionable message; none of them ever
includes item payloads or secrets (texts are redacted as they are made), so they are
safe to log. One tree:

    SessionStoreError
    ├── UnsupportedURLError (ValueError)        a URL sessionstore cannot use
    ├── SchemaError                              the database schema does not fit this code
    │   ├── SchemaMissingError
    │   ├── SchemaOutdatedError
    │   └── SchemaTooNewError
    ├── InvalidItemError (ValueError)            an item or metadata JSON cannot hold as given
    ├── StoreTimeoutError (TimeoutError)         a bounded wait ran out; names what it waited for
    ├── StoreError                               the database refused an operation
    │   ├── StoreUnavailableError (ConnectionError)  lost database; outcome_known, token
    │   └── DuplicateAppendError                 a replayed batch (handled by the store)
    ├── ConfigError (ValueError)                 config.py: every problem, by field path
    ├── KeyringError (ValueError), MissingKeyError (LookupError), KeyIntegrityError,
    │   KeyUnavailableError, SealedDataError    crypto.py: keys and sealed data
    ├── KeyInUseError                            key_rotation.py: a key still wraps data
    ├── ArchiveSinkError                         archive/sinks.py: a file or S3 copy failed
    ├── ImportSourceError (ValueError)           importer.py: an SDK database we cannot read
    ├── EncodingUnavailableError (RuntimeError)  tokens.py: no verified tokenizer vocabulary
    ├── CompactionError                             compaction/errors.py: why a compaction failed
    └── SummarizerError                          compaction/summarizer.py: caught by the service
        ├── SummarizerUnavailableError, SummaryTooLongError, SummaryRefusedError,
        └── SummaryToolCallError, SummarizerInputTooLargeError
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """Base class for every error raised by sessionstore.

    Its text goes through the default redactor as it is made: a message that names a
    field path or a URL cannot carry a key or password into a log or a traceback.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(_redacted(arg) if isinstance(arg, str) else arg for arg in args))


def _redacted(text: str) -> str:
    from .redaction import default_redactor  # errors sit below everything else at import

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


class InvalidItemError(SessionStoreError, ValueError):
    """An item handed to the store cannot be stored as-is."""


class StoreTimeoutError(SessionStoreError, TimeoutError):
    """A bounded wait inside the store ran out; the message says what it waited for."""


class StoreError(SessionStoreError):
    """The database refused an operation (a constraint, a type, a limit).

    The message names the kind of failure, never SQL text, parameters or values.
    """


class StoreUnavailableError(StoreError, ConnectionError):
    """The database could not be reached, or the connection broke during an operation.

    `outcome_known` says whether a write is known not to have happened (True: nothing
    was written, retrying is safe) or may have committed (False). `token` is the append
    batch's idempotency token: `append(..., token=error.token)` stores it at most once.
    """

    def __init__(self, message: str, *, outcome_known: bool, token: str | None = None):
        super().__init__(message)
        self.outcome_known = outcome_known
        self.token = token


class DuplicateAppendError(StoreError):
    """An append batch with this idempotency token is already stored (the store replays it)."""
