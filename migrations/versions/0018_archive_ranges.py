"""Archive membership as runs of seqs: `archive_ranges` replaces `archive_members`.

A compaction of 10,000 rows wrote 10,000 member rows, and PostgreSQL checked each against
`messages` and `archives` (two foreign-key lookups, a row lock each): 90 ms of a 280 ms
compaction. The rows an archive holds are almost always consecutive, so one row per run of
seqs says exactly the same: `(session_id, first_seq, last_seq, archive_id)`. A run goes
with its session (ON DELETE CASCADE, as a member went with its message row) and with its
archive. Upgrading folds each archive's members into runs; downgrading unfolds them.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 03:20:00
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The two places `sessionstore_apply_retention()` finds archived rows (the dry run's count,
# then the purge), as 0002 wrote them and as they read runs.
_ARCHIVED = (
    (
        "JOIN archive_members am ON am.session_id = m.session_id AND am.seq = m.seq",
        "JOIN archive_ranges ar ON ar.session_id = m.session_id\n"
        "                  AND m.seq BETWEEN ar.first_seq AND ar.last_seq",
    ),
    (
        "FROM archive_members am\n"
        "                WHERE am.session_id = m.session_id AND am.seq = m.seq",
        "FROM archive_ranges ar\n"
        "                WHERE ar.session_id = m.session_id\n"
        "                  AND m.seq BETWEEN ar.first_seq AND ar.last_seq",
    ),
)
# Each archive's members, consecutive seqs grouped: a run's seqs minus their rank in it
# are one constant (gaps and islands).
_FOLD = """
INSERT INTO archive_ranges (session_id, first_seq, last_seq, archive_id)
SELECT session_id, min(seq), max(seq), archive_id
FROM (
    SELECT session_id, seq, archive_id,
           seq - row_number() OVER (PARTITION BY session_id, archive_id ORDER BY seq) AS run
    FROM archive_members
) numbered
GROUP BY session_id, archive_id, run
"""
# Seqs are gapless within a session, so a run's rows are exactly the messages in it.
_UNFOLD = """
INSERT INTO archive_members (session_id, seq, archive_id)
SELECT m.session_id, m.seq, ar.archive_id
FROM archive_ranges ar
JOIN messages m ON m.session_id = ar.session_id AND m.seq BETWEEN ar.first_seq AND ar.last_seq
"""


def _migration_0013() -> Any:
    """Migration 0013's module: the retention function as it defines it, and how to install
    one."""
    spec = importlib.util.spec_from_file_location(
        "branches_0013", Path(__file__).with_name("0013_branches.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _retention_reading_ranges(text: str) -> str:
    for old, new in _ARCHIVED:
        assert old in text, old
        text = text.replace(old, new)
    return text


def upgrade() -> None:
    op.create_table(
        "archive_ranges",
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("first_seq", sa.BigInteger, autoincrement=False, nullable=False),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("archive_id", sa.BigInteger, nullable=False),
        sa.CheckConstraint(
            "first_seq <= last_seq", name=op.f("ck_archive_ranges_first_before_last")
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name="fk_archive_ranges_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["archive_id"],
            ["archives.id"],
            name="fk_archive_ranges_archive_id_archives",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "first_seq", name="pk_archive_ranges"),
    )
    op.create_index("ix_archive_ranges_archive_id", "archive_ranges", ["archive_id"])
    op.execute(_FOLD)
    if op.get_bind().dialect.name == "postgresql":
        branches = _migration_0013()
        branches.replace_function(_retention_reading_ranges(branches.retention_function()))
    op.drop_index("ix_archive_members_archive_id", table_name="archive_members")
    op.drop_table("archive_members")


def downgrade() -> None:
    op.create_table(
        "archive_members",
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("seq", sa.BigInteger, autoincrement=False, nullable=False),
        sa.Column("archive_id", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_id"],
            ["archives.id"],
            name="fk_archive_members_archive_id_archives",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(  # 0003
            ["session_id", "seq"],
            ["messages.session_id", "messages.seq"],
            name="fk_archive_members_session_id_messages",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "seq", name="pk_archive_members"),
    )
    op.create_index("ix_archive_members_archive_id", "archive_members", ["archive_id"])
    op.execute(_UNFOLD)
    if op.get_bind().dialect.name == "postgresql":
        branches = _migration_0013()
        branches.replace_function(branches.retention_function())
    op.drop_index("ix_archive_ranges_archive_id", table_name="archive_ranges")
    op.drop_table("archive_ranges")
