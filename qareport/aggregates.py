"""Per-template, micro and macro aggregates of Q&A results, keyed as graphrag-eval 5.2 (or, with
`semantics=6`, 6.6) keys them.

`compute_aggregates(results)` returns what graphrag-eval 5.2's `compute_aggregates` returns for any
input it accepts: the same keys, in the same order (except the order of the templates in
`per_template`, which graphrag-eval takes from a set and so varies between runs; here it is the
order of first appearance), and the same numbers, ints staying ints.

* A result is an *error sample* when it has an `error` key; it only counts in
  `number_of_error_samples`. Every other result is a success sample.
* For each metric of `METRICS` with at least one value among a template's success samples (and
  always for `ALWAYS_REPORTED`), `sum`, `mean`, `median`, `min` and `max`; an empty series gives
  0 for all five.
* `steps` per template counts the actual steps by name: `total`, `errors` (status `error`),
  `once_per_sample`, and `empty_results` (a step not in error whose output is a SPARQL JSON result
  without bindings). The statistics of the retrieval step metrics (`STEP_METRICS`) go in there too.
* `micro` pools the success samples of all templates (template after template, which matters for
  the last bits of a float sum); the retrieval step metrics sit at the top level of `micro`.
  `macro` is the mean of the per-template means.
* Sums are computed as Python 3.12's `sum()` computes them (compensated for floats), since
  graphrag-eval 5.2 runs on Python 3.12 only; means and medians are those of `statistics`.

Under graphrag-eval 6.6's rules (`semantics=6`) four things change: error samples count in every
statistic and counter too (an error response has a steps score under 6.x); the metrics are
`METRICS_6` and `STEP_METRICS_6` (no `*_cost` keys); `micro` also sums the step counters into a
`steps` block; and the outputs of custom LLM metrics (`custom_metrics`, from a 6.x configuration's
`custom_evaluations`) are aggregated after the built-in metrics, under either rules.

Where graphrag-eval raises (a step without name, status or output, a metric that is not a
number, a result without `template_id`), this module counts what can be counted and never raises:
values that are not numbers are left out, a step without a name is not counted, a step without a
status is not an error, a step without a readable output is not an empty result, and results
without a template are grouped under the template None.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import mean, median
from typing import Any, TypeGuard

from qareport.evaluation_options import DEFAULT_SEMANTICS, Semantics
from qareport.qa import is_hashable
from qareport.records import USAGE_FIELDS

METRICS = (
    "answer_recall",
    "answer_precision",
    "answer_relevance",
    "answer_relevance_cost",
    "answer_f1",
    "steps_score",
    *USAGE_FIELDS,
)
"""Per-result metrics aggregated, in the order their keys appear."""

METRICS_6 = (
    "answer_recall",
    "answer_precision",
    "answer_relevance",
    "answer_f1",
    "steps_score",
    *USAGE_FIELDS,
)
"""graphrag-eval 6.6's per-result metrics, in its order."""

REPORTED_METRICS = (
    "steps_score", "answer_recall", "answer_precision", "answer_f1", "answer_relevance",
    "answer_relevance_cost", "retrieval_answer_recall", "retrieval_answer_precision",
    "retrieval_answer_f1", "retrieval_context_recall", "retrieval_context_precision",
    "retrieval_context_f1", *USAGE_FIELDS,
)
"""Every metric the aggregates may give (the per-result ones and those of the retrieval steps), in
the order a reader meets them (the Statistics sheet's columns and rows)."""

ALWAYS_REPORTED = USAGE_FIELDS
"""Metrics reported even when no success sample has a value (then all statistics are 0)."""

STEP_METRICS = {
    "retrieval": (
        "retrieval_answer_precision",
        "retrieval_answer_precision_cost",
        "retrieval_answer_recall",
        "retrieval_answer_recall_cost",
        "retrieval_answer_f1",
        "retrieval_answer_f1_cost",
        "retrieval_context_precision",
        "retrieval_context_precision_cost",
        "retrieval_context_recall",
        "retrieval_context_recall_cost",
        "retrieval_context_f1",
        "retrieval_context_f1_cost",
    )
}
"""Metrics carried by actual steps, by step name."""

STEP_METRICS_6 = {
    "retrieval": (
        "retrieval_answer_precision",
        "retrieval_answer_recall",
        "retrieval_answer_f1",
        "retrieval_context_recall",
        "retrieval_context_precision",
        "retrieval_context_f1",
    )
}
"""graphrag-eval 6.6's metrics carried by actual steps."""

STEP_COUNTERS = ("total", "errors", "once_per_sample", "empty_results")

Number = int | float


@dataclass
class _TemplateTally:
    """What one template's results add up to, before statistics."""

    error_samples: int = 0
    success_samples: int = 0
    metric_values: dict[str, list[Number]] = field(default_factory=dict)
    # counter -> step name -> count; counters appear in the order they are first needed
    step_counts: dict[str, dict[Hashable, int]] = field(default_factory=dict)
    step_metric_values: dict[str, list[Number]] = field(default_factory=dict)
    counted: bool = False  # some sample of it is in the statistics


