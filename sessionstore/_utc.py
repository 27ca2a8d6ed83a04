"""A timestamp without a zone is UTC: SQLite hands stored times back without their offset,
and the CLI reads a time typed without one the same way."""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(moment: datetime) -> datetime:
    """`moment` with UTC as its zone when it has none; an aware one as it is."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
