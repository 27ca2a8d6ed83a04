"""What a model call cost: prices per million tokens, by model name, overridable.

The defaults are OpenAI's published list prices (USD per 1M tokens) for common models when
this table was written; prices change, so set your own (`SessionStore(prices=...)`, or
`store.prices` in the config file). A model is priced by the longest name in the table that
its own name starts with ("gpt-4o-2024-08-06" uses "gpt-4o"); an unknown model costs None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M tokens: fresh input, cached input, output (reasoning tokens included)."""

    input: float
    cached_input: float
    output: float


DEFAULT_PRICES: Final[Mapping[str, Price]] = {
    "gpt-4o": Price(2.50, 1.25, 10.00),
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4.1": Price(2.00, 0.50, 8.00),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40),
    "o3": Price(2.00, 0.50, 8.00),
    "o4-mini": Price(1.10, 0.275, 4.40),
}


def price_of(prices: Mapping[str, Price], model: str | None) -> Price | None:
    """The price of `model`: its own entry, or that of the longest name it starts with."""
    if model is None:
        return None
    names = [name for name in prices if model == name or model.startswith(name + "-")]
    return prices[max(names, key=len)] if names else None


def cost_usd(
    price: Price | None, input_tokens: int, cached_tokens: int, output_tokens: int
) -> float | None:
    """What a call cost, or None when its model has no price."""
    if price is None:
        return None
    fresh = max(input_tokens - cached_tokens, 0)
    total = fresh * price.input + cached_tokens * price.cached_input + output_tokens * price.output
    return total / 1_000_000
