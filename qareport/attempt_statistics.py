"""How a case's attempts add up: pass@k and pass^k over a suite, and whether one case changed
between two runs by more than its own attempts vary.

Pure functions, like `clustered_statistics.py` and `significance.py` beside them (whose level, seed,
permutation count and chunk size they share).

- `pass_at_k`, `pass_hat_k`, `suite_pass_rates`: the unbiased estimators of pass@k and pass^k.
- `decide_case_change`: whether one case regressed, improved or moved within noise, from the two
  runs' attempts of it (a permutation test over the attempts of one metric).
- `separate_attempts`: the rule the comparison lists cases by: a case regressed (improved) when, in
  any of its metrics, every attempt of this run lies below (above) every attempt of the last, and its
  chance of doing so by luck alone; `chance_of_at_least`: how likely that many such cases are by luck.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from qareport.significance import ALPHA, CHUNK, PERMUTATIONS, SEED

MINIMUM_ATTEMPTS = 2
EXACT_SPLITS_UP_TO = 20_000  # a case's attempts: every split enumerated up to this many splits


@dataclass(frozen=True, slots=True)
class PassRates:
    """A suite's mean pass@k and pass^k over the cases with at least k attempts."""

    k: int
    pass_at_k: float
    pass_hat_k: float
    cases: int
    too_few_attempts: int  # cases left out: fewer than k attempts


