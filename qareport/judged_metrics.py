"""How far the LLM judge got, per judged metric: one definition, computed once, read everywhere.

A judge that fails must never flatter a report. When answer relevance fails for most cases, its
mean over the few that were judged says little, and a mean that simply disappears says nothing:
so every judged metric keeps its counts beside its mean, everywhere the mean is shown (the
Summary's headline row and its judge line, the Statistics sheet, the console's judge line, the
results file), and a metric that failed for most of the cases it applied to is flagged.

The unit is the test case, as for every headline figure: a case's value is the mean over its
turns (and the retrieval steps of a turn) that have one. Among the evaluated cases (status
success; the others are counted as errors, missing or invalid), a metric is, for each case,

- *judged* when the case has a value (a finite number): the mean is over these cases, and the
  headline's `cases` is this count;
- *failed* when it has none and a judgment of it got a reply that could not be used (not the
  asked-for JSON, contradicting counts, a bad embeddings reply, a number that is not finite) or
  had nothing usable to judge (an empty question, a retrieval output that cannot be read);
- *not judged* when it has none and a judgment of it could not be obtained: the API failed after
  the SDK's retries, or the judge was stopped (a rejected key, an unknown model, a server that
  cannot be reached). Its error text starts with `errors.NOT_JUDGED`. Any such judgment makes
  the run's exit status JUDGE_FAILED. Among them, *not judged: budget reached* are the judgments
  the judge budget stopped (`--judge-budget`; their error text starts with
  `errors.NOT_JUDGED + errors.BUDGET_REACHED`): counted in `not_judged`, and also in
  `budget_reached`;
- *not applicable* otherwise (no answer to judge, no reference, no retrieval step).

Failed and not judged cases are among the headline's "not scored" cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from qareport.errors import BUDGET_REACHED, NOT_JUDGED
from qareport.judged_values import REPEATS_SUFFIX as REPEATS_SUFFIX  # its home is judged_values
from qareport.question_scores import QuestionScores
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
    not_judged: int = 0
    budget_reached: int = 0  # of the not judged, those the judge budget stopped

    @property
    def not_scored(self) -> int:
        """Cases the metric applied to that have no value: failed and not judged."""
        return self.failed + self.not_judged

    @property
    def mostly_failed(self) -> bool:
        attempted = self.judged + self.not_scored
        return attempted > 0 and self.not_scored / attempted > MOSTLY_FAILED

    @property
    def partial(self) -> bool:
        """Whether its mean rests on only some of the cases it applied to (the budget stopped the
        judging, or judgments failed): a mean over whichever cases were judged, never the suite's."""
        return self.judged > 0 and self.not_scored > 0

    def why_partial(self) -> str:
        """Why cases went unjudged, in a few words: "budget reached", "judge failed", "judgments failed"."""
        reasons = []
        if self.budget_reached:
            reasons.append(BUDGET_REACHED)
        if self.not_judged > self.budget_reached:
            reasons.append("judge failed")
        if self.failed:
            reasons.append("judgments failed")
        return ", ".join(reasons)

    def partial_words(self) -> str | None:
        """"answer F1: partial, 40 of 60 cases judged (budget reached)"; None when not partial."""
        if not self.partial:
            return None
        return (f"{self.label}: partial, {self.judged} of {self.judged + self.not_scored} cases judged "
                f"({self.why_partial()})")

    def describe(self) -> str:
        """"answer relevance: 0 judged, 40 failed, 3 not judged (FAILED FOR MOST CASES)"."""
        text = f"{self.label}: {self.judged} judged, {self.failed} failed"
        if self.not_judged:
            text += f", {self.not_judged} not judged"
            if self.budget_reached == self.not_judged:
                text += f": {BUDGET_REACHED}"
            elif self.budget_reached:
                text += f" ({self.budget_reached} {BUDGET_REACHED})"
        if self.not_applicable:
            text += f", {self.not_applicable} not applicable"
        return text + (" (FAILED FOR MOST CASES)" if self.mostly_failed else "")

    def to_dict(self) -> dict[str, Any]:
        partial = self.partial_words()  # said only when partial, so a fully judged run's file is as before
        return {"key": self.key, "label": self.label, "mean": self.mean, "judged": self.judged,
                "failed": self.failed, "not_judged": self.not_judged, "not_judged_budget_reached": self.budget_reached,
                "not_applicable": self.not_applicable, **({"partial": partial} if partial else {})}


