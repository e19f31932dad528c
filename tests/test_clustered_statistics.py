"""The clustered statistics, tested the way a statistician would: against computations written out
plainly, and on simulated suites whose truth is known, drawn a few hundred times each.

Every simulation is seeded, so each rate below is one fixed number; the bounds it is held to are
binomial ones: a rate estimated from n independent suites has standard error sqrt(p (1 - p) / n),
and each comment says how many of those the bound leaves between the expected rate and failure.
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from qareport.attempt_statistics import CaseVerdict, decide_case_change, pass_at_k, pass_hat_k, suite_pass_rates
from qareport.clustered_statistics import (
    benjamini_hochberg,
    clustered_interval,
    clustered_paired_change,
    minimum_detectable_change,
    t_quantile,
)
from qareport.significance import CHUNK, EXACT_UP_TO, PERMUTATIONS, RESAMPLES, SEED

# A graphrag-eval-like suite: 40 templates of 8 questions, 3 attempts per question. A case's true
# value is the population mean + its template's effect + its own effect; each attempt adds noise.
CLUSTERS, PER_CLUSTER, ATTEMPTS = 40, 8, 3
CLUSTER_SD, CASE_SD, ATTEMPT_SD = 0.1, 0.1, 0.1
POPULATION_MEAN = 0.5
LABELS = [f"template {g}" for g in range(CLUSTERS) for _ in range(PER_CLUSTER)]
# Between the two runs of a paired comparison: each template moves by its own amount (mean 0 under
# the null), each case by a little more, and every attempt is drawn afresh.
TEMPLATE_CHANGE_SD, CASE_CHANGE_SD = 0.05, 0.03


def binomial_se(rate: float, draws: int) -> float:
    return math.sqrt(rate * (1 - rate) / draws)


def simulate_attempts(generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One suite: the cases' true values and their attempts (cases x attempts)."""
    template = np.repeat(generator.normal(0, CLUSTER_SD, CLUSTERS), PER_CLUSTER)
    truth = POPULATION_MEAN + template + generator.normal(0, CASE_SD, CLUSTERS * PER_CLUSTER)
    return truth, truth[:, None] + generator.normal(0, ATTEMPT_SD, (truth.size, ATTEMPTS))


def simulate_pair(generator: np.random.Generator, *, drop: float) -> tuple[np.ndarray, np.ndarray]:
    """Two runs over the same cases (attempts each); the new run's population mean is `drop` lower."""
    truth, old = simulate_attempts(generator)
    change = (np.repeat(generator.normal(0, TEMPLATE_CHANGE_SD, CLUSTERS), PER_CLUSTER)
              + generator.normal(0, CASE_CHANGE_SD, truth.size) - drop)
    new = (truth + change)[:, None] + generator.normal(0, ATTEMPT_SD, (truth.size, ATTEMPTS))
    return old, new


def population_mde() -> float:
    """The MDE the design implies, from the population's variance components: a case's difference
    varies by the template's change, the case's change and two runs' mean attempt noise; the design
    effect of clusters of m is 1 + (m - 1) * rho, rho the share of the template's change."""
    variance = TEMPLATE_CHANGE_SD ** 2 + CASE_CHANGE_SD ** 2 + 2 * ATTEMPT_SD ** 2 / ATTEMPTS
    design_effect = 1 + (PER_CLUSTER - 1) * TEMPLATE_CHANGE_SD ** 2 / variance
    return minimum_detectable_change(math.sqrt(variance), cases=CLUSTERS * PER_CLUSTER, clusters=CLUSTERS,
                                     design_effect=design_effect).change


# ---------------------------------------------------------------------------------------------------
# 1. the interval of a mean


def reference_cr1(values, clusters):
    """CR1 written out: sqrt(G / (G - 1) * sum over clusters of (sum of residuals)^2 / N^2)."""
    mean = statistics.fmean(values)
    sums: dict[str, float] = {}
    for value, cluster in zip(values, clusters):
        sums[cluster] = sums.get(cluster, 0.0) + value - mean
    count = len(sums)
    return math.sqrt(count / (count - 1) * sum(s * s for s in sums.values()) / len(values) ** 2)


