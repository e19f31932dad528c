"""How sure is a number when cases come in clusters and with several attempts each?

Pure functions, like `significance.py` beside them (whose seed, resample and permutation counts and
exact-enumeration limit they share): the same input always gives the same output, every random draw
coming from a generator seeded with a fixed number.

The data. A suite has *cases*; a case's value for a metric is one number, or the mean of its
*attempts* when the system was run on it several times. Cases may come in *clusters* (the template
a graphrag-eval question was generated from, a declared group of conversation cases) whose cases
succeed and fail together; a case without a cluster is a cluster of its own. Clusters are assumed
independent of each other; nothing is assumed about the cases inside one cluster. Every mean
below is a mean over cases (each case weighs the same, whatever its cluster's size or its number of
attempts).

- `clustered_interval`: the mean and its 95 % cluster bootstrap interval (whole clusters resampled
  with replacement, each keeping all its cases and each case the mean of its attempts as observed:
  attempts are not resampled), with the cluster-robust standard error (CR1) and the design effect.
- `clustered_paired_change`: the mean change between two runs over shared cases, its cluster
  bootstrap interval, and a cluster sign-flip test of "no change".
- `minimum_detectable_change`: the smallest change a paired comparison of this size detects with
  80 % power at the 5 % level (two-sided).
- `holm`: adjusted p-values holding the family-wise error rate (the headline metrics, the primary family).
- `benjamini_hochberg`: adjusted p-values (q-values) and the discoveries at a false discovery rate
  (each secondary family: the tags, the templates, the dimensions).

How a case's attempts add up (pass@k, one case's change between two runs) is in `attempt_statistics.py`.

This module is one concept, though over 500 lines: the interval, the paired test, the change it can detect and how
its flags are decided are one chain resting on the same clusters, the same draws and the same level;
each step reads the previous one's internals (the cluster numbering, the CR1 standard error).

Why attempts are not resampled: a cluster's mean already varies, from suite to suite, by its
cases' and its attempts' variation; resampling whole clusters reproduces that variation, attempt
noise included. Resampling the attempts again inside each drawn case (a two-stage bootstrap) would
count the attempt noise twice and widen the interval (Davison & Hinkley, *Bootstrap Methods and
their Application*, 1997, on hierarchical data: resample at the top level).

A test here is *beyond noise* at level alpha when p <= alpha: for an exact or a Monte Carlo
p-value of the form (k + 1) / (B + 1), the chance of that under the null hypothesis is at most alpha.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from qareport.attempt_statistics import (  # re-exported: comparison.py imports them from here
    MINIMUM_ATTEMPTS as MINIMUM_ATTEMPTS,
)
from qareport.attempt_statistics import CaseChange as CaseChange
from qareport.attempt_statistics import CaseVerdict as CaseVerdict
from qareport.attempt_statistics import decide_case_change as decide_case_change
from qareport.significance import CHUNK, EXACT_UP_TO, LARGE, PERMUTATIONS, RESAMPLES, SEED

ALPHA = 0.05
FEW_CLUSTERS = 30
"""Below this many clusters a cluster bootstrap's percentile interval is too narrow (the resampled
means of few clusters vary less than the mean does from suite to suite); the interval is then at
least mean +/- t(G - 1) * CR1 standard error, the small-sample rule of Cameron & Miller (2015)."""
POWER = 0.8
T_EXACT_UP_TO = 1_000  # degrees of freedom up to which `t_quantile` is used; above, the normal quantile
RESOLVED_DRAWS = 10
"""A Monte Carlo sign-flip p-value rests on the draws at least as extreme as the data; with fewer
than this many it is mostly the floor 1 / (draws + 1), and the normal tail is used instead, so that
a p-value is never stuck at 1 / 10,001 however far out the change lies."""
NEAR_BOUND = 0.1
"""A mean of values in [0, 1] within this of 0 or 1 gets the Wilson interval too (`_interval_of`):
near a bound the spread of a few cases understates how far the truth may lie."""

CaseValue = float | Sequence[float]  # one value, or the values of a case's attempts
ClusterLabel = Hashable | None  # None: the case is a cluster of its own


# --------------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True, slots=True)
class ClusteredInterval:
    """A mean over cases, its 95 % cluster bootstrap interval and its cluster-robust standard error.

    `standard_error` is the CR1 standard error of the mean (None with fewer than two clusters);
    `naive_standard_error` is standard_deviation / sqrt(cases), the one that treats every case as
    independent; `design_effect` is (standard_error / naive_standard_error) ** 2 (None when either
    is missing or the naive one is 0). `standard_deviation` is the cases' sample standard deviation
    (n - 1 in the denominator; 0 for one case)."""

    mean: float
    low: float
    high: float
    cases: int
    clusters: int
    standard_error: float | None
    naive_standard_error: float
    design_effect: float | None
    standard_deviation: float


@dataclass(frozen=True, slots=True)
class ClusteredPairedChange:
    """The mean change new - old over the shared cases, its interval, and the cluster sign-flip test.

    `interval` describes the per-case differences (its mean is `delta`); `exact` says every sign
    pattern of the clusters was enumerated (no Monte Carlo, no normal approximation)."""

    delta: float
    low: float
    high: float
    p_value: float
    exact: bool
    interval: ClusteredInterval

    @property
    def cases(self) -> int:
        return self.interval.cases

    @property
    def clusters(self) -> int:
        return self.interval.clusters

    def beyond_noise(self, alpha: float = ALPHA) -> bool:
        """p <= alpha. Across the many flags of a run, decide with `benjamini_hochberg` instead."""
        return self.p_value <= alpha


@dataclass(frozen=True, slots=True)
class MinimumDetectableChange:
    """The smallest true change a two-sided test at `alpha` detects with probability `power`."""

    change: float
    standard_error: float  # of the mean change, clustered
    cases: int
    clusters: int
    design_effect: float
    alpha: float
    power: float


@dataclass(frozen=True, slots=True)
class FalseDiscoveries:
    """Benjamini-Hochberg over a list of p-values: each one's q-value, and the discoveries (indices
    into the list, ascending) at the false discovery rate `level`."""

    q_values: tuple[float, ...]
    discoveries: tuple[int, ...]
    level: float



# --------------------------------------------------------------------------------------------------
# input shapes


def _case_means(values: Sequence[CaseValue] | np.ndarray, what: str) -> np.ndarray:
    """One number per case: the value itself, or the mean of the case's attempts (a numpy array of
    one value per case, or of cases x attempts, is taken as it is)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf" and (
            values.ndim == 1 or (values.ndim == 2 and values.shape[1] > 0)):
        means = values.astype(float) if values.ndim == 1 else values.astype(float).mean(axis=1)
    else:
        means = np.empty(len(values), dtype=float)
        for index, value in enumerate(values):
            if isinstance(value, numbers.Real):
                means[index] = float(value)
                continue
            attempts = np.asarray(value, dtype=float)
            if attempts.ndim != 1 or attempts.size == 0:
                raise ValueError(f"{what}: case {index} must have a value or at least one attempt (got {value!r})")
            means[index] = float(attempts.mean())
    if not np.all(np.isfinite(means)):
        bad = int(np.flatnonzero(~np.isfinite(means))[0])
        raise ValueError(f"{what}: case {bad} must have finite values (got {values[bad]!r})")
    return means


