"""Archive memberships go with their message rows (ON DELETE CASCADE).

Before this, deleting a session left its memberships behind: reusing the session id then
failed at the next compaction, and retention could purge the new session's plaintext on
the strength of an old archive. Orphans from that are removed first.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 12:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FK_NAME = "fk_archive_members_session_id_messages"


def upgrade() -> None:
    op.execute(
        "DELETE FROM archive_members WHERE NOT EXISTS (SELECT 1 FROM messages m"
        " WHERE m.session_id = archive_members.session_id AND m.seq = archive_members.seq)"
    )
    with op.batch_alter_table("archive_members") as batch:
        batch.create_foreign_key(
            op.f(FK_NAME),
            "messages",
            ["session_id", "seq"],
            ["session_id", "seq"],
            ondelete="CASCADE",
        )


def downgrade() -> None:
    with op.batch_alter_table("archive_members") as batch:
        batch.drop_constraint(op.f(FK_NAME), type_="foreignkey")
