"""Full-text search over every session's history (migration 0010's indexes).

Words match whole (case and accents folded on SQLite, case on PostgreSQL); every word must be
in the row. Hits are rows, best first; what they show is redacted by the caller's redactor.
Sealed payloads are not indexed, so an encrypted session's rows are never found, nor is a
provider's opaque compaction item's ciphertext (a hit on one, indexed before that, shows what
it is, as every view does: `[opaque compaction item cmp_1 (openai gpt-5), N bytes]`).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .._items import text_of
from .._opaque import describe_opaque, is_opaque, opaque_view, tx_bindings
from .._redaction import Redactor
from .._rows import StoredRow
from .._schema import messages
from .._security._payload_sealing import SessionKeys
from .._storage._row_sql import ROW_COLUMNS, stored_rows
from .._storage._sqlite._search_index import match_pending

_WORD: Final = re.compile(r"\w+")
_MAX_WORDS: Final = 32
SNIPPET_CHARS: Final = 160

_SQLITE_SEARCH: Final = """
    SELECT r.session_id, r.seq, bm25(message_search) FROM message_search JOIN message_search_rows r
        ON r.id = message_search.rowid
        JOIN messages m ON m.session_id = r.session_id AND m.seq = r.seq
    WHERE message_search MATCH :match AND (:sid IS NULL OR r.session_id = :sid)
      AND m.item_type IS NOT 'compaction'  -- indexed before opaque items were left out
    ORDER BY bm25(message_search), r.seq DESC LIMIT :limit
"""
_PG_VECTOR: Final = (  # as indexed (0021): markup's <, > and & read as spaces
    "to_tsvector('simple', translate(left(payload::text, 100000), '<>&', '   '))"
)
_PG_SEARCH: Final = f"""
    SELECT session_id, seq FROM messages
    WHERE kind IN ('item', 'summary') AND payload IS NOT NULL
      AND item_type IS DISTINCT FROM 'compaction'  -- a provider's ciphertext is not text
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
    bindings = tx_bindings(conn, [row.compaction_id for row in rows.values()])
    hits = []
    for sid, seq in found:
        if (sid, seq) not in rows:
            continue
        [row] = stored_rows(conn, keys, sid, [rows[(sid, seq)]])
        if row.item is None:  # purged by a concurrent retention run
            continue
        binding = bindings.get(row.compaction_id or 0, (None, None))
        hits.append(search_hit(row, words, redactor, binding))
    return hits


def search_hit(
    row: StoredRow, words: list[str], redactor: Redactor, binding: tuple[str | None, str | None]
) -> SearchHit:
    """The hit of a matched row: its redacted item and the text around the first word. A
    provider's opaque item (not indexed, but a guard for any way to it) is shown as what it
    is, bound to its provider and model (`binding`), as every view shows it: the snippet
    always, the item unless redaction is off."""
    assert row.item is not None
    item = redactor.value(row.item)
    snippet = _snippet(" ".join(text_of(item).split()), words)
    if is_opaque(row.item):
        provider, model = binding
        snippet = describe_opaque(row.item, provider=provider, model=model)
        if redactor.enabled:
            item = opaque_view(row.item, provider=provider, model=model)
    return SearchHit(
        session_id=row.session_id,
        seq=row.seq,
        kind=row.kind,
        role=row.role,
        tool_name=row.tool_name,
        created_at=row.created_at,
        snippet=snippet,
        item=item,
    )


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
