"""AdvancedSQLiteSession's turn readers (`get_conversation_turns`, `find_turns_by_content`,
`get_conversation_by_turns`, `get_tool_usage`), for SQLSession.

A ported program calls these with the SDK's signatures, `branch_id` included; they read our
turns (`SessionStore.user_turns`, `turns`, `tool_usage`) of the branch's store session, so
they work on any backend and no per-message structure table is kept.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ... import UserTurn, tool_name_of
from ._branch_ids import branch_name, branch_session_id

if TYPE_CHECKING:
    from ... import SessionStore


class SDKTurnsMixin:
    """The turn readers of AdvancedSQLiteSession; mixed into SQLSession."""

    if TYPE_CHECKING:  # provided by SQLSession
        store: SessionStore
        session_id: str

        @property
        def active_session_id(self) -> str: ...

        async def _first_access(self) -> None: ...

    def _store_session_of(self, branch_id: str | None) -> str:
        """The store session holding `branch_id` (None: the current branch), as `get_items`
        resolves it; an unknown branch reads as an empty one, as in the SDK."""
        if branch_id is None:
            return self.active_session_id
        return branch_session_id(self.session_id, branch_name(branch_id))

    async def _sdk_turns(self, store_id: str) -> tuple[list[UserTurn], int]:
        """The user turns since the newest `clear_session`, numbered from 1 as the SDK's
        (the store numbers turns over the whole history), and how many came before it."""
        turns = await self.store.user_turns(store_id)
        before = await self.store.turns_before_clear(store_id)
        if not before:
            return turns, 0
        return [replace(turn, turn=turn.turn - before) for turn in turns[before:]], before

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The user turns of a branch (current one by default), shaped like
        AdvancedSQLiteSession's: turn, content (a preview of 100 characters), full_content
        (the string, or the list of parts), timestamp, can_branch (always True). Numbered
        from 1 after a `clear_session`, as the SDK's."""
        await self._first_access()
        turns, _ = await self._sdk_turns(self._store_session_of(branch_id))
        return [
            {
                "turn": turn.turn,
                "content": _preview(turn.user_text or ""),
                "full_content": _content(turn.user_text),
                "timestamp": turn.started_at.isoformat(),
                "can_branch": True,
            }
            for turn in turns
        ]

    async def find_turns_by_content(
        self, search_term: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The user turns whose text contains `search_term` (case-insensitive), shaped like
        `get_conversation_turns`; for parts, only their text is searched (not the JSON)."""
        if not isinstance(search_term, str):
            raise TypeError(f"search_term must be a str, got a {type(search_term).__name__}")
        term = search_term.casefold()
        return [
            turn
            for turn in await self.get_conversation_turns(branch_id)
            if any(term in text.casefold() for text in _texts(turn["full_content"]))
        ]

    async def get_conversation_by_turns(
        self, branch_id: str | None = None
    ) -> dict[int, list[dict[str, str | None]]]:
        """The branch's context grouped by turn, {turn: [{"type", "tool_name"}, ...]}, like
        AdvancedSQLiteSession's: type is "user", "assistant" or the item's type; turn 0
        holds what came before the first user message. Numbered as `get_conversation_turns`."""
        await self._first_access()
        store_id = self._store_session_of(branch_id)
        cleared = await self.store.turns_before_clear(store_id)
        starts = [
            (turn.turn - cleared, turn.first_seq) for turn in await self.store.turns(store_id)
        ]
        grouped: dict[int, list[dict[str, str | None]]] = {}
        for row in await self.store.context_rows(store_id):
            if not row.visible or row.item is None:
                continue
            number = max((turn for turn, first in starts if first <= row.seq), default=0)
            grouped.setdefault(number, []).append(
                {"type": _message_type(row.item), "tool_name": tool_name_of(row.item)}
            )
        return grouped

    async def get_tool_usage(self, branch_id: str | None = None) -> list[tuple[str, int, int]]:
        """(tool_name, calls, turn) for every tool a branch called (current one by default),
        like AdvancedSQLiteSession's."""
        await self._first_access()
        store_id = self._store_session_of(branch_id)
        cleared = await self.store.turns_before_clear(store_id)
        return [
            (tool, calls, turn - cleared)
            for tool, calls, turn in await self.store.tool_usage(store_id)
            if turn > cleared
        ]


def _message_type(item: dict[str, Any]) -> str:
    """The SDK's classification of a stored item (`message_structure.message_type`)."""
    role = item.get("role")
    if role in ("user", "assistant"):
        return str(role)
    kind = item.get("type")
    return str(kind) if kind else "other"


def _content(user_text: str | None) -> str | list[dict[str, Any]] | None:
    """A turn's content as the SDK returns it: the string, or the list of parts. The store
    keeps parts as their JSON text; text that parses as a list of typed parts is taken as
    parts (a user typing exactly that JSON is the one case read differently)."""
    if user_text is None or not user_text.startswith("["):
        return user_text
    try:
        parts = json.loads(user_text)
    except ValueError:
        return user_text
    if parts and all(isinstance(part, dict) and "type" in part for part in parts):
        return list(parts)
    return user_text


def _texts(content: str | list[dict[str, Any]] | None) -> list[str]:
    """The searchable text of a turn's content: the string, or its parts' text."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    return [str(part.get("text", "")) for part in content]


def _preview(text: str, length: int = 100) -> str:
    return text if len(text) <= length else text[:length] + "..."