def compute_aggregates(
    results: list[dict[str, Any]], *, semantics: Semantics = DEFAULT_SEMANTICS, custom_metrics: Sequence[str] = ()
) -> dict[str, Any]:
    """Aggregate Q&A result dicts (as `run_evaluation` returns them) into
    `{"per_template": {...}, "micro": {...}, "macro": {...}}`, by graphrag-eval 5.2's rules or, with
    `semantics=6`, 6.6's (see the module docstring); `custom_metrics` are further per-result keys."""
    rules = _Rules(
        metrics=(*(METRICS_6 if semantics == 6 else METRICS), *custom_metrics),
        step_metrics=STEP_METRICS_6 if semantics == 6 else STEP_METRICS,
        with_errors=semantics == 6,
    )
    tallies: dict[Any, _TemplateTally] = {}
    counted: list[_TemplateTally] = []  # in the order of each template's first counted sample
    for result in results:
        if not isinstance(result, Mapping):
            continue
        template_id = result.get("template_id")
        if not is_hashable(template_id):
            continue
        tally = tallies.setdefault(template_id, _TemplateTally())
        if "error" in result:
            tally.error_samples += 1
            if not rules.with_errors:
                continue
        else:
            tally.success_samples += 1
        if not tally.counted:
            tally.counted = True
            counted.append(tally)
        _add_metrics(result, tally, rules)
        _add_step_counts(result.get("actual_steps"), tally)
        _add_step_metrics(result.get("actual_steps"), tally, rules)

    per_template = {template_id: _template_summary(tally, rules) for template_id, tally in tallies.items()}
    micro = _micro_summary(list(tallies.values()), counted, rules)
    if semantics == 6:
        steps = _summed_step_counts(counted)
        if steps:
            micro["steps"] = steps
    return {
        "per_template": per_template,
        "micro": micro,
        "macro": _macro_summary(per_template, rules),
    }


@dataclass(frozen=True, slots=True)
class _Rules:
    metrics: tuple[str, ...]
    step_metrics: Mapping[str, tuple[str, ...]]
    with_errors: bool  # error samples count in the statistics (6.x)


# --- tallying ----------------------------------------------------------------------------------


def _add_metrics(result: Mapping[str, Any], tally: _TemplateTally, rules: _Rules) -> None:
    for metric in rules.metrics:
        value = result.get(metric)
        if _is_number(value):
            tally.metric_values.setdefault(metric, []).append(value)


def _steps_of(actual_steps: Any) -> Iterable[Mapping[str, Any]]:
    """The steps that can be counted: objects with a usable name."""
    if not isinstance(actual_steps, list):
        return ()
    return [
        step
        for step in actual_steps
        if isinstance(step, Mapping) and "name" in step and is_hashable(step["name"])
    ]


def _add_step_counts(actual_steps: Any, tally: _TemplateTally) -> None:
    counts = tally.step_counts

    def count(counter: str, name: Hashable) -> None:
        per_name = counts.setdefault(counter, {})
        per_name[name] = per_name.get(name, 0) + 1

    names_seen = set()
    for step in _steps_of(actual_steps):
        name = step["name"]
        failed = step.get("status") == "error"
        count("total", name)
        if failed:
            count("errors", name)
        if name not in names_seen:
            names_seen.add(name)
            count("once_per_sample", name)
        if not failed and _has_empty_bindings(step):
            count("empty_results", name)


def _has_empty_bindings(step: Mapping[str, Any]) -> bool:
    """Is the step's output a SPARQL JSON result whose bindings are empty?"""
    try:
        text = step["output"]
        if isinstance(text, str) and not _may_have_empty_bindings(text):
            return False  # nearly every output: no need to parse it
        output = json.loads(text)
        return (
            isinstance(output, dict)
            and "results" in output
            and "bindings" in output["results"]
            and not output["results"]["bindings"]
        )
    except (KeyError, TypeError, ValueError, IndexError, RecursionError):
        return False  # no output, or not JSON: nothing to say about its bindings


_JSON_SPACE = "[ \t\n\r]*+"
_FULL_BINDINGS = re.compile(
    # "bindings": followed by what can only start a true value: a list or object with something in
    # it, a non-empty string, true, or a number that is not zero
    f'"bindings"{_JSON_SPACE}:{_JSON_SPACE}'
    f'(?:\\[{_JSON_SPACE}[^\\] \t\n\r]|\\{{{_JSON_SPACE}[^}} \t\n\r]|"[^"]|t|-?[1-9])'
)


def _may_have_empty_bindings(text: str) -> bool:
    """False when the JSON `text` surely holds no key "bindings" whose value is empty (or null,
    false, zero): each "bindings" key is followed by a value that starts as a true one does. Read
    without parsing, since a text without backslashes can write the key only as `"bindings"`; any
    other text may, and is parsed (`tests/test_fast_paths.py` checks both ways agree)."""
    if "\\" in text:
        return True
    key = text.find('"bindings"')
    while key >= 0:
        if not _FULL_BINDINGS.match(text, key):
            return True
        key = text.find('"bindings"', key + 1)
    return False


