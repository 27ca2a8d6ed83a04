"""Opaque provider items are described, never printed: whatever their content."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessionstore._items import text_of
from sessionstore._opaque import describe_opaque, is_opaque, opaque_view

blobs = st.text(min_size=8).filter(lambda blob: blob.strip() and "compaction" not in blob)


@given(blob=blobs, item_id=st.from_regex(r"cmp_[a-z0-9]{1,12}", fullmatch=True))
def test_no_view_of_an_opaque_item_holds_its_content(blob: str, item_id: str) -> None:
    item = {"type": "compaction", "id": item_id, "encrypted_content": blob}
    view = opaque_view(item, provider="openai", model="gpt-5")
    assert blob not in str(view) and blob not in text_of(item)
    assert view["encrypted_bytes"] == len(blob.encode())
    assert describe_opaque(view) == describe_opaque(item, provider="openai", model="gpt-5")
    assert text_of(item) == describe_opaque(item)


def test_only_provider_items_are_opaque() -> None:
    assert is_opaque({"type": "compaction", "id": "c", "encrypted_content": "x"})
    assert not is_opaque({"type": "message", "role": "user", "content": "compaction"})
    assert not is_opaque({"role": "user", "content": "hi"})
    assert not is_opaque(None)


def test_the_description_names_binding_and_size() -> None:
    item = {"type": "compaction", "id": "cmp_7", "encrypted_content": "é" * 10}
    assert describe_opaque(item, provider="openai", model="gpt-5") == (
        "[opaque compaction item cmp_7 (openai gpt-5), 20 bytes]"
    )
    assert describe_opaque(item) == "[opaque compaction item cmp_7, 20 bytes]"
