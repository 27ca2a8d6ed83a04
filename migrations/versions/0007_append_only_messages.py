"""Messages are append-only in the database: UPDATE and DELETE refused outside maintenance.

Triggers on `messages` refuse UPDATE and DELETE (and, on PostgreSQL, TRUNCATE) unless the
transaction is in maintenance (sessionstore/_append_only.py): retention, deleting a session
and migrations are; `sessionstore_apply_retention()` runs with the setting on.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 09:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_REFUSAL = (
    "messages are append-only: {op} refused (only retention, deleting a session and "
    "migrations change rows; see docs/SECURITY.md)"
)
_RETENTION_FUNCTION = "sessionstore_apply_retention(boolean, timestamp with time zone)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name, action in (("update", "UPDATE"), ("delete", "DELETE")):
            op.execute(
                f"CREATE TRIGGER messages_no_{name} BEFORE {action} ON messages "
                "WHEN sessionstore_maintenance() = 0 "
                f"BEGIN SELECT RAISE(ABORT, '{_REFUSAL.format(op=action)}'); END"
            )
        return
    refusal = _REFUSAL.format(op="%")
    op.execute(
        f"""
        CREATE FUNCTION sessionstore_messages_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF coalesce(current_setting('sessionstore.maintenance', true), '') = 'on' THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
            RAISE EXCEPTION '{refusal}', TG_OP USING ERRCODE = 'insufficient_privilege';
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER messages_append_only BEFORE UPDATE OR DELETE ON messages "
        "FOR EACH ROW EXECUTE FUNCTION sessionstore_messages_append_only()"
    )
    op.execute(
        "CREATE TRIGGER messages_no_truncate BEFORE TRUNCATE ON messages "
        "FOR EACH STATEMENT EXECUTE FUNCTION sessionstore_messages_append_only()"
    )
    op.execute(f"ALTER FUNCTION {_RETENTION_FUNCTION} SET sessionstore.maintenance = 'on'")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS messages_no_update")
        op.execute("DROP TRIGGER IF EXISTS messages_no_delete")
        return
    op.execute(f"ALTER FUNCTION {_RETENTION_FUNCTION} RESET sessionstore.maintenance")
    op.execute("DROP TRIGGER IF EXISTS messages_no_truncate ON messages")
    op.execute("DROP TRIGGER IF EXISTS messages_append_only ON messages")
    op.execute("DROP FUNCTION IF EXISTS sessionstore_messages_append_only()")
