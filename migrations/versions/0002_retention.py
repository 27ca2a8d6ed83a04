"""Retention: policy table, exact archive membership, scan indexes, and on PostgreSQL the
`sessionstore_apply_retention()` function a scheduler such as pg_cron can call; and payload
encryption at rest: a sealed payload column and each session's wrapped data key.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 08:55:12
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Applies every enabled policy in one transaction and records a retention.run event.
# Mirrors sessionstore._jobs._retention (the CLI/API job) exactly; tests hold them to it.
APPLY_RETENTION = """
CREATE OR REPLACE FUNCTION sessionstore_apply_retention(
    dry_run boolean DEFAULT false,
    at timestamptz DEFAULT now()
) RETURNS TABLE (policy text, action text, affected bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    p record;
    n bigint;
    cutoff timestamptz;
    counts jsonb := '{}'::jsonb;
BEGIN
    FOR p IN SELECT * FROM retention_policies WHERE enabled ORDER BY name LOOP
        cutoff := at - make_interval(days => p.older_than_days);
        IF p.action = 'purge_compacted_plaintext' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM messages m
                JOIN archive_members am ON am.session_id = m.session_id AND am.seq = m.seq
                WHERE (m.payload IS NOT NULL OR m.payload_sealed IS NOT NULL)
                  AND m.created_at < cutoff;
            ELSE
                UPDATE messages m SET payload = NULL, payload_sealed = NULL
                FROM archive_members am
                WHERE am.session_id = m.session_id AND am.seq = m.seq
                  AND (m.payload IS NOT NULL OR m.payload_sealed IS NOT NULL)
                  AND m.created_at < cutoff;
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        ELSIF p.action = 'delete_idle_sessions' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM sessions s WHERE s.updated_at < cutoff;
            ELSE
                IF NOT p.keep_archives THEN
                    DELETE FROM archives a USING sessions s
                    WHERE a.session_id = s.session_id AND s.updated_at < cutoff;
                END IF;
                DELETE FROM sessions s WHERE s.updated_at < cutoff;
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        ELSIF p.action = 'delete_archives' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM archives a WHERE a.created_at < cutoff;
            ELSE
                DELETE FROM archives a WHERE a.created_at < cutoff;
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        ELSIF p.action = 'delete_events' THEN
            IF dry_run THEN
                SELECT count(*) INTO n FROM events e WHERE e.ts < cutoff;
            ELSE
                DELETE FROM events e WHERE e.ts < cutoff;
                GET DIAGNOSTICS n = ROW_COUNT;
            END IF;
        END IF;
        counts := counts || jsonb_build_object(p.name, n);
        policy := p.name;
        action := p.action;
        affected := n;
        RETURN NEXT;
    END LOOP;
    INSERT INTO events (ts, session_id, event, severity, payload)
    VALUES (now(), NULL, 'retention.run', 'info', jsonb_build_object(
        'ts', now(), 'session_id', NULL, 'event', 'retention.run', 'severity', 'info',
        'source', 'sessionstore_apply_retention', 'dry_run', dry_run, 'counts', counts
    )::json);
END
$$;
"""


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("payload_kek_id", sa.Text(), nullable=True))
        batch.add_column(sa.Column("payload_wrapped_key", sa.LargeBinary(), nullable=True))
    op.add_column("messages", sa.Column("payload_sealed", sa.LargeBinary(), nullable=True))
    op.create_table(
        "retention_policies",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("older_than_days", sa.Integer(), nullable=False),
        sa.Column("keep_archives", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.current_timestamp(),
            nullable=False,
        ),
        sa.CheckConstraint(
            "action IN ('purge_compacted_plaintext', 'delete_idle_sessions', "
            "'delete_archives', 'delete_events')",
            name=op.f("ck_retention_policies_action_known"),
        ),
        sa.CheckConstraint("older_than_days > 0", name=op.f("ck_retention_policies_days_positive")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_retention_policies")),
    )
    op.create_table(
        "archive_members",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("archive_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_id"],
            ["archives.id"],
            name=op.f("fk_archive_members_archive_id_archives"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "seq", name=op.f("pk_archive_members")),
    )
    op.create_index(op.f("ix_archive_members_archive_id"), "archive_members", ["archive_id"])
    op.create_index("ix_messages_created_at", "messages", ["created_at"])
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(APPLY_RETENTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS sessionstore_apply_retention(boolean, timestamptz)")
    op.drop_index("ix_sessions_updated_at", table_name="sessions")
    op.drop_index("ix_messages_created_at", table_name="messages")
    op.drop_index(op.f("ix_archive_members_archive_id"), table_name="archive_members")
    op.drop_table("archive_members")
    op.drop_table("retention_policies")
    op.drop_column("messages", "payload_sealed")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("payload_wrapped_key")
        batch.drop_column("payload_kek_id")
