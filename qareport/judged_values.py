"""What the judge concluded on one metric, typed; and the one place that names graphrag-eval's keys for it.

A judge metric's check turns a reply into figures (`Correctness`, `Relevance`, `RetrievalScore`,
`CustomOutputs`: the outputs of a custom LLM metric, an open mapping since their names are the
user's); a `MetricJudgment` holds them with the metric's name, its error (when it failed), its cost
and, with `--judge-repeats`, the judged value of each repeat. `QuestionScores.with_judgments` sets
them on the record; `graphrag_eval_values` is the boundary: the keys and values graphrag-eval writes
for a judgment, in its order, which the record takes (`as_graphrag_eval` and the judge's library
API `Judge.judge_results` give them back as graphrag-eval's judged dicts). No other module spells
these keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qareport.retrieval_metrics import f1_score

REPEATS_SUFFIX = "_repeats"
"""With `--judge-repeats`, a judged value's per-repeat values are kept under its key and this
suffix ("answer_f1_repeats": one number per repeat, None for a repeat that gave none)."""
CUSTOM_PREFIX = "custom:"
"""Custom metrics are named `custom:<name>` inside the judge, apart from the built-in ones."""

ANSWER_CORRECTNESS = "answer_correctness"
ANSWER_RELEVANCE = "answer_relevance"
RETRIEVAL_ANSWER_RECALL = "retrieval_answer_recall"
RETRIEVAL_ANSWER_PRECISION = "retrieval_answer_precision"
RETRIEVAL_CONTEXT_RECALL = "retrieval_context_recall"
RETRIEVAL_CONTEXT_PRECISION = "retrieval_context_precision"
RETRIEVAL_METRICS = (RETRIEVAL_ANSWER_RECALL, RETRIEVAL_ANSWER_PRECISION, RETRIEVAL_CONTEXT_RECALL,
                     RETRIEVAL_CONTEXT_PRECISION)

ERROR_KEYS = {
    ANSWER_CORRECTNESS: "answer_eval_error",
    ANSWER_RELEVANCE: "answer_relevance_error",
    **{metric: f"{metric}_error" for metric in RETRIEVAL_METRICS},
}


@dataclass(frozen=True, slots=True)
class Correctness:
    """Answer correctness: the claim counts, the judge's reason, and the scores computed from them.
    A figure left None is not written (a partial judgment given by a caller of the library)."""

    reference_claims: int | None = None
    actual_claims: int | None = None
    matching_claims: int | None = None
    reason: str | None = None
    recall: float | None = None
    precision: float | None = None
    f1: float | None = None


@dataclass(frozen=True, slots=True)
class GeneratedQuestion:
    question: str
    noncommittal: bool


@dataclass(frozen=True, slots=True)
class Relevance:
    """Answer relevance: the score and the questions the judge generated from the answer."""

    score: float | None = None
    questions: tuple[GeneratedQuestion, ...] | None = None


@dataclass(frozen=True, slots=True)
class RetrievalScore:
    """A retrieval step's recall or precision (against the reference answer or the reference
    contexts: the metric says which) and the judge's reason."""

    score: float | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class CustomOutputs:
    """A custom LLM metric's outputs, by the names its configuration gives (None each when it failed)."""

    values: Mapping[str, Any]


Figures = Correctness | Relevance | RetrievalScore | CustomOutputs


@dataclass(frozen=True, slots=True)
class Cost:
    """What a judgment cost in USD; `usd` None when a price is not known."""

    usd: float | None


@dataclass(frozen=True, slots=True)
class MetricJudgment:
    """One metric's judgment: its figures (None when it failed, but for a custom metric's outputs,
    which are then each None), why it failed, its cost (None: not asked, so none written), and
    the judged value of each repeat (`--judge-repeats`; None for a repeat that gave none)."""

    metric: str
    figures: Figures | None = None
    error: str | None = None
    cost: Cost | None = None
    repeats: tuple[Any, ...] | None = None

    @property
    def judged_value(self) -> Any:
        """The value the metric is judged by (the one whose repeats are listed), when it has one."""
        figures = self.figures
        if isinstance(figures, Correctness):
            return figures.f1
        if isinstance(figures, (Relevance, RetrievalScore)):
            return figures.score
        return None


