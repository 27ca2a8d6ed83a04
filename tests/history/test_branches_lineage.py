"""Branches under deletion and retention (issue #34): any sequence of appends, forks,
compactions, deletions and retention runs leaves every branch loading what it shared, and
no session ever reads a row of a session outside its own lineage, not even of an earlier
session that had the same id. Real databases: a SQLite file and PostgreSQL."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore import BranchError, CompactionError, SessionStore
from sessionstore._jobs._retention import RetentionAction, RetentionPolicy, run_retention
from tests.support.histories import assistant, user
from tests.support.managers import small_window_manager

NAMES = ("a", "b", "c", "d")
TAG = re.compile(r"<<([a-z0-9-]+)\.(\d+):\d+>>")
LATER = datetime.now(UTC) + timedelta(days=400)  # every session is idle then
POLICIES = {
    "purge": RetentionPolicy("purge", RetentionAction.PURGE_COMPACTED_PLAINTEXT, 1),
    "idle": RetentionPolicy("idle", RetentionAction.DELETE_IDLE_SESSIONS, 1),
}

_op = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(NAMES), st.integers(1, 4)),
    st.tuples(st.just("fork"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("compact"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("retention"), st.sampled_from(sorted(POLICIES)), st.none()),
)


@dataclass
class Life:
    """One incarnation of a session id: the rows a load must return (while no compaction
    touched them), and the incarnations whose rows it may read."""

    incarnation: int
    parent: str | None
    expected: list[dict[str, Any]]
    lineage: set[tuple[str, int]] = field(default_factory=set)
    exact: bool = True


@dataclass
class Model:
    prefix: str
    lives: dict[str, Life] = field(default_factory=dict)
    born: int = 0
    written: int = 0

    def sid(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def new_life(self, name: str, parent: str | None = None, forked: str | None = None) -> Life:
        """A new incarnation; a branch shares what `forked` (the session forked) had, and
        names `parent` (the session whose rows it reads: `forked`'s own parent when
        `forked` had no rows of its own yet)."""
        self.born += 1
        life = Life(self.born, parent, [])
        life.lineage = {(name, self.born)}
        if forked is not None:
            shared = self.lives[forked]
            life.expected = list(shared.expected)
            life.lineage |= shared.lineage
            life.exact = shared.exact
        self.lives[name] = life
        return life

    def items(self, name: str, count: int) -> list[dict[str, Any]]:
        life = self.lives[name]
        batch = []
        for _ in range(count):
            self.written += 1
            tag = f"<<{self.sid(name)}.{life.incarnation}:{self.written}>>"
            batch += [user(f"question {tag}"), assistant(f"answer {tag}")]
        return batch


async def _apply(store: SessionStore, model: Model, op: str, name: str, arg: Any) -> None:
    sid = model.sid(name)
    if op == "append":
        if name not in model.lives:
            model.new_life(name)
        batch = model.items(name, arg)
        await store.append(sid, batch)
        model.lives[name].expected += batch
    elif op == "fork" and name in model.lives and arg not in model.lives and arg != name:
        done = await store.fork(sid, model.sid(arg))
        parent = done.parent_session_id.removeprefix(f"{model.prefix}-")
        model.new_life(arg, parent=parent, forked=name)
    elif op == "compact" and name in model.lives:
        try:
            outcome = await small_window_manager(store).compact(sid)
        except CompactionError:
            return
        if outcome.compacted:
            model.lives[name].exact = False
    elif op == "delete" and name in model.lives:
        children = [child for child, life in model.lives.items() if life.parent == name]
        if children:
            try:
                await store.delete_session(sid)
            except BranchError as refused:
                assert "live branch" in str(refused)
            else:
                raise AssertionError(f"{sid} was deleted under its branches {children}")
        else:
            assert await store.delete_session(sid)
            del model.lives[name]
    elif op == "retention":
        await run_retention(store, now=LATER, policies=[POLICIES[name]])
        if name == "idle":
            kept = {info.session_id for info in await store.list_sessions(limit=1000)}
            for gone in [n for n in model.lives if model.sid(n) not in kept]:
                assert all(life.parent != gone for life in model.lives.values()), gone
                del model.lives[gone]


async def _check(store: SessionStore, model: Model) -> None:
    for name, life in model.lives.items():
        loaded = await store.load_context(model.sid(name))
        if life.exact:
            assert loaded == life.expected, name
        for owner, incarnation in TAG.findall(json.dumps(loaded)):
            assert owner.startswith(model.prefix), owner
            read = (owner.removeprefix(f"{model.prefix}-"), int(incarnation))
            assert read in life.lineage, f"{name} read a row of {read}"


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(_op, min_size=1, max_size=14))
async def test_branches_read_their_lineage_whatever_is_deleted_or_retained(
    db_url: str, ops: list[tuple[str, str, Any]]
) -> None:
    model = Model(prefix=f"x{uuid.uuid4().hex[:8]}")
    async with SessionStore(db_url) as store:
        for op, name, arg in ops:
            await _apply(store, model, op, name, arg)
            await _check(store, model)