JUDGED, FAILED, NOT_JUDGED_VERDICT, NOT_APPLICABLE = "judged", "failed", "not judged", "not applicable"
BUDGET_VERDICT = f"not judged: {BUDGET_REACHED}"


def partly_judged_pairs(judged: Sequence[JudgedMetric]) -> tuple[tuple[str, str], ...]:
    """(key, words) of each judged metric whose mean rests on only some of its cases (`RunSnapshot.partly_judged`)."""
    return tuple((metric.key, words) for metric in judged if (words := metric.partial_words()) is not None)


def count_judged_metrics(results: Sequence[CaseResult]) -> tuple[JudgedMetric, ...]:
    """Every judged metric with its counts over the evaluated cases."""
    counted = []
    for spec in JUDGED_METRICS:
        values: list[float] = []
        counts = dict.fromkeys((FAILED, NOT_JUDGED_VERDICT, BUDGET_VERDICT, NOT_APPLICABLE), 0)
        seen = False
        for result in results:
            if result.status != "success":
                continue
            verdict, value = case_verdict(spec, result)
            seen = seen or _judge_touched(spec, result)
            if verdict == JUDGED and value is not None:
                values.append(value)
            else:
                counts[verdict] += 1
        if spec.mark is not None and not seen:
            continue  # the judge never computed it (5.x rules: no LLM context metrics)
        counted.append(JudgedMetric(spec.key, spec.label, fmean(values) if values else None, len(values),
                                    counts[FAILED], counts[NOT_APPLICABLE],
                                    counts[NOT_JUDGED_VERDICT] + counts[BUDGET_VERDICT], counts[BUDGET_VERDICT]))
    return tuple(counted)


def case_verdict(spec: JudgedMetricSpec, result: CaseResult) -> tuple[str, float | None]:
    """A case's verdict for one judged metric, and its value (the mean over its turns) when judged."""
    verdicts = [_verdict(spec, qa) for qa in _qa_of(result)]
    return _combine(verdicts)


def _combine(verdicts: Sequence[tuple[str, float | None]]) -> tuple[str, float | None]:
    values = [value for verdict, value in verdicts if verdict == JUDGED and value is not None]
    if values:
        return JUDGED, fmean(values)
    for verdict in (FAILED, NOT_JUDGED_VERDICT, BUDGET_VERDICT):
        if any(found == verdict for found, _ in verdicts):
            return verdict, None
    return NOT_APPLICABLE, None


def _qa_of(result: CaseResult) -> Iterator[QuestionScores]:
    for attempt in result.attempts or (result,):  # every attempt's of a case answered several times
        for turn in attempt.turns:
            if turn.qa is not None:
                yield turn.qa


def _judge_touched(spec: JudgedMetricSpec, result: CaseResult) -> bool:
    """Whether the judge wrote the metric's mark anywhere in the case (see JudgedMetricSpec.mark)."""
    if spec.mark is None:
        return True
    for qa in _qa_of(result):
        if spec.on_steps and any(spec.mark in step for step in steps_of(qa)):
            return True
        if not spec.on_steps and qa.has(spec.mark):
            return True
    return False


def steps_of(qa: QuestionScores) -> list[Mapping[str, Any]]:
    """A question's actual steps (where the judge writes its retrieval keys)."""
    return [step for step in qa.actual_steps or () if isinstance(step, Mapping)]


def _verdict(spec: JudgedMetricSpec, qa: QuestionScores) -> tuple[str, float | None]:
    if not spec.on_steps:
        return _one(qa.has, qa.value, spec)
    return _combine([_one(step.__contains__, step.get, spec) for step in steps_of(qa)])


def _one(has: Callable[[str], bool], get: Callable[[str], Any], spec: JudgedMetricSpec) -> tuple[str, float | None]:
    """The verdict of the keys `has` and `get` read: a question's (`QuestionScores`) or one of its steps'."""
    if spec.mark is not None and not has(spec.mark):
        return NOT_APPLICABLE, None
    value = get(spec.key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isfinite(value):
            return JUDGED, float(value)
        return FAILED, None  # a number that is not finite is never a score
    error = get(spec.error_key)
    if error:
        if str(error).startswith(NOT_JUDGED + BUDGET_REACHED):
            return BUDGET_VERDICT, None
        return (NOT_JUDGED_VERDICT if str(error).startswith(NOT_JUDGED) else FAILED), None
    return NOT_APPLICABLE, None
