"""Pre-flight compaction before every model call of an Agents SDK run.

`RunConfig(call_model_input_filter=input_filter(manager))` runs before every model
call, tool loops included. The SDK does not write the filter's output back to the
session, so the compaction is persisted by the manager itself; the filter then hands
the model the stored (compacted) context plus whatever the SDK has not stored yet,
cleaned of orphan tool calls/outputs.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from agents import Agent, FunctionTool, TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

from ...compaction import MaskReport, normalize
from ._binding import call_binding
from ._masked_input import masked_input
from ._observer import watch_runs
from ._tracking import RunTracking, current_run

if TYPE_CHECKING:
    from ...compaction import CompactionManager


def tool_schemas(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The JSON the model receives for the agent's tools (what their tokens cost)."""
    schemas: list[dict[str, Any]] = []
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            schemas.append(
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.params_json_schema,
                }
            )
        else:
            schemas.append({"type": type(tool).__name__, "name": getattr(tool, "name", "")})
    return schemas


def input_filter(
    manager: CompactionManager,
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """The `call_model_input_filter` for runs whose sessions this manager compacts."""
    watch_runs(manager)

    async def model_input_filter(data: CallModelData[Any]) -> ModelInputData:
        return await filter_model_input(manager, data)

    return model_input_filter


async def filter_model_input(
    manager: CompactionManager, data: CallModelData[Any]
) -> ModelInputData:
    """The pre-flight step before a model call: estimate, maybe compact, rebuild, clean.

    Its cost grows with the items not seen before, not with the context: the stored total
    is read (and the decision taken) in the transaction that records the call, and the
    input's digest and hygiene come from the session's memo of earlier inputs."""
    items: list[Any] = list(data.model_data.input)
    instructions = data.model_data.instructions
    run = current_run(store_id=id(manager.store))
    if run is None:
        # Not a SQLSession run of this manager's store: nothing to persist, only hygiene.
        return _model_input(items, instructions)
    unsaved = items[min(run.stored_prefix, len(items)) :]
    unsaved_tokens = sum(manager.estimator.count_item(item) for item in unsaved)
    tools = tool_schemas(data.agent)
    model = model_name(data.agent)
    record = partial(
        manager.store.record_model_call,
        run.session_id,
        model=model,
        unsaved_items=len(unsaved),
        unsaved_tokens=unsaved_tokens,
    )
    sent, digest, masked, opaque = await _prepared(manager, run, items, unsaved, instructions)
    if opaque and await _rebuilt(manager, run.session_id, data.agent):
        sent, digest, masked, _ = await _prepared(manager, run, items, unsaved, instructions)
    decide = manager.preflight_decision(
        run.session_id, unsaved_tokens=unsaved_tokens, instructions=instructions, tools=tools
    )
    if masked.outputs:  # the cascade: summarize only if the masked input is over the trigger
        decide = replace(decide, masked=masked)
        manager.masked_tokens[run.session_id] = masked.tokens_freed
    freed = masked.tokens_freed
    known = manager.store.known_context_tokens(run.session_id)
    if known is not None and not decide.decision(known).triggered:
        # Idle on the total this store last saw: the call need not wait for its record (a
        # round trip to the server); it is written meanwhile, from the stored total, and
        # awaited before the run stores its next items.
        recorded = asyncio.ensure_future(
            record(sent.input, decide=decide.recorded, digest=digest, masked_tokens=freed)
        )
        recorded.add_done_callback(_log_failed_record)
        run.pending_calls.append((cast("asyncio.Future[int]", recorded), model))
        manager.prepare_if_due(decide)
        return sent
    row_id = await record(sent.input, decide=decide, digest=digest, masked_tokens=freed)
    if row_id is None:  # a trigger fired: compact first (that records the decision)
        await manager.before_model_call(
            run.session_id,
            unsaved_tokens=unsaved_tokens,
            instructions=instructions,
            tools=tools,
            masked=masked,
        )
        await _rebuilt(manager, run.session_id, data.agent)  # a new marker may be bound
        sent, digest, masked, _ = await _prepared(manager, run, items, unsaved, instructions)
        row_id = await record(sent.input, digest=digest, masked_tokens=masked.tokens_freed)
    else:  # idle: past `prepare_at`, a summary is prepared off the request path
        manager.prepare_if_due(decide)
    written: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    written.set_result(row_id)
    run.pending_calls.append((written, model))
    return sent


def _log_failed_record(recorded: asyncio.Future[Any]) -> None:
    """A record written while its call went out failed: say so even if the run ends before
    storing its next items (where the error is raised)."""
    if not recorded.cancelled() and (error := recorded.exception()) is not None:
        print(f"[sessionstore] recording a model call failed: {error}", file=sys.stderr)


async def _rebuilt(manager: CompactionManager, session_id: str, agent: Agent[Any]) -> bool:
    """Whether a provider marker this agent's model cannot read was replaced by a readable
    summary (the run is then marked to rebuild its input from the store)."""
    binding = call_binding(agent)
    if binding is None:
        return False
    return await manager.ensure_readable(session_id, provider=binding[0], model=binding[1])


async def _prepared(
    manager: CompactionManager,
    run: RunTracking,
    items: list[Any],
    unsaved: list[Any],
    instructions: str | None,
) -> tuple[ModelInputData, str | None, MaskReport, bool]:
    """The input to send (old tool outputs masked), its digest (None: the store computes
    it), what masking took out and whether it holds a provider's compaction item; cleaned
    with the memo's hygiene scan, rebuilt from the store once the stored context was
    rewritten."""
    if run.compacted:  # marked by the run observer when the stored context was rewritten
        items = [*await manager.store.load_context(run.session_id), *unsaved]
    memo = run.memo.advance(items)
    masked = await masked_input(manager, run.session_id, run.memo, items, memo)
    # Masking keeps every item's type and call id: the plain input's hygiene scan holds.
    cleaned = cast("list[TResponseInputItem]", normalize(masked.items, memo.scan).items)
    digest = masked.digest.hexdigest() if memo.scan.clean else None  # sent as it came
    sent = ModelInputData(input=cleaned, instructions=instructions)
    return sent, digest, masked.report, memo.opaque


def model_name(agent: Agent[Any]) -> str | None:
    """The model an agent calls, when it names one (a string, or a Model with `.model`)."""
    model = agent.model
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None


def _model_input(items: list[Any], instructions: str | None) -> ModelInputData:
    """What the model gets: the items cleaned of orphan calls/outputs and private `meta`."""
    cleaned = cast("list[TResponseInputItem]", normalize(items).items)
    return ModelInputData(input=cleaned, instructions=instructions)
