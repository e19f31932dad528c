"""The mean over evaluated cases: one definition for the Summary's headline, the gates, the
comparison with a baseline and the trend.

A case counts for a metric when it was evaluated (status `success`) and its value is a score: a
finite number, not a boolean. Error, missing and invalid cases never count (they are reported beside
the mean, so that a run that fails more never looks better); `tag` keeps only the cases in that group.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from qareport.case_record import CaseRow


def score(value: Any) -> float | None:
    """A value that can be averaged and binned: a finite number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def mean(values: Sequence[float]) -> float | None:
    """The plain mean of scores (None for none), summed in order: the figure every output shows."""
    return sum(values) / len(values) if values else None


def evaluated(rows: Iterable[CaseRow], metric: str, *, tag: str | None = None) -> list[tuple[float, CaseRow]]:
    """Each evaluated case's score for `metric` with its row, in the rows' order."""
    found = []
    for row in rows:
        if row.status != "success" or (tag is not None and tag not in row.groups):
            continue
        value = score(row.metric(metric))
        if value is not None:
            found.append((value, row))
    return found


def mean_over_evaluated(rows: Iterable[CaseRow], metric: str, *,
                        tag: str | None = None) -> tuple[float | None, int]:
    """The mean of `metric` over the evaluated cases (with `tag`, those in that group), and how many
    cases it is over."""
    values = [value for value, _ in evaluated(rows, metric, tag=tag)]
    return mean(values), len(values)
