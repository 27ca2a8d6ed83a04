"""Reading transcript items into facts, remembering what each decision was based on."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...._schema import SUMMARY_LINE
from .._entities import entities
from .._prompts import Entry
from .._tool_state import tool_facts
from ._facts import Fact, FactKind
from ._rules import (
    LEDGER_SEPARATOR,
    PATH_KEYS,
    RATIONALE,
    REASON_LEAD,
    WRITE_TOOL,
    classify,
    clip,
    head,
    sentences,
    squash,
    worth_noting,
)


def _json_object(text: str) -> Mapping[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _paths_in(arguments: str) -> list[str]:
    """File paths a tool call names in its arguments (top level or one object down)."""
    args = _json_object(arguments)
    scopes = [args, *(value for value in args.values() if isinstance(value, Mapping))]
    paths: list[str] = []
    for scope in scopes:
        for key in PATH_KEYS:
            value = scope.get(key)
            values = value if isinstance(value, list) else [value]
            paths.extend(squash(v) for v in values if isinstance(v, str) and v.strip())
    return list(dict.fromkeys(paths))


def is_summary(entry: Entry) -> bool:
    return entry.kind == "message" and SUMMARY_LINE.match(entry.text) is not None


@dataclass(slots=True)
class Reader:
    """Turns transcript entries into facts, remembering what each decision was based on."""

    entries: list[Entry]
    facts: list[Fact] = field(default_factory=list)
    embedded: list[str] = field(default_factory=list)  # summaries found among the items
    last_input: str = "-"

    def read(self, skip: Entry | None, kept: Sequence[str] = ()) -> None:
        """File every entry; `kept` is what is said after them (it can use a tool's value)."""
        outputs: dict[str | None, Entry] = {
            e.call_id: e for e in self.entries if e.kind == "tool_output" and e.call_id
        }
        called = {e.call_id for e in self.entries if e.kind == "tool_call"}
        paths = {
            e.call_id: found[0]
            for e in self.entries
            if e.kind == "tool_call" and (found := _paths_in(e.text))
        }
        used: dict[int, list[Fact]] = {}
        for at, fact in tool_facts(self.entries, paths, kept):
            subject = fact.subject if fact.keyed else ""
            state = Fact(
                "state", fact.line(), label=subject, weak=not fact.used, silent=fact.silent
            )
            used.setdefault(at, []).append(state)
        for position, entry in enumerate(self.entries):
            if entry is skip:
                continue
            if is_summary(entry):
                self.embedded.append(entry.text)
            elif entry.kind == "tool_call":
                self._call(entry, outputs.get(entry.call_id))
            elif entry.kind == "tool_output":
                if entry.call_id not in called:
                    self.facts.append(Fact("tool", f"{entry.label or 'tool'}: {head(entry.text)}"))
                # Read by its structure, not as prose: only the values used afterwards.
                self.facts.extend(used.get(position, ()))
                self.last_input = f"{entry.label or 'tool'} output: {head(entry.text, 60)}"
            else:
                user = entry.kind == "message" and entry.label == "user"
                self.read_text(entry.text, position, weak=entry.kind != "message", user=user)
                if user:
                    self.last_input = f"user: {head(entry.text, 60)}"

    def read_text(self, text: str, position: int, *, weak: bool, user: bool = False) -> None:
        """File each sentence; participants' sentences also yield entities and notes."""
        previous: tuple[str, FactKind | None, int | None] | None = None  # sentence, kind, fact
        for sentence in sentences(text):
            # In tool output a reason only joins a fact already kept, never starts one.
            if (
                previous is not None
                and (not weak or previous[2] is not None)
                and REASON_LEAD.match(sentence)
            ):
                self._explain(previous, sentence, position, weak)
                previous = None
                continue
            kind = classify(sentence)
            if weak and kind == "change":
                # Tool output and reasoning: keep the rules and decisions they state, not
                # every file they happen to mention.
                kind = None
            elif not weak and kind is None and worth_noting(sentence, user=user):
                kind = "note"
            index = None
            if kind is not None:
                index = len(self.facts)
                self.facts.append(self._fact(kind, sentence, position, weak))
            previous = (sentence, kind, index)
        if not weak:
            self.facts.extend(Fact("entity", value, label=group) for group, value in entities(text))

    def _explain(
        self,
        previous: tuple[str, FactKind | None, int | None],
        reason: str,
        position: int,
        weak: bool,
    ) -> None:
        """Join a reason to the sentence it explains; an explained unfiled remark is a decision."""
        sentence, kind, index = previous
        if kind is None or kind == "note":
            kind = "decision"
        fact = self._fact(kind, sentence, position, weak, reason=reason)
        if index is None:
            self.facts.append(fact)
        else:
            self.facts[index] = fact

    def _fact(
        self, kind: FactKind, sentence: str, position: int, weak: bool, reason: str = ""
    ) -> Fact:
        text = f"{sentence} {reason}" if reason else sentence
        if kind == "change":
            path = next(value for group, value in entities(sentence) if group == "files")
            return Fact(kind, text, label=path, weak=weak)
        if kind != "decision":
            return Fact(kind, text, weak=weak)
        split = None if reason else RATIONALE.search(sentence)
        decision = sentence[: split.start()].rstrip(" ,;:-") if split else sentence
        rationale = reason or (sentence[split.start() :] if split else "-")
        ledger = LEDGER_SEPARATOR.join(
            [decision or sentence, rationale, self.last_input, self._later(position)]
        )
        return Fact(kind, text, ledger=ledger, weak=weak)

    def _later(self, position: int) -> str:
        """Tools called after a decision, up to the next user message: what it led to."""
        names: list[str] = []
        for entry in self.entries[position + 1 :]:
            if entry.kind == "message" and entry.label == "user":
                break
            if entry.kind == "tool_call" and entry.label not in names:
                names.append(entry.label)
        return ", ".join(names[:3]) or "-"

    def _call(self, call: Entry, output: Entry | None) -> None:
        result = head(output.text) if output else "no output yet"
        paths = _paths_in(call.text)
        self.facts.extend(Fact("entity", path, label="files") for path in paths)
        if paths and WRITE_TOOL.search(call.label):
            # An edit is a change to the code, not tool chatter.
            changes = (Fact("change", f"{call.label} -> {result}", label=p) for p in paths)
            self.facts.extend(changes)
            return
        name = " ".join(part for part in (call.label or "tool", clip(call.text, 80)) if part)
        self.facts.append(Fact("tool", f"{name}: {result}"))