def _add_step_metrics(actual_steps: Any, tally: _TemplateTally, rules: _Rules) -> None:
    for step in _steps_of(actual_steps):
        for metric in rules.step_metrics.get(step["name"], ()):
            value = step.get(metric)
            if _is_number(value):
                tally.step_metric_values.setdefault(metric, []).append(value)


# --- summaries ---------------------------------------------------------------------------------


def _template_summary(tally: _TemplateTally, rules: _Rules) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "number_of_error_samples": tally.error_samples,
        "number_of_success_samples": tally.success_samples,
    }
    for metric in rules.metrics:
        values = tally.metric_values.get(metric, [])
        if values or metric in ALWAYS_REPORTED:
            summary[metric] = series_statistics(values)
    steps: dict[str, Any] = {counter: dict(per_name) for counter, per_name in tally.step_counts.items()}
    for metric, values in tally.step_metric_values.items():
        steps[metric] = series_statistics(values)
    if steps:
        summary["steps"] = steps
    return summary


def _micro_summary(tallies: list[_TemplateTally], counted: list[_TemplateTally], rules: _Rules) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "number_of_error_samples": sum(tally.error_samples for tally in tallies),
        "number_of_success_samples": sum(tally.success_samples for tally in tallies),
    }
    for metric in rules.metrics:
        values = [value for tally in counted for value in tally.metric_values.get(metric, [])]
        if values or metric in ALWAYS_REPORTED:
            summary[metric] = series_statistics(values)
    pooled: dict[str, list[Number]] = {}
    for tally in counted:
        for metric, values in tally.step_metric_values.items():
            pooled.setdefault(metric, []).extend(values)
    for metric, values in pooled.items():
        summary[metric] = series_statistics(values)
    return summary


def _summed_step_counts(counted: list[_TemplateTally]) -> dict[str, dict[Hashable, int]]:
    """The step counters of all templates added up (6.x's `micro.steps`)."""
    summed: dict[str, dict[Hashable, int]] = {}
    for tally in counted:
        for counter, per_name in tally.step_counts.items():
            into = summed.setdefault(counter, {})
            for name, count in per_name.items():
                into[name] = into.get(name, 0) + count
    return summed


def _macro_summary(per_template: dict[Any, dict[str, Any]], rules: _Rules) -> dict[str, dict[str, Number]]:
    summary: dict[str, dict[str, Number]] = {}
    for metric in rules.metrics:
        means = [stats[metric]["mean"] for stats in per_template.values() if stats.get(metric) is not None]
        if means or metric in ALWAYS_REPORTED:
            summary[metric] = {"mean": mean(means or [0])}
    # Every entry of `steps` that has a "mean" is averaged: the step metrics' statistics, and (as
    # graphrag-eval does) a counter that happens to count a step named "mean".
    step_means: dict[str, list[Number]] = {}
    for stats in per_template.values():
        for key, entry in stats.get("steps", {}).items():
            if "mean" in entry:
                step_means.setdefault(key, []).append(entry["mean"])
    for key, means in step_means.items():
        summary.setdefault(key, {})["mean"] = mean(means)
    return summary


def series_statistics(values: list[Number]) -> dict[str, Number]:
    """sum, mean, median, min and max of `values`; all 0 for an empty list."""
    if not values:
        return {"sum": 0, "mean": 0, "median": 0, "min": 0, "max": 0}
    return {
        "sum": sum_as_python312(values),
        "mean": mean(values),
        "median": median(values),
        "min": min(values),
        "max": max(values),
    }


# --- helpers -----------------------------------------------------------------------------------

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def sum_as_python312(values: Iterable[Number]) -> Number:
    """`sum(values)` as Python 3.12 computes it, on any Python: ints exactly while they fit in a C
    long, then floats with Neumaier's compensated summation (ints among them added plainly).

    graphrag-eval 5.2 requires Python 3.12, where `sum()` compensates float rounding; Python 3.11
    adds floats naively, and the two differ in the last bits. Numbers only (ints, bools, floats).
    """
    items = iter(values)
    total: Number = 0
    for item in items:  # integer phase
        if type(item) in (int, bool) and _LONG_MIN <= total + item <= _LONG_MAX and _LONG_MIN <= item <= _LONG_MAX:
            total += item
            continue
        total = total + item
        break
    else:
        return total
    if type(total) is float:
        high, low = total, 0.0
        for item in items:  # compensated float phase
            if type(item) is float:
                step = high + item
                if abs(high) >= abs(item):
                    low += (high - step) + item
                else:
                    low += (item - step) + high
                high = step
                continue
            if isinstance(item, int) and _LONG_MIN <= item <= _LONG_MAX:
                high += float(item)
                continue
            total = _with_compensation(high, low) + item
            break
        else:
            return _with_compensation(high, low)
    for item in items:  # anything else: plain addition
        total = total + item
    return total


def _with_compensation(high: float, low: float) -> float:
    # keep the sign of a negative zero and never turn an overflowed sum into NaN
    return high + low if low and math.isfinite(low) else high


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float))
