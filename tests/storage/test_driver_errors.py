"""Driver messages reach callers without the values they quote."""

from __future__ import annotations

import pytest

from sessionstore._storage._driver_errors import _valueless

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
