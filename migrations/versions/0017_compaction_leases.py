"""Background compaction: a lease per session, and the compaction it prepared.

A summarizer that runs off the request path (past the policy's `prepare_at` threshold)
holds the session's row here while it works, so two processes never summarize one session at
once, and leaves its result in the same row for whichever process reaches the trigger first.
The row cascades with its session: retention and `delete_session` need not know about it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 04:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "compaction_leases",
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("holder", sa.Text, nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("context_start_seq", sa.BigInteger, nullable=False),
        sa.Column("prefix_sha256", sa.String(64), nullable=True),
        sa.Column("prepared", sa.JSON, nullable=True),
        sa.Column("prepared_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name="fk_compaction_leases_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", name="pk_compaction_leases"),
    )


def downgrade() -> None:
    op.drop_table("compaction_leases")
