"""retrieve_data_points (graphrag-eval 6.x): data points asked for the same series, granularity,
aggregates, time range and limit.

Applies under 6.x when both steps are named `retrieve_data_points`; under 5.x never. Compares the
steps' `args` by 6.6's rules:

* `external_id` and `aggregates`: a single value and a one-element list are the same; lists in any
  order; an empty value only equals itself.
* `granularity`: `<number><unit>` with the unit spelled out and made plural, so `1h`, `1hour` and
  `1hours` are the same (`s`, `m`, `h`, `d`, `w`, `mo`, `q`, `y` and their names); `60m` is not `1h`,
  nor `01h` `1h`.
* `start` and `end`: absent on both sides, or equal. A relative time (`now`, `<n>s-ago`, `<n>m-ago`,
  `<n>h-ahead`, `<n>d-ago`, `<n>w-ahead`) is resolved against the actual step's
  `execution_timestamp` (ISO 8601; never the wall clock, so a report is reproducible). A relative
  reference time accepts an absolute actual time within ±60 s of it; an absolute reference time
  needs an absolute actual time, the same instant (times without a zone are UTC); two relative
  times must resolve to the same instant (`1d-ago` is `24h-ago`). Text that is no time compares
  as text.
* `limit`: equal.

The actual step needs an output and an `execution_timestamp`, and both steps need `args` with an
`external_id` (steps errors otherwise, where 6.6 raises).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dateutil import parser as date_parser

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
from qareport.kinds.steps.time_series import normalized_ids, shown, step_args

RETRIEVE_DATA_POINTS = "retrieve_data_points"
TOLERANCE_SECONDS = 60
"""How far an absolute actual time may be from a relative reference time, as 6.6 allows."""

GRANULARITY = re.compile(r"(\d+)([a-zA-Z]+)")
RELATIVE_TIME = re.compile(r"((\d+)([smhdw])-(ago|ahead))|now")
UNIT_NAMES = {
    "s": "seconds", "second": "seconds",
    "m": "minutes", "minute": "minutes",
    "h": "hours", "hour": "hours",
    "d": "days", "day": "days",
    "w": "weeks", "week": "weeks",
    "mo": "months", "month": "months",
    "q": "quarters", "quarter": "quarters",
    "y": "years", "year": "years",
}
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class RetrieveDataPoints:
    name = RETRIEVE_DATA_POINTS

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        return semantics == 6 and reference["name"] == actual["name"] == RETRIEVE_DATA_POINTS

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        actual_output(pair)
        expected, got = step_args(pair)
        anchor = execution_time(pair)
        for args, label, error in ((expected, pair.reference_label, ReferenceStepsError),
                                   (got, pair.actual_label, StepsError)):
            if "external_id" not in args:
                raise error(f"{label} has no 'external_id' in its 'args'; name the series.")
        # 6.6 reads every list and granularity before comparing (and stops on an unreadable one)
        ids = [normalized_ids(args["external_id"], pair, "external_id") for args in (expected, got)]
        granularities = [normalized_granularity(args.get("granularity"), pair) for args in (expected, got)]
        aggregates = [normalized_ids(args.get("aggregates"), pair, "aggregates") for args in (expected, got)]
        checks: tuple[tuple[str, Callable[[], bool]], ...] = (
            ("external_id", lambda: ids[0] == ids[1]),
            ("granularity", lambda: granularities[0] == granularities[1]),
            ("aggregates", lambda: aggregates[0] == aggregates[1]),
            ("start", lambda: same_time(anchor, expected.get("start"), got.get("start"), pair)),
            ("end", lambda: same_time(anchor, expected.get("end"), got.get("end"), pair)),
            ("limit", lambda: expected.get("limit") == got.get("limit")),
        )
        for key, same in checks:
            if not same():
                if not explain:
                    return NO_MATCH
                return Comparison(0.0, _difference(key, expected.get(key), got.get(key), anchor))
        return MATCH


def _difference(key: str, expected: Any, got: Any, anchor: datetime) -> str:
    text = f"{key} {shown(got)}, expected {shown(expected)}"
    if key in ("start", "end") and isinstance(expected, str) and RELATIVE_TIME.fullmatch(expected):
        resolved = resolve_time(expected, anchor)
        if isinstance(resolved, datetime):
            text += f" (= {resolved.isoformat()}, ±{TOLERANCE_SECONDS} s)"
    return text


def execution_time(pair: StepPair) -> datetime:
    """The actual step's `execution_timestamp` in UTC: what relative times are relative to."""
    if "execution_timestamp" not in pair.actual:
        raise StepsError(
            f"{pair.actual_label} has no 'execution_timestamp'; record when the step ran (ISO 8601), "
            "which relative times such as 'now' and '3d-ago' are resolved against."
        )
    value = pair.actual["execution_timestamp"]
    if isinstance(value, str):
        try:
            value = date_parser.isoparse(value)
        except (ValueError, OverflowError):
            value = None
    if not isinstance(value, datetime):
        raise StepsError(
            f"{pair.actual_label} has 'execution_timestamp' {short(repr(pair.actual['execution_timestamp']), 40)}; "
            "give an ISO 8601 time such as '2025-03-01T12:00:00Z'."
        )
    return in_utc(value)


