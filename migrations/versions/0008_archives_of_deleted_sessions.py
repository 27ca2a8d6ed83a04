"""Archives remember that their session was deleted, so a reused id never inherits them.

Retention keeps archives when it deletes a session; if the same id is used again, the new
session's `archive show` must not return the old session's originals as its own. A trigger
on `sessions` stamps `archives.session_deleted_at` when a session row goes, whoever deletes
it (the retention job, `sessionstore_apply_retention()`, `delete_session`, plain SQL).
Existing archives whose session is gone, or that are older than the session now using their
id, are stamped now.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 10:25:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STAMP = (
    "UPDATE archives SET session_deleted_at = CURRENT_TIMESTAMP "
    "WHERE session_id = OLD.session_id AND session_deleted_at IS NULL"
)


def upgrade() -> None:
    op.add_column(
        "archives", sa.Column("session_deleted_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.execute(
        "UPDATE archives SET session_deleted_at = CURRENT_TIMESTAMP WHERE NOT EXISTS "
        "(SELECT 1 FROM sessions s WHERE s.session_id = archives.session_id "
        "AND s.created_at <= archives.created_at)"
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"CREATE TRIGGER sessions_deleted_stamp_archives AFTER DELETE ON sessions "
            f"BEGIN {_STAMP}; END"
        )
        return
    op.execute(
        f"""
        CREATE FUNCTION sessionstore_stamp_archives() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {_STAMP};
            RETURN OLD;
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER sessions_deleted_stamp_archives AFTER DELETE ON sessions "
        "FOR EACH ROW EXECUTE FUNCTION sessionstore_stamp_archives()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS sessions_deleted_stamp_archives")
    else:
        op.execute("DROP TRIGGER IF EXISTS sessions_deleted_stamp_archives ON sessions")
        op.execute("DROP FUNCTION IF EXISTS sessionstore_stamp_archives()")
    op.drop_column("archives", "session_deleted_at")
