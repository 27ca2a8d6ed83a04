"""The OpenAI Agents SDK adapter (`pip install 'sessionstore[agents]'`).

- `SQLSession`: the SDK's `Session` protocol over a `SessionStore` (a drop-in for
  `SQLiteSession` / `SQLAlchemySession`), compacting through a `CompactionManager`.
- `input_filter(manager)`: `RunConfig(call_model_input_filter=...)`, the pre-flight
  before every model call.
- `run_with_overflow_recovery(...)`: `Runner.run` that compacts and retries after a
  provider's context-length error.
- `watch_runs(manager)`: run tracking and SDK tracing of compactions (the two above
  subscribe it for you).
"""

from ._input_filter import input_filter, tool_schemas
from ._observer import watch_runs
from ._overflow import MAX_OVERFLOW_RETRIES, run_with_overflow_recovery
from ._session import SQLSession

__all__ = [
    "MAX_OVERFLOW_RETRIES",
    "SQLSession",
    "input_filter",
    "run_with_overflow_recovery",
    "tool_schemas",
    "watch_runs",
]
