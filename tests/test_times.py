"""Stored times as one kind of value: aware, UTC when the backend kept no zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sessionstore._times import as_utc


def test_a_naive_time_gets_utc_and_keeps_its_wall_clock() -> None:
    naive = datetime(2026, 11, 26, 8, 30)
    assert as_utc(naive) == datetime(2026, 11, 26, 8, 30, tzinfo=UTC)
    assert as_utc(naive).tzinfo is UTC


def test_an_aware_time_is_returned_as_it_is() -> None:
    paris = datetime(2026, 11, 26, 9, 30, tzinfo=timezone(timedelta(hours=1)))
    assert as_utc(paris) is paris