def test_the_cluster_robust_standard_error_and_design_effect_match_the_formula_written_out():
    values = [0.9, 0.8, 1.0, 0.2, 0.1, 0.3, 0.6, 0.5, 0.55, 0.7]
    clusters = ["a", "a", "a", "b", "b", "b", "c", "c", "d", "d"]
    got = clustered_interval(values, clusters=clusters)
    naive = statistics.stdev(values) / math.sqrt(len(values))
    assert got.standard_error == pytest.approx(reference_cr1(values, clusters), rel=1e-12)
    assert got.naive_standard_error == pytest.approx(naive, rel=1e-12)
    assert got.design_effect == pytest.approx((reference_cr1(values, clusters) / naive) ** 2, rel=1e-12)
    assert (got.cases, got.clusters) == (10, 4) and got.design_effect > 1  # a and b hold together
    assert got.low <= got.mean <= got.high


def case_bootstrap(values):
    """The percentile bootstrap of a mean over independent cases, drawn as qareport draws (its seed,
    RESAMPLES resamples of the cases with replacement, CHUNK at a time): (mean, cases, low, high)."""
    data = np.asarray(values, dtype=float)
    generator = np.random.default_rng(SEED)
    means = []
    for done in range(0, RESAMPLES, CHUNK):
        picks = generator.integers(0, data.size, size=(min(CHUNK, RESAMPLES - done), data.size))
        means.extend(data[picks].mean(axis=1))
    low, high = np.quantile(means, [0.025, 0.975])
    return float(data.mean()), int(data.size), float(low), float(high)


def case_sign_flip(old, new):
    """The two-sided sign-flip test over independent cases, drawn as qareport draws: every sign pattern
    of the moved cases up to EXACT_UP_TO of them, else PERMUTATIONS patterns (its seed, CHUNK at a
    time) with the observed one counted among them: (p_value, exact)."""
    differences = np.asarray(new, dtype=float) - np.asarray(old, dtype=float)
    moved = differences[differences != 0]
    observed = abs(moved.sum())
    if moved.size <= EXACT_UP_TO:
        patterns = np.array(list(itertools.product((1.0, -1.0), repeat=int(moved.size))))
        return float(np.mean(np.abs(patterns @ moved) >= observed - 1e-12)), True
    generator = np.random.default_rng(SEED)
    at_least = 0
    for done in range(0, PERMUTATIONS, CHUNK):
        signs = generator.choice((1.0, -1.0), size=(min(CHUNK, PERMUTATIONS - done), moved.size))
        at_least += int(np.sum(np.abs(signs @ moved) >= observed - 1e-12))
    return (at_least + 1) / (PERMUTATIONS + 1), False


def test_with_every_case_its_own_cluster_the_interval_is_the_case_bootstrap_and_the_design_effect_one():
    values = [0.2, 0.9, 0.4, 1.0, 0.7, 0.5, 0.3, 0.8]
    exp_mean, exp_cases, exp_low, exp_high = case_bootstrap(values)
    for clusters in (None, [None] * len(values), list("abcdefgh")):
        got = clustered_interval(values, clusters=clusters)
        assert (got.mean, got.cases, got.clusters) == (exp_mean, exp_cases, len(values))
        assert got.low == pytest.approx(exp_low, abs=1e-12) and got.high == pytest.approx(exp_high, abs=1e-12)
        assert got.standard_error == pytest.approx(got.naive_standard_error, rel=1e-12)
        assert got.design_effect == pytest.approx(1.0, rel=1e-12)


def test_a_case_with_attempts_counts_as_the_mean_of_its_attempts_and_the_attempts_are_not_resampled():
    attempts = [[1.0, 0.0, 1.0], [0.5], [0.2, 0.4], [0.9, 0.9, 0.6], [0.0, 0.0, 0.3]]
    clusters = ["x", "x", None, "y", "y"]
    got = clustered_interval(attempts, clusters=clusters)
    exp = clustered_interval([statistics.fmean(a) for a in attempts], clusters=clusters)
    assert got == exp


def test_numpy_arrays_of_values_or_of_cases_by_attempts_give_the_same_figures_as_lists():
    attempts = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]])
    clusters = ["a", "a", "b", "b"]
    exp = clustered_interval(attempts.tolist(), clusters=clusters)
    assert clustered_interval(attempts, clusters=clusters) == exp
    assert clustered_interval(attempts.mean(axis=1), clusters=clusters) == exp
    assert clustered_interval([np.int64(1), np.float32(0.5)]).mean == 0.75
    with pytest.raises(ValueError, match="values: case 1 must have finite values"):
        clustered_interval([0.5, float("nan")])


