"""Archives bound to what never changes: the compaction they were sealed for, kept on the row.

An archive's ciphertext is bound to its compaction. Until now the binding was read from
`compaction_id`, which the database sets to NULL when retention deletes the compaction
(`delete_idle_sessions` keeps archives on purpose), after which the archive could never be
opened again. This revision stores the binding in `bound_compaction`, written once, and fills
it for existing rows without decrypting anything: from `compaction_id` where it is still
set, "none" for truncation archives, and, for archives already orphaned, from the events of
their compaction (every compaction event records its compaction and archive ids). An orphan
whose events are gone too stays NULL, and reading it says why.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 09:10:00
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_archives = sa.table(
    "archives",
    sa.column("id", sa.BigInteger),
    sa.column("session_id", sa.Text),
    sa.column("compaction_id", sa.BigInteger),
    sa.column("bound_compaction", sa.Text),
    sa.column("reason", sa.String),
)
_events = sa.table(
    "events",
    sa.column("session_id", sa.Text),
    sa.column("compaction_id", sa.BigInteger),
    sa.column("payload", sa.Text),
)


def _archive_id(payload: Any) -> int | None:
    data = json.loads(payload) if isinstance(payload, str) else payload
    found = data.get("archive_id") if isinstance(data, dict) else None
    return found if isinstance(found, int) else None


def _recover_orphans(conn: sa.Connection) -> None:
    orphans = {
        row.id: row.session_id
        for row in conn.execute(
            sa.select(_archives.c.id, _archives.c.session_id).where(
                _archives.c.bound_compaction.is_(None)
            )
        )
    }
    if not orphans:
        return
    found: dict[int, int] = {}
    for row in conn.execute(
        sa.select(_events.c.compaction_id, _events.c.payload).where(
            _events.c.compaction_id.is_not(None),
            _events.c.session_id.in_(set(orphans.values())),
        )
    ):
        archive_id = _archive_id(row.payload)
        if archive_id is not None and archive_id in orphans:
            found[archive_id] = row.compaction_id
    for archive_id, compaction_id in found.items():
        conn.execute(
            _archives.update()
            .where(_archives.c.id == archive_id)
            .values(bound_compaction=str(compaction_id))
        )


def upgrade() -> None:
    op.add_column("archives", sa.Column("bound_compaction", sa.Text(), nullable=True))
    bound = sa.case(
        (_archives.c.compaction_id.is_not(None), sa.cast(_archives.c.compaction_id, sa.Text)),
        (_archives.c.reason == "truncation", sa.literal("none")),
        else_=sa.null(),
    )
    op.execute(_archives.update().values(bound_compaction=bound))
    _recover_orphans(op.get_bind())


def downgrade() -> None:
    op.drop_column("archives", "bound_compaction")
