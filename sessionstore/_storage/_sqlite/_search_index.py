"""SQLite's full-text index, kept off the append path (migration 0014).

An FTS5 insert inside every append cost a third of SQLite's append throughput (FTS5 flushes a
new segment per transaction). Instead, `message_search_progress` records how far each session's
rows are indexed, and the rows after that are indexed later in one transaction: by the writer
when it has been idle for a moment (or has a large backlog), when the store closes, and before
a search. A search that cannot write (a read-only store) matches the rows not indexed yet in a
temporary index of its own, so search never misses a stored row. Purging and deleting act on
indexed rows only (the triggers of migration 0010 look them up), and a purged or deleted row is
never indexed later (only plain `item` and `summary` payloads are, and not a provider's
opaque compaction item, whose ciphertext holds no words).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Final

# What is indexed and how its text is taken: as migration 0010 defined them.
# A provider's opaque item (item_type 'compaction') holds ciphertext, not words: never indexed.
_INDEXED: Final = (
    "m.kind IN ('item', 'summary') AND m.payload IS NOT NULL AND m.item_type IS NOT 'compaction'"
)
_TEXT: Final = (
    "substr((SELECT group_concat(value, ' ') FROM json_tree(m.payload) WHERE type = 'text'), "
    "1, 100000)"
)
# Sessions with rows after their indexed seq, and that seq.
_PENDING: Final = """
    SELECT s.session_id, coalesce(p.indexed_seq, 0), s.last_seq
    FROM sessions s LEFT JOIN message_search_progress p ON p.session_id = s.session_id
    WHERE s.last_seq > coalesce(p.indexed_seq, 0) {only}
"""
_PENDING_ALL: Final = _PENDING.format(only="")
_PENDING_ONE: Final = _PENDING.format(only="AND s.session_id = ?")
_ADD_ROWS: Final = f"""
    INSERT INTO message_search_rows (session_id, seq)
    SELECT m.session_id, m.seq FROM messages m
    WHERE m.session_id = ? AND m.seq > ? AND m.seq <= ? AND {_INDEXED}
    ORDER BY m.seq
"""
_ADD_TEXT: Final = f"""
    INSERT INTO message_search (rowid, body)
    SELECT r.id, {_TEXT} FROM message_search_rows r
    JOIN messages m ON m.session_id = r.session_id AND m.seq = r.seq
    WHERE r.session_id = ? AND r.seq > ? AND r.seq <= ?
"""
_ADVANCE: Final = """
    INSERT INTO message_search_progress (session_id, indexed_seq) VALUES (?, ?)
    ON CONFLICT (session_id) DO UPDATE SET indexed_seq = excluded.indexed_seq
"""
# The rows no index holds yet, with their text, for a search that cannot index them.
_UNINDEXED_TEXT: Final = f"""
    SELECT m.session_id, m.seq, {_TEXT} FROM messages m
    WHERE m.session_id = ? AND m.seq > ? AND m.seq <= ? AND {_INDEXED}
"""
_PENDING_MATCHES: Final = """
    SELECT session_id, seq, bm25(search_pending) FROM temp.search_pending
    WHERE search_pending MATCH ?
"""


def pending_ranges(
    conn: sqlite3.Connection, session_ids: Iterable[str] | None = None
) -> list[tuple[str, int, int]]:
    """(session, indexed seq, last seq) of every session with rows not indexed yet (of
    `session_ids` only, when given)."""
    if session_ids is None:
        return [(str(s), int(a), int(b)) for s, a, b in conn.execute(_PENDING_ALL)]
    found = []
    for session_id in session_ids:
        found += [(str(s), int(a), int(b)) for s, a, b in conn.execute(_PENDING_ONE, (session_id,))]
    return found


def index_ranges(conn: sqlite3.Connection, ranges: Iterable[tuple[str, int, int]]) -> int:
    """Index the rows of each range (inside the caller's transaction); how many rows."""
    indexed = 0
    for session_id, after, upto in ranges:
        indexed += conn.execute(_ADD_ROWS, (session_id, after, upto)).rowcount
        conn.execute(_ADD_TEXT, (session_id, after, upto))
        conn.execute(_ADVANCE, (session_id, upto))
    return indexed


def index_pending(conn: sqlite3.Connection, session_ids: Iterable[str] | None = None) -> int:
    """Index what is pending (of `session_ids` only, when given) in one write transaction
    of its own on `conn`, a driver connection outside any transaction; how many rows."""
    if not pending_ranges(conn, session_ids):  # the common case writes nothing
        return 0
    conn.execute("BEGIN IMMEDIATE")
    try:  # read again under the write lock: another process may have indexed them
        indexed = index_ranges(conn, pending_ranges(conn, session_ids))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return indexed


def match_pending(
    conn: sqlite3.Connection, match: str, session_id: str | None
) -> list[tuple[str, int, float]]:
    """Rows not indexed yet that match (session, seq, bm25): indexed into a temporary FTS5
    table of this connection, which a read-only connection may create."""
    ranges = pending_ranges(conn, None if session_id is None else [session_id])
    if not ranges:
        return []
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_pending USING fts5(body, "
        "session_id UNINDEXED, seq UNINDEXED, tokenize='unicode61 remove_diacritics 2')"
    )
    try:
        for session_id_, after, upto in ranges:
            conn.executemany(
                "INSERT INTO temp.search_pending (session_id, seq, body) VALUES (?, ?, ?)",
                conn.execute(_UNINDEXED_TEXT, (session_id_, after, upto)).fetchall(),
            )
        return [(str(s), int(q), float(r)) for s, q, r in conn.execute(_PENDING_MATCHES, (match,))]
    finally:
        conn.execute("DROP TABLE temp.search_pending")
