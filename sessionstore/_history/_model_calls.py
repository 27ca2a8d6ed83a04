"""Model calls: what each call an adapter saw was sent, and what it used and cost.

An adapter records a call before it goes out (the stored context's seq range, how many unsaved
items followed it, a token estimate and a SHA-256 of the exact input) and attaches the usage
the provider reported once the response is back. A call seen only through its usage (no
pre-flight hook installed) is recorded with the usage alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._schema import model_calls
from .._storage._call_record import NEXT_CALL
from .._storage._known_totals import keeps_totals
from .._storage._telemetry import telemetry

_c: Final = model_calls.c
_sid: Final = sa.bindparam("sid", type_=sa.Text)
_CALLS: Final = sa.select(model_calls).where(_c.session_id == _sid).order_by(_c.call)


@dataclass(frozen=True, slots=True)
class CallUsage:
    """Tokens a provider reported for one call (reasoning tokens are part of output)."""

    input_tokens: int
    cached_tokens: int
    output_tokens: int
    reasoning_tokens: int


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One row of `model_calls`."""

    session_id: str
    call: int
    created_at: datetime
    model: str | None
    context_from_seq: int | None
    context_to_seq: int | None
    unsaved_items: int | None
    input_items: int | None
    input_tokens_est: int | None
    input_sha256: str | None
    input_tokens: int | None
    cached_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: float | None


def usage_values(usage: CallUsage, cost: float | None) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "cached_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cost_usd": cost,
    }


@keeps_totals
@telemetry  # usage is telemetry: its commit does not wait for the disk
def tx_attach_usage(
    conn: Connection,
    session_id: str,
    attached: Sequence[tuple[int, CallUsage, float | None]],
    unmatched: Sequence[tuple[CallUsage, float | None]],
    model: str | None,
) -> None:
    """Attach reported usage to recorded calls (row id, usage, cost); usage no recorded call
    was waiting for becomes a call of its own, whose input is unknown."""
    for row_id, usage, cost in attached:
        conn.execute(
            model_calls.update().where(_c.id == row_id).values(**usage_values(usage, cost))
        )
    for usage, cost in unmatched:
        call = conn.execute(NEXT_CALL, {"sid": session_id}).scalar_one()
        conn.execute(
            model_calls.insert().values(
                session_id=session_id, call=call, model=model, **usage_values(usage, cost)
            )
        )


USAGE_GROUPS: Final = ("session", "model", "day")
_TOTALS: Final = (
    sa.func.count().label("calls"),
    sa.func.coalesce(sa.func.sum(_c.input_tokens), 0).label("input_tokens"),
    sa.func.coalesce(sa.func.sum(_c.cached_tokens), 0).label("cached_tokens"),
    sa.func.coalesce(sa.func.sum(_c.output_tokens), 0).label("output_tokens"),
    sa.func.coalesce(sa.func.sum(_c.reasoning_tokens), 0).label("reasoning_tokens"),
    sa.func.sum(_c.cost_usd).label("cost_usd"),
)


def tx_usage(
    conn: Connection, by: str, session_id: str | None, since: datetime | None
) -> list[dict[str, Any]]:
    """Calls, tokens and cost per session, model or day (UTC), largest cost first."""
    key = {
        "session": _c.session_id,
        "model": sa.func.coalesce(_c.model, "(unknown)"),
        "day": sa.func.date(_c.created_at),
    }[by]
    query = sa.select(key.label(by), *_TOTALS).group_by(key)
    if session_id is not None:
        query = query.where(_c.session_id == session_id)
    if since is not None:
        stamp = since.replace(tzinfo=None) if conn.dialect.name == "sqlite" else since
        query = query.where(_c.created_at >= stamp)
    query = query.order_by(sa.func.sum(_c.cost_usd).desc().nulls_last(), key)
    return [{**row._mapping, by: str(row._mapping[by])} for row in conn.execute(query)]


def usage_by_turn(
    calls: Sequence[ModelCall], turn_starts: Sequence[tuple[int, int]]
) -> dict[int, dict[str, int]]:
    """Tokens per turn, from calls whose input is known: a call belongs to the turn holding
    the newest row it was sent (`turn_starts`: (turn, first seq), in order)."""
    totals: dict[int, dict[str, int]] = {}
    for call in calls:
        if call.context_to_seq is None or call.input_tokens is None:
            continue
        newest = call.context_to_seq + (call.unsaved_items or 0)
        turn = max((number for number, first in turn_starts if first <= newest), default=0)
        into = totals.setdefault(turn, dict.fromkeys(_TOKEN_FIELDS, 0))
        into["requests"] += 1
        for name in _TOKEN_FIELDS[1:]:
            into[name] += getattr(call, name) or 0
    return totals


_TOKEN_FIELDS: Final = (
    "requests",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "reasoning_tokens",
)


def tx_calls(conn: Connection, session_id: str) -> list[ModelCall]:
    """The session's model calls in order."""
    return [
        ModelCall(**{name: row._mapping[name] for name in ModelCall.__slots__})
        for row in conn.execute(_CALLS, {"sid": session_id})
    ]
