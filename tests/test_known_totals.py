"""What a store remembers of each session's token total: only what a record read, moved by
its own appends, and a bounded number of sessions."""

from __future__ import annotations

from sessionstore import _known_totals
from sessionstore._known_totals import KnownTotals


def test_appends_move_only_a_total_a_record_read() -> None:
    totals = KnownTotals()
    totals.appended("s", 10)
    assert totals.get("s") is None  # never read: nothing to move
    totals.saw("s", 100)
    totals.appended("s", 10)
    assert totals.get("s") == 110
    totals.saw("s", 7)  # a record read it again: that wins
    assert totals.get("s") == 7


def test_past_the_limit_every_session_is_forgotten() -> None:
    totals = KnownTotals()
    limit = _known_totals._KNOWN_SESSIONS
    for n in range(limit):
        totals.saw(f"s{n}", n)
    totals.saw("s0", 5)  # a known session: nothing forgotten
    assert totals.get(f"s{limit - 1}") == limit - 1
    totals.saw("new", 1)
    assert totals.get("s0") is None and totals.get("new") == 1
