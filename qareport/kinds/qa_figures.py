"""The suite figures of graphrag-eval's question evaluation (`QAFigures`), which the reference steps
and the reference answer share (`qa_turn.QA_TURN`): graphrag-eval's per-template, micro and macro
aggregates over the Q&A questions, in its own arithmetic (`aggregates.compute_aggregates`), its
per-question results (`QuestionScores`, as dicts only in the results file and for the aggregates),
and their Statistics tables and results-file entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qareport.aggregates import REPORTED_METRICS, compute_aggregates
from qareport.evaluation_options import DEFAULT_SEMANTICS, Semantics
from qareport.ge6_results import ordered_as_6
from qareport.kinds.kind_records import CellFormat, Chart, SuiteFigures, SuiteOptions, Table
from qareport.kinds.registry import catalogue, metric_format
from qareport.question_scores import QuestionScores
from qareport.records import CaseResult

STEP_COUNTERS = ("total", "once_per_sample", "empty_results", "errors")
_SCORE: CellFormat = "score"
_INTEGER: CellFormat = "integer"


def question_scores(results: Iterable[CaseResult]) -> tuple[QuestionScores, ...]:
    """The results of the Q&A questions (not of conversation turns); each attempt's, marked with
    its `attempt`, for a question answered several times (graphrag-eval's aggregates count each
    attempt as a sample)."""
    return tuple(
        qa
        for result in results
        for attempt in (result.attempts or (result,))
        if attempt.case.kind == "qa" and attempt.turns and (qa := attempt.turns[0].qa) is not None
    )


def question_results(results: Iterable[CaseResult]) -> list[dict[str, Any]]:
    """graphrag-eval's result dicts of the Q&A questions (`question_scores`), built for the library."""
    return [qa.as_graphrag_eval() for qa in question_scores(results)]


def question_records(results: Sequence[QuestionScores], semantics: Any) -> list[dict[str, Any]]:
    """The per-question records of the results file: graphrag-eval's result dicts as the library
    returns them (`qareport.run_evaluation`, or under 6.x rules `qareport.graphrag_eval_6`'s, with
    6.6's key order and `actual_steps` always there). Structured values stay data."""
    if str(semantics) == "6":
        return [ordered_as_6(result.as_graphrag_eval()) for result in results]
    return [result.as_graphrag_eval() for result in results]


@dataclass(frozen=True, slots=True)
class QAFigures(SuiteFigures):
    """graphrag-eval's aggregates over the Q&A questions and their per-question result dicts."""

    aggregates: dict[str, Any]  # {"per_template": ..., "micro": ..., "macro": ...}
    question_results: tuple[QuestionScores, ...] = ()
    steps_semantics: Semantics = DEFAULT_SEMANTICS  # the rules they were computed by
    labels: Mapping[str, str] = field(default_factory=dict)  # each reported metric's label, by the run's kinds
    name: str = "qa"

    def tables(self) -> tuple[Table, ...]:
        return qa_tables(self.aggregates, semantics=self.steps_semantics, labels=self.labels)

    def results_entries(self) -> Mapping[str, Any]:
        return {"results": question_records(self.question_results, self.steps_semantics),
                "aggregates": self.aggregates}

    def micro_mean(self, metric: str) -> float | None:
        """graphrag-eval's mean of a metric over all questions (micro)."""
        stats = template_metric(self.aggregates.get("micro", {}), metric)
        return None if stats is None else stats.get("mean")

    def console_notes(self, status_counts: Mapping[str, int]) -> list[str]:
        """Under graphrag-eval 6.x rules with error responses, the 6.x library's own steps mean (errors
        counted as 0), named as such."""
        steps = self.micro_mean("steps_score")
        if steps is not None and self.steps_semantics == 6 and status_counts.get("error"):
            return [f"mean steps score {steps:.2f} (graphrag-eval 6.x's mean, error responses counted as 0)"]
        return []


def qa_figures(results: Sequence[CaseResult], options: SuiteOptions) -> QAFigures | None:
    """The aggregates of the run's Q&A questions by `options`' rules (None: the run has none)."""
    questions = question_scores(results)
    if not questions:
        return None
    semantics: Semantics = 6 if options.steps_semantics == 6 else DEFAULT_SEMANTICS
    label = options.metric_label or catalogue().metric_label
    return QAFigures(
        aggregates=compute_aggregates([qa.as_graphrag_eval() for qa in questions], semantics=semantics,
                                      custom_metrics=options.custom_metrics),
        question_results=questions,
        steps_semantics=semantics,
        labels={metric: label(metric) for metric in REPORTED_METRICS},
    )


