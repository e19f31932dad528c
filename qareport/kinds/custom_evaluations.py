"""Custom LLM metrics (graphrag-eval 6.x's `custom_evaluations`) as a kind: one column per output.

The judge (`qareport.judge.custom_metric`) writes each evaluation's outputs into a turn's result
dict; this kind reads them. Every output is a metric of the kind (its key is the output's name): a
case's value is the mean of its turns' numeric values, so numeric outputs reach the results file,
the stored run and the comparison with a baseline, where, like every metric, a drop counts as a
regression; text outputs (a reason) are shown in the Overview and leave the metric empty.

`kinds_for_run(evaluations)` gives a run's kinds: the catalogue's, plus this kind when the run's
configuration has custom evaluations. The catalogue itself never holds it, so two runs in one
process each see their own outputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from qareport import kinds
from qareport.errors import SettingsError
from qareport.ge6_config import CustomEvaluation
from qareport.kinds import Column, Kind, Metric, Table, mean_over_turns
from qareport.records import CaseResult

KIND_NAME = "custom_evaluations"


def _number(value: Any) -> float | None:
    """A value that can be averaged: a finite number (not a boolean), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class CustomEvaluations(Kind):
    """The outputs of a run's custom LLM metrics, read from each turn's result dict."""

    name = KIND_NAME
    label = "custom LLM metrics"
    reads_target = False  # its values live in `TurnResult.qa`, which the judge's keys are added to

    @property
    def output_key(self) -> str | None:
        return None

    def __init__(self, evaluations: Sequence[CustomEvaluation]):
        self.evaluations = tuple(evaluations)
        self.metrics = tuple(Metric(key, key.replace("_", " ")) for e in self.evaluations for key in e.output_keys)

    def present(self, results: Sequence[CaseResult]) -> bool:
        keys = [metric.key for metric in self.metrics]
        return any(turn.qa is not None and any(turn.qa.has(key) for key in keys) for r in results for turn in r.turns)

    def attempt_metrics(self, result: CaseResult) -> dict[str, float | None]:
        return {
            metric.key: mean_over_turns(_number(t.qa.value(metric.key)) for t in result.turns if t.qa is not None)
            for metric in self.metrics
        }

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        return [Column(metric.label, _value(metric.key), 14, wrap=True) for metric in self.metrics]

    def statistics_tables(self, results: Sequence[CaseResult]) -> list[Table]:
        rows = []
        for evaluation in self.evaluations:
            for key in evaluation.output_keys:
                values, texts, failed = [], 0, 0
                for result in results:
                    for turn in result.turns:
                        if turn.qa is None:
                            continue
                        number = _number(turn.qa.value(key))
                        if number is not None:
                            values.append(number)
                        elif turn.qa.value(key) is not None:
                            texts += 1
                        elif turn.qa.value(evaluation.error_key):
                            failed += 1
                rows.append((evaluation.name, key, len(values), texts, failed,
                             fmean(values) if values else None, min(values, default=None),
                             max(values, default=None)))
        return [Table(
            "Custom LLM metrics (graphrag-eval 6.x custom_evaluations)",
            ("evaluation", "output", "numeric values", "text values", "failed", "mean", "min", "max"),
            tuple(rows),
            (None, None, "integer", "integer", "integer", None, None, None),
        )]


def _value(key: str) -> Any:
    def value(result: CaseResult) -> Any:
        found = [(turn.number, turn.qa.value(key)) for turn in result.turns
                 if turn.qa is not None and turn.qa.value(key) is not None]
        numbers = [_number(v) for _, v in found]
        if found and all(n is not None for n in numbers):
            return fmean(n for n in numbers if n is not None)
        if len(found) == 1:
            return str(found[0][1])
        return "\n".join(f"Turn {number}: {text}" for number, text in found) or None

    return value


def kinds_for_run(evaluations: Sequence[CustomEvaluation]) -> kinds.RunKinds:
    """A run's kinds: the catalogue's, plus this kind for `evaluations` (none: the catalogue's
    alone). SettingsError when an output takes the name of another kind's metric."""
    if not evaluations:
        return kinds.for_run()
    try:
        return kinds.for_run(CustomEvaluations(evaluations))
    except ValueError as error:
        raise SettingsError(f"custom evaluations: {error}; give the outputs other names") from None
