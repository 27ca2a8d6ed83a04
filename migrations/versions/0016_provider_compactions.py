"""Provider compaction items: which provider a compaction's opaque item is bound to.

A provider (the OpenAI Responses API's `compaction` item) can compact server-side and hand
back an encrypted item only that provider and model can read. Its marker row is a summary
row like ours; the compaction row says which provider made it (`provider`, NULL for our
own summarizers) and `model` which model it is bound to, so a later call on another model
knows to rebuild a readable summary from the archive.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 04:22:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("compactions", sa.Column("provider", sa.Text, nullable=True))


def downgrade() -> None:
    # A plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch rebuild of the table would
    # trip over the views that read it.
    op.drop_column("compactions", "provider")
