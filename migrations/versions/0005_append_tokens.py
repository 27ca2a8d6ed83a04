"""Idempotent appends: a token on the first row of every append batch.

When the database goes away mid-append, the caller cannot know whether the batch
was stored. The store gives every batch a token (or takes the caller's); a retry
with the same token finds the stored batch through this unique partial index and
stores nothing twice. Rows written before this revision have no token.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 02:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("append_token", sa.Text(), nullable=True))
    op.create_index(
        "ux_messages_append_token",
        "messages",
        ["session_id", "append_token"],
        unique=True,
        sqlite_where=sa.text("append_token IS NOT NULL"),
        postgresql_where=sa.text("append_token IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ux_messages_append_token", table_name="messages")
    op.drop_column("messages", "append_token")
