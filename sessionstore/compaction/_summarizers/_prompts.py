"""Built-in summarization strategies and the one way items are shown to a summarizer.

Every template ends with the same rules (update the prior summary, invent nothing, stay
within the token limit, no tools) so that a rolling summary keeps its facts round after
round instead of drifting through summaries of summaries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from ..._items import answered_call, call_names_in, calls_in, role_of, text_of
from ..._redaction import default_redactor
from ._summarizer import SummaryRequest

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = [
    "BUILTIN_STRATEGIES",
    "MAX_TOKENS_PLACEHOLDER",
    "Entry",
    "Strategy",
    "build_messages",
    "build_prompt",
    "fill_template",
    "render_transcript",
    "resolve_strategy",
    "transcript_entries",
]

MAX_TOKENS_PLACEHOLDER: Final = "{max_tokens}"

_RULES: Final = """
If a PRIOR SUMMARY is given, it is the current state: UPDATE it with the transcript instead \
of summarizing it again. Keep every prior fact that is still true, word for word; change or \
drop a fact only when the transcript supersedes it; add the new facts.
Copy ids, file paths, branch names, URLs, environments, versions, numbers and dates exactly.
Do NOT invent details: use only facts stated in the prior summary or the transcript.
Stay within {max_tokens} tokens. Reply with the summary only, as plain text; never call tools."""

_BODIES: Final = {
    "task_state": """\
You are summarizing a conversation for compaction.
Extract ONLY:
- Goals and success criteria
- Key entities, ids, filenames, branches, environments
- Constraints (security, compliance, SLAs, budgets)
- Decisions taken + rationale
- Outstanding actions / blockers
- User preferences
- The latest user request
- Sources/citations (names only)
Output a tight, factual summary with one heading per kind above.""",
    "brief": """\
You are summarizing a conversation for compaction.
Produce a short bullet brief: one line per goal, constraint, decision, open action and user \
preference, then the latest user request, then the key refs (ids, files, branches, URLs, \
environments; names only).
Drop pleasantries and tool chatter before dropping any fact.""",
    "decision_log": """\
You are summarizing a conversation for compaction.
Produce a concise chronological decision ledger:
[step_id] decision :: rationale :: inputs (brief) :: outputs (brief)
Keep neutral tone. No restatements.
After the ledger, list the goals, constraints, open actions and user preferences that still \
apply, and the latest user request.""",
    "code_delta": """\
You are summarizing a coding session for compaction.
Summarize code modifications as diffs-like bullets:
- file_path: summary of changes (functions, APIs touched, side effects)
Focus on what changed, why, and follow-ups.
Then list the follow-ups, the constraints and decisions that still apply, and the latest \
user request.""",
    "step_ledger": """\
You are summarizing a multi-step workflow for compaction.
Produce a chronological ledger of the steps taken (tool calls, commands, edits):
[step_id] action :: result (brief)
Mark failed steps as failed. Then list open actions / blockers, goals, constraints, \
decisions and the latest user request.""",
    "requirements_ledger": """\
You are summarizing a conversation for compaction.
Produce a ledger of every requirement stated so far:
[req_id] kind: requirement (kind is goal, success criterion, constraint or preference)
Quote each requirement as stated and note when one was changed or withdrawn. Then list \
decisions, open actions, key entities and the latest user request.""",
}

BUILTIN_STRATEGIES: Final[Mapping[str, str]] = MappingProxyType(
    {name: body + "\n" + _RULES for name, body in _BODIES.items()}
)


@dataclass(frozen=True, slots=True)
class Strategy:
    """A named prompt template; `{max_tokens}` in it is filled per request."""

    name: str
    prompt: str


def resolve_strategy(name: str, custom: Mapping[str, str] | None = None) -> Strategy:
    """The template for `name`; templates from config override or extend the built-ins."""
    templates = {**BUILTIN_STRATEGIES, **(custom or {})}
    if name not in templates:
        valid = ", ".join(sorted(templates))
        shown = default_redactor().text(repr(name))  # a name is echoed, a pasted key is not
        raise ValueError(f"unknown summarization strategy {shown}; valid strategies: {valid}")
    return Strategy(name, templates[name])


def fill_template(template: str, max_tokens: int) -> str:
    """Fill the token limit; plain replacement because custom templates may contain braces."""
    return template.replace(MAX_TOKENS_PLACEHOLDER, str(max_tokens))


# ---------------------------------------------------------------- transcript

EntryKind = Literal["message", "tool_call", "tool_output", "other"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One transcript line's worth of an item (a message with tool calls yields several)."""

    index: int  # position of the item in the summarized batch
    kind: EntryKind
    label: str  # the role, the tool name ("" when unknown) or the item type
    text: str  # message text, call arguments or tool output, as written
    call_id: str | None = None

    def line(self) -> str:
        """`[user] ...`, `[tool call grep] {...}`, `[tool output grep] ...`, on one line."""
        tag = {
            "message": self.label,
            "tool_call": f"tool call {self.label}",
            "tool_output": f"tool output {self.label}",
            "other": self.label,
        }[self.kind]
        return f"[{tag.rstrip()}] {' '.join(self.text.split())}".rstrip()


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):  # circular or non-string keys: show something, never raise
        return repr(value)


