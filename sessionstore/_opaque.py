"""Opaque provider items: stored and replayed verbatim, never shown.

A provider's compaction item (`{"type": "compaction", "encrypted_content": ...}`) carries
the conversation's state encrypted for the provider alone. Nobody can read it, a summarizer
cannot learn from it, and printing the blob only leaks ciphertext into terminals and logs,
so every human-facing view shows what it is (type, id, size) instead of what it holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ._schema import compactions

__all__ = [
    "DEFAULT_PROVIDER",
    "OPAQUE_TYPES",
    "PROVIDER_RULE",
    "Bindings",
    "describe_opaque",
    "is_opaque",
    "normalize_provider",
    "opaque_view",
    "tx_bindings",
]

# Item types whose content only their provider can read.
OPAQUE_TYPES: Final = frozenset({"compaction"})


# Who can read an opaque item, as stored in `compactions.provider`.
DEFAULT_PROVIDER: Final = "openai"
PROVIDER_RULE: Final = (
    "must name who reads the compaction items: letters, digits and _ . : - only, "
    "e.g. 'openai' or 'azure-openai' (case is ignored)"
)
_PROVIDER_NAME: Final = re.compile(r"[\w.:-]+")


def normalize_provider(name: str) -> str:
    """`name` in lower case: the binding is compared with what an adapter computes ('openai'),
    so 'OpenAI' must not become a second provider whose items nobody can read back."""
    normalized = name.strip().lower()
    if not _PROVIDER_NAME.fullmatch(normalized):
        raise ValueError(f"provider {PROVIDER_RULE} (got {name!r})")
    return normalized


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def is_opaque(item: Mapping[str, Any] | None) -> bool:
    """True for an item only its provider can read (a compaction item)."""
    kind = None if item is None else item.get("type")
    return isinstance(kind, str) and kind in OPAQUE_TYPES


def _size(item: Mapping[str, Any]) -> int:
    blob = item.get("encrypted_content")
    if isinstance(blob, str):
        return len(blob.encode())
    shown = item.get("encrypted_bytes")  # an `opaque_view` of the item
    return shown if isinstance(shown, int) else 0


def opaque_view(
    item: Mapping[str, Any], *, provider: str | None = None, model: str | None = None
) -> dict[str, Any]:
    """What a display or an export shows of an opaque item: never the encrypted blob."""
    view: dict[str, Any] = {"type": item.get("type"), "id": item.get("id"), "opaque": True}
    if provider is not None:
        view["provider"] = provider
    if model is not None:
        view["model"] = model
    view["encrypted_bytes"] = _size(item)
    return view


def describe_opaque(
    item: Mapping[str, Any], *, provider: str | None = None, model: str | None = None
) -> str:
    """One line for an opaque item (or its `opaque_view`):
    `[opaque compaction item cmp_1 (openai gpt-5), 1234 bytes]`."""
    provider = provider or _text(item.get("provider"))
    model = model or _text(item.get("model"))
    binding = " ".join(part for part in (provider, model) if part)
    bound = f" ({binding})" if binding else ""
    return f"[opaque {item.get('type')} item {item.get('id')}{bound}, {_size(item)} bytes]"


# (provider, model) of opaque markers by their compaction id.
Bindings: TypeAlias = dict[int, tuple[str | None, str | None]]


def tx_bindings(conn: Connection, ids: Sequence[int | None]) -> Bindings:
    """(provider, model) of the provider compactions among `ids`: what a view of an opaque
    marker says it is bound to (one read, nothing when no id is given)."""
    wanted = sorted({id_ for id_ in ids if id_})
    if not wanted:
        return {}
    query = sa.select(compactions.c.id, compactions.c.provider, compactions.c.model).where(
        compactions.c.id.in_(wanted), compactions.c.provider.is_not(None)
    )
    return {row.id: (row.provider, row.model) for row in conn.execute(query)}
