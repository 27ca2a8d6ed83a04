"""Stored times: read from either backend, as one kind of value (aware, UTC).

A module of its own, with nothing heavy under it, so the CLI can print a time without
loading the row model and the schema (SQLAlchemy) for it.
"""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(moment: datetime) -> datetime:
    """`moment` with UTC as its zone when it has none; an aware one as it is.

    SQLite hands stored times back without their offset, and the CLI reads a time typed
    without one the same way.
    """
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
