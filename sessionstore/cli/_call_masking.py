"""Which rows a model call was sent masked, for `sessions show --call N`.

Masking is a view: the stored rows stay whole, and a call's record keeps only its digest and
estimate. The masked view cannot be rebuilt exactly here (it depends on the run's policy and
token estimator, which the command does not know), so the rows are marked from what the call
stored with its record: its `compact.token_estimate` (whose `breakdown.messages` is the call's
`input_tokens_est`, and `masked` what masking freed) and the `compact.masked` event written
just before it in the same transaction, whose `outputs` counts what was sent masked. The seqs
are the `new_seqs` of that event and of the session's earlier ones (a masked output stays
masked); they are trusted only when they number exactly `outputs` among the call's rows. A
call whose estimate is its rows' stored tokens had nothing taken out: nothing was masked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._history._model_calls import ModelCall
from .._rows import StoredRow
from .._schema import events
from .._store import SessionStore

_NAMES = ("compact.token_estimate", "compact.masked")


@dataclass(frozen=True, slots=True)
class CallMasking:
    """What a call was sent masked: `seqs` (None: its record does not say which rows, if any,
    though its estimate is under its rows' stored tokens)."""

    outputs: int  # sent as a placeholder
    seqs: frozenset[int] | None


def _tx_events(conn: Connection, session_id: str) -> list[tuple[int, str, dict[str, Any]]]:
    query = (
        sa.select(events.c.id, events.c.event, events.c.payload)
        .where(events.c.session_id == session_id, events.c.event.in_(_NAMES))
        .order_by(events.c.id)
    )
    return [(int(id_), str(name), dict(payload)) for id_, name, payload in conn.execute(query)]


def _messages(payload: dict[str, Any]) -> object:
    breakdown = payload.get("breakdown")
    return breakdown.get("messages") if isinstance(breakdown, dict) else None


async def call_masking(
    store: SessionStore, calls: Sequence[ModelCall], number: int, rows: Sequence[StoredRow]
) -> CallMasking:
    """What call `number` (of the session's `calls`) was sent masked, among `rows` (the
    stored rows it was sent)."""
    [call] = [call for call in calls if call.call == number]
    if call.input_tokens_est == sum(row.tokens for row in rows):  # nothing was taken out
        return CallMasking(0, frozenset())
    found = await store.read_snapshot(_tx_events, call.session_id)
    if not any(name == _NAMES[1] for _, name, _ in found):  # no masking event to go by
        return CallMasking(0, None)
    # Each estimate with the `compact.masked` stored just before it (the same call's).
    estimates: list[tuple[dict[str, Any], dict[str, Any] | None, int]] = []
    report: dict[str, Any] | None = None
    for index, (_, name, payload) in enumerate(found):
        if name == _NAMES[1]:
            report = payload
        else:
            estimates.append((payload, report, index))
            report = None
    position = 0  # the calls' estimates, matched in the order the calls were recorded
    chosen: tuple[dict[str, Any], dict[str, Any] | None, int] | None = None
    for earlier in calls:
        chosen = None
        for at in range(position, len(estimates)):
            estimate = earlier.input_tokens_est
            if estimate is not None and _messages(estimates[at][0]) == estimate:
                chosen, position = estimates[at], at + 1
                break  # (none found: a call without events; the next ones start here)
        if earlier.call == number:
            break
    if chosen is None:
        return CallMasking(0, None)
    payload, report, index = chosen
    if report is None:
        breakdown = payload.get("breakdown")
        freed = isinstance(breakdown, dict) and breakdown.get("masked")
        return CallMasking(0, None if freed else frozenset())
    outputs = int(report.get("outputs") or 0)
    union = {  # what this call's and the earlier calls' masking named
        seq
        for _, name, older in found[:index]
        if name == _NAMES[1]
        for seq in older.get("new_seqs") or ()
        if isinstance(seq, int)
    }
    marked = frozenset(union.intersection(row.seq for row in rows))
    return CallMasking(outputs, marked if len(marked) == outputs else None)
