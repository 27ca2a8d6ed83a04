"""Handoff-aware rows: which agent produced an item, and per-agent views of a session.

A multi-agent run hands one conversation from agent to agent. The kernel does not know
any framework: the writer names the agent per append (`store.append(..., agent="billing")`,
the Agents SDK adapter does it for the Runner) and `messages.agent` keeps it. Rows no agent
produced (user input, markers, summaries) hold NULL. A view for one agent is the same rows
filtered by that column, in SQL or through `load_context(..., agent=)` / `history(...,
agent=)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._rows import StoredRow, visible_rows
from .._schema import messages
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import ROW_COLUMNS, stored_rows

_AGENT_HISTORY: Final = (
    sa.select(*ROW_COLUMNS)
    .where(
        messages.c.session_id == sa.bindparam("sid", type_=sa.Text),
        messages.c.agent == sa.bindparam("agent", type_=sa.Text),
    )
    .order_by(messages.c.seq)
)


def items_of(rows: Iterable[StoredRow], agent: str, limit: int | None) -> list[dict[str, Any]]:
    """The items `agent` produced among the visible rows of a context, in order; `limit`
    keeps the newest (the SDK's rule: 0 nothing, negative or None everything)."""
    items = [row.item for row in visible_rows(rows) if row.agent == agent and row.item is not None]
    if limit == 0:
        return []
    return items[-limit:] if limit is not None and limit > 0 else items


def tx_agent_history(
    conn: Connection, session_id: str, agent: str, keys: SessionKeys
) -> list[StoredRow]:
    """Every row of the session's own history that `agent` produced, in seq order."""
    rows = conn.execute(_AGENT_HISTORY, {"sid": session_id, "agent": agent})
    return stored_rows(conn, keys, session_id, rows)