def _cluster_ids(cases: int, clusters: Sequence[ClusterLabel] | None) -> np.ndarray:
    """Cluster numbers 0, 1, ... in order of first appearance; a case without a label is its own.

    When every case lies in one cluster the cases are the units instead: there is nothing to resample
    or flip between clusters, so the only question the data can answer is about that cluster's own
    cases (the same rule a tag or template whose cases share one cluster follows, so the suite and
    a tag holding the same cases never disagree)."""
    if clusters is None:
        return np.arange(cases)
    if len(clusters) != cases:
        raise ValueError(f"clusters must name one cluster (or None) per case (got {len(clusters)} for {cases} cases)")
    numbers: dict[object, int] = {}
    ids = np.empty(cases, dtype=np.int64)
    for index, label in enumerate(clusters):
        key: object = ("case", index) if label is None else ("cluster", label)
        ids[index] = numbers.setdefault(key, len(numbers))
    if len(numbers) == 1:
        return np.arange(cases)
    return ids


def _z(probability: float) -> float:
    return NormalDist().inv_cdf(probability)


def _t_central_probability(t: float, degrees_of_freedom: int) -> float:
    """P(|T| <= t) for Student's t with an integer number of degrees of freedom, t >= 0: the finite
    series in theta = atan(t / sqrt(nu)) of Abramowitz & Stegun 26.7.3 (odd nu) and 26.7.4 (even nu).
    Closed form, so no integration step to tune; the terms are added with `math.fsum`, correctly
    rounded, so every interpreter gives the same bits (`sum` of floats changed in Python 3.12)."""
    theta = math.atan(t / math.sqrt(degrees_of_freedom))
    sine, cosine = math.sin(theta), math.cos(theta)
    cosine_squared = cosine * cosine
    # term k is the previous one times cos^2(theta) * (2k - 1) / (2k) (even nu) or 2k / (2k + 1) (odd nu)
    odd = degrees_of_freedom % 2
    terms: list[float] = []
    term = 1.0
    for k in range(1, (degrees_of_freedom - 1) // 2 if odd else degrees_of_freedom // 2):
        term *= cosine_squared * (2 * k if odd else 2 * k - 1) / (2 * k + 1 if odd else 2 * k)
        terms.append(term)
    if not odd:
        return sine * math.fsum([1.0, *terms])
    if degrees_of_freedom == 1:
        return 2 / math.pi * theta
    return 2 / math.pi * (theta + sine * cosine * math.fsum([1.0, *terms]))


@functools.lru_cache(maxsize=64)
def t_quantile(probability: float, degrees_of_freedom: int) -> float:
    """Student's t quantile, for 0.5 <= probability < 1 and an integer number of degrees of freedom:
    the closed-form CDF (`_t_central_probability`) inverted by bisection to the last bit; within
    1e-10 of scipy's `t.ppf` for 1 to 1,000 degrees of freedom (a test checks it), and the same
    value on every interpreter."""
    if not 0.5 <= probability < 1 or degrees_of_freedom < 1:
        raise ValueError(f"need 0.5 <= probability < 1 and degrees of freedom >= 1 (got {probability}, "
                         f"{degrees_of_freedom})")
    if probability == 0.5:
        return 0.0
    central = 2 * probability - 1  # P(|T| <= t) at the quantile t

    def below(t: float) -> bool:
        return _t_central_probability(t, degrees_of_freedom) < central

    low, high = 0.0, 1.0
    while below(high):
        low, high = high, high * 2
    while True:  # halve until the bracket is two adjacent floats: about 60 steps
        middle = (low + high) / 2
        if middle in (low, high):
            return high  # the least float whose central probability reaches `central`
        low, high = (middle, high) if below(middle) else (low, middle)


# --------------------------------------------------------------------------------------------------
# 1. the interval of a mean


def clustered_interval(values: Sequence[CaseValue] | np.ndarray, *, clusters: Sequence[ClusterLabel] | None = None,
                       resamples: int = RESAMPLES, seed: int = SEED, level: float = 0.95) -> ClusteredInterval | None:
    """The mean over cases with its cluster bootstrap interval, CR1 standard error and design effect.

    `values` holds one entry per case: a number, or the sequence of its attempts' values (the case's
    value is their mean). `clusters` holds one label per case (None: the case is its own cluster);
    without it every case is its own cluster and the interval is `significance.confidence_interval`'s
    case bootstrap (the same draws, equal up to rounding).

    The interval: draw as many clusters as there are, with replacement, `resamples` times; each
    draw's mean is the sum of the drawn clusters' case values over the number of their cases; the
    interval runs from the (1 - level) / 2 to the (1 + level) / 2 quantile of those means (numpy's
    default, linear interpolation). Attempts are not resampled (see the module's docstring).

    The cluster-robust ("sandwich") standard error of a mean of N cases in G clusters (Miller,
    "Adding Error Bars to Evals", 2024), with the CR1 small-sample factor G / (G - 1) (Cameron &
    Miller, "A Practitioner's Guide to Cluster-Robust Inference", 2015): with residuals
    e_i = x_i - mean and cluster sums u_g = sum of e_i over the cluster's cases,

        SE^2 = G / (G - 1) * sum_g u_g^2 / N^2.

    With every case its own cluster this is exactly s^2 / N, the naive standard error squared (s the
    sample standard deviation), so the design effect SE^2 / (s^2 / N) is 1 when clustering does not
    matter and grows with the correlation of a cluster's cases (1 + (m - 1) * rho for clusters of m).

    None without any case. Cases that all lie in one cluster are the units (`_cluster_ids`); one
    case alone has no standard error nor design effect. With fewer than `FEW_CLUSTERS` clusters (and
    fewer clusters than cases) the interval is widened to at least mean +/- t(G - 1) * SE, within the
    range of the case values. Above `LARGE` clusters the interval is mean +/- z * SE (normal
    approximation), as `significance` does above `LARGE` cases. When every value is a score in
    [0, 1], a mean within `NEAR_BOUND` of 0 or 1, or an interval of no width, is widened to hold the
    Wilson interval at the effective number of cases (`_with_wilson`): never zero width for scores.
    """
    means = _case_means(values, "values")
    if means.size == 0:
        return None
    ids = _cluster_ids(int(means.size), clusters)
    interval = _interval_of(means, ids, resamples=resamples, seed=seed, level=level)
    if bool(np.all((means >= 0) & (means <= 1))):
        return _with_wilson(interval, level=level)
    return interval


def wilson_interval(share: float, cases: float, *, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a share observed over `cases` (a real number: an effective
    sample size may be given), for 0 <= share <= 1 and cases > 0 (Wilson 1927; Brown, Cai &
    DasGupta 2001 found its coverage close to nominal down to a few cases and near 0 and 1, where the
    normal interval collapses to zero width)."""
    z = _z(1 - (1 - level) / 2)
    denominator = 1 + z * z / cases
    centre = (share + z * z / (2 * cases)) / denominator
    margin = z / denominator * math.sqrt(share * (1 - share) / cases + z * z / (4 * cases * cases))
    return max(0.0, centre - margin), min(1.0, centre + margin)


def effective_cases(interval: ClusteredInterval) -> float:
    """How many independent 0/1 cases the mean is worth (Korn & Graubard 1998): share (1 - share) over
    the squared standard error, at most the number of cases. With no spread at all the clusters count
    (the cases when there are no clusters): cases of one cluster may pass and fail together."""
    share = interval.mean
    error = interval.standard_error if interval.standard_error is not None else interval.naive_standard_error
    if error > 0 and 0 < share < 1:
        return max(1.0, min(float(interval.cases), share * (1 - share) / error ** 2))
    return float(interval.clusters)


def _with_wilson(interval: ClusteredInterval, *, level: float) -> ClusteredInterval:
    """The interval of a mean of values in [0, 1], widened to hold the Wilson interval at the effective
    number of cases when the mean lies within `NEAR_BOUND` of 0 or 1 or the interval has no width:
    there a few cases' spread understates how far the truth may lie (20 cases that all pass do not
    show a true rate of 1; their Wilson interval is 0.84-1)."""
    near = min(interval.mean, 1 - interval.mean) < NEAR_BOUND
    if not near and interval.high > interval.low:
        return interval
    low, high = wilson_interval(interval.mean, effective_cases(interval), level=level)
    return replace(interval, low=min(interval.low, low), high=max(interval.high, high))


def _interval_of(means: np.ndarray, ids: np.ndarray, *, resamples: int, seed: int, level: float) -> ClusteredInterval:
    cases = int(means.size)
    groups = int(ids.max()) + 1
    mean = float(means.mean())
    deviation = float(means.std(ddof=1)) if cases > 1 else 0.0
    naive = deviation / math.sqrt(cases)
    sums = np.bincount(ids, weights=means, minlength=groups)
    sizes = np.bincount(ids, minlength=groups).astype(float)
    if groups < 2:
        return ClusteredInterval(mean, mean, mean, cases, groups, None, naive, None, deviation)
    residual_sums = sums - sizes * mean
    variance = groups / (groups - 1) * float(np.sum(residual_sums ** 2)) / cases ** 2
    standard_error = math.sqrt(variance)
    design_effect = variance / naive ** 2 if naive > 0 else None
    tail = (1 - level) / 2
    if np.all(means == means[0]):
        low = high = mean
    elif groups > LARGE:
        margin = _z(1 - tail) * standard_error
        low, high = mean - margin, mean + margin
    else:
        generator = np.random.default_rng(seed)
        draws = []
        for done in range(0, resamples, CHUNK):
            chosen = generator.integers(0, groups, size=(min(CHUNK, resamples - done), groups))
            draws.append(sums[chosen].sum(axis=1) / sizes[chosen].sum(axis=1))
        quantiles = np.quantile(np.concatenate(draws), [tail, 1 - tail])
        low, high = float(quantiles[0]), float(quantiles[1])
        if groups < FEW_CLUSTERS and groups < cases:  # few real clusters: never narrower than the t rule
            margin = t_quantile(1 - tail, groups - 1) * standard_error
            low = max(min(low, mean - margin), float(means.min()))  # no mean of these cases lies outside them
            high = min(max(high, mean + margin), float(means.max()))
    return ClusteredInterval(mean, low, high, cases, groups, standard_error, naive, design_effect, deviation)


# --------------------------------------------------------------------------------------------------
# 2. the paired change between two runs


def clustered_paired_change(old: Sequence[CaseValue] | np.ndarray, new: Sequence[CaseValue] | np.ndarray, *,
                            clusters: Sequence[ClusterLabel] | None = None, resamples: int = RESAMPLES,
                            permutations: int = PERMUTATIONS, seed: int = SEED,
                            level: float = 0.95) -> ClusteredPairedChange | None:
    """The change new - old over the cases both runs share (same cases, same order), clustered.

    Each case's difference is its value in `new` minus its value in `old` (each the mean of its
    attempts where attempts are given). The change is the mean difference; its interval is the
    cluster bootstrap of the differences (`clustered_interval`).

    The p-value is a cluster sign-flip (randomisation) test of "no change": under that hypothesis
    each cluster's summed difference is as likely to have had the opposite sign, so the statistic
    |sum over clusters of s_g * D_g| (D_g the cluster's summed difference, s_g = +1 or -1) is
    compared with its value under every sign pattern. Assumed: clusters are independent and each
    cluster's summed difference is symmetric about 0 under the null (a template may get better or
    worse, equally likely); no assumption about the cases inside a cluster, which flip together.
    Exact (all 2^G patterns) for up to `EXACT_UP_TO` clusters with a nonzero sum; above, `permutations`
    seeded Monte Carlo patterns, p = (at least as extreme + 1) / (permutations + 1); above `LARGE`
    clusters, the normal approximation (variance of the sum under the null: sum of D_g^2). With
    every case its own cluster this is `significance.paired_change`'s test, draw for draw.
    """
    if len(old) != len(new):
        raise ValueError(f"paired values must be as many before as after (got {len(old)} and {len(new)})")
    differences = _case_means(new, "new") - _case_means(old, "old")
    if differences.size == 0:
        return None
    ids = _cluster_ids(int(differences.size), clusters)
    interval = _interval_of(differences, ids, resamples=resamples, seed=seed, level=level)
    cluster_sums = np.bincount(ids, weights=differences)
    p_value, exact = _sign_flip(cluster_sums, permutations=permutations, seed=seed)
    return ClusteredPairedChange(interval.mean, interval.low, interval.high, p_value, exact, interval)


def _sign_flip(sums: np.ndarray, *, permutations: int, seed: int) -> tuple[float, bool]:
    """Two-sided p-value of |sum(sums)| under independent random signs, and whether it is exact."""
    moved = sums[sums != 0]  # a zero sum is the same under either sign
    if moved.size == 0:
        return 1.0, True
    observed = abs(float(moved.sum()))
    if moved.size > LARGE:
        spread = math.sqrt(float(np.sum(moved ** 2)))
        return float(2 * (1 - NormalDist().cdf(observed / spread))), False
    if moved.size <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=int(moved.size))))
        return float(np.mean(np.abs(signs @ moved) >= observed - 1e-12)), True
    generator = np.random.default_rng(seed)
    at_least = 0
    for done in range(0, permutations, CHUNK):
        signs = generator.choice((1.0, -1.0), size=(min(CHUNK, permutations - done), moved.size))
        at_least += int(np.sum(np.abs(signs @ moved) >= observed - 1e-12))
    if at_least < RESOLVED_DRAWS:
        # so few draws as extreme that (k + 1) / (B + 1) is mostly its floor: the normal tail of the
        # sign-flip sum (variance sum of D_g^2 under the null) says how far in the tail it lies
        spread = math.sqrt(float(np.sum(moved ** 2)))
        return float(2 * (1 - NormalDist().cdf(observed / spread))), False
    return float((at_least + 1) / (permutations + 1)), False


# --------------------------------------------------------------------------------------------------
# 4. what a run of this size can see


def minimum_detectable_change(standard_deviation: float, *, cases: int, clusters: int, design_effect: float = 1.0,
                              of: str = "differences", alpha: float = ALPHA, power: float = POWER,
                              family: int = 1) -> MinimumDetectableChange:
    """The smallest true mean change the run's own decision catches with probability `power`:

        MDE = (t_{1 - alpha / (2 m), G - 1} + t_{power, G - 1}) * SE,   SE = sd_d * sqrt(design_effect / cases)

    where G is the number of clusters (the cases, when they all lie in one: then the cases are the
    units the test flips), m the size of the family the change is decided in (`family`: Holm over m
    headline metrics tests a lone change at alpha / m), and t Student's quantiles with G - 1 degrees
    of freedom: the sign-flip test over G clusters behaves like a t-test of their sums (Efron 1969),
    and the normal quantiles would promise power that few clusters do not have. sd_d is the standard
    deviation of the per-case differences and the design effect that of the differences (clustered
    variance over naive variance, as `clustered_interval` gives it; 1 without clusters). With
    `of="differences"` `standard_deviation` is sd_d, as observed in a paired comparison. With
    `of="values"` it is the standard deviation of one run's case values, for a comparison being
    planned, and sd_d is taken as sqrt(2) times it: exact when a case's values in the two runs are
    uncorrelated, an overstatement (a conservative MDE) when they correlate positively, as two runs
    of one system do.
    """
    if of not in ("differences", "values"):
        raise ValueError(f"'of' must be 'differences' or 'values' (got {of!r})")
    if cases < 1 or clusters < 1 or clusters > cases:
        raise ValueError(f"need at least one case, and between 1 and cases clusters "
                         f"(got {cases} cases, {clusters} clusters)")
    if not (standard_deviation >= 0 and design_effect > 0):
        raise ValueError(f"the standard deviation must be >= 0 and the design effect > 0 "
                         f"(got {standard_deviation!r} and {design_effect!r})")
    if family < 1:
        raise ValueError(f"the family must hold at least one test (got {family})")
    spread = standard_deviation * (math.sqrt(2) if of == "values" else 1.0)
    standard_error = spread * math.sqrt(design_effect / cases)
    units = clusters if clusters > 1 else cases
    level = alpha / family
    if units < 2:
        change = math.inf  # one case: nothing to tell a change from
    elif units - 1 > T_EXACT_UP_TO:
        change = (_z(1 - level / 2) + _z(power)) * standard_error
    else:
        change = (student_quantile(1 - level / 2, units - 1) + student_quantile(power, units - 1)) * standard_error
    return MinimumDetectableChange(change, standard_error, cases, clusters, design_effect, level, power)


def student_quantile(probability: float, degrees_of_freedom: int) -> float:
    """Student's t quantile, fast: the Cornish-Fisher expansion in 1 / nu around the normal quantile
    (Abramowitz & Stegun 26.7.5, four terms) from 5 degrees of freedom on, within 0.2 % of the exact
    value for probabilities up to 0.9975 (a test checks it against scipy); `t_quantile` below 5.
    A stated detectable change needs two decimals, and a run states one per headline metric."""
    if degrees_of_freedom < 5:
        return t_quantile(probability, degrees_of_freedom)
    z = _z(probability)
    nu = float(degrees_of_freedom)
    terms = ((z ** 3 + z) / 4,
             (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(term / nu ** (power + 1) for power, term in enumerate(terms))


def planning_factor(shrink: float = 2.0) -> float:
    """How many times the clusters (the cases, without clusters) a comparison needs for its minimum
    detectable change to shrink by `shrink`: the standard error falls as one over their square root,
    so halving it takes about 4 times as many (a little fewer with few clusters, whose t quantiles
    fall as they grow)."""
    return shrink ** 2


# --------------------------------------------------------------------------------------------------
# 3. many flags at once


def holm(p_values: Sequence[float], *, level: float = ALPHA) -> FalseDiscoveries:
    """Holm's (1979) step-down procedure over m p-values: the family-wise error rate (the chance of
    even one false alarm among them) held at `level`, for any dependence between the tests.

    Adjusted p-value of the i-th smallest: max over j <= i of (m - j + 1) * p_(j), capped at 1 (the
    same as `statsmodels.stats.multitest.multipletests(p, method="holm")`). Discoveries: the adjusted
    p-values <= level. For the few headline metrics of a run, this costs little power (each is tested
    at level / m at worst, level at best) and no breakdown can dilute it."""
    data = _p_values(p_values)
    count = int(data.size)
    if count == 0:
        return FalseDiscoveries((), (), level)
    order = np.argsort(data, kind="stable")
    adjusted = np.minimum(np.maximum.accumulate(data[order] * (count - np.arange(count))), 1.0)
    values = np.empty(count)
    values[order] = adjusted
    return FalseDiscoveries(tuple(float(v) for v in values),
                            tuple(int(i) for i in np.flatnonzero(values <= level)), level)


def _p_values(p_values: Sequence[float]) -> np.ndarray:
    data = np.asarray(p_values, dtype=float)
    if data.ndim != 1 or not np.all((data >= 0) & (data <= 1)):
        raise ValueError(f"p-values must be a list of numbers from 0 to 1 (got {list(p_values)!r})")
    return data


def benjamini_hochberg(p_values: Sequence[float], *, level: float = ALPHA) -> FalseDiscoveries:
    """Benjamini-Hochberg (1995) step-up procedure over m p-values.

    q-value of the i-th smallest p-value: min over j >= i of m * p_(j) / j, capped at 1 (the same
    as `scipy.stats.false_discovery_control(p, method="bh")`). Discoveries: the k smallest p-values,
    k the largest rank with p_(k) <= k * level / m (equivalently, the q-values <= level). Controls
    the false discovery rate at `level` for independent or positively dependent p-values.
    """
    data = _p_values(p_values)
    count = int(data.size)
    if count == 0:
        return FalseDiscoveries((), (), level)
    order = np.argsort(data, kind="stable")
    ranked = data[order]
    ranks = np.arange(1, count + 1)
    adjusted = np.minimum.accumulate((ranked * count / ranks)[::-1])[::-1]
    q_values = np.empty(count)
    q_values[order] = np.minimum(adjusted, 1.0)
    passing = np.flatnonzero(ranked * count <= ranks * level)
    found = order[: int(passing[-1]) + 1] if passing.size else order[:0]
    return FalseDiscoveries(tuple(float(q) for q in q_values), tuple(sorted(int(i) for i in found)), level)
