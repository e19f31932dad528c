"""What the judge's calls cost, in US dollars, from the token usage the API reports.

Prices change; the table below says when it was checked. Settings can override or add models
(`judge.prices: {MODEL: {input_per_million: 0.15, output_per_million: 0.6}}`). A model with no
known price costs None, never a guess: the run summary names it so the user can add a price.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

PRICES_CHECKED = "2026-11-28"
# Source: OpenAI's published API prices, standard tier (no Batch API, flex or cached-input
# discounts), as copied by several price lists dated 2026.


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """US dollars per million tokens."""

    input_per_million: float
    output_per_million: float = 0.0

    def cost(self, input_tokens: int, output_tokens: int = 0) -> float:
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1e6


DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gpt-5.5": ModelPrice(5.00, 30.00),
        "gpt-5.4": ModelPrice(2.50, 15.00),
        "gpt-5.4-mini": ModelPrice(0.75, 4.50),
        "gpt-5.4-nano": ModelPrice(0.20, 1.25),
        "gpt-4o-mini": ModelPrice(0.15, 0.60),
        "gpt-4o": ModelPrice(2.50, 10.00),
        "gpt-4.1": ModelPrice(2.00, 8.00),
        "gpt-4.1-mini": ModelPrice(0.40, 1.60),
        "gpt-4.1-nano": ModelPrice(0.10, 0.40),
        "gpt-5": ModelPrice(1.25, 10.00),
        "gpt-5-mini": ModelPrice(0.25, 2.00),
        "gpt-5-nano": ModelPrice(0.05, 0.40),
        "gpt-3.5-turbo": ModelPrice(0.50, 1.50),
        "text-embedding-3-small": ModelPrice(0.02),
        "text-embedding-3-large": ModelPrice(0.13),
        "text-embedding-ada-002": ModelPrice(0.10),
    }
)

BATCH_PRICES_CHECKED = "2026-11-25"
BATCH_SHARE = 0.5
"""A Batch API request costs this share of the standard price (OpenAI's Batch API and Azure OpenAI's
global batch: 50 % off, for chat and embeddings alike)."""
BATCH_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        # Source: OpenAI's published Batch API prices (half of the standard tier above), checked
        # on BATCH_PRICES_CHECKED; a model missing here costs BATCH_SHARE of its standard price.
        "gpt-4o-mini": ModelPrice(0.075, 0.30),
        "gpt-4o": ModelPrice(1.25, 5.00),
        "gpt-4.1": ModelPrice(1.00, 4.00),
        "gpt-4.1-mini": ModelPrice(0.20, 0.80),
        "gpt-4.1-nano": ModelPrice(0.05, 0.20),
        "gpt-5": ModelPrice(0.625, 5.00),
        "gpt-5-mini": ModelPrice(0.125, 1.00),
        "gpt-5-nano": ModelPrice(0.025, 0.20),
        "gpt-3.5-turbo": ModelPrice(0.25, 0.75),
        "text-embedding-3-small": ModelPrice(0.01),
        "text-embedding-3-large": ModelPrice(0.065),
        "text-embedding-ada-002": ModelPrice(0.05),
    }
)

_DATED_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def parse_prices(value: Any, *, where: str = "judge.prices") -> dict[str, ModelPrice]:
    """`{model: {input_per_million, output_per_million}}` from a configuration mapping.

    Raises ValueError naming the bad entry.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"'{where}' must be a mapping of model to prices (got {type(value).__name__})")
    prices: dict[str, ModelPrice] = {}
    for model, entry in value.items():
        if isinstance(entry, ModelPrice):
            prices[str(model)] = entry
            continue
        if not isinstance(entry, Mapping):
            raise ValueError(
                f"'{where}.{model}' must be {{input_per_million, output_per_million}} "
                f"(got {type(entry).__name__})"
            )
        unknown = set(entry) - {"input_per_million", "output_per_million"}
        if unknown:
            raise ValueError(
                f"'{where}.{model}' has unknown keys {sorted(unknown)}; "
                "use input_per_million and output_per_million"
            )
        numbers = {}
        for key in ("input_per_million", "output_per_million"):
            number = entry.get(key, 0.0)
            if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
                raise ValueError(f"'{where}.{model}.{key}' must be a number >= 0 (got {number!r})")
            numbers[key] = float(number)
        if "input_per_million" not in entry:
            raise ValueError(f"'{where}.{model}' must give input_per_million")
        prices[str(model)] = ModelPrice(**numbers)
    return prices


class PriceTable:
    """Default prices with overrides on top; looks a model up by name, also without a date suffix
    (`gpt-4o-mini-2024-07-18` costs what `gpt-4o-mini` costs)."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None):
        self._prices = {**DEFAULT_PRICES, **(overrides or {})}
        self._overrides = dict(overrides or {})

    def price(self, *models: str | None) -> ModelPrice | None:
        for model in models:
            if not model:
                continue
            for name in (model, _DATED_SUFFIX.sub("", model)):
                if name in self._prices:
                    return self._prices[name]
        return None

    def batch_price(self, *models: str | None) -> ModelPrice | None:
        """The Batch API's price: BATCH_PRICES for a listed model, else BATCH_SHARE of its standard
        price (an override in the settings is a standard price, so it is halved too)."""
        for model in models:
            if not model:
                continue
            for name in (model, _DATED_SUFFIX.sub("", model)):
                if name in self._overrides:
                    standard = self._overrides[name]
                    return ModelPrice(standard.input_per_million * BATCH_SHARE,
                                      standard.output_per_million * BATCH_SHARE)
                if name in BATCH_PRICES:
                    return BATCH_PRICES[name]
                if name in self._prices:
                    standard = self._prices[name]
                    return ModelPrice(standard.input_per_million * BATCH_SHARE,
                                      standard.output_per_million * BATCH_SHARE)
        return None

    def cost(
        self, models: tuple[str | None, ...], input_tokens: int, output_tokens: int = 0, *, batch: bool = False
    ) -> float | None:
        """US dollars for these tokens at the first known model's price (`batch`: the Batch API's)."""
        price = self.batch_price(*models) if batch else self.price(*models)
        return None if price is None else price.cost(input_tokens, output_tokens)
