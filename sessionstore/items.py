"""Item codec: turns an SDK item into its JSON payload and typed SQL columns.

Items are stored exactly as the application handed them (Responses input items
natively, Chat Completions messages too); the typed columns exist so history can
be queried with plain SQL without parsing JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .errors import InvalidItemError


@dataclass(frozen=True, slots=True)
class ItemInfo:
    """The typed columns extracted from one item."""

    role: str | None
    item_type: str | None
    tool_name: str | None
    call_id: str | None
    protected: bool


# Built once: json.dumps with non-default options builds a new encoder on every call.
_COMPACT_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_COMPACT_ASCII_JSON: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode_payload(item: object, index: int) -> str:
    """Serialize one item to compact JSON, or explain precisely why it cannot be stored."""
    if not isinstance(item, Mapping):
        raise InvalidItemError(
            f"item #{index} is a {type(item).__name__}, not a mapping; session items are "
            "JSON objects (dicts) such as {'role': 'user', 'content': 'hi'}. Convert SDK "
            "objects with .model_dump(mode='json') or item.to_input_item() first."
        )
    try:
        text = _COMPACT_JSON.encode(item)
    except (TypeError, ValueError) as exc:
        raise InvalidItemError(
            f"item #{index} (type={item.get('type', item.get('role', '?'))!r}) is not "
            f"JSON-serializable: {exc}. Convert values such as datetimes, bytes, sets, NaN or "
            "pydantic models to JSON types before adding them; nothing was stored."
        ) from None
    if text.isascii():  # O(1): CPython records it; most payloads need no UTF-8 check
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates cannot be stored as UTF-8 text; escaping keeps the exact value.
        text = _COMPACT_ASCII_JSON.encode(item)
    return text


def _as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def describe(item: Mapping[str, Any], call_names: Mapping[str, str]) -> ItemInfo:
    """Extract typed columns; `call_names` maps known call ids to their tool names."""
    role = _as_str(item.get("role"))
    item_type = _as_str(item.get("type"))
    if item_type is None and role is not None:
        item_type = "message"
    call_id = _as_str(item.get("call_id"))
    tool_name = _as_str(item.get("name")) if item_type != "message" else None
    tool_calls = item.get("tool_calls")
    if isinstance(tool_calls, list) and tool_calls:
        # Chat Completions: an assistant message that calls tools.
        first = tool_calls[0]
        if isinstance(first, Mapping):
            call_id = _as_str(first.get("id"))
            function = first.get("function")
            if isinstance(function, Mapping):
                tool_name = _as_str(function.get("name"))
    if role == "tool":
        # Chat Completions: a tool result message.
        call_id = _as_str(item.get("tool_call_id"))
    if tool_name is None and call_id is not None:
        tool_name = call_names.get(call_id)
    meta = item.get("meta")
    protected = isinstance(meta, Mapping) and meta.get("protected") is True
    return ItemInfo(role, item_type, tool_name, call_id, protected)


def call_names_in(items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Map call id -> tool name for every tool call in a batch (both item formats)."""
    names: dict[str, str] = {}
    for item in items:
        call_id = item.get("call_id")
        name = item.get("name")
        if isinstance(call_id, str) and isinstance(name, str):
            names[call_id] = name
        tool_calls = item.get("tool_calls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                if not isinstance(call, Mapping):
                    continue
                function = call.get("function")
                if isinstance(call.get("id"), str) and isinstance(function, Mapping):
                    fname = function.get("name")
                    if isinstance(fname, str):
                        names[call["id"]] = fname
    return names


def is_tool_output(info: ItemInfo) -> bool:
    """True for rows that answer a tool call (their tool name may live on another row)."""
    return info.role == "tool" or (info.item_type or "").endswith("_output")


# ---------------------------------------------------------------- item shapes
# Compaction and context hygiene need the same few facts about an item in either
# format (Responses items or Chat Completions messages); they live here, once.

_TEXT_PART_KEYS = ("text", "refusal")


def role_of(item: Mapping[str, Any]) -> str | None:
    """The item's role, for message-like items (both formats)."""
    return _as_str(item.get("role"))


def calls_in(item: Mapping[str, Any]) -> list[str]:
    """Call ids of the tool calls this item makes (a Responses *_call item, or a Chat
    Completions assistant message with `tool_calls`)."""
    item_type = _as_str(item.get("type")) or ""
    call_id = _as_str(item.get("call_id"))
    if call_id is not None and item_type.endswith("_call"):
        return [call_id]
    tool_calls = item.get("tool_calls")
    if isinstance(tool_calls, list):
        return [
            call["id"]
            for call in tool_calls
            if isinstance(call, Mapping) and isinstance(call.get("id"), str)
        ]
    return []


def answered_call(item: Mapping[str, Any]) -> str | None:
    """The call id this item answers (a *_output item, or a Chat Completions tool message)."""
    item_type = _as_str(item.get("type")) or ""
    if item_type.endswith("_output"):
        return _as_str(item.get("call_id"))
    if item.get("role") == "tool":
        return _as_str(item.get("tool_call_id"))
    return None


def _parts_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            texts.extend(part[key] for key in _TEXT_PART_KEYS if isinstance(part.get(key), str))
    return "\n".join(texts)


def text_of(item: Mapping[str, Any]) -> str:
    """The human-readable text of an item: message content, call arguments, tool output,
    reasoning summary. Used for summarizing and for truncation; never raises."""
    item_type = _as_str(item.get("type")) or ""
    if item_type.endswith("_call") or item_type == "function_call":
        arguments = item.get("arguments", item.get("input", ""))
        return f"{item.get('name', item_type)}({arguments if isinstance(arguments, str) else ''})"
    if item_type.endswith("_output"):
        return _parts_text(item.get("output"))
    if item_type == "reasoning":
        return _parts_text(item.get("summary"))
    text = _parts_text(item.get("content"))
    tool_calls = item.get("tool_calls")
    if isinstance(tool_calls, list):
        for call in tool_calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                text += f"\n{function.get('name')}({function.get('arguments', '')})"
    return text.strip()
