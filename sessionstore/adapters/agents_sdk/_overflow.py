"""Recovery from a provider's context-length error: compact the session, run again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agents import Agent, RunConfig, Runner
from agents.result import RunResult

from ...compaction import is_context_length_error

if TYPE_CHECKING:
    from ...compaction import CompactionManager
    from ._session import SQLSession

MAX_OVERFLOW_RETRIES: Final = 3


async def run_with_overflow_recovery(
    agent: Agent[Any],
    input: str | list[Any],
    *,
    session: SQLSession,
    manager: CompactionManager,
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