def test_cases_all_in_one_cluster_are_the_units_and_no_case_gives_none():
    # nothing to resample between clusters: the interval and test are about that cluster's own cases,
    # as for a tag or a template whose cases share one cluster (never a zero-width interval)
    got = clustered_interval([0.1, 0.5, 0.9], clusters=["t", "t", "t"])
    assert got == clustered_interval([0.1, 0.5, 0.9]) and got.low < got.mean < got.high
    change = clustered_paired_change([0.9] * 12, [0.7] * 10 + [0.9] * 2, clusters=["t"] * 12)
    assert change == clustered_paired_change([0.9] * 12, [0.7] * 10 + [0.9] * 2)
    assert change.p_value < 0.01 and change.clusters == 12
    assert clustered_interval([]) is None
    with pytest.raises(ValueError, match=r"one cluster .or None. per case"):
        clustered_interval([0.1, 0.2], clusters=["a"])
    with pytest.raises(ValueError, match="case 1 must have a value or at least one attempt"):
        clustered_interval([[0.1], []])


def test_the_interval_is_the_same_on_every_run():
    values = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2]
    clusters = ["a", "a", "b", "b", "c", None]
    assert clustered_interval(values, clusters=clusters) == clustered_interval(values, clusters=clusters)


def test_the_clustered_interval_covers_the_population_mean_95_percent_of_the_time_and_the_naive_one_does_not():
    generator = np.random.default_rng(20)
    suites = 500
    covered = naive_covered = 0
    for _ in range(suites):
        _, attempts = simulate_attempts(generator)
        got = clustered_interval(attempts.tolist(), clusters=LABELS, resamples=1000)
        covered += got.low <= POPULATION_MEAN <= got.high
        naive = clustered_interval(attempts.mean(axis=1), resamples=1000)  # every case its own cluster
        naive_covered += naive.low <= POPULATION_MEAN <= naive.high
    # 500 suites: the binomial standard error of a 0.95 coverage is 0.0097, so 0.92-0.98 is +/- 3 of them
    assert 0.92 <= covered / suites <= 0.98
    # the design effect here is about 4 (rho = 0.43 in clusters of 8), so the naive interval is half as
    # wide as it should be and covers about 68 %; 0.85 is more than 8 binomial standard errors above
    # that and 6 below 0.95
    assert naive_covered / suites < 0.85


@pytest.mark.parametrize("degrees_of_freedom", [1, 2, 3, 4, 5, 6, 10, 29, 30, 100, 999, 1000])
@pytest.mark.parametrize("probability", [0.999, 0.975, 0.9, 0.6, 0.5])
def test_the_t_quantile_equals_scipys(probability, degrees_of_freedom):
    from scipy.stats import t

    assert t_quantile(probability, degrees_of_freedom) == pytest.approx(t.ppf(probability, degrees_of_freedom),
                                                                        rel=1e-10, abs=1e-12)


def test_with_few_clusters_the_interval_still_covers_the_population_mean_95_percent_of_the_time():
    """Few clusters (a Q&A suite of a handful of templates): a cluster bootstrap alone draws from so
    few cluster means that its percentile interval is too narrow; with the t rule beside it the
    interval covers about as often as it says."""
    generator = np.random.default_rng(21)
    clusters, per_cluster, suites = 4, 10, 400
    labels = [g for g in range(clusters) for _ in range(per_cluster)]
    covered = bootstrap_only = 0
    for _ in range(suites):
        values = (POPULATION_MEAN + np.repeat(generator.normal(0, CLUSTER_SD, clusters), per_cluster)
                  + generator.normal(0, CASE_SD, clusters * per_cluster))
        got = clustered_interval(values.tolist(), clusters=labels, resamples=500)
        covered += got.low <= POPULATION_MEAN <= got.high
        sums = np.bincount(labels, weights=values)
        draws = sums[generator.integers(0, clusters, size=(500, clusters))].sum(axis=1) / values.size
        low, high = np.quantile(draws, [0.025, 0.975])
        bootstrap_only += low <= POPULATION_MEAN <= high
    # 400 suites: a 0.95 coverage has a binomial standard error of 0.011; 0.91 is 3.6 of them below
    assert covered / suites >= 0.91
    # the percentile interval of 4 cluster means covers about 80 %: 0.88 is 3.6 standard errors of 0.95 below
    # the nominal and 4 of 0.80 (0.02 each) above the expected
    assert bootstrap_only / suites < 0.88


