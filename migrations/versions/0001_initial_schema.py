"""Initial schema: sessions, append-only messages, compactions, archives, events.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 08:02:05.464117
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "ts",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("severity", sa.String(length=16), server_default="info", nullable=False),
        sa.Column("compaction_id", sa.BigInteger(), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("t_est", sa.Integer(), nullable=True),
        sa.Column("max_tokens", sa.Integer(), nullable=True),
        sa.Column("triggered", sa.Boolean(), nullable=True),
        sa.Column("pruned_count", sa.Integer(), nullable=True),
        sa.Column("summary_tokens", sa.Integer(), nullable=True),
        sa.Column("compression_ratio", sa.Float(), nullable=True),
        sa.Column("error_type", sa.String(length=64), nullable=True),
        sa.Column("fallback", sa.String(length=64), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_events_event_ts"), ["event", "ts"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_events_session_id_id"), ["session_id", "id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_events_ts"), ["ts"], unique=False)

    op.create_table(
        "sessions",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        sa.Column("last_seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("context_start_seq", sa.BigInteger(), server_default="1", nullable=False),
        sa.Column("context_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("context_items", sa.Integer(), server_default="0", nullable=False),
        sa.Column("compaction_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("token_encoding", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.CheckConstraint(
            "context_tokens >= 0", name=op.f("ck_sessions_context_tokens_nonnegative")
        ),
        sa.CheckConstraint("last_seq >= 0", name=op.f("ck_sessions_last_seq_nonnegative")),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_sessions")),
    )
    op.create_table(
        "compactions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=32), nullable=False),
        sa.Column("strategy", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("fallback", sa.String(length=64), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("summarizer", sa.Text(), nullable=True),
        sa.Column("covered_from_seq", sa.BigInteger(), nullable=False),
        sa.Column("covered_to_seq", sa.BigInteger(), nullable=False),
        sa.Column("context_start_seq", sa.BigInteger(), nullable=False),
        sa.Column("summary_seq", sa.BigInteger(), nullable=True),
        sa.Column("kept", sa.JSON(), nullable=False),
        sa.Column("tokens_before", sa.Integer(), nullable=False),
        sa.Column("tokens_after", sa.Integer(), nullable=False),
        sa.Column("summary_tokens", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name=op.f("fk_compactions_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compactions")),
        sa.UniqueConstraint(
            "session_id", "version", name=op.f("uq_compactions_session_id_version")
        ),
    )
    op.create_table(
        "messages",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=True),
        sa.Column("item_type", sa.String(length=64), nullable=True),
        sa.Column("tool_name", sa.Text(), nullable=True),
        sa.Column("call_id", sa.Text(), nullable=True),
        sa.Column("tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("protected", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("ref_seq", sa.BigInteger(), nullable=True),
        sa.Column("compaction_id", sa.BigInteger(), nullable=True),
        sa.Column("archive_id", sa.BigInteger(), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        sa.CheckConstraint(
            "kind IN ('item', 'carry', 'summary', 'tombstone', 'clear')",
            name=op.f("ck_messages_kind_known"),
        ),
        sa.CheckConstraint("seq > 0", name=op.f("ck_messages_seq_positive")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name=op.f("fk_messages_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "seq", name=op.f("pk_messages")),
        # SQLite: store rows clustered by (session_id, seq), so the active context
        # is one contiguous b-tree range and an append touches one b-tree, not two.
        sqlite_with_rowid=False,
    )

    op.create_table(
        "archives",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("compaction_id", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("from_seq", sa.BigInteger(), nullable=False),
        sa.Column("to_seq", sa.BigInteger(), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("format_version", sa.Integer(), nullable=False),
        sa.Column("compression", sa.String(length=16), nullable=False),
        sa.Column("kek_id", sa.Text(), nullable=True),
        sa.Column("wrapped_key", sa.LargeBinary(), nullable=True),
        sa.Column("nonce", sa.LargeBinary(), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("content_sha256", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        # Archives may outlive their session (retention can keep them); no session FK.
        sa.ForeignKeyConstraint(
            ["compaction_id"],
            ["compactions.id"],
            name=op.f("fk_archives_compaction_id_compactions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archives")),
    )
    with op.batch_alter_table("archives", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_archives_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_archives_kek_id"), ["kek_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_archives_session_id_from_seq"), ["session_id", "from_seq"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("archives", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_archives_session_id_from_seq"))
        batch_op.drop_index(batch_op.f("ix_archives_kek_id"))
        batch_op.drop_index(batch_op.f("ix_archives_created_at"))

    op.drop_table("archives")
    op.drop_table("messages")
    op.drop_table("compactions")
    op.drop_table("sessions")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_events_ts"))
        batch_op.drop_index(batch_op.f("ix_events_session_id_id"))
        batch_op.drop_index(batch_op.f("ix_events_event_ts"))

    op.drop_table("events")
