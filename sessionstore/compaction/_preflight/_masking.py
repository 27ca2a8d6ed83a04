"""Observation masking: old tool outputs sent as a placeholder, the stored rows untouched.

Before a model call, tool outputs older than the policy's recent turns (and than the newest
`keep_tool_outputs` outputs) are replaced in the copy sent by a short text naming the tool,
the original size and the stored seq, and saying how to read the original back. The item
keeps its type and call id, so every call stays answered. Stored history never changes.

Outputs become due in input order and are masked in chunks of at least `clear_at_least`
tokens, walked from the start of the context: what is masked is a function of the context,
so a masked output stays masked on later calls (and after a restart), and the sent prefix
changes only when a whole chunk crosses. Both the scan of an input and the chunks grow with
the input (a pre-flight before every call costs what is new, not the context's size).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..._commands import cli_command
from ..._events import Event
from ..._items import answered_call, call_names_in, role_of, text_of
from ..._rows import StoredRow, visible_rows
from ..._tokens import TokenEstimator
from .._masking_policy import MaskingPolicy
from .._policy import CompactionPolicy

__all__ = [
    "MaskReport",
    "MaskScan",
    "MaskView",
    "Masker",
    "RowMasking",
    "ToolOutput",
    "output_seqs",
    "read_back_command",
]

# Output items whose `output` may be any text (others hold screenshots or structured
# outcomes, which a text placeholder would make invalid: those are never masked).
_TEXT_OUTPUT_TYPES: Final = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "apply_patch_call_output",
    }
)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool output of an input: where it is, what answered it, whether it can be masked."""

    index: int
    call_id: str
    tool: str | None
    chars: int  # of its text: with the call id, what its token count is cached under
    maskable: bool  # a text output, not flagged protected


@dataclass(slots=True)
class _Features:
    """What the scans of one growing input share (each scan sees a prefix of it)."""

    count: int = 0  # items scanned
    users: list[int] = field(default_factory=list)  # indices of user messages
    outputs: list[ToolOutput] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # call id -> tool name

    def prefix(self, count: int, users: int, outputs: int) -> _Features:
        return _Features(count, self.users[:users], self.outputs[:outputs], dict(self.names))


class MaskScan:
    """The user messages and tool outputs of an input, kept as the input grows.

    Scans of one input share their lists; extending the newest appends to them (O(new
    items)), extending an older one copies first, so a scan never changes under its holder.
    """

    __slots__ = ("count", "features", "outputs", "users")

    def __init__(self, features: _Features | None = None) -> None:
        self.features = _Features() if features is None else features
        self.count = self.features.count
        self.users = len(self.features.users)
        self.outputs = len(self.features.outputs)

    def extend(self, items: Iterable[Mapping[str, Any]]) -> MaskScan:
        """The scan of the scanned items followed by `items`."""
        features = self.features
        if features.count != self.count:  # another scan went on from here: branch off
            features = features.prefix(self.count, self.users, self.outputs)
        for item in items:
            _scan_item(features, item)
        return MaskScan(features)

    def output_list(self) -> list[ToolOutput]:
        """The tool outputs this scan saw, in order."""
        return self.features.outputs[: self.outputs]


def _scan_item(features: _Features, item: Mapping[str, Any]) -> None:
    index = features.count
    features.count += 1
    answered = answered_call(item)
    if answered is not None:
        kind = item.get("type")
        meta = item.get("meta")
        features.outputs.append(
            ToolOutput(
                index,
                answered,
                features.names.get(answered),
                len(text_of(item)),
                maskable=(kind in _TEXT_OUTPUT_TYPES or role_of(item) == "tool")
                and not (isinstance(meta, Mapping) and meta.get("protected") is True),
            )
        )
    elif role_of(item) == "user" and item.get("type", "message") == "message":
        features.users.append(index)
    elif "call_id" in item or "tool_calls" in item:
        features.names.update(call_names_in((item,)))


@dataclass(frozen=True, slots=True)
class Placeholder:
    """What a masked output is sent as, and the tokens it frees."""

    item: dict[str, Any]
    original_tokens: int
    tokens: int

    @property
    def freed(self) -> int:
        return max(self.original_tokens - self.tokens, 0)


