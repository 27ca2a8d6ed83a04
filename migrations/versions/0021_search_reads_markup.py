"""PostgreSQL's full-text index reads the words inside markup.

The `simple` configuration's parser reads `<script>alert(1)</script>` as tags and drops them,
words included, so a search for a word that stored text holds inside markup found nothing on
PostgreSQL while SQLite's FTS5 index found it. The index (0010) is rebuilt over the same text
with `<`, `>` and `&` read as spaces: `script`, `alert` and `1` are words like any other.
SQLite is unchanged.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 13:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXED = "kind IN ('item', 'summary') AND payload IS NOT NULL"
_TEXT_0010 = "left(payload::text, 100000)"
_TEXT = f"translate({_TEXT_0010}, '<>&', '   ')"


def _index(text: str) -> None:
    op.execute("DROP INDEX ix_messages_search")
    op.execute(
        "CREATE INDEX ix_messages_search ON messages USING gin "
        f"(to_tsvector('simple', {text})) WHERE {_INDEXED}"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _index(_TEXT)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _index(_TEXT_0010)