def _calls(item: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(call id, tool name, arguments) of each tool call the item makes, in either format."""
    ids = calls_in(item)
    tool_calls = item.get("tool_calls")
    if not isinstance(tool_calls, list):  # a Responses *_call item
        name = item.get("name")
        arguments = item.get("arguments", item.get("input", item.get("action")))
        return (
            [(ids[0], _json_text(name or item.get("type")), _json_text(arguments))] if ids else []
        )
    found = []
    for call in tool_calls:
        if not isinstance(call, Mapping) or call.get("id") not in ids:
            continue
        function = call.get("function", call.get("custom"))
        if not isinstance(function, Mapping):
            function = {}
        arguments = function.get("arguments", function.get("input"))
        found.append((call["id"], _json_text(function.get("name")), _json_text(arguments)))
    return found


def _item_entries(index: int, item: Mapping[str, Any], names: Mapping[str, str]) -> list[Entry]:
    answered = answered_call(item)
    if answered is not None:
        return [Entry(index, "tool_output", names.get(answered, ""), text_of(item), answered)]
    calls = _calls(item)
    entries = []
    role = role_of(item)
    if role is not None:
        # Chat Completions calls become their own lines rather than text_of's inline form.
        text = text_of({key: value for key, value in item.items() if key != "tool_calls"})
        if text:
            entries.append(Entry(index, "message", role, text))
    elif not calls and (text := text_of(item)):
        entries.append(Entry(index, "other", _json_text(item.get("type")) or "item", text))
    entries.extend(Entry(index, "tool_call", name, args, call_id) for call_id, name, args in calls)
    return entries


def transcript_entries(items: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """The readable content of items, oldest first; odd or empty items are skipped."""
    mappings = [(index, item) for index, item in enumerate(items) if isinstance(item, Mapping)]
    names = call_names_in([item for _, item in mappings])
    return [entry for index, item in mappings for entry in _item_entries(index, item, names)]


def render_transcript(items: Sequence[Mapping[str, Any]]) -> str:
    """One line per entry, e.g. `[user] ...` or `[tool output grep] ...`."""
    return "\n".join(entry.line() for entry in transcript_entries(items))


def build_prompt(request: SummaryRequest) -> tuple[str, str]:
    """(system prompt, user prompt): the filled template, then prior summary and transcript."""
    template = request.instructions or resolve_strategy(request.strategy).prompt
    if request.prior_summary:
        prior = (
            "PRIOR SUMMARY (the current state: UPDATE it with the transcript below; do not "
            f"summarize it again):\n<prior_summary>\n{request.prior_summary}\n</prior_summary>"
        )
    else:
        prior = "PRIOR SUMMARY: none; start a new summary."
    parts = [prior]
    if request.keep_keys:
        keep = "\n".join(f"- {fact}" for fact in request.keep_keys)
        parts.append(f"FACTS TO CARRY VERBATIM:\n{keep}")
    if request.state:
        state = "\n".join(f"- {line}" for line in request.state)
        parts.append(
            "CURRENT STATE (one value per subject, read from tool outputs and what was said; "
            "newest wins). Keep each line with its value and source under a 'Current state' "
            "heading; a value shown as (was X) is replaced: never state X as current:\n"
            f"{state}"
        )
    transcript = render_transcript(request.items)
    parts.append(f"TRANSCRIPT (oldest first):\n<transcript>\n{transcript}\n</transcript>")
    return fill_template(template, request.max_tokens), "\n\n".join(parts)


def build_messages(request: SummaryRequest) -> list[ChatCompletionMessageParam]:
    """The Chat Completions messages of a summarization call."""
    system, user = build_prompt(request)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
