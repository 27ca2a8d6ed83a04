"""Item codec: turns an SDK item into its JSON payload and typed SQL columns.

Items are stored exactly as the application handed them (Responses input items
natively, Chat Completions messages too); the typed columns exist so history can
be queried with plain SQL without parsing JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._errors import InvalidItemError, UnserializableItemError
from ._frozen import frozen
from ._opaque import OPAQUE_TYPES, describe_opaque

# Work on a text longer than this is done a slice at a time. One C call over a whole 50 MB
# tool output (a JSON encode, a UTF-8 encode, a join) holds the GIL for 50-250 ms, and the
# event loop's thread waits that long even when the call runs on another thread; between
# slices the GIL can pass to it (issue #34).
SLICE_CHARS: Final = 1 << 20
_CANONICAL: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


@frozen
class ItemInfo:
    """The typed columns extracted from one item."""

    role: str | None
    item_type: str | None
    tool_name: str | None
    call_id: str | None
    protected: bool


# Built once: json.dumps with non-default options builds a new encoder on every call. No
# circular-reference bookkeeping: `check_json_object` has refused every item nested deeper than
# MAX_NESTING (a cycle is infinitely deep) before one is encoded.
_COMPACT_JSON: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_COMPACT_ASCII_JSON: Final = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, check_circular=False
)


# Deeper than this is not a conversation item; it would also exhaust the C encoder's stack.
MAX_NESTING: Final = 256
_JSON_SCALARS: Final = (str, int, float, bool, type(None))


def encode_payload(item: object, index: int, max_bytes: int | None = None) -> str:
    """Serialize one item to compact JSON, or explain precisely why it cannot be stored.

    Errors name the item's position, the field path and the kind of value, never the
    value itself (it may be a secret). An item larger than `max_bytes` is refused
    before it is encoded (its text alone, counted while it is checked, is too much)
    or right after (its exact UTF-8 JSON size).
    """
    if type(item) is not dict and not isinstance(item, Mapping):  # dict: no ABC check
        raise _not_an_item(item, index)
    label = f"item #{index}"
    chars = check_json_object(item, label)
    if max_bytes is not None and chars > max_bytes:
        raise _too_large(label, chars, max_bytes)
    try:
        text = _COMPACT_JSON.encode(item)
    except (TypeError, ValueError) as exc:  # what the walk lets through: a NaN or infinity
        raise InvalidItemError(
            f"item #{index} is not JSON-serializable ({type(exc).__name__}: NaN and infinite "
            "floats have no JSON form). Replace them with null or a string; nothing was stored."
        ) from None
    if text.isascii():  # O(1): CPython records it; most payloads need no UTF-8 check
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            # Lone surrogates cannot be stored as UTF-8 text; escaping keeps the exact value.
            text = _COMPACT_ASCII_JSON.encode(item)
            size = len(text)
    if max_bytes is not None and size > max_bytes:
        raise _too_large(label, size, max_bytes)
    return text


def rough_chars(items: Sequence[object]) -> int:
    """The characters in the items' top-level strings and text parts: O(fields), enough
    to tell a turn from a bulk tool output before any real work."""
    total = 0
    for item in items:
        if not isinstance(item, Mapping):
            continue
        for value in item.values():
            if type(value) is str:
                total += len(value)
            elif type(value) is list:
                for part in value:
                    if type(part) is dict and type(text := part.get("text")) is str:
                        total += len(text)
    return total


def check_item_size(item: object, index: int, max_bytes: int) -> None:
    """Refuse a non-item, or an item whose text alone exceeds `max_bytes`, before any other
    work on it."""
    if type(item) is not dict and not isinstance(item, Mapping):  # dict: no ABC check
        raise _not_an_item(item, index)
    label = f"item #{index}"
    chars = check_json_object(item, label)
    if chars > max_bytes:
        raise _too_large(label, chars, max_bytes)


def _not_an_item(item: object, index: int) -> InvalidItemError:
    return InvalidItemError(
        f"item #{index} is a {type(item).__name__}, not a mapping; session items are "
        "JSON objects (dicts) such as {'role': 'user', 'content': 'hi'}. Convert SDK "
        "objects with .model_dump(mode='json') or item.to_input_item() first."
    )


def _too_large(label: str, size: int, max_bytes: int) -> InvalidItemError:
    return InvalidItemError(
        f"{label} is {size:,} bytes or more, above the store's max_item_bytes "
        f"({max_bytes:,}); store large tool outputs elsewhere and keep a reference, or "
        "raise max_item_bytes; nothing was stored."
    )


def check_json_object(value: Mapping[str, Any], label: str) -> int:
    """Every key a string, every value a JSON type, nesting bounded: what a value would
    lose or break in JSON is refused here rather than silently changed (an int key would
    come back as a string). A fast pass on the hot path; paths only once something is off.
    `label` names the value in the error ("item #3", "metadata"). Returns the number of
    characters in its keys and strings (a lower bound of its JSON size)."""
    chars = _well_formed(value)
    if chars is not None:
        return chars
    _explain(value, "", 1, label)
    raise AssertionError("unreachable: _explain raises for what _well_formed refused")


def _well_formed(item: Mapping[str, Any]) -> int | None:
    """The characters of the item's keys and strings, or None if something is off."""
    chars = 0
    stack: list[tuple[Any, int]] = [(item, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            return None
        if type(value) is dict or isinstance(value, Mapping):
            for key, child in value.items():
                if type(key) is not str:
                    return None
                chars += len(key)
                if type(child) is str:
                    chars += len(child)
                else:
                    stack.append((child, depth + 1))
        elif type(value) is list or isinstance(value, tuple):
            for child in value:
                if type(child) is str:
                    chars += len(child)
                else:
                    stack.append((child, depth + 1))
        elif not isinstance(value, _JSON_SCALARS):
            return None
    return chars


def _explain(value: object, path: str, depth: int, label: str) -> None:
    """Raise the InvalidItemError for the first problem under `value` (recursion is bounded:
    it stops at MAX_NESTING)."""
    where = (path if len(path) <= 80 else "..." + path[-77:]) or "(root)"
    if depth > MAX_NESTING:
        raise InvalidItemError(
            f"{label} is nested more than {MAX_NESTING} levels deep (at {where}); "
            "flatten it or store it as a JSON string; nothing was stored."
        )
    if isinstance(value, Mapping):
        for key, child in value.items():
            if not isinstance(key, str):
                raise InvalidItemError(
                    f"{label} field {where} has a key of type {type(key).__name__}; JSON "
                    "object keys are strings, so it would not come back as stored. Use "
                    "string keys; nothing was stored."
                )
            _explain(child, f"{path}.{key}" if path else key, depth + 1, label)
    elif isinstance(value, list | tuple):
        for position, child in enumerate(value):
            _explain(child, f"{path}[{position}]", depth + 1, label)
    elif not isinstance(value, _JSON_SCALARS):
        raise UnserializableItemError(
            f"{label} field {where} is a {type(value).__name__}, which JSON cannot "
            "hold. Convert datetimes, bytes, sets or pydantic models to JSON types (str, "
            "number, bool, null, list, dict) first; nothing was stored."
        )


def _as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def describe(item: Mapping[str, Any], call_names: Mapping[str, str]) -> ItemInfo:
    """Extract typed columns; `call_names` maps known call ids to their tool names."""
    role = _as_str(item.get("role"))
    item_type = _as_str(item.get("type"))
    if item_type is None and role is not None:
        item_type = "message"
    call_id = _as_str(item.get("call_id"))
    tool_name = tool_name_of(item) if item_type != "message" else None
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
    meta = item.get("meta")  # usually absent: no Mapping (ABC) check for None
    protected = meta is not None and isinstance(meta, Mapping) and meta.get("protected") is True
    return ItemInfo(role, item_type, tool_name, call_id, protected)


# Hosted tools whose calls carry no name: the item type names the tool (as the SDK counts them).
_NAMELESS_TOOL_CALLS: Final = frozenset(
    {
        "computer_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "shell_call",
        "apply_patch_call",
    }
)
_TOOL_SEARCH_ITEMS: Final = frozenset({"tool_search_call", "tool_search_output"})


def tool_name_of(item: Mapping[str, Any]) -> str | None:
    """The tool an item calls, named as the Agents SDK files it: `namespace.name` for a
    namespaced function, `server_label.name` for an MCP call, the type for a hosted tool,
    and one "tool_search" for the tool search's call and output; None for an item that
    names no tool (an output names its call's tool only through the call)."""
    item_type = _as_str(item.get("type"))
    name = _as_str(item.get("name"))
    if item_type in ("mcp_call", "mcp_approval_request") and "server_label" in item:
        label = _as_str(item.get("server_label"))
        if label:
            return f"{label}.{name}" if name else label
        return name
    if item_type in _TOOL_SEARCH_ITEMS:
        return "tool_search"
    if item_type in _NAMELESS_TOOL_CALLS:
        return item_type
    namespace = _as_str(item.get("namespace"))
    if name and namespace and namespace != name:  # the SDK's deferred shape repeats the name
        return f"{namespace}.{name}"
    return name


# Typed columns PostgreSQL bounds (SQLite would take anything): refused on both, alike.
_ROLE_WIDTH: Final = 32
_ITEM_TYPE_WIDTH: Final = 64
_TYPED_WIDTHS: Final = {"role": _ROLE_WIDTH, "item_type": _ITEM_TYPE_WIDTH}
_TYPED_SOURCES: Final = {
    "role": "role",
    "item_type": "type",
    "tool_name": "name",
    "call_id": "call_id",
}


def is_utf8(text: str) -> bool:
    """Whether `text` can be stored as UTF-8 text (no lone surrogates); O(1) for ASCII."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_typed_columns(info: ItemInfo, index: int) -> ItemInfo:
    """`info`, if both backends can store it: no NUL in a typed column, none too wide.

    The payload keeps any JSON; only the copies in typed columns are checked, so an item
    PostgreSQL would refuse mid-transaction is refused before anything is written, and
    SQLite refuses it the same way.
    """
    role, item_type = info.role, info.item_type
    if (  # the usual item: every value absent or short ASCII without a NUL, checked at once
        (role is None or (len(role) <= _ROLE_WIDTH and role.isascii() and "\x00" not in role))
        and (
            item_type is None
            or (
                len(item_type) <= _ITEM_TYPE_WIDTH
                and item_type.isascii()
                and "\x00" not in item_type
            )
        )
        and _plain_ascii(info.tool_name)
        and _plain_ascii(info.call_id)
    ):
        return info
    for column, source in _TYPED_SOURCES.items():
        value = getattr(info, column)
        if value is None:
            continue
        if "\x00" in value:
            raise InvalidItemError(
                f"item #{index} field {source} contains a NUL character, which a text column "
                "cannot hold (PostgreSQL refuses it); remove it. Nothing was stored."
            )
        if not is_utf8(value):
            raise InvalidItemError(
                f"item #{index} field {source} contains a lone surrogate (half of a UTF-16 "
                "pair, e.g. from a bad decode), which a text column cannot hold as UTF-8; "
                "fix the text. Nothing was stored."
            )
        width = _TYPED_WIDTHS.get(column)
        if width is not None and len(value) > width:
            raise InvalidItemError(
                f"item #{index} field {source} is {len(value)} characters, more than its column "
                f"holds ({width}); it names a kind, like 'user' or 'function_call'. "
                "Nothing was stored."
            )
    return info


def _plain_ascii(value: str | None) -> bool:
    """Absent, or ASCII without a NUL: nothing `check_typed_columns` could refuse but width."""
    return value is None or (value.isascii() and "\x00" not in value)


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
    if item_type in OPAQUE_TYPES:  # ciphertext is not text: say what it is
        return describe_opaque(item)
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


def input_sha256(items: Sequence[Mapping[str, Any]]) -> str:
    """A SHA-256 of the input exactly as sent (canonical JSON: sorted keys, compact)."""
    return hashlib.sha256(
        _CANONICAL.encode(list(items)).encode("utf-8", "surrogatepass")
    ).hexdigest()


class InputDigest:
    """`input_sha256` of a list that grows: SHA-256 streams, so the canonical JSON of the
    items seen so far is hashed once and each call adds only its new items."""

    __slots__ = ("_sha", "count")

    def __init__(self) -> None:
        self._sha = hashlib.sha256(b"[")
        self.count = 0  # items hashed

    def copy(self) -> InputDigest:
        """An independent digest of the same items, to extend without changing this one."""
        twin = InputDigest()
        twin._sha, twin.count = self._sha.copy(), self.count
        return twin

    def add(self, text: str) -> None:
        """Append one item given as its canonical JSON (`canonical_json`)."""
        if self.count:
            self._sha.update(b",")
        self._sha.update(text.encode("utf-8", "surrogatepass"))
        self.count += 1

    def hexdigest(self) -> str:
        """What `input_sha256` gives for the items added so far."""
        done = self._sha.copy()
        done.update(b"]")
        return done.hexdigest()


def canonical_json(item: Mapping[str, Any]) -> str:
    """One item as `input_sha256` encodes it."""
    return _CANONICAL.encode(item)
