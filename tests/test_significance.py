"""The interval of a mean and the paired test with every case its own cluster (the case bootstrap and the
case sign flip), against reference computations written out plainly."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest

from qareport.clustered_statistics import clustered_interval, clustered_paired_change
from qareport.significance import EXACT_UP_TO


def reference_bootstrap(values, resamples=20_000, seed=1):
    """The percentile bootstrap with the standard library alone."""
    generator = random.Random(seed)
    means = sorted(statistics.fmean(generator.choices(values, k=len(values))) for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def reference_sign_flip(old, new):
    """The exact two-sided sign-flip p-value by enumerating every pattern, pair by pair."""
    differences = [b - a for a, b in zip(old, new)]
    observed = abs(sum(differences))
    patterns = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(1 for signs in patterns if abs(sum(s * d for s, d in zip(signs, differences))) >= observed - 1e-12)
    return extreme / len(patterns)


@pytest.mark.parametrize("values", [
    [0.2, 0.9, 0.4, 1.0, 0.7, 0.5, 0.3, 0.8],
    [1.0] * 12 + [0.0] * 3,
    [i / 30 for i in range(30)],
])
def test_the_bootstrap_interval_matches_a_plain_reference_computation(values):
    got = clustered_interval(values)
    low, high = reference_bootstrap(values)
    assert got.mean == pytest.approx(statistics.fmean(values))
    assert got.low == pytest.approx(low, abs=0.02) and got.high == pytest.approx(high, abs=0.02)
    assert got.low <= got.mean <= got.high and got.cases == len(values)


def test_the_interval_is_the_same_on_every_run():
    values = [0.1, 0.5, 0.9, 0.3, 0.7]
    assert clustered_interval(values) == clustered_interval(values)


def test_one_case_or_equal_scores_give_the_wilson_interval_and_none_give_none():
    # a score in [0, 1] seen once, or equal every time, does not pin the truth: Wilson at that many cases
    assert clustered_interval([0.4]) == clustered_interval([0.4])
    assert (clustered_interval([0.4]).low, clustered_interval([0.4]).high) == pytest.approx((0.0358, 0.9229), abs=1e-4)
    assert (clustered_interval([1.0] * 20).low, clustered_interval([1.0] * 20).high) == pytest.approx((0.8389, 1.0),
                                                                                                    abs=1e-4)
    assert clustered_interval([0.5, 0.5, 0.5]).low < 0.5 < clustered_interval([0.5, 0.5, 0.5]).high
    assert clustered_interval([2.5, 2.5]).low == clustered_interval([2.5, 2.5]).high == 2.5  # not a score
    assert clustered_interval([]) is None


@pytest.mark.parametrize(("old", "new"), [
    ([0.5, 0.6, 0.7, 0.8, 0.9], [0.4, 0.5, 0.6, 0.7, 0.8]),
    ([1.0, 1.0, 0.5, 0.5, 0.8, 0.2, 0.9], [0.9, 1.0, 0.6, 0.4, 0.8, 0.1, 0.95]),
    ([0.0] * 10, [1.0] * 10),
])
def test_the_exact_sign_flip_test_matches_enumeration_by_hand(old, new):
    got = clustered_paired_change(old, new)
    assert got.exact and got.cases == len(old)
    assert got.delta == pytest.approx(statistics.fmean(b - a for a, b in zip(old, new)))
    assert got.p_value == pytest.approx(reference_sign_flip(old, new))


def test_a_drop_of_005_on_fifteen_noisy_cases_is_not_larger_than_noise():
    generator = random.Random(7)
    old = [generator.random() for _ in range(15)]
    new = [min(1.0, max(0.0, value + generator.choice((-0.3, 0.2)))) for value in old]
    change = clustered_paired_change(old, new)
    assert not change.beyond_noise()


def test_a_consistent_drop_on_every_case_is_larger_than_noise():
    old = [0.9] * 20
    new = [0.8] * 20
    change = clustered_paired_change(old, new)
    assert change.beyond_noise() and not change.exact and change.delta == pytest.approx(-0.1)


def test_the_monte_carlo_p_value_is_close_to_the_exact_one():
    generator = random.Random(3)
    old = [generator.random() for _ in range(EXACT_UP_TO)]
    new = [value + generator.gauss(0.05, 0.2) for value in old]
    exact = clustered_paired_change(old, new)
    sampled = clustered_paired_change([*old, 0.5], [*new, 0.5 + 1e-09])  # one more moved case: Monte Carlo
    assert exact.exact and not sampled.exact
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.03)


def test_cases_that_did_not_move_count_among_the_cases_but_not_in_the_test():
    change = clustered_paired_change([0.5, 0.5, 0.5, 0.2], [0.5, 0.5, 0.5, 0.2])
    assert change.p_value == 1.0 and change.cases == 4 and change.delta == 0.0
    assert clustered_paired_change([], []) is None
    with pytest.raises(ValueError, match="as many before as after"):
        clustered_paired_change([0.1], [0.1, 0.2])
