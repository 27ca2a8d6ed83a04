"""Drop the index on sessions.updated_at: every append moves that column.

An index on a column that changes on every append costs every append an index
write (on SQLite an extra page in each commit) and, on PostgreSQL, rules out
HOT updates of the session row, so each append also grew the primary-key index.
Only admin paths read by it (`sessions list`, the idle-session retention job),
and a scan of the sessions table (one row per session) serves them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 15:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_sessions_updated_at", table_name="sessions")


def downgrade() -> None:
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"])
