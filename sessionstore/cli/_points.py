"""`--as-of` and `--to`: a point of a session's history as a user types it."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

import typer

from .._time_travel import HistoryPoint
from .._utc import as_utc

_FORMS: Final = (
    "a seq (120), a compaction version (v3), a turn (turn:5) or a time (2026-11-25T14:00:00Z)"
)
_VERSION: Final = re.compile(r"v(\d+)")
_TURN: Final = re.compile(r"turn:(\d+)")


def parse_point(text: str, option: str) -> HistoryPoint:
    """The point `text` names; a usage error (exit 2) saying the accepted forms otherwise.
    A time without an offset is read as UTC, the database's clock."""
    try:
        if text.isdigit():
            return HistoryPoint.at_seq(int(text))
        if match := _VERSION.fullmatch(text):
            return HistoryPoint.after_version(int(match[1]))
        if match := _TURN.fullmatch(text):
            return HistoryPoint.before_turn(int(match[1]))
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a point in history: use {_FORMS}", param_hint=option
        ) from None
    return HistoryPoint.at_time(as_utc(when))
