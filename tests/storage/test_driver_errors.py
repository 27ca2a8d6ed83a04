"""Driver messages reach callers without the values they quote."""

from __future__ import annotations

import sqlite3

import pytest

from sessionstore import DatabaseNotFoundError, StoreError
from sessionstore._storage._driver_errors import _valueless, translate

KEY = "sk-proj-Z9y8X7w6V5u4T3s2R1q0P9o8"


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (
            f"invalid input for query argument $5: ['u\\udc00{KEY}'] (encode error)",
            "invalid input for query argument $5",
        ),
        (
            f'invalid input syntax for type integer: "{KEY}"',
            "invalid input syntax for type integer: …",
        ),
        (
            'duplicate key value violates unique constraint "pk_messages"',
            'duplicate key value violates unique constraint "pk_messages"',
        ),
        (f"value '{KEY}' is out of range", "value … is out of range"),
        (
            "value too long for type character varying(32)",
            "value too long for type character varying(32)",
        ),
    ],
)
def test_quoted_values_and_bound_arguments_are_dropped(message: str, shown: str) -> None:
    assert _valueless(message) == shown
    assert KEY not in _valueless(message)


@pytest.mark.parametrize(
    ("message", "kind", "says"),
    [
        ("file is not a database", DatabaseNotFoundError, "is not a SQLite database"),
        ("database disk image is malformed", StoreError, "restore it from a backup"),
    ],
)
def test_a_file_that_is_no_database_or_a_damaged_one_is_named_so(
    message: str, kind: type[Exception], says: str
) -> None:
    error = translate(
        sqlite3.DatabaseError(message),
        where="sqlite:///x.db",
        writing=False,
        may_have_committed=False,
    )
    assert type(error) is kind and says in str(error) and "nothing was changed" in str(error)
