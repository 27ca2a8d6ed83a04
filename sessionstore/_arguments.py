"""Checks of public call arguments: say what was wrong before anything is read or written.

Python would otherwise accept `protected="no"` as true, compare `limit="5"` deep in a
query, or exhaust a generator on the first of two passes. Messages name the argument
and the type or range it needs, never the value (it may be a secret).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ._errors import InvalidSessionIdError
from ._items import is_utf8

MAX_AGENT_NAME: Final = 256  # characters; SDK agent names are short labels


def check_session_id(session_id: object) -> None:
    """A session id is a str (numeric user ids are converted by the caller)."""
    if not isinstance(session_id, str):
        raise TypeError(
            f"session_id must be a str, got {type(session_id).__name__}; "
            "use str(user_id) for numeric ids"
        )
    if "\x00" in session_id:
        raise InvalidSessionIdError(
            "session_id contains a NUL character, which PostgreSQL cannot store (and SQLite "
            "would store only there); remove it"
        )
    if not is_utf8(session_id):
        raise InvalidSessionIdError(
            "session_id contains a lone surrogate (half of a UTF-16 pair), which cannot be "
            "stored as UTF-8 text; fix the id"
        )


def check_flag(name: str, value: object) -> bool:
    """A real bool: "no" and 0 are not flags."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got a {type(value).__name__}")
    return value


def check_count(name: str, value: object, *, allow_none: bool = True) -> int | None:
    """A whole number (not a bool, float or str), or None where allowed."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        expected = "an int or None" if allow_none else "an int"
        raise TypeError(f"{name} must be {expected}, got a {type(value).__name__}")
    return value


def check_non_negative(name: str, value: object, *, allow_none: bool = True) -> int | None:
    """A whole number >= 0, or None where allowed."""
    count = check_count(name, value, allow_none=allow_none)
    if count is not None and count < 0:
        raise ValueError(f"{name} must be >= 0, got {count}")
    return count


def check_positive(name: str, value: object) -> int:
    """A whole number > 0."""
    count = check_count(name, value, allow_none=False)
    if count is None or count <= 0:
        raise ValueError(f"{name} must be > 0, got {count}")
    return count


def item_list(items: object) -> Sequence[Mapping[str, Any]]:
    """The items as a list, read once: a generator works, a lone dict or a str does not."""
    if isinstance(items, str | bytes | Mapping):
        raise TypeError(
            f"items must be a list of items, got a {type(items).__name__}; "
            "wrap a single item in a list: [item]"
        )
    if isinstance(items, list):
        return items
    if not isinstance(items, Iterable):
        raise TypeError(f"items must be a list of items, got a {type(items).__name__}")
    return list(items)


def check_agent_name(agent: object) -> str | None:
    """An agent name as stored in `messages.agent`: a str of 1 to 256 characters, not
    blank, with no control characters (they would garble every listing that shows it);
    None (no agent) passes."""
    if agent is None:
        return None
    if not isinstance(agent, str):
        raise TypeError(
            "agent must be a str or None (the name of the agent that produced the items), "
            f"got a {type(agent).__name__}"
        )
    if not agent.strip():
        raise ValueError("agent must name an agent: it is empty or only whitespace")
    if len(agent) > MAX_AGENT_NAME:
        raise ValueError(
            f"agent is {len(agent)} characters long; an agent name holds at most {MAX_AGENT_NAME}"
        )
    if not is_utf8(agent):
        raise ValueError(
            "agent contains a lone surrogate (half of a UTF-16 pair), which cannot be stored "
            "as UTF-8 text; fix the name"
        )
    if any(unicodedata.category(char) == "Cc" for char in agent):
        raise ValueError(
            "agent contains a control character (a newline, tab, NUL ...); agent names are "
            "one-line labels: remove it"
        )
    return agent
