"""The masked view of an Agents SDK model input (docs/COMPACTION.md, "Masking").

The pre-flight's memo already scanned the input's user messages and tool outputs as it
grew (`InputMemo.masks`); the session's `Masker` turns that into the chunks masked so far.
Only when a chunk is new does this read anything: the stored seqs its placeholders name.
The masked input's digest is kept like the plain one's (a memo of its own), so a call whose
masked prefix did not change hashes only its new items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._items import InputDigest
from ...compaction import Masker, MaskReport, ToolOutput, output_seqs
from ._input_memo import InputMemo, MemoSlot

if TYPE_CHECKING:
    from ...compaction import CompactionManager


@dataclass(frozen=True, slots=True)
class MaskedInput:
    """What to send, what masking did, and the digest of what is sent."""

    items: list[Any]
    report: MaskReport
    digest: InputDigest


async def masked_input(
    manager: CompactionManager,
    session_id: str,
    slot: MemoSlot,
    items: list[Any],
    memo: InputMemo,
) -> MaskedInput:
    """`items` (whose memo is `memo`) as the model is sent them under the policy's masking."""
    masking = manager.policy.masking
    if not masking.enabled:
        return MaskedInput(items, MaskReport(), memo.digest)
    masker = slot.masker
    if masker is None or masker.masking is not masking:
        masker = slot.masker = Masker(masking, manager.policy, manager.estimator)
    count = manager.estimator.count_item
    new = masker.due(memo.masks, lambda output: count(items[output.index]))
    seqs = await _stored_seqs(manager, session_id, new) if new else {}
    report = masker.settle(new, items, seqs, session_id)
    if not report.outputs:
        return MaskedInput(items, report, memo.digest)
    sent = masker.view(items)
    if not new and slot.view_of is memo.masks.features and len(slot.view.seen) <= len(sent):
        # The plain input grew and no chunk crossed: the masked one grew the same way.
        slot.view = slot.view.grown(sent)
    else:
        slot.view = slot.view.advance(sent)
    slot.view_of = memo.masks.features
    return MaskedInput(sent, report, slot.view.digest)


async def _stored_seqs(
    manager: CompactionManager, session_id: str, outputs: Sequence[ToolOutput]
) -> dict[str, int]:
    """Call id -> seq of the stored outputs among those just masked (one read per chunk)."""
    rows = await manager.store.context_rows(session_id)
    return output_seqs(rows, {output.call_id for output in outputs})
