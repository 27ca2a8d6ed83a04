"""Agents SDK wiring: pre-flight compaction before every model call, overflow recovery.

`RunConfig(call_model_input_filter=manager.model_input_filter)` runs before every
model call, tool loops included. The SDK does not write the filter's output back
to the session, so the compaction is persisted by the manager itself; the
filter then hands the model the stored (compacted) context plus whatever the
SDK has not stored yet, cleaned of orphan tool calls/outputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agents import Agent, FunctionTool, RunConfig, Runner, TResponseInputItem
from agents.result import RunResult
from agents.run_config import CallModelData, ModelInputData

from ..tokens import count_tools
from .normalize import normalize
from .provider_errors import is_context_length_error
from .tracking import current_run, mark_compacted

if TYPE_CHECKING:
    from ..session import SQLSession
    from .service import CompactManager

MAX_OVERFLOW_RETRIES = 3


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


class FixedCostCache:
    """Token cost of instructions and tool schemas, counted once per distinct value."""

    def __init__(self) -> None:
        self._costs: dict[str, int] = {}

    def cost(
        self, manager: CompactManager, instructions: str | None, tools: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int]:
        """(system tokens, tools_schema tokens)."""
        key_tools = json.dumps(tools, sort_keys=True, default=str)
        system = self._lookup(
            "i:" + (instructions or ""), lambda: _instruction_tokens(manager, instructions)
        )
        schema = self._lookup("t:" + key_tools, lambda: count_tools(manager.estimator, tools))
        return system, schema

    def _lookup(self, key: str, compute: Any) -> int:
        if key not in self._costs:
            if len(self._costs) > 256:
                self._costs.clear()
            self._costs[key] = int(compute())
        return self._costs[key]


def _instruction_tokens(manager: CompactManager, instructions: str | None) -> int:
    if not instructions:
        return 0
    return manager.estimator.count_item({"role": "system", "content": instructions})


async def filter_model_input(manager: CompactManager, data: CallModelData[Any]) -> ModelInputData:
    """The pre-flight step before a model call: estimate, maybe compact, rebuild, clean."""
    items: list[Any] = list(data.model_data.input)
    instructions = data.model_data.instructions
    run = current_run(store_id=id(manager.store))
    if run is None:
        # Not a SQLSession run of this manager's store: nothing to persist, only hygiene.
        return _model_input(items, instructions)
    unsaved = items[min(run.stored_prefix, len(items)) :]
    compacted = await manager.before_model_call(
        run.session_id,
        unsaved_tokens=sum(manager.estimator.count_item(item) for item in unsaved),
        instructions=instructions,
        tools=tool_schemas(data.agent),
    )
    if compacted:
        mark_compacted(run.session_id, id(manager.store))
    if run.compacted:
        items = [*await manager.store.load_context(run.session_id), *unsaved]
    return _model_input(items, instructions)


def _model_input(items: list[Any], instructions: str | None) -> ModelInputData:
    """What the model gets: the items cleaned of orphan calls/outputs and private `meta`."""
    cleaned = cast("list[TResponseInputItem]", normalize(items).items)
    return ModelInputData(input=cleaned, instructions=instructions)


async def run_with_overflow_recovery(
    agent: Agent[Any],
    input: str | list[Any],
    *,
    session: SQLSession,
    manager: CompactManager,
    run_config: RunConfig | None = None,
    max_retries: int = MAX_OVERFLOW_RETRIES,
    **run_kwargs: Any,
) -> RunResult:
    """`Runner.run`, but a provider's context-length error compacts the session and retries.

    The failed attempt already stored the new input, so retries send no new input:
    the model sees it in the (now compacted) session history.
    """
    attempt_input: str | list[Any] = input
    for attempt in range(max_retries + 1):
        try:
            return await Runner.run(
                agent, attempt_input, session=session, run_config=run_config, **run_kwargs
            )
        except Exception as exc:
            if attempt == max_retries or not is_context_length_error(exc):
                raise
            await manager.compact(
                session.session_id,
                trigger="overflow",
                note=f"provider context-length error, retry {attempt + 1} of {max_retries}",
            )
            attempt_input = []
    raise AssertionError("unreachable: the loop returns or raises")
