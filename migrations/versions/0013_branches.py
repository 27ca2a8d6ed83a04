"""Branches: a session forked from another shares the parent's rows up to the fork point;
clear markers get a partial index so a context's start at any point is found at once; the
`session_usage` view sums each session's model calls.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 18:20:00
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


_RETENTION_FUNCTION = "sessionstore_apply_retention(boolean, timestamp with time zone)"
# Rows a live branch shares, and parents of live branches, are kept (as the Python job does).
_KEEP_SHARED_ROWS = (
    "AND m.created_at < cutoff",
    "AND m.created_at < cutoff\n                  AND NOT EXISTS (SELECT 1 FROM sessions b WHERE "
    "b.parent_session_id = m.session_id AND b.fork_seq >= m.seq)",
)
_KEEP_PARENTS = (
    "s.updated_at < cutoff",
    "s.updated_at < cutoff AND NOT EXISTS (SELECT 1 FROM sessions b WHERE "
    "b.parent_session_id = s.session_id)",
)


# Usage and cost per session, from model_calls (0012); a branch names its parent.
_SESSION_USAGE = """
CREATE VIEW session_usage AS
SELECT c.session_id, s.parent_session_id, count(*) AS calls,
       sum(c.input_tokens) AS input_tokens, sum(c.cached_tokens) AS cached_tokens,
       sum(c.output_tokens) AS output_tokens, sum(c.reasoning_tokens) AS reasoning_tokens,
       sum(c.cost_usd) AS cost_usd,
       min(c.created_at) AS first_call_at, max(c.created_at) AS last_call_at
FROM model_calls c LEFT JOIN sessions s ON s.session_id = c.session_id
GROUP BY c.session_id, s.parent_session_id
"""


def _function_of_0002() -> str:
    spec = importlib.util.spec_from_file_location(
        "retention_0002", Path(__file__).with_name("0002_retention.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.APPLY_RETENTION
    return text


def replace_function(text: str) -> None:
    """Install `sessionstore_apply_retention()` as `text` defines it (0018 uses it too)."""
    op.execute(text)
    op.execute(f"ALTER FUNCTION {_RETENTION_FUNCTION} SET sessionstore.maintenance = 'on'")


def retention_function() -> str:
    """`sessionstore_apply_retention()` as this revision defines it (0018 builds on it)."""
    text = _function_of_0002()
    for old, new in (_KEEP_SHARED_ROWS, _KEEP_PARENTS):
        assert old in text, old
        text = text.replace(old, new)
    return text


def upgrade() -> None:
    op.add_column("sessions", sa.Column("parent_session_id", sa.Text, nullable=True))
    op.add_column("sessions", sa.Column("fork_seq", sa.BigInteger, nullable=True))
    op.add_column("sessions", sa.Column("parent_context_start_seq", sa.BigInteger, nullable=True))
    op.create_index("ix_sessions_parent_session_id", "sessions", ["parent_session_id"])
    clears = sa.text("kind = 'clear'")
    op.create_index(
        "ix_messages_clears",
        "messages",
        ["session_id", "seq"],
        sqlite_where=clears,
        postgresql_where=clears,
    )
    op.execute(_SESSION_USAGE)
    if op.get_bind().dialect.name == "postgresql":
        replace_function(retention_function())


def downgrade() -> None:
    op.execute("DROP VIEW session_usage")
    if op.get_bind().dialect.name == "postgresql":
        replace_function(_function_of_0002())
    op.drop_index("ix_messages_clears", table_name="messages")
    op.drop_index("ix_sessions_parent_session_id", table_name="sessions")
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+): rebuilding `sessions`, which every other
    # table refers to, would need the whole database unlocked.
    op.drop_column("sessions", "parent_context_start_seq")
    op.drop_column("sessions", "fork_seq")
    op.drop_column("sessions", "parent_session_id")
