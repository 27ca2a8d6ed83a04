"""AdvancedSQLiteSession's branch calls (`create_branch_from_turn`, `create_branch_from_content`,
`switch_to_branch`, `list_branches`, `delete_branch`), for SQLSession.

A branch is a store session `"{session_id}#branch:{name}"` forked from the branch it was made
from: it shares the rows before the turn instead of copying them. History is append-only, so
deleting a branch (or clearing the session, which deletes every branch as the SDK's does)
leaves a tombstone: the branch's context is cleared and its metadata says it was deleted. The
tombstone keeps what the SDK's `branch_reservations` keeps: a used name is never handed out
again, a stale session object still on the branch falls back to "main" on its next call,
and branches made from a deleted one keep the rows they share with it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

from ... import BranchError, HistoryPoint
from ._branch_ids import BRANCH_SEPARATOR, MAIN_BRANCH, branch_name, branch_session_id

if TYPE_CHECKING:
    from ... import SessionStore, UserTurn

DELETED: Final = "branch_deleted"  # the metadata key of a deleted branch's tombstone


class SDKBranchesMixin:
    """The branch calls of AdvancedSQLiteSession; mixed into SQLSession."""

    if TYPE_CHECKING:  # provided by SQLSession and SDKTurnsMixin
        store: SessionStore
        session_id: str
        branch_id: str

        @property
        def active_session_id(self) -> str: ...

        async def _first_access(self) -> None: ...

        async def _sdk_turns(self, store_id: str) -> tuple[list[UserTurn], int]: ...

        async def find_turns_by_content(
            self, search_term: str, branch_id: str | None = None
        ) -> list[dict[str, Any]]: ...

    async def _leave_deleted_branch(self) -> None:
        """Back to "main" when another session object deleted (or cleared) the current
        branch, as the SDK's sessions do before their next read or write."""
        if self.branch_id != MAIN_BRANCH and await self._is_deleted(self.active_session_id):
            self.branch_id = MAIN_BRANCH

    async def _is_deleted(self, store_id: str) -> bool:
        metadata = await self.store.session_metadata(store_id)
        return metadata is None or bool(metadata.get(DELETED))

    async def create_branch_from_turn(
        self, turn_number: int, branch_name: str | None = None
    ) -> str:
        """Branch the current branch just before user turn `turn_number` and switch to it
        (AdvancedSQLiteSession's call). Nothing is copied: the branch shares the rows before
        the turn (`SessionStore.fork`). A name once used (even by a deleted branch) is not
        taken again; a generated one is `branch_from_turn_N_<unix time>`, then `_2`, `_3`...
        Returns the branch id."""
        if not isinstance(turn_number, int) or isinstance(turn_number, bool) or turn_number < 1:
            raise ValueError(f"turn_number must be a user turn (1 or more), got {turn_number!r}")
        await self._first_access()
        turns, cleared = await self._sdk_turns(self.active_session_id)
        if not any(turn.turn == turn_number for turn in turns):
            raise ValueError(
                f"Turn {turn_number} does not contain a user message in branch '{self.branch_id}'"
            )
        name = await self._unused_name(turn_number, branch_name)
        store_id = branch_session_id(self.session_id, name)
        try:
            await self.store.fork(
                self.active_session_id,
                store_id,
                at=HistoryPoint.before_turn(turn_number + cleared),
            )
        except BranchError as error:  # another object took the name a moment ago
            if await self.store.session_info(store_id) is None:
                raise
            raise _used(name) from error
        await self.store.merge_session_metadata(store_id, {"branched_from": self.branch_id})
        self.branch_id = name
        return name

    async def _unused_name(self, turn_number: int, requested: str | None) -> str:
        if requested is not None:
            name = branch_name(requested)
            if name == MAIN_BRANCH or await self._name_taken(name):
                raise _used(name)
            return name
        base = f"branch_from_turn_{turn_number}_{int(time.time())}"
        name, suffix = base, 1
        while await self._name_taken(name):
            suffix += 1
            name = f"{base}_{suffix}"
        return name

    async def _name_taken(self, name: str) -> bool:
        """Whether a branch (live or a tombstone) already has `name`."""
        store_id = branch_session_id(self.session_id, name)
        return await self.store.session_info(store_id) is not None

    async def create_branch_from_content(
        self, search_term: str, branch_name: str | None = None
    ) -> str:
        """Branch before the first user turn containing `search_term`, and switch to it."""
        matching = await self.find_turns_by_content(search_term)
        if not matching:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(matching[0]["turn"], branch_name)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Read and write `branch_id` from now on ("main": the session itself)."""
        if branch_id != MAIN_BRANCH and not any(
            branch["branch_id"] == branch_id for branch in await self.list_branches()
        ):
            raise ValueError(f"Branch '{branch_id}' does not exist")
        self.branch_id = branch_id

    async def list_branches(self) -> list[dict[str, Any]]:
        """Every live branch of this session, "main" first, like AdvancedSQLiteSession's:
        branch_id, message_count (items in its context), user_turns, is_current,
        created_at, plus parent (the branch it was forked from)."""
        await self._first_access()
        found: list[dict[str, Any]] = []
        pending: list[tuple[str, str, str | None]] = [(MAIN_BRANCH, self.session_id, None)]
        prefix = f"{self.session_id}{BRANCH_SEPARATOR}"
        while pending:
            name, store_id, parent = pending.pop(0)
            info = await self.store.session_info(store_id)
            metadata: dict[str, Any] = {}
            if info is not None and parent is not None:  # "main" is never deleted
                metadata = await self.store.session_metadata(store_id) or {}
            # A deleted branch is not listed; the branches made from it still are.
            if name == MAIN_BRANCH or (info is not None and not metadata.get(DELETED)):
                turns = (await self._sdk_turns(store_id))[0] if info is not None else []
                found.append(
                    {
                        "branch_id": name,
                        "message_count": 0 if info is None else info.context_items,
                        "user_turns": len(turns),
                        "is_current": name == self.branch_id,
                        "created_at": None if info is None else info.created_at.isoformat(),
                        # the branch it was made from, as the SDK would say
                        "parent": metadata.get("branched_from", parent),
                    }
                )
            for child in await self.store.branches(store_id) if info is not None else []:
                if child.session_id.startswith(prefix):
                    pending.append((child.session_id[len(prefix) :], child.session_id, name))
        return found

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete a branch: its context is cleared and it is listed no more; its name stays
        used, and branches made from it keep what they share with it. "main" cannot be
        deleted, the current branch only with `force` (then "main" becomes current)."""
        if not isinstance(branch_id, str) or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN_BRANCH:
            raise ValueError("Cannot delete the 'main' branch")
        if not any(branch["branch_id"] == branch_id for branch in await self.list_branches()):
            raise ValueError(f"Branch '{branch_id}' does not exist")
        if branch_id == self.branch_id:
            if not force:
                raise ValueError(
                    f"Cannot delete current branch '{branch_id}'. Use force=True or switch "
                    "branches first"
                )
            self.branch_id = MAIN_BRANCH
        await self._tombstone(branch_session_id(self.session_id, branch_id))

    async def _tombstone(self, store_id: str) -> None:
        # Marked first: a crash between the two leaves a hidden branch, never a listed one
        # whose context vanished.
        await self.store.merge_session_metadata(store_id, {DELETED: True})
        await self.store.clear(store_id)

    async def _delete_every_branch(self) -> None:
        """What the SDK's clear_session does to branches: all are deleted, "main" current."""
        for branch in await self.list_branches():
            if branch["branch_id"] != MAIN_BRANCH:
                await self._tombstone(branch_session_id(self.session_id, branch["branch_id"]))
        self.branch_id = MAIN_BRANCH


def _used(name: str) -> ValueError:
    return ValueError(f"Branch ID '{name}' has already been used. Choose a new branch ID.")
