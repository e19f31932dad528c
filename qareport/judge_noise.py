"""How much of a judged metric's variance is the judge's, and how much the system's.

With `--judge-repeats N` every judgment is asked N times, and each repeat's value is kept beside
the mean (`<value key>_repeats`: one number per repeat, None for a repeat that gave none). The
values of a metric then form a nested design: cases, the attempts of a case (one per case until
the run has attempts per case), the repeats of an attempt's judgment. In the random-effects model

    y[case, attempt, repeat] = mu + c[case] + a[case, attempt] + e[case, attempt, repeat]

with independent c (variance `case`), a (`attempt`) and e (`judge`), `split_variance` estimates
the three components by the method of moments (one-way / nested ANOVA, unbalanced):

- judge: the mean, over the (case, attempt) cells with at least two repeats, of the sample
  variance (n - 1 denominator) of the cell's repeats. Each is unbiased for `judge`.
- attempt: over the cases with at least two attempts, the sample variance of the case's attempt
  means, less what the repeats explain (`judge` times the mean of 1 / repeats over its
  attempts), averaged. None with one attempt per case: then `case` holds it too (the system).
- case: the sample variance of the case means (each the mean of its attempt means) less their
  expected within-case part (attempt / attempts + judge x mean(1 / repeats) / attempts, averaged
  over cases).

Each estimate is unbiased; one may come out slightly below zero by chance when its component is
small, and is returned as computed (`JudgeNoise.judge_share` counts it as zero).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean, variance
from typing import Any

from qareport.judged_metrics import JUDGED_METRICS, REPEATS_SUFFIX, JudgedMetricSpec, steps_of
from qareport.question_scores import QuestionScores
from qareport.records import CaseResult


@dataclass(frozen=True, slots=True)
class VarianceSplit:
    """Variance components of one metric (None: not estimable from the data), and what they rest on."""

    judge: float | None
    attempt: float | None
    case: float | None
    cases: int
    cells: int  # (case, attempt) cells with a value
    repeats: int  # values in all


def split_variance(values: Sequence[Sequence[Sequence[float]]]) -> VarianceSplit:
    """The variance components of per-case lists of per-attempt lists of per-repeat values (see
    the module's docstring). Empty attempts and cases without values are left out."""
    cases = [[list(attempt) for attempt in case if len(attempt)] for case in values]
    cases = [case for case in cases if case]
    cells = [attempt for case in cases for attempt in case]
    within = [variance(cell) for cell in cells if len(cell) >= 2]
    judge = fmean(within) if within else None
    noise = judge if judge is not None else 0.0

    def repeat_part(case: Sequence[Sequence[float]]) -> float:
        """What the repeats add to the variance of one attempt mean, on average over the case."""
        return noise * fmean(1 / len(cell) for cell in case)

    several = [case for case in cases if len(case) >= 2]
    attempt = None
    if several and (judge is not None or all(len(cell) == 1 for case in several for cell in case)):
        attempt = fmean(variance([fmean(cell) for cell in case]) - repeat_part(case) for case in several)
    case_component = None
    if len(cases) >= 2 and (judge is not None or all(len(cell) == 1 for cell in cells)) and \
            (attempt is not None or all(len(case) == 1 for case in cases)):
        means = [fmean(fmean(cell) for cell in case) for case in cases]
        expected_within = fmean(((attempt or 0.0) + repeat_part(case)) / len(case) for case in cases)
        case_component = variance(means) - expected_within
    return VarianceSplit(judge, attempt, case_component, len(cases), len(cells), sum(len(cell) for cell in cells))


@dataclass(frozen=True, slots=True)
class JudgeNoise:
    """The variance split of one judged metric of a run judged with repeats."""

    key: str
    label: str
    split: VarianceSplit

    @property
    def judge_share(self) -> float | None:
        """The judge's share of the metric's variance (components below zero count as zero)."""
        parts = [self.split.judge, self.split.attempt, self.split.case]
        if self.split.judge is None or self.split.case is None:
            return None
        total = sum(max(part, 0.0) for part in parts if part is not None)
        return max(self.split.judge, 0.0) / total if total > 0 else None

    def to_dict(self) -> dict[str, Any]:
        split = self.split
        return {"key": self.key, "label": self.label, "cases": split.cases, "values": split.repeats,
                "judge_variance": split.judge, "attempts_variance": split.attempt, "cases_variance": split.case,
                "judge_share": self.judge_share}


def judge_noise(results: Sequence[CaseResult]) -> tuple[JudgeNoise, ...]:
    """The variance split of every judged metric with per-repeat values in `results` (a run
    judged with repeats); empty otherwise. A case answered several times gives one list of repeats
    per attempt (`CaseResult.attempts`), else it is one attempt; an attempt's repeats of a value are
    its turns' (and a turn's retrieval steps') repeats, each position averaged."""
    found = []
    for spec in JUDGED_METRICS:
        per_case = []
        for result in results:
            if result.status != "success":
                continue
            attempts = [repeats for attempt in (result.attempts or (result,))
                        if (repeats := _case_repeats(spec, (t.qa for t in attempt.turns if t.qa is not None)))]
            if attempts:
                per_case.append(attempts)
        if per_case:
            found.append(JudgeNoise(spec.key, spec.label, split_variance(per_case)))
    return tuple(found)


def _case_repeats(spec: JudgedMetricSpec, qas: Iterable[QuestionScores]) -> list[float]:
    """Per repeat, the mean of the case's values of that repeat (a turn or step without one skipped)."""
    by_repeat: dict[int, list[float]] = {}
    for qa in qas:
        found = ([step.get(spec.key + REPEATS_SUFFIX) for step in steps_of(qa)] if spec.on_steps
                 else [qa.value(spec.key + REPEATS_SUFFIX)])
        for repeats in found:
            if not isinstance(repeats, list):
                continue
            for number, value in enumerate(repeats):
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    by_repeat.setdefault(number, []).append(float(value))
    return [fmean(by_repeat[number]) for number in sorted(by_repeat)]