def test_few_clusters_never_give_a_narrower_interval_than_the_t_rule():
    values = [0.2, 0.3, 0.25, 0.9, 0.8, 0.85, 0.5, 0.55, 0.6, 0.7, 0.75]
    labels = ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"] * 2
    got = clustered_interval(values, clusters=labels)
    margin = t_quantile(0.975, 3) * got.standard_error
    assert got.low <= max(got.mean - margin, min(values)) + 1e-12
    assert got.high >= min(got.mean + margin, max(values)) - 1e-12


# ---------------------------------------------------------------------------------------------------
# 2. the paired change


def reference_cluster_sign_flip(differences, clusters):
    """Flip each cluster's summed difference, every pattern, plainly."""
    sums: dict[str, float] = {}
    for difference, cluster in zip(differences, clusters):
        sums[cluster] = sums.get(cluster, 0.0) + difference
    observed = abs(sum(sums.values()))
    patterns = list(itertools.product((1, -1), repeat=len(sums)))
    return sum(abs(sum(s * d for s, d in zip(signs, sums.values()))) >= observed - 1e-12 for signs in patterns) / len(patterns)


def test_the_exact_cluster_sign_flip_flips_whole_clusters():
    old = [0.9, 0.8, 0.9, 0.7, 0.6, 0.8, 0.5, 0.9, 0.4]
    new = [0.7, 0.6, 0.8, 0.6, 0.5, 0.6, 0.6, 0.95, 0.4]
    clusters = ["a", "a", "a", "b", "b", "b", "c", "c", "d"]
    got = clustered_paired_change(old, new, clusters=clusters)
    differences = [b - a for a, b in zip(old, new)]
    assert got.exact and (got.cases, got.clusters) == (9, 4)
    assert got.delta == pytest.approx(statistics.fmean(differences))
    assert got.p_value == pytest.approx(reference_cluster_sign_flip(differences, clusters))
    # the same differences as independent cases look far more certain
    assert clustered_paired_change(old, new).p_value < got.p_value  # every case its own cluster


def test_with_every_case_its_own_cluster_the_test_is_the_case_sign_flip_draw_for_draw():
    generator = np.random.default_rng(3)
    for size in (EXACT_UP_TO, EXACT_UP_TO + 9):  # exact, then Monte Carlo
        old = generator.random(size)
        new = old + generator.normal(0.05, 0.2, size)
        exp_p_value, exp_exact = case_sign_flip(old, new)
        for clusters in (None, [None] * size, [f"case {i}" for i in range(size)]):
            got = clustered_paired_change(old.tolist(), new.tolist(), clusters=clusters)
            assert (got.p_value, got.exact) == (exp_p_value, exp_exact)
            assert got.delta == pytest.approx(float(np.mean(new - old)))


def test_the_paired_change_takes_attempt_means_and_rejects_unpaired_input():
    got = clustered_paired_change([[1.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, 0.5]], clusters=["a", "b"])
    assert got.delta == pytest.approx((-0.5 - 0.25) / 2) and got.exact and got.p_value == pytest.approx(0.5)
    assert clustered_paired_change([0.3, 0.4], [0.3, 0.4]).p_value == 1.0
    assert clustered_paired_change([], []) is None
    with pytest.raises(ValueError, match="as many before as after"):
        clustered_paired_change([0.1], [0.1, 0.2])


def test_under_a_template_level_null_the_clustered_test_keeps_its_false_alarm_rate_and_the_naive_one_does_not():
    generator = np.random.default_rng(21)
    suites = 400
    alarms = naive_alarms = 0
    for _ in range(suites):
        old, new = simulate_pair(generator, drop=0.0)
        got = clustered_paired_change(old.tolist(), new.tolist(), clusters=LABELS, resamples=200, permutations=2000)
        alarms += got.beyond_noise()
        naive = clustered_paired_change(old.mean(axis=1), new.mean(axis=1), permutations=2000)
        naive_alarms += naive.p_value <= 0.05  # every case its own cluster
    # nominal 0.05; with 400 suites its binomial standard error is 0.011, so 0.07 is 1.8 of them above
    assert alarms / suites <= 0.07
    # the naive test sees 320 independent cases where there are 40 templates: it raised 24 % here,
    # and 0.15 is still 6 binomial standard errors above 0.07
    assert naive_alarms / suites > 0.15


