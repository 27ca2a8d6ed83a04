"""Turns as a queryable notion: the `turns` view.

A turn starts at each user message appended to a session (`kind = 'item'`, `role = 'user'`);
turn 0 holds what came before the first one (instructions, say). Every appended row belongs
to the turn of the newest user message at or before it, so the view numbers rows with a running
count and groups them: number, first and last seq, items, tokens, tools used, the user's text
(the `content` of the user message as stored; NULL when the payload is sealed or purged) and
when the turn started and ended. Copies (carries, summaries) and markers are not turns.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 15:25:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_VIEW = """
CREATE VIEW turns AS
WITH numbered AS (
    SELECT session_id, seq, role, tool_name, tokens, payload, created_at,
           SUM(CASE WHEN role = 'user' THEN 1 ELSE 0 END)
               OVER (PARTITION BY session_id ORDER BY seq ROWS UNBOUNDED PRECEDING) AS turn
    FROM messages
    WHERE kind = 'item'
)
SELECT session_id, turn, MIN(seq) AS first_seq, MAX(seq) AS last_seq, COUNT(*) AS items,
       SUM(tokens) AS tokens, {tools} AS tools,
       MAX(CASE WHEN role = 'user' THEN {user_text} END) AS user_text,
       MIN(created_at) AS started_at, MAX(created_at) AS ended_at
FROM numbered
GROUP BY session_id, turn
"""
_DIALECT = {
    "sqlite": {
        "tools": "group_concat(DISTINCT tool_name)",
        "user_text": "json_extract(payload, '$.content')",
    },
    "postgresql": {
        "tools": "string_agg(DISTINCT tool_name, ',')",
        "user_text": "payload->>'content'",
    },
}


def upgrade() -> None:
    op.execute(_VIEW.format(**_DIALECT[op.get_bind().dialect.name]))


def downgrade() -> None:
    op.execute("DROP VIEW turns")
