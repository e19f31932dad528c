"""Set overlap metrics. Every `*_score` and ratio here lies in [0, 1]; higher is better.

Counts come first (the sufficient statistics), ratios are derived from them in one helper, so
micro averages can sum counts and macro averages can average ratios.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from statistics import fmean
from typing import Any, TypeVar

Item = TypeVar("Item", bound=Hashable)


@dataclass(frozen=True, slots=True)
class SetScore:
    """Overlap of expected and predicted items (order of first appearance kept)."""

    true_positives: tuple[Any, ...]
    false_positives: tuple[Any, ...]
    false_negatives: tuple[Any, ...]

    @property
    def precision(self) -> float:
        """|TP| / (|TP| + |FP|); 0.0 when nothing was predicted."""
        return ratio(len(self.true_positives), len(self.true_positives) + len(self.false_positives),
                     zero_division=0.0)

    @property
    def recall(self) -> float:
        """|TP| / (|TP| + |FN|); 0.0 when nothing was expected."""
        return ratio(len(self.true_positives), len(self.true_positives) + len(self.false_negatives),
                     zero_division=0.0)


def ratio(numerator: int, denominator: int, *, zero_division: float) -> float:
    """numerator / denominator, or `zero_division` when the ratio is undefined (denominator 0)."""
    return numerator / denominator if denominator else zero_division


def score_sets(expected: Iterable[Item], predicted: Iterable[Item]) -> SetScore:
    """TP = predicted ∩ expected, FP = predicted − expected, FN = expected − predicted.

    Duplicates count once; each part keeps the order in which its items first appear.
    """
    expected_items = dict.fromkeys(expected)
    predicted_items = dict.fromkeys(predicted)
    return SetScore(
        true_positives=tuple(item for item in predicted_items if item in expected_items),
        false_positives=tuple(item for item in predicted_items if item not in expected_items),
        false_negatives=tuple(item for item in expected_items if item not in predicted_items),
    )


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """The mean of the values that exist; None when there are none (not 0: nothing was measured)."""
    present = [value for value in values if value is not None]
    return fmean(present) if present else None