def test_a_uniform_drop_as_large_as_the_minimum_detectable_change_is_detected_about_80_percent_of_the_time():
    generator = np.random.default_rng(22)
    drop = population_mde()
    suites = 300
    detected = 0
    observed_mdes = []
    for _ in range(suites):
        old, new = simulate_pair(generator, drop=drop)
        got = clustered_paired_change(old.tolist(), new.tolist(), clusters=LABELS, resamples=200, permutations=2000)
        detected += got.beyond_noise() and got.delta < 0
        observed_mdes.append(minimum_detectable_change(
            got.interval.standard_deviation, cases=got.cases, clusters=got.clusters,
            design_effect=got.interval.design_effect).change)
    # 0.76 here (the normal quantiles overstate power a little with 40 clusters); 300 suites
    # give a binomial standard error of 0.024, so 0.7 is more than 3 of them below
    assert detected / suites >= 0.7
    # the MDE a run reports from its own data is the design's, give or take the noise of one suite
    assert statistics.median(observed_mdes) == pytest.approx(drop, rel=0.1)


# ---------------------------------------------------------------------------------------------------
# 4. the minimum detectable change


def test_the_minimum_detectable_change_is_t_quantiles_at_the_familys_level_times_the_clustered_standard_error():
    from scipy.stats import t

    got = minimum_detectable_change(0.2, cases=100, clusters=25, design_effect=2.0)
    standard_error = 0.2 * math.sqrt(2.0 / 100)
    assert got.standard_error == pytest.approx(standard_error)
    # the decision's own: t with G - 1 degrees of freedom (the normal's 2.80 promised power few clusters lack)
    assert got.change == pytest.approx((t.ppf(0.975, 24) + t.ppf(0.8, 24)) * standard_error, rel=1e-5)
    holm_of_three = minimum_detectable_change(0.2, cases=100, clusters=25, design_effect=2.0, family=3)
    assert holm_of_three.change == pytest.approx((t.ppf(1 - 0.05 / 6, 24) + t.ppf(0.8, 24)) * standard_error, rel=1e-5)
    planned = minimum_detectable_change(0.2, cases=100, clusters=25, design_effect=2.0, of="values")
    assert planned.change == pytest.approx(got.change * math.sqrt(2))
    assert minimum_detectable_change(0.2, cases=100, clusters=100).change < got.change
    with pytest.raises(ValueError, match="'of' must be"):
        minimum_detectable_change(0.2, cases=10, clusters=5, of="cases")
    with pytest.raises(ValueError, match="between 1 and cases clusters"):
        minimum_detectable_change(0.2, cases=10, clusters=11)


# ---------------------------------------------------------------------------------------------------
# 3. Benjamini-Hochberg


def reference_step_up(p_values, level):
    """The step-up rule as the 1995 paper states it: reject the k smallest, k the largest rank with
    p_(k) <= k * level / m."""
    ranked = sorted(range(len(p_values)), key=lambda i: p_values[i])
    m = len(p_values)
    k = max((rank for rank in range(1, m + 1) if p_values[ranked[rank - 1]] <= rank * level / m), default=0)
    return tuple(sorted(ranked[:k]))


