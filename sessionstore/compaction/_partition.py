"""Partition the active context into layers, and fit them to the budget.

Rows are grouped into units first: a tool call and every output answering it
form one unit (never split), reasoning items travel with the item they precede,
a message is a unit of its own. The layers (docs/COMPACTION.md, "What is kept") are then:
pinned (protected roles, flagged items, protected tools), recent turns, the last
tool call/output pairs, turn-aborted markers, recent user messages within a token
budget (newest first, the last one truncated), and the remainder to summarize.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, Literal

from .._errors import CompactionError, CompactionErrorReason
from .._frozen import frozen
from .._items import answered_call, calls_in, role_of, text_of
from .._rows import StoredRow
from .._schema import KIND_SUMMARY
from .._tokens import TokenEstimator
from ._policy import CompactionPolicy
from ._truncate import TruncationPolicy, truncate_text

TURN_ABORTED = "<turn-aborted>"
_ABORT_LETTERS = TURN_ABORTED[1:-1]  # what any JSON encoding of the marker still holds
_MIN_SUMMARY = 64  # smallest summary allowance worth asking a summarizer for
_SUMMARY_FLOOR = 256  # below this, shed recent layers before squeezing the summary further
_SUMMARY_ROW_OVERHEAD = 16  # the <COMPACT-SUMMARY vN> marker and message framing around the text
_MIN_TRUNCATED_USER_TOKENS = 32
UnitKind = Literal["message", "tools", "summary", "other"]


@frozen
class Unit:
    """Rows that are kept or summarized together.

    The first row is held apart from the rest, so a unit of one row (every message) needs no
    tuple: a compaction makes thousands of units, and every object living through it counts
    towards the process's next full garbage collection. Its tokens are added up once: the
    layers are re-summed on every step of `fit`.
    """

    first: StoredRow
    kind: UnitKind
    tokens: int  # of every row in the unit (counted at append time)
    more: tuple[StoredRow, ...] = ()  # the rows after the first
    role: str | None = None
    pairs: int = 0  # tool calls in the unit
    protected: bool = False
    aborted: bool = False

    @property
    def rows(self) -> tuple[StoredRow, ...]:
        """The unit's rows, in order."""
        return (self.first, *self.more)

    @property
    def size(self) -> int:
        """How many rows the unit has (without building the tuple of them)."""
        return 1 + len(self.more)

    @property
    def first_seq(self) -> int:
        """Where the unit starts, for ordering."""
        return self.first.seq

    @property
    def items(self) -> list[dict[str, Any]]:
        """The unit's items, in order."""
        return [_item(row) for row in self.rows]


def _item(row: StoredRow) -> dict[str, Any]:
    assert row.item is not None, f"visible row {row.seq} has no payload"
    return row.item


def _is_protected(row: StoredRow, role: str | None, policy: CompactionPolicy) -> bool:
    """Whether the row is pinned; `role` is its item's (the caller has read it already)."""
    meta = _item(row).get("meta")  # usually absent: no Mapping (ABC) check for None
    return (
        row.protected
        or (
            meta is not None
            and isinstance(meta, Mapping)
            and meta.get(policy.protected_flag) is True
        )
        or role in policy.roles_never_prune
        or (row.tool_name is not None and row.tool_name in policy.protected_tools)
    )


def build_units(rows: Sequence[StoredRow], policy: CompactionPolicy) -> list[Unit]:
    """Group visible rows into units (see the module docstring), in seq order.

    A unit is made as soon as its rows are known; only a tool unit, which later outputs join,
    is a list until the end (a compaction groups 10,000 rows, and every object alive through
    it adds to what the garbage collector walks).
    """
    units: list[Unit | list[StoredRow]] = []
    tools: dict[int, tuple[UnitKind, int]] = {}  # a tool unit's position: its kind and pairs
    unit_of_call: dict[str, int] = {}
    reasoning: list[StoredRow] = []
    for row in rows:
        item = _item(row)
        if row.item_type == "reasoning":
            reasoning.append(row)
            continue
        answered = answered_call(item)
        if answered is not None and answered in unit_of_call:
            group = units[unit_of_call[answered]]
            assert isinstance(group, list)
            group.append(row)
            continue
        calls = calls_in(item)
        role = role_of(item)
        kind: UnitKind
        if row.kind == KIND_SUMMARY:
            kind = "summary"
        elif calls:
            kind = "tools"
        elif role is not None and answered is None:
            kind = "message"
        else:
            kind = "other"
        if calls:
            for call_id in calls:
                unit_of_call[call_id] = len(units)
            tools[len(units)] = (kind, len(calls))
            units.append([*reasoning, row])
        elif reasoning:
            units.append(_unit((*reasoning, row), kind, 0, policy))
        else:  # one row, most units: no tuple, no generators
            units.append(
                Unit(
                    row,
                    kind,
                    row.tokens,
                    role=role if kind == "message" else None,
                    protected=kind != "summary" and _is_protected(row, role, policy),
                    aborted=_mentions_abort(row),
                )
            )
        if reasoning:
            reasoning = []
    if reasoning:
        units.append(_unit(tuple(reasoning), "other", 0, policy))
    return [
        unit if isinstance(unit, Unit) else _unit(tuple(unit), *tools[position], policy)
        for position, unit in enumerate(units)
    ]