def normalized_granularity(granularity: Any, pair: StepPair) -> Any:
    """`1h`, `1hour` and `1hours` are all `1hours`; what is not `<number><unit>` stays as it is."""
    if not granularity:
        return granularity
    if not isinstance(granularity, str):
        raise StepsError(
            f"'granularity' of {pair.reference_label} or {pair.actual_label} must be text such as '1h' "
            f"(got {short(repr(granularity), 40)})."
        )
    found = GRANULARITY.match(granularity)
    if not found:
        return granularity
    value, unit = found.groups()
    unit = unit.lower()
    return f"{value}{UNIT_NAMES.get(unit, unit)}"


def in_utc(moment: datetime) -> datetime:
    """A time without a zone is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def resolve_time(value: Any, anchor: datetime) -> Any:
    """A relative time resolved against `anchor`, an ISO 8601 text parsed, a datetime in UTC;
    anything else (text that is no time) as it is."""
    if isinstance(value, str):
        relative = RELATIVE_TIME.fullmatch(value)
        if relative:
            if value == "now":
                return anchor
            amount, unit, direction = int(relative.group(2)), relative.group(3), relative.group(4)
            delta = timedelta(seconds=amount * UNIT_SECONDS[unit])
            return anchor + delta if direction == "ahead" else anchor - delta
        try:
            value = date_parser.isoparse(value)
        except (ValueError, OverflowError):
            return value
    if isinstance(value, datetime):
        return in_utc(value)
    return value


def same_time(anchor: datetime, expected: Any, got: Any, pair: StepPair) -> bool:
    """6.6's rules for `start` and `end` (see the module docstring)."""
    if expected is None and got is None:
        return True
    if expected is None or got is None:
        return False
    expected_relative = isinstance(expected, str) and RELATIVE_TIME.fullmatch(expected) is not None
    got_relative = isinstance(got, str) and RELATIVE_TIME.fullmatch(got) is not None
    if got_relative and not expected_relative:
        return False
    for value in (expected, got):
        if not isinstance(value, (str, datetime)):
            kind = "a date without a time" if isinstance(value, date) else type(value).__name__
            raise StepsError(
                f"a 'start' or 'end' of {pair.reference_label} or {pair.actual_label} is {kind} "
                f"({short(repr(value), 40)}); give an ISO 8601 time (quoted in YAML) or a relative time "
                "such as '3d-ago'."
            )
    try:
        expected_time, got_time = resolve_time(expected, anchor), resolve_time(got, anchor)
    except OverflowError:
        raise StepsError(
            f"a relative time of {pair.reference_label} or {pair.actual_label} reaches beyond the calendar."
        ) from None
    if (isinstance(expected_time, datetime) and isinstance(got_time, datetime)
            and expected_relative and not got_relative):
        return abs((expected_time - got_time).total_seconds()) <= TOLERANCE_SECONDS
    return bool(expected_time == got_time)


RETRIEVE_DATA_POINTS_KIND = RetrieveDataPoints()
