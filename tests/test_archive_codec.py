"""Archive bodies give back exactly what was archived, whatever characters the items hold."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._archive_codec import decode_archive, encode_archive

# JSON leaves these unescaped inside strings; str.splitlines() would cut a line at each.
LINE_BREAKS_BUT_NOT_NEWLINE = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r"


def test_items_holding_unicode_line_breaks_round_trip() -> None:
    records = [
        {
            "seq": 3,
            "kind": "item",
            "item": {"role": "user", "content": f"a{LINE_BREAKS_BUT_NOT_NEWLINE}b"},
        },
        {"seq": 4, "kind": "item", "item": {"role": "assistant", "content": "plain\nnewline"}},
    ]
    encoded = encode_archive(records)
    assert decode_archive(encoded.body, encoded.content_sha256) == records


@given(
    texts=st.lists(
        st.text(alphabet=st.characters(blacklist_categories=["Cs"])), min_size=1, max_size=5
    )
)
def test_any_text_round_trips(texts: list[str]) -> None:
    records: list[dict[str, Any]] = [
        {"seq": seq, "kind": "item", "item": {"role": "user", "content": text}}
        for seq, text in enumerate(texts, start=1)
    ]
    encoded = encode_archive(records)
    assert decode_archive(encoded.body, encoded.content_sha256) == records
    assert (encoded.from_seq, encoded.to_seq, encoded.item_count) == (1, len(texts), len(texts))
