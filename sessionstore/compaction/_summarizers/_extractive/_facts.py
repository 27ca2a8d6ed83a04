"""Facts, their kinds and priorities, and the layouts (sections) a summary files them into."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

NO_CONTEXT: Final = "No prior context: the compacted history held nothing to keep."


FactKind = Literal[
    "pinned", "goal", "state", "entity", "constraint", "decision", "change", "action",
    "preference", "note", "tool",
]  # fmt: skip


# Lower drops first when the summary must shrink.
PRIORITY: Final[Mapping[FactKind, int]] = {
    "tool": 0,
    "note": 1,
    "entity": 2,
    "preference": 3,
    "action": 4,
    "change": 4,
    "goal": 5,
    "state": 5,
    "decision": 6,
    "constraint": 6,
    "pinned": 7,
}


TAGS: Final[Mapping[FactKind, str]] = {kind: kind.capitalize() for kind in PRIORITY}


KIND_OF_TAG: Final[Mapping[str, FactKind]] = {tag.lower(): kind for kind, tag in TAGS.items()}


MAX_SENTENCE_CHARS: Final = 400


HEAD_CHARS: Final = 100


ELLIPSIS: Final = "…"


@dataclass(frozen=True, slots=True)
class Fact:
    kind: FactKind
    text: str  # verbatim: a sentence, an entity, or a line carried from the prior summary
    label: str = ""  # the entity's group ("files"), or the file a change touched
    ledger: str = ""  # decision :: rationale :: inputs :: outputs, for the decision log
    weak: bool = False  # read from a tool output or reasoning, not stated by a participant
    silent: bool = False  # never shown: a tool output's value that may only replace others

    def body(self) -> str:
        return f"{self.label}: {self.text}" if self.kind == "change" and self.label else self.text


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    kinds: tuple[FactKind, ...]
    ledger: str = ""  # id prefix ("S" -> [S1], [S2], ...); empty renders "- " bullets

    @property
    def mixed(self) -> bool:
        """Sections holding several kinds tag each line with its kind."""
        return len([kind for kind in self.kinds if kind != "entity"]) > 1


@dataclass(frozen=True, slots=True)
class Layout:
    sections: tuple[Section, ...]
    tool_limit: int | None  # most recent tool results kept; None keeps all


REQUEST_TITLE: Final = "Latest request"


REQUEST: Final = Section(REQUEST_TITLE, ())


_TOOLS: Final = Section("Tool results", ("tool",))


# Values read from tool outputs and used afterwards, one current value per subject.
_STATE: Final = Section("Current state", ("state",))


def _context(*kinds: FactKind) -> Section:
    return Section("Context", (*kinds, "entity"))


LAYOUTS: Final[Mapping[str, Layout]] = {
    "task_state": Layout(
        (
            Section("Pinned facts", ("pinned",)),
            Section("Goals", ("goal",)),
            _STATE,
            Section("Entities", ("entity",)),
            Section("Constraints", ("constraint",)),
            Section("Decisions", ("decision",)),
            Section("Changes", ("change",)),
            Section("Open actions", ("action",)),
            Section("Preferences", ("preference",)),
            Section("Notes", ("note",)),
            REQUEST,
            _TOOLS,
        ),
        tool_limit=6,
    ),
    "brief": Layout(
        (
            Section(
                "Brief",
                ("pinned", "goal", "constraint", "decision", "change", "action", "preference"),
            ),
            _STATE,
            REQUEST,
            Section("Refs", ("entity",)),
            Section("Notes", ("note",)),
        ),
        tool_limit=0,
    ),
    "decision_log": Layout(
        (
            Section("Decision ledger", ("decision",), ledger="S"),
            _STATE,
            _context("pinned", "goal", "constraint", "change", "action", "preference", "note"),
            REQUEST,
        ),
        tool_limit=0,
    ),
    "code_delta": Layout(
        (
            Section("Code changes", ("change",)),
            _STATE,
            Section("Follow-ups", ("action",)),
            _context("pinned", "goal", "constraint", "decision", "preference", "note"),
            REQUEST,
            _TOOLS,
        ),
        tool_limit=6,
    ),
    "step_ledger": Layout(
        (
            Section("Steps", ("tool", "change"), ledger="S"),
            _STATE,
            Section("Open actions", ("action",)),
            _context("pinned", "goal", "constraint", "decision", "preference", "note"),
            REQUEST,
        ),
        tool_limit=None,
    ),
    "requirements_ledger": Layout(
        (
            Section("Requirements", ("goal", "constraint", "preference"), ledger="R"),
            _STATE,
            Section("Decisions", ("decision",)),
            Section("Open actions", ("action",)),
            _context("pinned", "change", "note"),
            REQUEST,
        ),
        tool_limit=0,
    ),
}


# Parsing a prior summary: single-kind sections take their lines verbatim, mixed sections
# read the kind from each line's tag. Derived from the layouts so the two never disagree.
# The fact sheet's re-inserted lines (factsheet.py) are tagged like a mixed section's.
CARRIED_TITLE: Final = "Carried facts"


SECTION_KINDS: Final[Mapping[str, FactKind | None]] = {
    **{
        section.title.lower(): None if section.mixed else section.kinds[0]
        for layout in LAYOUTS.values()
        for section in layout.sections
        if section.kinds
    },
    CARRIED_TITLE.lower(): None,
}


# Ledger lines ("decision :: rationale :: inputs :: outputs") are carried as written.
LEDGER_TITLES: Final = frozenset(
    section.title.lower()
    for layout in LAYOUTS.values()
    for section in layout.sections
    if section.ledger
)
