"""Archive bodies give back exactly what was archived, whatever characters the items hold."""

from __future__ import annotations

import hashlib
import zlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._security import _archive_codec as codec
from sessionstore._security._archive_codec import (
    archive_of,
    decode_archive,
    encode_archive,
    encode_large,
    encode_line,
)

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


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(records=st.lists(JSON_VALUES, min_size=1, max_size=4))
def test_slices_make_the_bytes_one_pass_makes(records: list[Any]) -> None:
    """Huge strings are escaped, encoded, hashed and compressed a slice at a time so no
    C call holds the GIL long (issue #34); the archive holds the same bytes as one pass.
    Slices of 3 characters make every string of the strategy 'huge'."""
    original = vars(codec)["SLICE_CHARS"]  # the codec reads its own global at each call
    vars(codec)["SLICE_CHARS"] = 3
    try:
        wrapped = [{"seq": seq, "kind": "item", "item": item} for seq, item in enumerate(records)]
        one_pass = "".join(encode_line(record) + "\n" for record in wrapped)
        data = one_pass.encode("utf-8", "surrogatepass")
        assert [encode_large(record) for record in wrapped] == [encode_line(r) for r in wrapped]
        for body in (
            encode_archive(wrapped),
            archive_of(list(range(len(wrapped))), [encode_line(r) for r in wrapped]),
        ):
            assert zlib.decompress(body.body) == data
            assert body.content_sha256 == hashlib.sha256(data).hexdigest()
    finally:
        vars(codec)["SLICE_CHARS"] = original