def custom_name(metric: str) -> str | None:
    """The evaluation's name of a custom metric (`custom:<name>`), None for a built-in one."""
    return metric.removeprefix(CUSTOM_PREFIX) if metric.startswith(CUSTOM_PREFIX) else None


def judged_key(metric: str) -> str | None:
    """The key of a built-in metric's judged value (`answer_f1`, `answer_relevance`, ...)."""
    if metric == ANSWER_CORRECTNESS:
        return "answer_f1"
    return metric if metric in (ANSWER_RELEVANCE, *RETRIEVAL_METRICS) else None


def error_key(metric: str) -> str:
    name = custom_name(metric)
    return f"{name}_error" if name is not None else ERROR_KEYS[metric]


def cost_key(metric: str) -> str:
    name = custom_name(metric)
    return f"{name if name is not None else metric}_cost"


def graphrag_eval_values(judgment: MetricJudgment) -> dict[str, Any]:
    """graphrag-eval's keys and values for `judgment`, in its order: the figures, the error, the
    cost, the repeats of the judged value."""
    values = _figure_values(judgment.metric, judgment.figures)
    if judgment.error is not None:
        values[error_key(judgment.metric)] = judgment.error
    if judgment.cost is not None:
        values[cost_key(judgment.metric)] = judgment.cost.usd
    key = judged_key(judgment.metric)
    if judgment.repeats is not None and key is not None:
        values[key + REPEATS_SUFFIX] = list(judgment.repeats)
    return values


def _figure_values(metric: str, figures: Figures | None) -> dict[str, Any]:
    if figures is None:
        return {}
    if isinstance(figures, CustomOutputs):
        return dict(figures.values)
    found: dict[str, Any]
    if isinstance(figures, Correctness):
        found = {
            "answer_reference_claims_count": figures.reference_claims,
            "answer_actual_claims_count": figures.actual_claims,
            "answer_matching_claims_count": figures.matching_claims,
            "answer_correctness_reason": figures.reason,
            "answer_recall": figures.recall,
            "answer_precision": figures.precision,
            "answer_f1": figures.f1,
        }
    elif isinstance(figures, Relevance):
        questions = None if figures.questions is None else [
            {"question": q.question, "noncommittal": q.noncommittal} for q in figures.questions]
        found = {ANSWER_RELEVANCE: figures.score, "answer_relevance_questions": questions}
    else:
        found = {metric: figures.score, f"{metric}_reason": figures.reason}
    return {key: value for key, value in found.items() if value is not None}


def f1_keys(values: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """`{prefix}_f1` and `{prefix}_f1_cost` from the recall and precision keys, when both exist
    (graphrag-eval's rule); the cost only when both costs are known."""
    f1 = f1_score(values.get(f"{prefix}_recall"), values.get(f"{prefix}_precision"))
    if f1 is None:
        return {}
    keys = {f"{prefix}_f1": f1}
    recall_cost = values.get(f"{prefix}_recall_cost")
    precision_cost = values.get(f"{prefix}_precision_cost")
    if recall_cost is not None and precision_cost is not None:
        keys[f"{prefix}_f1_cost"] = recall_cost + precision_cost
    return keys


def step_values(step: Mapping[str, Any], judgments: tuple[MetricJudgment, ...]) -> dict[str, Any]:
    """The keys a retrieval step gets from its judgments: each metric's, then the F1 keys computed
    from the step as judged (the retrieval-context ones when a context metric was judged)."""
    updates: dict[str, Any] = {}
    for judgment in judgments:
        updates.update(graphrag_eval_values(judgment))
    judged = {**step, **updates}
    values = {**updates, **f1_keys(judged, "retrieval_answer")}
    if any(j.metric in (RETRIEVAL_CONTEXT_RECALL, RETRIEVAL_CONTEXT_PRECISION) for j in judgments):
        values.update(f1_keys({**judged, **values}, "retrieval_context"))
    return values
