"""A compaction's archive lines, formatted from the stored payload texts, are exactly what the
archive codec writes for the same records (the format did not change), on both backends."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sessionstore import SessionStore, StoredRow
from sessionstore._items import encode_payload, text_of
from sessionstore._security._archive_codec import decode_archive, encode_line
from sessionstore._store._context_replacement import archived_line, archived_record
from tests.compaction.test_manager import manager_for
from tests.support.archives import raw_archive
from tests.support.histories import turns

# Lone surrogates (stored in their ASCII form), control characters, quotes, backslashes,
# line breaks JSON leaves unescaped, and text that looks like an escape.
ODD_TEXTS = ["\ud800 lone", 'q"uote\\', "\x00\x01\x1f", "\u2028\x85", "\\u00e9 é 字 😀", ""]
texts = st.text() | st.sampled_from(ODD_TEXTS)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


def row_of(item: dict[str, Any], seq: int, names: list[str | None], stored: bool) -> StoredRow:
    kind, role, item_type, tool_name = names
    return StoredRow(
        "s",
        seq,
        kind or "item",
        role,
        item_type,
        tool_name,
        None,
        seq * 7,
        False,
        None if seq % 2 else seq - 1,
        None,
        None,
        item,
        datetime(2026, 1, 1, tzinfo=UTC),
        encode_payload(item, 0) if stored else None,
    )


@given(
    item=st.dictionaries(texts, json_values, max_size=4),
    seq=st.integers(min_value=1, max_value=2**62),
    names=st.lists(st.none() | texts, min_size=4, max_size=4),
    stored=st.booleans(),
)
def test_a_line_is_the_codecs_encoding_of_the_record(
    item: dict[str, Any], seq: int, names: list[str | None], stored: bool
) -> None:
    row = row_of(item, seq, names, stored)
    assert archived_line(row) == encode_line(archived_record(row))
    assert json.loads(archived_line(row)) == archived_record(row)


async def test_an_archive_decodes_to_the_records_of_the_rows_it_replaced(
    store: SessionStore,
) -> None:
    manager = manager_for(
        store, keep_recent_turns=1, keep_tool_io_pairs=0, recent_user_token_budget=0
    )
    history = turns(8, size=12)
    for position, text in enumerate(ODD_TEXTS):
        history[position * 2]["content"] = f"{text} {history[position * 2]['content']}"
    history[1]["meta"] = {"score": 0.1, "big": 10**20, "nested": [None, True, -0.0, 1e-7]}
    await manager.append("s", history)
    outcome = await manager.compact("s")
    assert outcome.plan is not None and outcome.result is not None
    archive = await raw_archive(store, "s")  # its one compaction
    replaced = outcome.plan.replaced_rows
    assert any(ODD_TEXTS[0] in text_of(row.item or {}) for row in replaced)
    expected = [archived_record(row) for row in replaced]
    assert decode_archive(archive["body"], archive["content_sha256"]) == expected
    lines = ("\n".join(encode_line(record) for record in expected) + "\n").encode(
        "utf-8", "surrogatepass"
    )
    assert archive["content_sha256"] == hashlib.sha256(lines).hexdigest()  # the same bytes