class CaseVerdict(enum.Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    WITHIN_NOISE = "within noise"
    CANNOT_TELL = "cannot tell"


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One case's change between two runs, judged against the spread of its own attempts."""

    verdict: CaseVerdict
    p_value: float | None  # None when the test was not run (too few attempts)
    old_mean: float | None
    new_mean: float | None
    old_attempts: int
    new_attempts: int
    exact: bool
    reason: str

    @property
    def delta(self) -> float | None:
        if self.old_mean is None or self.new_mean is None:
            return None
        return self.new_mean - self.old_mean


# --------------------------------------------------------------------------------------------------
# 5. pass@k and pass^k


def _check_counts(attempts: int, passes: int, k: int) -> None:
    if not (0 <= passes <= attempts and 1 <= k <= attempts):
        raise ValueError(f"need 0 <= passes <= attempts and 1 <= k <= attempts "
                         f"(got {passes} passes of {attempts} attempts, k = {k})")


def pass_at_k(attempts: int, passes: int, k: int) -> float:
    """The chance that at least one of k attempts drawn without replacement from a case's n
    attempts (c of them passing) passes: 1 - C(n - c, k) / C(n, k), the unbiased estimator of
    pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"). Exact (rational
    arithmetic, then one rounding to float)."""
    _check_counts(attempts, passes, k)
    return float(1 - Fraction(math.comb(attempts - passes, k), math.comb(attempts, k)))


def pass_hat_k(attempts: int, passes: int, k: int) -> float:
    """pass^k: the chance that all of k attempts drawn without replacement pass, C(c, k) / C(n, k)
    (Yao et al. 2024, tau-bench), the unbiased estimator of p^k for a case that passes with
    probability p. Exact, like `pass_at_k`."""
    _check_counts(attempts, passes, k)
    return float(Fraction(math.comb(passes, k), math.comb(attempts, k)))


def suite_pass_rates(counts: Sequence[tuple[int, int]], *, k: int) -> PassRates | None:
    """The means of pass@k and pass^k over the cases, `counts` holding (attempts, passes) per case.
    Cases with fewer than k attempts are left out (counted in `too_few_attempts`); None when no case
    has k attempts."""
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    usable = [(attempts, passes) for attempts, passes in counts if attempts >= k]
    for attempts, passes in usable:
        _check_counts(attempts, passes, k)
    if not usable:
        return None
    at_k = sum((1 - Fraction(math.comb(n - c, k), math.comb(n, k)) for n, c in usable), Fraction(0))
    hat_k = sum((Fraction(math.comb(c, k), math.comb(n, k)) for n, c in usable), Fraction(0))
    return PassRates(k, float(at_k / len(usable)), float(hat_k / len(usable)), len(usable), len(counts) - len(usable))


# --------------------------------------------------------------------------------------------------
# 6. one case, two runs


def decide_case_change(old_attempts: Sequence[float], new_attempts: Sequence[float], *,
                       minimum_attempts: int = MINIMUM_ATTEMPTS, alpha: float = ALPHA,
                       higher_is_better: bool = True, permutations: int = PERMUTATIONS,
                       seed: int = SEED) -> CaseChange:
    """Did this case change between two runs by more than its own attempts vary?

    A two-sided permutation test of the difference of means: under "no change" the two runs'
    attempts are exchangeable, so every split of the pooled attempts into groups of the two sizes is
    as likely as the one observed; p is the share of splits whose |difference of means| is at least
    the observed one. Exact (every split) when there are at most `EXACT_SPLITS_UP_TO` splits, else
    `permutations` seeded random splits, p = (at least as extreme + 1) / (permutations + 1).

    Verdicts, in this order: *cannot tell* when either run has fewer than `minimum_attempts`
    attempts (the test is not run, p is None: one attempt per run cannot tell a change from a flip);
    *within noise* when the means are equal ("did not move"); *cannot tell* when attempts of these
    numbers could not reach `alpha` whatever their values (the smallest attainable p is
    2 / C(n_old + n_new, n_old) for equal numbers, whose most extreme split has an equally extreme
    mirror image, and 1 / C(n_old + n_new, n_old) otherwise: 3 attempts against 3 cannot go below
    2 / 20 = 0.1, so at the 5 % level they never decide; 4 against 4 reach 2 / 70 = 0.029, 5 against
    5 reach 2 / 252 = 0.008); *regressed* or *improved* when p <= alpha (by the direction of the change and
    `higher_is_better`); *within noise* otherwise.
    """
    if minimum_attempts < 1:
        raise ValueError(f"minimum_attempts must be at least 1 (got {minimum_attempts})")
    before = np.asarray(old_attempts, dtype=float)
    after = np.asarray(new_attempts, dtype=float)
    if not (np.all(np.isfinite(before)) and np.all(np.isfinite(after))):
        raise ValueError(f"attempts must be finite numbers (got {list(old_attempts)!r} and {list(new_attempts)!r})")
    old_mean = float(before.mean()) if before.size else None
    new_mean = float(after.mean()) if after.size else None
    sizes = (int(before.size), int(after.size))
    if min(sizes) < minimum_attempts:
        reason = (f"{sizes[0]} attempt(s) before and {sizes[1]} after, fewer than {minimum_attempts} on a side: "
                  + ("one attempt per run cannot tell a change from a flip" if min(sizes) == 1
                     else "too few attempts to tell a change from a flip"))
        return CaseChange(CaseVerdict.CANNOT_TELL, None, old_mean, new_mean, *sizes, False, reason)
    assert old_mean is not None and new_mean is not None
    pooled = np.concatenate([before, after])
    splits = math.comb(pooled.size, after.size)
    observed = abs(new_mean - old_mean)
    total = float(pooled.sum())

    def differences(new_sums: np.ndarray) -> np.ndarray:
        return np.abs(new_sums / after.size - (total - new_sums) / before.size)

    tolerance = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    # the smallest p-value these sizes allow (distinct values, the most extreme split): with equal
    # sizes that split's mirror image is as extreme
    smallest = (2 if before.size == after.size else 1) / splits
    if splits <= EXACT_SPLITS_UP_TO:
        chosen = np.array(list(itertools.combinations(range(pooled.size), after.size)))
        spread = differences(pooled[chosen].sum(axis=1))
        p_value = float(np.mean(spread >= observed - tolerance))
        exact = True
    else:
        generator = np.random.default_rng(seed)
        at_least = 0
        for done in range(0, permutations, CHUNK):
            order = generator.random((min(CHUNK, permutations - done), pooled.size)).argsort(axis=1)
            at_least += int(np.sum(differences(pooled[order[:, :after.size]].sum(axis=1)) >= observed - tolerance))
        p_value, exact = float((at_least + 1) / (permutations + 1)), False
    moved = new_mean - old_mean
    shown = round(moved, 3) + 0.0  # as the reason says it: no 8e-17, no -0
    if observed <= tolerance:
        return CaseChange(CaseVerdict.WITHIN_NOISE, p_value, old_mean, new_mean, *sizes, exact, "did not move")
    if smallest > alpha:
        reason = (f"moved {shown:+.3g} (p = {p_value:.3g}), but {sizes[0]} attempts before and {sizes[1]} after "
                  f"cannot reach the {alpha:g} level (smallest attainable p {smallest:.3g}): more attempts are needed")
        return CaseChange(CaseVerdict.CANNOT_TELL, p_value, old_mean, new_mean, *sizes, exact, reason)
    if p_value > alpha:
        reason = f"moved {shown:+.3g}, within what its attempts vary by (p = {p_value:.3g})"
        return CaseChange(CaseVerdict.WITHIN_NOISE, p_value, old_mean, new_mean, *sizes, exact, reason)
    verdict = CaseVerdict.IMPROVED if (moved > 0) == higher_is_better else CaseVerdict.REGRESSED
    reason = f"moved {shown:+.3g}, beyond what its attempts vary by (p = {p_value:.3g})"
    return CaseChange(verdict, p_value, old_mean, new_mean, *sizes, exact, reason)


# --------------------------------------------------------------------------------------------------
# 7. one case, two runs, every metric: complete separation


@dataclass(frozen=True, slots=True)
class Separation:
    """Whether a case's attempts separate completely between two runs, in any of its metrics.

    `down` and `up` name the metrics in which every attempt of the new run lies below (above) every
    attempt of the old one. `chance_down` (`chance_up`) is the probability of a separation downwards
    (upwards) in some metric if the case had not changed: every split of its pooled attempts into the
    two runs' numbers equally likely (the attempts exchangeable), the attempts' values as observed."""

    verdict: CaseVerdict
    down: tuple[str, ...]
    up: tuple[str, ...]
    chance_down: float
    chance_up: float
    old_attempts: int
    new_attempts: int


def separate_attempts(old: Mapping[str, Sequence[float]], new: Mapping[str, Sequence[float]], *,
                      minimum_attempts: int = MINIMUM_ATTEMPTS) -> Separation:
    """Did this case change beyond what its own attempts vary by, in any metric? `old` and `new` map
    each metric to its values over the attempts of each run (in attempt order; higher is better).

    *Regressed* when in some metric every new attempt is strictly below every old one (3 of 3 passing
    then 0 of 3 always is), *improved* when strictly above in some metric and below in none, *within
    noise* when the attempts overlap in every metric, *cannot tell* when no metric has
    `minimum_attempts` attempts in both runs (one run per case cannot tell a change from a flip).

    The chance of a separation by luck: for one metric, a downward separation is one split of the
    pooled attempts (the new run's number of lowest values, when a gap parts them from the rest), so
    its chance is 1 / C(pooled, new) or 0 when ties leave no gap (4 passes of 8 pooled 0/1 attempts
    against 4 and 4: 1 / 70). Metrics measured on the same attempts (the same number in both runs)
    share the splits: the chance is the number of distinct separating splits over C(pooled, new).
    Metrics with other numbers of attempts add their chance (an upper bound)."""
    down: list[str] = []
    up: list[str] = []
    splits_down: dict[tuple[int, int], set[frozenset[int]]] = {}
    splits_up: dict[tuple[int, int], set[frozenset[int]]] = {}
    sizes: tuple[int, int] = (0, 0)
    for metric in old:
        before = [float(v) for v in old[metric]]
        after = [float(v) for v in new.get(metric, ())]
        if min(len(before), len(after)) < minimum_attempts:
            continue
        sizes = max(sizes, (len(before), len(after)))
        if max(after) < min(before):
            down.append(metric)
        elif min(after) > max(before):
            up.append(metric)
        pooled = before + after
        shape = (len(before), len(after))
        for split, found in ((_lowest(pooled, len(after)), splits_down), (_lowest([-v for v in pooled], len(after)),
                                                                          splits_up)):
            if split is not None:
                found.setdefault(shape, set()).add(split)
    chance_down = min(1.0, sum(len(found) / math.comb(a + b, b) for (a, b), found in splits_down.items()))
    chance_up = min(1.0, sum(len(found) / math.comb(a + b, b) for (a, b), found in splits_up.items()))
    if down:
        verdict = CaseVerdict.REGRESSED
    elif up:
        verdict = CaseVerdict.IMPROVED
    else:
        verdict = CaseVerdict.WITHIN_NOISE if sizes != (0, 0) else CaseVerdict.CANNOT_TELL
    return Separation(verdict, tuple(down), tuple(up), chance_down, chance_up, *sizes)


def _lowest(values: Sequence[float], count: int) -> frozenset[int] | None:
    """The indices of the `count` lowest values when a gap parts them from the others, else None."""
    order = sorted(range(len(values)), key=lambda index: values[index])
    if values[order[count - 1]] < values[order[count]]:
        return frozenset(order[:count])
    return None


def chance_of_at_least(observed: int, chances: Sequence[float]) -> float:
    """The probability that at least `observed` of independent events with these chances happen (the
    Poisson-binomial tail, computed exactly by convolution): how likely a list of that many separated
    cases is from luck alone, when every case is unchanged."""
    if observed <= 0:
        return 1.0
    counts = np.zeros(observed + 1)  # counts[j]: P(j events so far), the last slot "observed or more"
    counts[0] = 1.0
    for chance in chances:
        moved = counts * chance
        counts = counts * (1 - chance)
        counts[1:] += moved[:-1]
        counts[-1] += moved[-1]
    return float(min(1.0, counts[-1]))
