"""retrieve_time_series (graphrag-eval 6.x): a time-series lookup asked for the same series.

Applies under 6.x when both steps are named `retrieve_time_series`; under 5.x never (5.x compares
such steps' outputs as exact strings). Compares the steps' `args`, not their outputs, as 6.6 does:

* with an `mrid` in the reference, the actual `mrid` must be the same, a single id and a
  one-element list being the same and lists compared in any order; and, when the reference gives a
  `limit`, the same `limit`;
* without one, the actual step must have no `mrid` and the same `limit`.

As in 6.6, the actual step still needs an output and both steps need `args` (steps errors otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.step_kind import (
    MATCH,
    NO_MATCH,
    Comparison,
    ReferenceStepsError,
    Step,
    StepPair,
    StepsError,
    actual_output,
    short,
)

RETRIEVE_TIME_SERIES = "retrieve_time_series"


class RetrieveTimeSeries:
    name = RETRIEVE_TIME_SERIES

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        return semantics == 6 and reference["name"] == actual["name"] == RETRIEVE_TIME_SERIES

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        actual_output(pair)
        expected, got = step_args(pair)
        expected_mrid, got_mrid = expected.get("mrid"), got.get("mrid")
        expected_limit, got_limit = expected.get("limit"), got.get("limit")
        if expected_mrid:
            same_ids = normalized_ids(expected_mrid, pair, "mrid") == normalized_ids(got_mrid, pair, "mrid")
            same_limit = not expected_limit or expected_limit == got_limit
            matched = same_ids and same_limit
        else:
            same_ids = got_mrid is None
            same_limit = expected_limit == got_limit
            matched = same_ids and same_limit
        if matched:
            return MATCH
        if not explain:
            return NO_MATCH
        if not same_ids:
            return Comparison(0.0, f"mrid {shown(got_mrid)}, expected {shown(expected_mrid)}")
        return Comparison(0.0, f"limit {shown(got_limit)}, expected {shown(expected_limit)}")


def step_args(pair: StepPair) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """Both steps' `args`; StepsError when either has none (6.6 raises there)."""
    found = []
    for step, label in ((pair.reference, pair.reference_label), (pair.actual, pair.actual_label)):
        args = step.get("args")
        if not isinstance(args, Mapping):
            error = ReferenceStepsError if step is pair.reference else StepsError
            raise error(f"{label} has no 'args' mapping; a {pair.reference['name']} step is compared "
                             "by its arguments.")
        found.append(args)
    return found[0], found[1]


def normalized_ids(values: Any, pair: StepPair, key: str) -> Any:
    """6.6's reading of an id argument: empty stays as it is, a string is a one-element list, a list
    is sorted (so order does not matter)."""
    if not values:
        return values
    if isinstance(values, str):
        return [values]
    try:
        return sorted(values)
    except TypeError:
        raise StepsError(
            f"'{key}' of {pair.reference_label} or {pair.actual_label} must be a string or a list of "
            f"strings (got {short(repr(values), 40)})."
        ) from None


def shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return short(", ".join(str(item) for item in value), 50)
    return short(str(value), 50)


RETRIEVE_TIME_SERIES_KIND = RetrieveTimeSeries()
