"""Handoff-aware rows: which agent produced an item, and per-agent views of a session.

A multi-agent run hands one conversation from agent to agent. The kernel does not know
any framework: the writer names the agent per append (`store.append(..., agent="billing")`,
the Agents SDK adapter does it for the Runner) and `messages.agent` keeps it. Rows no agent
produced (user input, markers, summaries) hold NULL. A view for one agent is the same rows
filtered by that column, in SQL or through `load_context(..., agent=)` / `history(...,
agent=)`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._items import is_utf8
from .._rows import StoredRow, visible_rows
from .._schema import messages
from .._security._payload_sealing import SessionKeys
from .._storage._session_sql import ROW_COLUMNS, stored_rows

MAX_AGENT_NAME: Final = 256  # characters; SDK agent names are short labels

_AGENT_HISTORY: Final = (
    sa.select(*ROW_COLUMNS)
    .where(
        messages.c.session_id == sa.bindparam("sid", type_=sa.Text),
        messages.c.agent == sa.bindparam("agent", type_=sa.Text),
    )
    .order_by(messages.c.seq)
)


def check_agent_name(agent: object) -> str | None:
    """An agent name as stored in `messages.agent`: a str of 1 to 256 characters, not
    blank, with no control characters (they would garble every listing that shows it);
    None (no agent) passes."""
    if agent is None:
        return None
    if not isinstance(agent, str):
        raise TypeError(
            "agent must be a str or None (the name of the agent that produced the items), "
            f"got a {type(agent).__name__}"
        )
    if not agent.strip():
        raise ValueError("agent must name an agent: it is empty or only whitespace")
    if len(agent) > MAX_AGENT_NAME:
        raise ValueError(
            f"agent is {len(agent)} characters long; an agent name holds at most {MAX_AGENT_NAME}"
        )
    if not is_utf8(agent):
        raise ValueError(
            "agent contains a lone surrogate (half of a UTF-16 pair), which cannot be stored "
            "as UTF-8 text; fix the name"
        )
    if any(unicodedata.category(char) == "Cc" for char in agent):
        raise ValueError(
            "agent contains a control character (a newline, tab, NUL ...); agent names are "
            "one-line labels: remove it"
        )
    return agent


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