def template_metric(summary: Mapping[str, Any], metric: str) -> dict[str, Any] | None:
    """A metric's statistics in one template's (or the micro) aggregates, at the top or under `steps`."""
    value = summary.get(metric)
    if isinstance(value, dict) and "mean" in value:
        return value
    nested = summary.get("steps", {}).get(metric) if isinstance(summary.get("steps"), dict) else None
    return nested if isinstance(nested, dict) and "mean" in nested else None


def qa_tables(aggregates: Mapping[str, Any], *, semantics: int, labels: Mapping[str, str]) -> tuple[Table, ...]:
    """The means per template (micro and macro below them), the micro statistics of each metric
    (named by `labels`), and the tool calls per template."""
    per_template: dict[str, dict[str, Any]] = aggregates.get("per_template", {})
    micro = aggregates.get("micro", {})
    macro = aggregates.get("macro", {})
    metrics = [m for m in REPORTED_METRICS if template_metric(micro, m) is not None or m in macro]
    counted = ("Means over the questions with a successful response; error samples are counted beside them. "
               if str(semantics) != "6" else
               "Means as graphrag-eval 6.x computes them: an error sample's steps score counts, as 0.0. ")
    rows: list[tuple[Any, ...]] = []
    for template_id, summary in per_template.items():  # first appearance, as everywhere
        rows.append((
            template_id, summary.get("number_of_success_samples", 0), summary.get("number_of_error_samples", 0),
            *[(template_metric(summary, m) or {}).get("mean") for m in metrics],
        ))
    rows.append((
        "all questions (micro)", micro.get("number_of_success_samples", 0), micro.get("number_of_error_samples", 0),
        *[(template_metric(micro, m) or {}).get("mean") for m in metrics],
    ))
    rows.append(("templates averaged (macro)", None, None, *[macro.get(m, {}).get("mean") for m in metrics]))
    chart = (Chart("Mean steps score per template", "template", (4 + metrics.index("steps_score"),),
                   totals=2)  # the micro and macro rows are not templates
             if per_template and "steps_score" in metrics else None)
    tables = [Table(
        "Q&A: means per template",
        ("template", "success samples", "error samples", *[labels.get(m) or m for m in metrics]),
        tuple(rows),
        (None, _INTEGER, _INTEGER, *[metric_format(m) for m in metrics]),
        note=counted + "micro: all questions together; macro: the mean of the template means. The steps score "
        "of a retrieval step is recall@k over document ids; context recall and precision (text similarity) "
        "compare the retrieved texts with the reference contexts.",
        chart=chart,
        leading=True,
    )]
    stat_rows = []
    row_formats = []
    for metric in metrics:
        stats = template_metric(micro, metric)
        if stats is not None:
            figures = [stats.get(k) for k in ("sum", "mean", "median", "min", "max")]
            stat_rows.append((labels.get(metric) or metric, *figures))
            row_formats.append(metric_format(metric))  # tokens, seconds, dollars: each row its own unit
    tables.append(Table(
        "Q&A: all questions (micro)", ("metric", "sum", "mean", "median", "min", "max"), tuple(stat_rows),
        (None, *(_SCORE,) * 5), note="sum / mean / median / min / max over successful responses.",
        row_formats=tuple(row_formats), leading=True,
    ))
    counter_rows = []
    for template_id, summary in per_template.items():  # first appearance, as everywhere
        steps = summary.get("steps") or {}
        names = sorted({name for key in STEP_COUNTERS for name in (steps.get(key) or {})})
        for name in names:
            counter_rows.append((template_id, name, *[(steps.get(key) or {}).get(name, 0) for key in STEP_COUNTERS]))
    if counter_rows:
        tables.append(Table(
            "Q&A: tool calls per template", ("template", "step", "total", "once per sample", "empty results", "errors"),
            tuple(counter_rows), (None, None, *(_INTEGER,) * 4),
            note="total: calls made; once per sample: questions that made the call at least once; "
                 "empty results: calls that returned no rows; errors: calls that failed.",
            leading=True,
        ))
    return tuple(tables)
