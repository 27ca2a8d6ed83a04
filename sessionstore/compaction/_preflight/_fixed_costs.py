"""Token cost of what every model call carries besides the history: instructions, tools.

Counted once per distinct value: the same instructions and tool schemas come back on
every call of a run, and re-tokenizing them would dominate a pre-flight.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ..._tokens import TokenEstimator, count_tools

_MAX_ENTRIES: Final = 256


class FixedCostCache:
    """(system tokens, tools_schema tokens) of a call, memoized by value."""

    def __init__(self) -> None:
        self._costs: dict[str, int] = {}

    def cost(
        self,
        estimator: TokenEstimator,
        instructions: str | None,
        tools: Sequence[Mapping[str, Any]],
    ) -> tuple[int, int]:
        """(system tokens, tools_schema tokens)."""
        key_tools = json.dumps(tools, sort_keys=True, default=str)
        system = self._lookup(
            "i:" + (instructions or ""), lambda: _instruction_tokens(estimator, instructions)
        )
        schema = self._lookup("t:" + key_tools, lambda: count_tools(estimator, tools))
        return system, schema

    def _lookup(self, key: str, compute: Callable[[], int]) -> int:
        if key not in self._costs:
            if len(self._costs) > _MAX_ENTRIES:
                self._costs.clear()
            self._costs[key] = int(compute())
        return self._costs[key]


def _instruction_tokens(estimator: TokenEstimator, instructions: str | None) -> int:
    if not instructions:
        return 0
    return estimator.count_item({"role": "system", "content": instructions})