def _unit(
    rows: tuple[StoredRow, ...], kind: UnitKind, pairs: int, policy: CompactionPolicy
) -> Unit:
    lead = _item(rows[-1]) if kind != "tools" else _item(rows[0])
    return Unit(
        first=rows[0],
        kind=kind,
        tokens=sum(row.tokens for row in rows),
        more=rows[1:],
        role=role_of(lead) if kind == "message" else None,
        pairs=pairs,
        protected=kind != "summary"
        and any(_is_protected(row, role_of(_item(row)), policy) for row in rows),
        aborted=any(_mentions_abort(row) for row in rows),
    )


def _mentions_abort(row: StoredRow) -> bool:
    """Whether the row's text holds the turn-aborted marker. The marker can only come from
    one string of the item, so a stored JSON text without its letters (unescaped, or any
    \\u escape) cannot hold it: one search in C instead of the item's text joined in Python
    (68 -> 59 ms of grouping 10,000 rows). A row read without its JSON text is looked at."""
    payload = row.payload
    if payload is not None and _ABORT_LETTERS not in payload and "\\u" not in payload:
        return False
    return TURN_ABORTED in text_of(_item(row))


@dataclass(frozen=True, slots=True)
class Partition:
    """Which units are kept, in which layer, and what is summarized."""

    pinned: list[Unit]
    recent: list[Unit]
    tools: list[Unit]
    aborted: list[Unit]
    users: list[Unit]
    remainder: list[Unit]
    prior_summary: Unit | None
    truncated_user: tuple[Unit, dict[str, Any], int] | None  # original, shortened copy, tokens
    recent_turns: int
    tool_pairs: int
    user_budget: int
    reductions: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[Unit]:
        """Every non-pinned unit that stays, in seq order."""
        return sorted([*self.recent, *self.tools, *self.aborted, *self.users], key=_first)

    @property
    def pinned_tokens(self) -> int:
        """Tokens of the pinned layer."""
        return sum(unit.tokens for unit in self.pinned)

    @property
    def kept_tokens(self) -> int:
        """Tokens of the recent layer (truncated user copy included)."""
        extra = self.truncated_user[2] if self.truncated_user else 0
        return sum(unit.tokens for unit in self.kept) + extra

    @property
    def remainder_tokens(self) -> int:
        """Tokens of what is summarized (the prior summary excluded)."""
        return sum(unit.tokens for unit in self.remainder)

    @property
    def replaced_rows(self) -> list[StoredRow]:
        """Rows leaving the active context: the remainder and the prior summary."""
        units = [*self.remainder, *([self.prior_summary] if self.prior_summary else [])]
        return sorted((row for unit in units for row in unit.rows), key=_seq)


_seq = attrgetter("seq")


def _first(unit: Unit) -> int:
    return unit.first_seq


def partition(
    units: Sequence[Unit],
    *,
    recent_turns: int,
    tool_pairs: int,
    user_budget: int,
    estimator: TokenEstimator,
) -> Partition:
    """Split units into layers for the given keep counts."""
    summaries = [unit for unit in units if unit.kind == "summary"]
    pinned = [unit for unit in units if unit.protected]
    free = [unit for unit in units if not unit.protected and unit.kind != "summary"]
    messages = [unit for unit in free if unit.kind == "message" and unit.role in _TURN_ROLES]
    user_positions = [i for i, unit in enumerate(messages) if unit.role == "user"]
    if recent_turns == 0:
        recent: list[Unit] = []
    elif len(user_positions) >= recent_turns:
        recent = messages[user_positions[-recent_turns] :]
    else:
        recent = list(messages)
    kept_ids = {id(unit) for unit in recent}

    tools: list[Unit] = []
    kept_pairs = 0
    for unit in reversed([unit for unit in free if unit.kind == "tools"]):
        if kept_pairs >= tool_pairs:
            break
        tools.append(unit)
        kept_pairs += unit.pairs
    kept_ids.update(id(unit) for unit in tools)

    aborted = [unit for unit in free if unit.aborted and id(unit) not in kept_ids]
    kept_ids.update(id(unit) for unit in aborted)

    users: list[Unit] = []
    truncated: tuple[Unit, dict[str, Any], int] | None = None
    left = user_budget
    for unit in reversed([u for u in messages if u.role == "user" and id(u) not in kept_ids]):
        if unit.tokens <= left:
            users.append(unit)
            left -= unit.tokens
            continue
        if left >= _MIN_TRUNCATED_USER_TOKENS:
            truncated = _shortened(unit, left, estimator)
        break
    kept_ids.update(id(unit) for unit in users)

    return Partition(
        pinned=pinned,
        recent=recent,
        tools=sorted(tools, key=_first),
        aborted=aborted,
        users=sorted(users, key=_first),
        remainder=[unit for unit in free if id(unit) not in kept_ids],
        prior_summary=summaries[-1] if summaries else None,
        truncated_user=truncated,
        recent_turns=recent_turns,
        tool_pairs=tool_pairs,
        user_budget=user_budget,
    )


