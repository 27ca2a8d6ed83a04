"""`--as-of` and `--to`: a point of a session's history as a user types it."""

from __future__ import annotations

import typer

from .._history._time_travel import HistoryPoint


def parse_point(text: str, option: str) -> HistoryPoint:
    """The point `text` names (HistoryPoint.parse); a usage error (exit 2) saying the
    accepted forms otherwise."""
    try:
        return HistoryPoint.parse(text)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None
