"""Handoff-aware rows: the agent that produced each item, as a typed column.

A multi-agent run hands the conversation from agent to agent; the SDK's items do not say
which agent produced them, so the adapter stores it beside the payload (NULL: not known,
as on every row written before this revision). No index: per-agent views read a session's
active context, which the primary key already bounds, and every index taxes every append.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 04:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("agent", sa.Text, nullable=True))


def downgrade() -> None:
    # A plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch rebuild of the table would
    # trip over the views that read it.
    op.drop_column("messages", "agent")
