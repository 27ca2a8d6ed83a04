"""Model calls: what each call an adapter saw was sent, and its usage and cost.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 15:35:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_calls",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("call", sa.Integer, nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            nullable=False,
            server_default=sa.func.current_timestamp(),
        ),
        sa.Column("model", sa.Text, nullable=True),
        sa.Column("context_from_seq", sa.BigInteger, nullable=True),
        sa.Column("context_to_seq", sa.BigInteger, nullable=True),
        sa.Column("unsaved_items", sa.Integer, nullable=True),
        sa.Column("input_items", sa.Integer, nullable=True),
        sa.Column("input_tokens_est", sa.Integer, nullable=True),
        sa.Column("input_sha256", sa.String(64), nullable=True),
        sa.Column("input_tokens", sa.Integer, nullable=True),
        sa.Column("cached_tokens", sa.Integer, nullable=True),
        sa.Column("output_tokens", sa.Integer, nullable=True),
        sa.Column("reasoning_tokens", sa.Integer, nullable=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_model_calls"),
        sa.UniqueConstraint("session_id", "call", name="uq_model_calls_session_id_call"),
    )
    op.create_index("ix_model_calls_created_at", "model_calls", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_model_calls_created_at", table_name="model_calls")
    op.drop_table("model_calls")
