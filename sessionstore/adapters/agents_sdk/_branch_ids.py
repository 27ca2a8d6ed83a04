"""How an SDK branch maps to a store session: `"{session_id}#branch:{name}"`, "main" being the
session itself. Shared by SQLSession and its SDK-surface mixins (one rule, one place)."""

from __future__ import annotations

from typing import Final

MAIN_BRANCH: Final = "main"
BRANCH_SEPARATOR: Final = "#branch:"  # "user-42#branch:retry": reserved in SQLSession ids


def branch_name(name: object) -> str:
    """A branch name as the SDK accepts it; "#" is refused so store ids never collide."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("Branch name cannot be empty")
    if "#" in name:
        raise ValueError(f"Branch name {name!r} cannot contain '#'")
    return name


def branch_session_id(session_id: str, branch_id: str) -> str:
    """The store session that holds `branch_id` of SDK session `session_id`."""
    return session_id if branch_id == MAIN_BRANCH else f"{session_id}{BRANCH_SEPARATOR}{branch_id}"
