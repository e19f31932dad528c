"""How far the LLM judge got, per judged metric: cases judged, failed and not applicable.

A judge that fails must never flatter a report. When answer relevance fails for most cases, its
mean over the few that were judged says little, and a mean that simply disappears says nothing:
so every judged metric keeps its counts beside its mean, everywhere the mean is shown, and a metric
that failed for most of the cases it applied to is flagged.

Per case (a Q&A question, or a conversation turn with an answer), a metric is

- *judged* when it has a value,
- *failed* when it has the metric's error key (the judge was asked and no usable answer came),
- *not applicable* otherwise (no answer to judge, no reference, no retrieval step).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from qareport.records import CaseResult


@dataclass(frozen=True, slots=True)
class JudgedMetricSpec:
    """Where a judged metric's value and error live in a Q&A result dict."""

    key: str  # the value's key ("answer_f1")
    label: str
    error_key: str
    on_steps: bool = False  # kept on each retrieval step rather than on the result
    mark: str | None = None  # a key only the judge writes beside the value (when others write it too)


JUDGED_METRICS = (
    JudgedMetricSpec("answer_f1", "answer F1", "answer_eval_error"),
    JudgedMetricSpec("answer_relevance", "answer relevance", "answer_relevance_error"),
    JudgedMetricSpec("retrieval_answer_recall", "retrieval answer recall", "retrieval_answer_recall_error",
                     on_steps=True),
    JudgedMetricSpec("retrieval_answer_precision", "retrieval answer precision",
                     "retrieval_answer_precision_error", on_steps=True),
    # graphrag-eval 6.x's context metrics judged by the LLM, named apart from 5.x's string similarities
    JudgedMetricSpec("retrieval_context_recall", "retrieval context recall (LLM)", "retrieval_context_recall_error",
                     on_steps=True, mark="retrieval_context_recall_cost"),
    JudgedMetricSpec("retrieval_context_precision", "retrieval context precision (LLM)",
                     "retrieval_context_precision_error", on_steps=True, mark="retrieval_context_precision_cost"),
)
MOSTLY_FAILED = 0.5  # a metric that failed for more than this share of its cases is flagged


@dataclass(frozen=True, slots=True)
class JudgedMetric:
    """One judged metric of a run: its mean over the judged cases, and how many cases it rests on."""

    key: str
    label: str
    mean: float | None
    judged: int
    failed: int
    not_applicable: int

    @property
    def mostly_failed(self) -> bool:
        attempted = self.judged + self.failed
        return attempted > 0 and self.failed / attempted > MOSTLY_FAILED

    def describe(self) -> str:
        """"answer relevance: 0 judged, 40 failed (FAILED FOR MOST CASES)"."""
        text = f"{self.label}: {self.judged} judged, {self.failed} failed"
        if self.not_applicable:
            text += f", {self.not_applicable} not applicable"
        return text + (" (FAILED FOR MOST CASES)" if self.mostly_failed else "")


def count_judged_metrics(results: Sequence[CaseResult]) -> tuple[JudgedMetric, ...]:
    """Every judged metric with its counts over the cases that have a Q&A result."""
    counted = []
    for spec in JUDGED_METRICS:
        values: list[float] = []
        failed = not_applicable = 0
        for qa in _qa_results(results):
            verdict, value = _verdict(spec, qa)
            if verdict == "judged" and value is not None:
                values.append(value)
            elif verdict == "failed":
                failed += 1
            else:
                not_applicable += 1
        if spec.mark is not None and not values and not failed:
            continue  # the judge never computed it (5.x rules: no LLM context metrics)
        counted.append(JudgedMetric(spec.key, spec.label, fmean(values) if values else None,
                                    len(values), failed, not_applicable))
    return tuple(counted)


def _qa_results(results: Sequence[CaseResult]) -> Iterator[Mapping[str, Any]]:
    for result in results:
        for turn in result.turns:
            if turn.qa is not None:
                yield turn.qa


def _verdict(spec: JudgedMetricSpec, qa: Mapping[str, Any]) -> tuple[str, float | None]:
    if not spec.on_steps:
        return _one(qa, spec)
    steps = [step for step in qa.get("actual_steps") or () if isinstance(step, Mapping)]
    verdicts = [_one(step, spec) for step in steps]
    judged = [value for verdict, value in verdicts if verdict == "judged" and value is not None]
    if judged:
        return "judged", fmean(judged)
    if any(verdict == "failed" for verdict, _ in verdicts):
        return "failed", None
    return "not applicable", None


def _one(container: Mapping[str, Any], spec: JudgedMetricSpec) -> tuple[str, float | None]:
    if spec.mark is not None and spec.mark not in container:
        return "not applicable", None
    value = container.get(spec.key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "judged", float(value)
    if container.get(spec.error_key):
        return "failed", None
    return "not applicable", None
