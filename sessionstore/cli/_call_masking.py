"""Which rows a model call was sent masked, for `sessions show --call N`.

Masking is a view: the stored rows stay whole, and a call's record keeps only its digest and
estimate. The masked view cannot be rebuilt exactly here (it depends on the run's policy and
token estimator, which the command does not know), so the rows are marked from what the call
stored with its record: its `compact.token_estimate` (whose `breakdown.messages` is the call's
`input_tokens_est`, and `masked` what masking freed) and the `compact.masked` event written
just before it in the same transaction, whose `outputs` counts what was sent masked. The seqs
are the `new_seqs` of that event and of the session's earlier ones (a masked output stays
masked); they are trusted only when they number exactly `outputs` among the call's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._model_calls import ModelCall
from .._schema import events
from .._store import SessionStore

_NAMES = ("compact.token_estimate", "compact.masked")


@dataclass(frozen=True, slots=True)
class CallMasking:
    """What a call was sent masked: `seqs` (None: masking was on, but which rows is unknown)."""

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
    store: SessionStore, calls: Sequence[ModelCall], number: int, seqs: Sequence[int]
) -> CallMasking:
    """What call `number` (of the session's `calls`) was sent masked, among `seqs` (the
    stored rows it was sent)."""
    found = await store.read_snapshot(_tx_events, calls[0].session_id)
    if not any(name == _NAMES[1] for _, name, _ in found):  # nothing was ever masked
        return CallMasking(0, frozenset())
    # Each estimate with the `compact.masked` stored just before it (the same call's).
    estimates: list[tuple[dict[str, Any], dict[str, Any] | None, int]] = []
    report: dict[str, Any] | None = None
    for index, (_, name, payload) in enumerate(found):
        if name == _NAMES[1]:
            report = payload
        else:
            estimates.append((payload, report, index))
            report = None
    position = 0
    chosen: tuple[dict[str, Any], dict[str, Any] | None, int] | None = None
    for call in calls:  # matched in the order the calls were recorded
        chosen = None
        while position < len(estimates):
            position += 1
            estimate = _messages(estimates[position - 1][0])
            if call.input_tokens_est is not None and estimate == call.input_tokens_est:
                chosen = estimates[position - 1]
                break
        if call.call == number:
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
        for _, name, earlier in found[:index]
        if name == _NAMES[1]
        for seq in earlier.get("new_seqs") or ()
        if isinstance(seq, int)
    }
    marked = frozenset(union.intersection(seqs))
    return CallMasking(outputs, marked if len(marked) == outputs else None)
