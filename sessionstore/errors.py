"""Exceptions that say what went wrong and how to fix it.

Every error a user can trigger carries an actionable message; none of them ever
includes item payloads or secrets, so they are safe to log.
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """Base class for every error raised by sessionstore."""


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
