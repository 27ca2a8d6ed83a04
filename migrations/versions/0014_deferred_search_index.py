"""SQLite's full-text index leaves the append path: rows are indexed in batches afterwards.

The trigger that indexed every row inside its append (0010) goes; `message_search_progress`
records, per session, the seq up to which its rows are indexed. Everything stored so far was
indexed by the trigger, so each session starts at its `last_seq`. The store indexes the rest
when its writer is idle, on close and before a search (sessionstore/_search_index.py).
PostgreSQL is unchanged: the database maintains its GIN index.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 01:40:00
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(
        "CREATE TABLE message_search_progress (session_id TEXT PRIMARY KEY "
        "REFERENCES sessions (session_id) ON DELETE CASCADE, indexed_seq BIGINT NOT NULL)"
    )
    op.execute(
        "INSERT INTO message_search_progress (session_id, indexed_seq) "
        "SELECT session_id, last_seq FROM sessions"
    )
    op.execute("DROP TRIGGER message_search_add")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    search = _migration_0010()
    pending = (
        "FROM messages m LEFT JOIN message_search_progress p ON p.session_id = m.session_id "
        f"WHERE m.seq > coalesce(p.indexed_seq, 0) AND {search._INDEXED}"
    )
    op.execute(
        f"INSERT INTO message_search_rows (session_id, seq) SELECT m.session_id, m.seq {pending}"
    )
    op.execute(
        "INSERT INTO message_search (rowid, body) "
        f"SELECT r.id, {search._TEXT.format(payload='m.payload')} FROM message_search_rows r "
        "JOIN messages m ON m.session_id = r.session_id AND m.seq = r.seq "
        "LEFT JOIN message_search_progress p ON p.session_id = m.session_id "
        "WHERE m.seq > coalesce(p.indexed_seq, 0)"
    )
    op.execute("DROP TABLE message_search_progress")
    op.execute(
        "CREATE TRIGGER message_search_add AFTER INSERT ON messages "
        f"WHEN NEW.kind IN ('item', 'summary') AND NEW.payload IS NOT NULL BEGIN "
        "INSERT INTO message_search_rows (session_id, seq) VALUES (NEW.session_id, NEW.seq); "
        "INSERT INTO message_search (rowid, body) "
        f"VALUES (last_insert_rowid(), {search._TEXT.format(payload='NEW.payload')}); END"
    )


def _migration_0010() -> Any:
    """Migration 0010's module: what it indexes and how (recreating its trigger)."""
    spec = importlib.util.spec_from_file_location(
        "search_0010", Path(__file__).with_name("0010_full_text_search.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
