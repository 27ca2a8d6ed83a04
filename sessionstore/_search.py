"""Full-text search over every session's history (migration 0010's indexes).

Words match whole (case and accents folded on SQLite, case on PostgreSQL); every word must be
in the row. Hits are rows, best first; what they show is redacted by the caller's redactor.
Sealed payloads are not indexed, so an encrypted session's rows are never found.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ._items import text_of
from ._payload_sealing import SessionKeys
from ._redaction import Redactor
from ._schema import messages
from ._search_index import match_pending
from ._session_sql import ROW_COLUMNS, stored_rows

_WORD: Final = re.compile(r"\w+")
_MAX_WORDS: Final = 32
SNIPPET_CHARS: Final = 160

_SQLITE_SEARCH: Final = """
    SELECT r.session_id, r.seq, bm25(message_search) FROM message_search JOIN message_search_rows r
        ON r.id = message_search.rowid
    WHERE message_search MATCH :match AND (:sid IS NULL OR r.session_id = :sid)
    ORDER BY bm25(message_search), r.seq DESC LIMIT :limit
"""
_PG_VECTOR: Final = "to_tsvector('simple', left(payload::text, 100000))"  # as indexed (0010)
_PG_SEARCH: Final = f"""
    SELECT session_id, seq FROM messages
    WHERE kind IN ('item', 'summary') AND payload IS NOT NULL
      AND {_PG_VECTOR} @@ plainto_tsquery('simple', :match)
      AND (CAST(:sid AS TEXT) IS NULL OR session_id = :sid)
    ORDER BY ts_rank({_PG_VECTOR}, plainto_tsquery('simple', :match)) DESC, seq DESC
    LIMIT :limit
"""
_ROWS: Final = sa.select(*ROW_COLUMNS).where(
    sa.tuple_(messages.c.session_id, messages.c.seq).in_(sa.bindparam("keys", expanding=True))
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One row that matched: where it is, what it is, and its text around the first match."""

    session_id: str
    seq: int
    kind: str
    role: str | None
    tool_name: str | None
    created_at: datetime
    snippet: str
    item: dict[str, Any]


def search_words(query: object) -> list[str]:
    """The words of a query; ValueError when it has none (punctuation alone matches nothing)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got a {type(query).__name__}")
    words = _WORD.findall(query)
    if not words:
        raise ValueError(f"search for at least one word (letters or digits), not {query!r}")
    if len(words) > _MAX_WORDS:
        raise ValueError(f"search for at most {_MAX_WORDS} words, got {len(words)}")
    return words


def tx_search(
    conn: Connection,
    words: list[str],
    session_id: str | None,
    limit: int,
    keys: SessionKeys,
    redactor: Redactor,
    unindexed: bool = True,
) -> list[SearchHit]:
    """The best `limit` rows holding every word, redacted by `redactor`; `unindexed`: SQLite's
    index may lack rows (nobody caught it up just before), so match those too."""
    if conn.dialect.name == "sqlite":
        match = " ".join(f'"{word}"' for word in words)
        found = _sqlite_matches(conn, match, session_id, limit, unindexed)
    else:
        params = {"match": " ".join(words), "sid": session_id, "limit": limit}
        found = [(str(sid), int(seq)) for sid, seq in conn.execute(sa.text(_PG_SEARCH), params)]
    if not found:
        return []
    matched = conn.execute(_ROWS, {"keys": found})  # one read for every hit
    rows = {(row.session_id, row.seq): row for row in matched}
    hits = []
    for sid, seq in found:
        if (sid, seq) not in rows:
            continue
        [row] = stored_rows(conn, keys, sid, [rows[(sid, seq)]])
        if row.item is None:  # purged by a concurrent retention run
            continue
        item = redactor.value(row.item)
        hits.append(
            SearchHit(
                session_id=sid,
                seq=seq,
                kind=row.kind,
                role=row.role,
                tool_name=row.tool_name,
                created_at=row.created_at,
                snippet=_snippet(" ".join(text_of(item).split()), words),
                item=item,
            )
        )
    return hits


def _sqlite_matches(
    conn: Connection, match: str, session_id: str | None, limit: int, unindexed: bool
) -> list[tuple[str, int]]:
    """The best `limit` matches of the FTS5 index and of the rows it does not hold yet (a
    read-only store cannot index them), best first. Both are read in one snapshot, so a row
    another process indexes meanwhile is in exactly one of them. Pending rows are ranked in
    a temporary index of their own, so their scores are not the index's (docs/SCHEMA.md)."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection) and not raw.in_transaction
    params = {"match": match, "sid": session_id, "limit": limit}
    raw.execute("BEGIN")
    try:
        indexed = [
            (float(rank), -int(seq), str(sid))
            for sid, seq, rank in raw.execute(_SQLITE_SEARCH, params)
        ]
        pending = [
            (rank, -seq, sid)
            for sid, seq, rank in (match_pending(raw, match, session_id) if unindexed else ())
        ]
    finally:
        raw.execute("COMMIT")
    return [(sid, -negated) for _, negated, sid in sorted([*indexed, *pending])[:limit]]


def _snippet(text: str, words: list[str]) -> str:
    """At most SNIPPET_CHARS of `text`, around the first place a query word occurs."""
    lowered = text.lower()
    places = [lowered.find(word.lower()) for word in words]
    first = min((place for place in places if place >= 0), default=0)
    start = max(0, first - SNIPPET_CHARS // 3)
    piece = text[start : start + SNIPPET_CHARS]
    return ("..." if start else "") + piece + ("..." if start + SNIPPET_CHARS < len(text) else "")