@dataclass(frozen=True, slots=True)
class MaskReport:
    """What masking did to one model call's input (the `compact.masked` event)."""

    outputs: int = 0  # outputs sent as a placeholder
    tokens_freed: int = 0  # the originals' tokens minus the placeholders'
    new_seqs: tuple[int | None, ...] = ()  # stored seqs of outputs masked by this call
    new_tools: tuple[str | None, ...] = ()
    new_tokens_freed: int = 0

    def event(self, session_id: str) -> Event:
        """`compact.masked` (seqs and tool names only: no output text is echoed)."""
        return Event(
            "compact.masked",
            session_id,
            fields={
                "outputs": self.outputs,
                "tokens_freed": self.tokens_freed,
                "new_outputs": len(self.new_seqs),
                "new_tokens_freed": self.new_tokens_freed,
                "new_seqs": list(self.new_seqs),
                "new_tools": list(self.new_tools),
            },
        )


@dataclass(frozen=True, slots=True)
class MaskView:
    """The input to send and what masking did to it."""

    items: list[dict[str, Any]]
    report: MaskReport


class Masker:
    """One session's masking: the chunks masked so far and their placeholders.

    Tied to one growing input (the scans it is given extend each other); a scan of another
    input (a compacted context, a new process) starts it over, and the chunks come out the
    same for the same context, since they are walked from its start.
    """

    def __init__(
        self, masking: MaskingPolicy, policy: CompactionPolicy, estimator: TokenEstimator
    ) -> None:
        self.masking = masking
        self.keep_turns = policy.keep_recent_turns
        self.excluded = frozenset((*masking.exclude_tools, *policy.protected_tools))
        self.estimator = estimator
        self._features: _Features | None = None
        self._cursor = 0  # outputs before this one were walked into masked chunks
        self._masked: list[ToolOutput] = []
        self._freed = 0
        self._tokens: dict[tuple[str, int], int] = {}
        self._placeholders: dict[tuple[str, int], Placeholder] = {}

    def due(self, scan: MaskScan, tokens_of: Callable[[ToolOutput], int]) -> list[ToolOutput]:
        """Outputs masked from this call on: whole chunks of at least `clear_at_least`."""
        if self._features is not scan.features or self._cursor > scan.outputs:
            self._features, self._cursor, self._masked, self._freed = scan.features, 0, [], 0
            self._tokens, self._placeholders = {}, {}  # a rewritten context: start small
        outputs = scan.output_list()
        cutoff = self._cutoff(scan, outputs)
        new: list[ToolOutput] = []
        pending: list[ToolOutput] = []
        pending_tokens = 0
        position = self._cursor
        while position < len(outputs) and outputs[position].index < cutoff:
            output = outputs[position]
            position += 1
            if output.maskable and output.tool not in self.excluded:
                tokens = self._count(output, tokens_of)
                if tokens >= self.masking.min_output_tokens:
                    pending.append(output)
                    pending_tokens += tokens
            if not pending:
                self._cursor = position
            elif pending_tokens >= self.masking.clear_at_least:
                new.extend(pending)
                pending, pending_tokens, self._cursor = [], 0, position
        self._masked.extend(new)
        return new

    def _cutoff(self, scan: MaskScan, outputs: Sequence[ToolOutput]) -> int:
        """The first index that is not due: the start of the recent turns, or of the newest
        `keep_tool_outputs` outputs, whichever comes first."""
        users = self.keep_turns
        if users == 0:
            by_turns = scan.count
        else:
            by_turns = scan.features.users[scan.users - users] if scan.users >= users else 0
        keep = self.masking.keep_tool_outputs
        if keep == 0:
            return by_turns
        by_outputs = outputs[len(outputs) - keep].index if len(outputs) >= keep else 0
        return min(by_turns, by_outputs)

    def _count(self, output: ToolOutput, tokens_of: Callable[[ToolOutput], int]) -> int:
        key = (output.call_id, output.chars)
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self._tokens[key] = tokens_of(output)
        return tokens

    def settle(
        self,
        new: Sequence[ToolOutput],
        items: Sequence[Mapping[str, Any]],
        seqs: Mapping[str, int],
        session_id: str,
    ) -> MaskReport:
        """Make the placeholders of the outputs `due` just masked (`seqs`: where the
        originals are stored, by call id); the report of the call's masking."""
        new_freed = 0
        for output in new:
            key = (output.call_id, output.chars)
            placeholder = self._placeholders.get(key)
            if placeholder is None:
                placeholder = self._placeholders[key] = self._placeholder(
                    output, items[output.index], seqs.get(output.call_id), session_id
                )
            new_freed += placeholder.freed
        self._freed += new_freed
        return MaskReport(
            outputs=len(self._masked),
            tokens_freed=self._freed,
            new_seqs=tuple(seqs.get(output.call_id) for output in new),
            new_tools=tuple(output.tool for output in new),
            new_tokens_freed=new_freed,
        )

    def view(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """`items` with every masked output replaced by its placeholder (a new list)."""
        sent: list[dict[str, Any]] = list(items)  # type: ignore[arg-type]  # plain dicts
        for output in self._masked:
            sent[output.index] = self._placeholders[(output.call_id, output.chars)].item
        return sent

    def _placeholder(
        self, output: ToolOutput, item: Mapping[str, Any], seq: int | None, session_id: str
    ) -> Placeholder:
        original = self._count(output, lambda _: self.estimator.count_item(item))
        preview = self.masking.preview_chars(output.tool)
        text = placeholder_text(output, original, seq, session_id, text_of(item), preview)
        field_name = "content" if role_of(item) == "tool" else "output"
        masked = {key: value for key, value in item.items() if key != field_name}
        masked[field_name] = text
        return Placeholder(masked, original, self.estimator.count_item(masked))


def placeholder_text(
    output: ToolOutput,
    tokens: int,
    seq: int | None,
    session_id: str,
    original: str,
    preview_chars: int,
) -> str:
    """Plain text (never markup): the tool, the size, where the original is, how to read it.

    The command it names is shell-quoted (`shlex.quote`: a session id holding `$(...)`,
    backticks or `$VAR` pasted into a shell stays one word) after `--` (an id that starts
    with `-` is not an option), on a line of its own (no
    quoting of ours around it to break), and prints the whole stored row; the database is
    the user's to add (a placeholder cannot know it, and a URL may hold a password)."""
    tool = json.dumps(output.tool if output.tool is not None else "(unknown tool)")
    session = json.dumps(session_id)
    if seq is None:
        where = f"Not stored yet; it answers call_id {json.dumps(output.call_id)}."
    else:
        where = (
            f"Stored unchanged as seq {seq} of session {session}: SessionStore.history("
            f"{session}) returns it, and this shell command prints it whole (add the --url "
            f"or --config the session's store was opened with before the --):\n"
            f"{read_back_command(session_id, seq)}"
        )
    text = (
        f"[tool output masked by sessionstore] The output of tool {tool} "
        f"({tokens:,} tokens) is not repeated here to save context. {where}"
    )
    if preview_chars and original:
        cut = len(original) > preview_chars
        text += f"\nIts first {min(preview_chars, len(original)):,} characters:\n"
        text += original[:preview_chars] + ("\n[...]" if cut else "")
    return text


def read_back_command(session_id: str, seq: int) -> str:
    """The shell command that prints stored row `seq` whole (redacted, as JSON)."""
    return cli_command("sessions show", session_id, options=f"--history --seq {seq}..{seq} --json")


def output_seqs(rows: Sequence[StoredRow], call_ids: Collection[str]) -> dict[str, int]:
    """Call id -> seq of the visible stored outputs answering `call_ids` (what a
    placeholder names: where its original is)."""
    seqs: dict[str, int] = {}
    for row in visible_rows(rows):
        call_id = None if row.item is None else answered_call(row.item)
        if call_id is not None and call_id in call_ids:
            seqs[call_id] = row.seq
    return seqs


class RowMasking:
    """Masking for loops that load the stored context before each call (the chat adapter, a
    turn boundary's check): the rows' tokens and seqs are known, so nothing is counted or
    looked up. A session's context that grew since the last call is scanned for what is
    new; any other is scanned anew (the chunks come out the same either way)."""

    def __init__(
        self, masking: MaskingPolicy, policy: CompactionPolicy, estimator: TokenEstimator
    ) -> None:
        self.masking, self.policy, self.estimator = masking, policy, estimator
        self._last: dict[str, tuple[list[dict[str, Any]], MaskScan, Masker]] = {}

    def view(self, session_id: str, rows: Sequence[StoredRow]) -> MaskView:
        """The masked view of a session's context rows (`SessionStore.context_rows`)."""
        stored = [row for row in visible_rows(rows) if row.item is not None]
        items = [row.item for row in stored if row.item is not None]
        last = self._last.get(session_id)
        if last is not None and items[: len(last[0])] == last[0]:
            scan, masker = last[1].extend(items[len(last[0]) :]), last[2]
        else:
            scan = MaskScan().extend(items)
            masker = Masker(self.masking, self.policy, self.estimator)
        self._last[session_id] = (items, scan, masker)
        new = masker.due(scan, lambda output: stored[output.index].tokens)
        seqs = {output.call_id: stored[output.index].seq for output in new}
        report = masker.settle(new, items, seqs, session_id)
        return MaskView(masker.view(items), report)