@pytest.mark.parametrize("seed", range(6))
def test_benjamini_hochberg_q_values_equal_scipys_and_the_discoveries_the_step_up_rule(seed):
    generator = np.random.default_rng(seed)
    count = int(generator.integers(1, 60))
    p_values = np.concatenate([generator.uniform(0, 0.01, count // 4), generator.uniform(0, 1, count - count // 4)])
    p_values[: count // 6] = p_values[count - count // 6:]  # ties
    generator.shuffle(p_values)
    got = benjamini_hochberg(p_values.tolist(), level=0.1)
    np.testing.assert_allclose(got.q_values, false_discovery_control(p_values, method="bh"), rtol=1e-12, atol=0)
    assert got.discoveries == reference_step_up(p_values.tolist(), 0.1)
    assert got.discoveries == tuple(i for i, q in enumerate(got.q_values) if q <= 0.1)


def test_benjamini_hochberg_on_a_small_list_worked_by_hand():
    # sorted p: 0.01 0.02 0.03 0.2 0.5; m * p / rank: 0.05 0.05 0.05 0.25 0.5
    got = benjamini_hochberg([0.2, 0.01, 0.5, 0.03, 0.02])
    assert got.q_values == pytest.approx((0.25, 0.05, 0.5, 0.05, 0.05))
    assert got.discoveries == (1, 3, 4)
    assert benjamini_hochberg([]).discoveries == ()
    with pytest.raises(ValueError, match="from 0 to 1"):
        benjamini_hochberg([0.2, 1.5])
    with pytest.raises(ValueError, match="from 0 to 1"):
        benjamini_hochberg([float("nan")])


# ---------------------------------------------------------------------------------------------------
# 5. pass@k and pass^k


@pytest.mark.parametrize(("attempts", "passes", "k", "at_k", "hat_k"), [
    (3, 1, 2, 2 / 3, 0.0),      # 1 - C(2,2)/C(3,2) = 1 - 1/3; C(1,2) = 0
    (5, 3, 2, 0.9, 0.3),        # 1 - C(2,2)/C(5,2) = 1 - 1/10; C(3,2)/C(5,2) = 3/10
    (5, 3, 1, 0.6, 0.6),        # k = 1: both are c / n
    (4, 4, 3, 1.0, 1.0),
    (4, 0, 2, 0.0, 0.0),
    (10, 7, 5, 1.0, 21 / 252),  # C(3,5) = 0; C(7,5)/C(10,5) = 21/252
    (8, 2, 3, 1 - 20 / 56, 0.0),
])
def test_pass_at_k_and_pass_hat_k_against_values_worked_by_hand(attempts, passes, k, at_k, hat_k):
    assert pass_at_k(attempts, passes, k) == pytest.approx(at_k, abs=1e-15)
    assert pass_hat_k(attempts, passes, k) == pytest.approx(hat_k, abs=1e-15)


def test_pass_hat_k_is_the_chance_that_k_attempts_drawn_without_replacement_all_pass():
    outcomes = [1, 1, 0, 1, 0, 1]
    draws = list(itertools.combinations(outcomes, 3))
    assert pass_hat_k(6, 4, 3) == pytest.approx(sum(all(d) for d in draws) / len(draws))
    assert pass_at_k(6, 4, 3) == pytest.approx(sum(any(d) for d in draws) / len(draws))


def test_the_suite_pass_rates_are_case_means_over_the_cases_with_k_attempts():
    got = suite_pass_rates([(3, 1), (5, 3), (3, 3), (1, 1)], k=2)
    assert (got.cases, got.too_few_attempts, got.k) == (3, 1, 2)
    assert got.pass_at_k == pytest.approx((2 / 3 + 0.9 + 1.0) / 3)
    assert got.pass_hat_k == pytest.approx((0.0 + 0.3 + 1.0) / 3)
    assert suite_pass_rates([(1, 1)], k=2) is None
    with pytest.raises(ValueError, match="0 <= passes <= attempts"):
        pass_at_k(3, 4, 2)
    with pytest.raises(ValueError, match="1 <= k <= attempts"):
        pass_hat_k(3, 1, 4)


# ---------------------------------------------------------------------------------------------------
# 6. one case, two runs


def reference_split_test(old, new):
    """Every split of the pooled attempts into groups of the two sizes, plainly."""
    pooled = list(old) + list(new)
    observed = abs(statistics.fmean(new) - statistics.fmean(old))
    extreme = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(new)):
        group = [pooled[i] for i in chosen]
        rest = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        extreme += abs(statistics.fmean(group) - statistics.fmean(rest)) >= observed - 1e-12
        total += 1
    return extreme / total


@pytest.mark.parametrize(("old", "new"), [
    ([0.9, 0.8, 1.0, 0.95], [0.6, 0.7, 0.65, 0.5, 0.8]),
    ([1, 0, 1, 1, 0], [0, 1, 0, 1, 1]),
    ([0.3, 0.35], [0.31, 0.4, 0.2]),
])
def test_the_case_permutation_test_matches_enumeration_by_hand(old, new):
    got = decide_case_change(old, new)
    assert got.exact and got.p_value == pytest.approx(reference_split_test(old, new))
    assert got.delta == pytest.approx(statistics.fmean(new) - statistics.fmean(old))


def test_the_monte_carlo_case_test_is_close_to_the_exact_one():
    generator = np.random.default_rng(5)
    old, new = generator.normal(0.6, 0.2, 10), generator.normal(0.45, 0.2, 9)  # C(19, 9) = 92,378 splits
    got = decide_case_change(old.tolist(), new.tolist())
    pooled = np.concatenate([old, new])
    chosen = np.array(list(itertools.combinations(range(19), 9)))
    sums = pooled[chosen].sum(axis=1)
    spread = np.abs(sums / 9 - (pooled.sum() - sums) / 10)
    exact = float(np.mean(spread >= abs(new.mean() - old.mean()) - 1e-12))
    # 10,000 draws: a binomial standard error of at most 0.005, so 0.02 is 4 of them
    assert not got.exact and got.p_value == pytest.approx(exact, abs=0.02)


def test_one_attempt_per_run_cannot_tell_a_change_from_a_flip():
    got = decide_case_change([1.0], [0.0])
    assert got.verdict is CaseVerdict.CANNOT_TELL and got.p_value is None
    assert "one attempt per run cannot tell a change from a flip" in got.reason
    assert decide_case_change([1, 1, 1], [0, 0], minimum_attempts=3).verdict is CaseVerdict.CANNOT_TELL


def test_three_attempts_against_three_cannot_reach_the_5_percent_level_and_say_so():
    got = decide_case_change([1, 1, 1], [0, 0, 0])
    assert got.p_value == pytest.approx(0.1) and got.verdict is CaseVerdict.CANNOT_TELL
    assert "smallest attainable p 0.1" in got.reason
    assert decide_case_change([1, 1, 1], [0, 0, 0], alpha=0.1).verdict is CaseVerdict.REGRESSED


def test_planted_flaky_unchanged_cases_stay_within_noise_and_consistently_regressed_cases_are_listed():
    generator = np.random.default_rng(23)
    attempts = 5
    flaky = [decide_case_change(generator.binomial(1, 0.5, attempts).tolist(), generator.binomial(1, 0.5, attempts).tolist())
             for _ in range(300)]
    regressed = [decide_case_change(generator.binomial(1, 0.95, attempts).tolist(), generator.binomial(1, 0.1, attempts).tolist())
                 for _ in range(100)]
    improved = decide_case_change([0, 0, 0, 0, 1], [1, 1, 1, 1, 1])
    # a flaky case that did not change is called regressed or improved at most alpha = 0.05 of the time
    # (less: the test is exact and conservative on 0/1 outcomes); 300 cases, binomial SE 0.013, 0.09 is 3
    flagged = sum(case.verdict in (CaseVerdict.REGRESSED, CaseVerdict.IMPROVED) for case in flaky)
    assert flagged / len(flaky) <= 0.09
    assert all(case.verdict in (CaseVerdict.WITHIN_NOISE, CaseVerdict.REGRESSED, CaseVerdict.IMPROVED) for case in flaky)
    # 0.95 -> 0.1 with 5 attempts a side: most draws are 5/5 or 4/5 against 0/5 or 1/5, all with p <= 0.05
    # (p = 2/252 for 5/5 against 0/5); 0.92 here, and 0.75 is more than 3 binomial SE (at most 0.043) below
    assert sum(case.verdict is CaseVerdict.REGRESSED for case in regressed) / len(regressed) >= 0.75
    assert not any(case.verdict is CaseVerdict.IMPROVED for case in regressed)
    assert improved.verdict is CaseVerdict.IMPROVED and improved.p_value == pytest.approx(12 / 252)  # S = 5 or 1 ones of 6 drawn
    assert decide_case_change([1] * 5, [0] * 5).p_value == pytest.approx(2 / 252)
    lower_is_better = decide_case_change([1] * 5, [0] * 5, higher_is_better=False)
    assert lower_is_better.verdict is CaseVerdict.IMPROVED


def test_a_case_that_did_not_move_is_within_noise():
    got = decide_case_change([0.5, 0.5], [0.5, 0.5])
    assert got.verdict is CaseVerdict.WITHIN_NOISE and got.reason == "did not move"
