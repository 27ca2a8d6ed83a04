"""Full-text search over history: an FTS5 index on SQLite, a GIN index on PostgreSQL.

What is indexed: the string values of every `item` and `summary` row whose payload is stored in
plain text (sealed payloads are never indexed: an index of them would leak what encryption
hides; carries are copies of indexed items). When retention purges a payload or a session is
deleted, its entry leaves the index in the same statement, so search never outlives retention.

SQLite: `message_search` is a contentless FTS5 table (the text is not stored twice) whose rowid
is the `id` of a row of `message_search_rows(session_id, seq)`; triggers on `messages` keep both.
PostgreSQL: an expression GIN index over `to_tsvector('simple', left(payload::text, 100000))`
(the item's JSON text: no jsonb cast, which refuses the NUL escape the json type keeps), partial
to the same rows; the database maintains it. Both index a row's first 100,000 characters.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 15:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXED = "kind IN ('item', 'summary') AND payload IS NOT NULL"
# The first 100,000 characters of a row are indexed: PostgreSQL refuses a tsvector over 1 MB,
# and an append must never fail for its index. (SQLite's json_tree ends a string at a NUL.)
_TEXT = (
    "substr((SELECT group_concat(value, ' ') FROM json_tree({payload}) WHERE type = 'text'), "
    "1, 100000)"
)
_FORGET = (
    "INSERT INTO message_search(message_search, rowid, body) "
    f"SELECT 'delete', r.id, {_TEXT.format(payload='OLD.payload')} FROM message_search_rows r "
    "WHERE r.session_id = OLD.session_id AND r.seq = OLD.seq; "
    "DELETE FROM message_search_rows WHERE session_id = OLD.session_id AND seq = OLD.seq;"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE INDEX ix_messages_search ON messages USING gin "
            f"(to_tsvector('simple', left(payload::text, 100000))) WHERE {_INDEXED}"
        )
        return
    op.execute(
        "CREATE TABLE message_search_rows (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, "
        "seq BIGINT NOT NULL, UNIQUE (session_id, seq))"
    )
    op.execute(
        "CREATE VIRTUAL TABLE message_search USING fts5(body, content='', "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    op.execute(
        "INSERT INTO message_search_rows (session_id, seq) "
        f"SELECT session_id, seq FROM messages WHERE {_INDEXED} ORDER BY session_id, seq"
    )
    op.execute(
        "INSERT INTO message_search (rowid, body) "
        f"SELECT r.id, {_TEXT.format(payload='m.payload')} FROM message_search_rows r "
        "JOIN messages m ON m.session_id = r.session_id AND m.seq = r.seq"
    )
    op.execute(
        "CREATE TRIGGER message_search_add AFTER INSERT ON messages "
        f"WHEN NEW.kind IN ('item', 'summary') AND NEW.payload IS NOT NULL BEGIN "
        "INSERT INTO message_search_rows (session_id, seq) VALUES (NEW.session_id, NEW.seq); "
        "INSERT INTO message_search (rowid, body) "
        f"VALUES (last_insert_rowid(), {_TEXT.format(payload='NEW.payload')}); END"
    )
    op.execute(
        "CREATE TRIGGER message_search_purge AFTER UPDATE OF payload ON messages "
        f"WHEN OLD.payload IS NOT NULL AND NEW.payload IS NULL BEGIN {_FORGET} END"
    )
    op.execute(
        "CREATE TRIGGER message_search_delete AFTER DELETE ON messages "
        f"WHEN OLD.payload IS NOT NULL BEGIN {_FORGET} END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_messages_search")
        return
    for trigger in ("message_search_add", "message_search_purge", "message_search_delete"):
        op.execute(f"DROP TRIGGER {trigger}")
    op.execute("DROP TABLE message_search")
    op.execute("DROP TABLE message_search_rows")
