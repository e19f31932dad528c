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
small, and is returned as computed (the shares count it as zero).

Two shares of the judge, because they answer two questions (`NoiseShares`):

- *of one judgment*: judge / (judge + attempt + case), the part of one judge's answer's variance
  that is the judge's. It does not move with the repeats: it describes the judge.
- *of a case's value*: the value the metric's mean is taken over is the mean of a case's attempts,
  each the mean of its repeats, so its variance is case + attempt / A + judge / (A x R) for A
  attempts and R repeats (the case's own A and R, averaged over cases, as above). The judge's part
  there is judge / (A x R): with a share of one judgment of 0.5 and one attempt, 0.33, 0.25, 0.17,
  0.09 for 2, 3, 5, 10 repeats.

Each share has a 95 % percentile interval from a bootstrap over cases (whole cases resampled with
their attempts and repeats, `significance.RESAMPLES` draws from `significance.SEED`), and the
planning figure says how many repeats would halve the judge's share of a case's value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, variance
from typing import Any

import numpy as np

from qareport.clustered_statistics import t_quantile
from qareport.judged_metrics import JUDGED_METRICS, REPEATS_SUFFIX, JudgedMetricSpec, steps_of
from qareport.question_scores import QuestionScores
from qareport.records import CaseResult
from qareport.significance import CHUNK, RESAMPLES, SEED

MAX_REPEATS = 20
"""The most repeats `--judge-repeats` allows (`judge.settings`): a plan beyond it is not offered."""


@dataclass(frozen=True, slots=True)
class VarianceSplit:
    """Variance components of one metric (None: not estimable from the data), and what they rest on.

    `inverse_repeats` is the mean over cases of mean(1 / repeats) / attempts (the case's own), the
    factor that turns `judge` into the judge's part of a case's value; `inverse_attempts` is the mean
    over cases of 1 / attempts, the same for `attempt`."""

    judge: float | None
    attempt: float | None
    case: float | None
    cases: int
    cells: int  # (case, attempt) cells with a value
    repeats: int  # values in all
    inverse_repeats: float = 1.0
    inverse_attempts: float = 1.0

    @property
    def mean_repeats(self) -> float:
        """The repeats a case's value rests on, as the judge's part of its variance counts them (the
        harmonic mean over cells, weighted as the cases' values weigh them): N with N repeats everywhere."""
        return self.inverse_attempts / self.inverse_repeats if self.inverse_repeats > 0 else 1.0

    def judge_shares(self) -> tuple[float | None, float | None]:
        """The judge's share of one judgment's variance and of a case's value's (see the module's
        docstring; components below zero count as zero); None where not estimable."""
        if self.judge is None or self.case is None:
            return None, None
        one, used = _shares(*(np.array([part if part is not None else math.nan])
                              for part in (self.judge, self.attempt, self.case, self.inverse_repeats,
                                           self.inverse_attempts)))
        return _number(one[0]), _number(used[0])


@dataclass(frozen=True, slots=True)
class _CaseTotals:
    """Per case (one entry each), the sums `split_variance` needs: a bootstrap draw of cases is then a
    draw of these entries."""

    within_sum: np.ndarray  # sum of the sample variances of the case's cells with two repeats or more
    within_cells: np.ndarray  # how many such cells
    attempts: np.ndarray  # cells of the case
    inverse_repeats: np.ndarray  # mean over the case's cells of 1 / repeats
    attempt_variance: np.ndarray  # sample variance of its attempt means (0 with one attempt)
    mean: np.ndarray  # mean of its attempt means


def _case_totals(cases: Sequence[Sequence[Sequence[float]]]) -> _CaseTotals:
    columns: list[tuple[float, float, float, float, float, float]] = []
    for case in cases:
        within = [variance(cell) for cell in case if len(cell) >= 2]
        means = [fmean(cell) for cell in case]
        columns.append((sum(within), len(within), len(case), fmean(1 / len(cell) for cell in case),
                        variance(means) if len(means) >= 2 else 0.0, fmean(means)))
    within_sum, within_cells, attempts, inverse_repeats, attempt_variance, mean = (
        np.array(column, dtype=float) for column in zip(*columns, strict=True))
    return _CaseTotals(within_sum, within_cells, attempts, inverse_repeats, attempt_variance, mean)


def _case_columns(totals: _CaseTotals) -> np.ndarray:
    """Per case (a row), the quantities whose sums over cases give the components (`_components`)."""
    several = (totals.attempts >= 2).astype(float)
    centred = totals.mean - totals.mean.mean()  # the variance of the means, without cancellation
    return np.column_stack([
        totals.within_sum, totals.within_cells, several, several * totals.attempt_variance,
        several * totals.inverse_repeats, 1 / totals.attempts, totals.inverse_repeats / totals.attempts,
        centred, centred ** 2, np.ones_like(centred)])


def _components(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The three components, one per row of `sums` (the `_case_columns` summed over a set of cases,
    each case as often as it is drawn), NaN where one is not estimable, with the set's inverse repeats
    and inverse attempts (see `VarianceSplit`). One formula for the estimate, its bootstrap draws and
    its jackknife."""
    (within_sum, within_cells, several, attempt_variance, several_repeats, inverse_attempts_sum,
     inverse_repeats_sum, means, squares, count) = sums.T
    with np.errstate(invalid="ignore", divide="ignore"):
        judge = np.where(within_cells > 0, within_sum / within_cells, np.nan)
        noise = np.nan_to_num(judge)
        attempt = np.where(several > 0, (attempt_variance - noise * several_repeats) / several, np.nan)
        expected_within = (np.nan_to_num(attempt) * inverse_attempts_sum + noise * inverse_repeats_sum) / count
        case = np.where(count >= 2, (squares - means ** 2 / count) / (count - 1) - expected_within, np.nan)
        return judge, attempt, case, inverse_repeats_sum / count, inverse_attempts_sum / count


def _usable(cases: Iterable[Sequence[Sequence[float]]]) -> list[list[list[float]]]:
    kept = [[list(attempt) for attempt in case if len(attempt)] for case in cases]
    return [case for case in kept if case]


def _number(value: np.floating[Any] | float) -> float | None:
    return None if math.isnan(value) else float(value)


def split_variance(values: Sequence[Sequence[Sequence[float]]]) -> VarianceSplit:
    """The variance components of per-case lists of per-attempt lists of per-repeat values (see
    the module's docstring). Empty attempts and cases without values are left out."""
    cases = _usable(values)
    cells = [attempt for case in cases for attempt in case]
    if not cases:
        return VarianceSplit(None, None, None, 0, 0, 0)
    judge, attempt, case, inverse_repeats, inverse_attempts = _components(
        _case_columns(_case_totals(cases)).sum(axis=0, keepdims=True))
    return VarianceSplit(_number(judge[0]), _number(attempt[0]), _number(case[0]), len(cases), len(cells),
                         sum(len(cell) for cell in cells), float(inverse_repeats[0]), float(inverse_attempts[0]))


def _shares(judge: np.ndarray, attempt: np.ndarray, case: np.ndarray, inverse_repeats: np.ndarray,
            inverse_attempts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The judge's share of one judgment and of a case's value (NaN where not estimable), components
    below zero counted as zero."""
    judge_part, case_part = np.clip(judge, 0.0, None), np.clip(case, 0.0, None)
    attempt_part = np.clip(np.nan_to_num(attempt), 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        one = judge_part / (judge_part + attempt_part + case_part)
        used_judge = judge_part * inverse_repeats
        used = used_judge / (used_judge + attempt_part * inverse_attempts + case_part)
    return one, used


@dataclass(frozen=True, slots=True)
class Share:
    """A share of the variance with its 95 % bootstrap interval (None: too few cases to resample)."""

    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class NoiseShares:
    """The judge's share of one judgment and of a case's value (the mean of its repeats), each with
    its interval, and the repeats that would halve the share of a case's value.

    `repeats_to_halve` is the fewest repeats with which the judge's share of a case's value would be
    at most half of today's, the other components as estimated; None when no number of repeats up
    to `MAX_REPEATS` does it (the judge dominates: a steadier judge is needed) or the share is zero."""

    one_judgment: Share
    case_value: Share
    repeats: float  # `VarianceSplit.mean_repeats`
    repeats_to_halve: int | None


def noise_shares(values: Sequence[Sequence[Sequence[float]]], *, resamples: int = RESAMPLES,
                 seed: int = SEED, level: float = 0.95) -> NoiseShares | None:
    """The judge's shares (see the module's docstring) of per-case lists of per-attempt lists of
    per-repeat values; None when they cannot be estimated (no judgment repeated, fewer than two
    cases, or no variance at all)."""
    cases = _usable(values)
    if len(cases) < 2:
        return None
    columns = _case_columns(_case_totals(cases))
    estimate = _components(columns.sum(axis=0, keepdims=True))
    one, used = (float(share[0]) for share in _shares(*estimate))
    if math.isnan(one) or math.isnan(used):
        return None
    generator = np.random.default_rng(seed)
    drawn_one, drawn_used = [], []
    for done in range(0, resamples, CHUNK):  # each draw: how often each case is drawn, n draws in all
        weights = generator.multinomial(len(cases), np.full(len(cases), 1 / len(cases)),
                                        size=min(CHUNK, resamples - done))
        one_draws, used_draws = _shares(*_components(weights @ columns))
        drawn_one.append(one_draws)
        drawn_used.append(used_draws)
    # leave-one-case-out estimates, for the BCa interval's acceleration: the sums less each case's part
    jack_one, jack_used = _shares(*_components(columns.sum(axis=0) - columns))

    def share(value: float, draws: list[np.ndarray], jackknife: np.ndarray) -> Share:
        found = np.concatenate(draws)
        found = found[~np.isnan(found)]
        if found.size < 0.9 * resamples or np.isnan(jackknife).any():  # too often not estimable: no interval
            return Share(value, None, None)
        low, high = _bca_interval(value, found, jackknife, level=level)
        return Share(value, low, high)

    judge, attempt, case, inverse_repeats, inverse_attempts = (float(part[0]) for part in estimate)
    repeats = inverse_attempts / inverse_repeats
    return NoiseShares(share(one, drawn_one, jack_one), share(used, drawn_used, jack_used), repeats,
                       repeats_to_halve(max(judge, 0.0) * inverse_attempts,
                                        max(attempt if not math.isnan(attempt) else 0.0, 0.0) * inverse_attempts
                                        + max(case, 0.0), repeats=repeats))


def _bca_interval(estimate: float, draws: np.ndarray, jackknife: np.ndarray, *, level: float) -> tuple[float, float]:
    """The bias-corrected and accelerated bootstrap interval (Efron, 1987; Efron & Tibshirani, *An
    Introduction to the Bootstrap*, 1993, ch. 14): the percentile interval moved for the estimate's
    bias (the share of draws below it) and for its skew (the acceleration, from the jackknife). A
    variance ratio is skewed, and the plain percentile interval covers it too seldom with few cases."""
    normal = NormalDist()
    below = (np.sum(draws < estimate) + 0.5 * np.sum(draws == estimate)) / draws.size
    bias = normal.inv_cdf(min(max(float(below), 1 / (draws.size + 1)), 1 - 1 / (draws.size + 1)))
    cases = jackknife.size
    spread = jackknife.mean() - jackknife
    squares = float(np.sum(spread ** 2))
    acceleration = float(np.sum(spread ** 3)) / (6 * squares ** 1.5) if squares > 0 else 0.0
    tails = []
    for quantile in ((1 - level) / 2, (1 + level) / 2):
        # the expanded percentile of Hesterberg (2015): a t quantile, for the few cases a suite has
        t = t_quantile(max(quantile, 1 - quantile), cases - 1)
        expanded = math.sqrt(cases / (cases - 1)) * (t if quantile >= 0.5 else -t)
        z = bias + expanded
        tails.append(normal.cdf(bias + z / (1 - acceleration * z)))
    low, high = np.quantile(draws, tails)
    return float(low), float(high)


def repeats_to_halve(judge: float, system: float, *, repeats: float) -> int | None:
    """The fewest repeats R' with which the judge's share of a case's value, judge / R' / (judge / R'
    + system), is at most half of what it is with `repeats`: `judge` is the judge's variance of one
    judgment of a case's value (over its attempts), `system` the rest of that value's variance. None
    when no R' up to `MAX_REPEATS` does it, or the share is zero already."""
    if judge <= 0:
        return None
    share = (judge / repeats) / (judge / repeats + system)
    target = share / 2
    if system <= 0:
        return None  # the judge is all the variance: no number of repeats halves its share
    # judge / R' / (judge / R' + system) <= target  <=>  R' >= judge * (1 - target) / (target * system)
    needed = max(1, math.ceil(judge * (1 - target) / (target * system) - 1e-9))
    return needed if needed <= MAX_REPEATS else None


@dataclass(frozen=True, slots=True)
class JudgeNoise:
    """The variance split of one judged metric of a run judged with repeats, and the judge's shares."""

    key: str
    label: str
    split: VarianceSplit
    shares: NoiseShares | None = None

    @property
    def judge_share(self) -> float | None:
        """The judge's share of one judgment's variance (components below zero count as zero)."""
        return self.split.judge_shares()[0]

    @property
    def judge_share_of_value(self) -> float | None:
        """The judge's share of the variance of a case's value, the mean of its repeats."""
        return self.split.judge_shares()[1]

    def plan(self) -> str | None:
        """The planning line: "answer F1: with 3 repeats the judge is 25 % of a case's value (95 % 12–40 %);
        7 repeats would halve that"; None without shares."""
        shares = self.shares
        if shares is None:
            return None
        used = shares.case_value
        line = f"{self.label}: with {_repeats(shares.repeats)} the judge is {_percent(used.value)} of a case's value"
        if used.low is not None and used.high is not None:
            line += f" (95 % {_percent(used.low, sign=False)}–{_percent(used.high)})"
        if used.value <= 0:
            return line + "; more repeats would not change it"
        if shares.repeats_to_halve is None:
            return line + f"; no number of repeats up to {MAX_REPEATS} halves that: a steadier judge would"
        return line + f"; {shares.repeats_to_halve} repeats would halve that"

    def to_dict(self) -> dict[str, Any]:
        split = self.split
        found: dict[str, Any] = {
            "key": self.key, "label": self.label, "cases": split.cases, "values": split.repeats,
            "judge_variance": split.judge, "attempts_variance": split.attempt, "cases_variance": split.case,
            "judge_share": self.judge_share}
        if self.shares is not None:
            shares = self.shares
            found.update({
                "judge_share_low": shares.one_judgment.low, "judge_share_high": shares.one_judgment.high,
                "repeats": shares.repeats,
                "judge_share_of_value": shares.case_value.value, "judge_share_of_value_low": shares.case_value.low,
                "judge_share_of_value_high": shares.case_value.high, "repeats_to_halve": shares.repeats_to_halve,
                "plan": self.plan()})
        return found


def _percent(value: float, *, sign: bool = True) -> str:
    return f"{value * 100:.0f}" + (" %" if sign else "")


def _repeats(repeats: float) -> str:
    shown = f"{repeats:.0f}" if abs(repeats - round(repeats)) < 0.05 else f"{repeats:.1f}"
    return f"{shown} repeat{'' if shown == '1' else 's'}"


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
            found.append(JudgeNoise(spec.key, spec.label, split_variance(per_case), noise_shares(per_case)))
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