_TURN_ROLES = frozenset({"user", "assistant"})


def _shortened(
    unit: Unit, budget: int, estimator: TokenEstimator
) -> tuple[Unit, dict[str, Any], int]:
    """The user message cut to fit `budget` tokens (head and tail kept, a marker between)."""
    item = unit.items[0]
    cut = truncate_text(
        text_of(item),
        TruncationPolicy(
            mode="tokens", max_tokens=max(budget - 16, 1), serialization_allowance=1.0
        ),
        estimator,
    )
    copy = {key: value for key, value in item.items() if key != "content"}
    copy["content"] = cut.text if cut is not None else text_of(item)
    return unit, copy, estimator.count_item(copy)


def fit(
    units: Sequence[Unit],
    policy: CompactionPolicy,
    *,
    target: int,
    ceiling: int,
    fixed_tokens: int,
    estimator: TokenEstimator,
) -> tuple[Partition, int]:
    """Choose keep counts so pinned + summary + kept + `fixed_tokens` fits the target.

    The summary's allowance shrinks to the room left (down to a floor); below
    that, recent turns are reduced, then tool pairs, down to 1 each (docs/COMPACTION.md),
    then the preserved user messages. If even that leaves no room under the hard
    ceiling, raises CompactionError(InsufficientBudget). Returns the partition and
    the summary's token allowance (what the summarizer gets as max_tokens).
    """
    turns, pairs = policy.keep_recent_turns, policy.keep_tool_io_pairs
    # At most a quarter of the target: in a small window, user messages kept verbatim would
    # fill it, and every compaction would free a few tokens and run again a turn later.
    user_budget = min(policy.recent_user_token_budget, target // 4)
    allowance = policy.summary_allowance(ceiling)  # scales with the usable window
    reductions: list[str] = []
    while True:
        plan = partition(
            units,
            recent_turns=turns,
            tool_pairs=pairs,
            user_budget=user_budget,
            estimator=estimator,
        )
        prior = plan.prior_summary.tokens if plan.prior_summary else 0
        wanted = min(allowance, max(_MIN_SUMMARY, plan.remainder_tokens + prior))
        used = plan.pinned_tokens + plan.kept_tokens + fixed_tokens + _SUMMARY_ROW_OVERHEAD
        if target - used >= min(wanted, _SUMMARY_FLOOR):
            summary_tokens = min(wanted, target - used)
            break
        if turns > 1:
            turns -= 1
            reductions.append(f"keep_recent_turns->{turns}")
        elif pairs > 1:
            pairs -= 1
            reductions.append(f"keep_tool_io_pairs->{pairs}")
        elif user_budget > 0:
            user_budget = 0
            reductions.append("recent_user_token_budget->0")
        elif ceiling - used >= _MIN_SUMMARY:
            summary_tokens = min(wanted, ceiling - used)
            break
        else:
            raise _insufficient(plan, _MIN_SUMMARY, fixed_tokens, ceiling)
    return replace(plan, reductions=reductions), summary_tokens


def _insufficient(plan: Partition, summary: int, fixed: int, ceiling: int) -> CompactionError:
    if plan.pinned_tokens + fixed > ceiling:
        advice = (
            f"protected memory alone needs {plan.pinned_tokens + fixed} tokens "
            f"(pinned items {plan.pinned_tokens}, instructions/tools/new input {fixed}) but the "
            f"budget is {ceiling}. Reduce protected memory (fewer pinned or protected items, "
            "shorter instructions) or use a model with a larger context window."
        )
    else:
        advice = (
            f"even keeping 1 recent turn and 1 tool pair the context needs "
            f"{plan.pinned_tokens + plan.kept_tokens + summary + fixed} tokens "
            f"(pinned {plan.pinned_tokens}, kept {plan.kept_tokens}, summary {summary}, "
            f"instructions/tools/new input {fixed}) but the budget is {ceiling}. Compact "
            "manually with a smaller summary_max_tokens, shorten the latest items, or use a "
            "model with a larger context window."
        )
    return CompactionError(CompactionErrorReason.INSUFFICIENT_BUDGET, advice)
