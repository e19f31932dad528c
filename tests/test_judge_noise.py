"""The judge's share of a metric's variance (qareport.judge_noise): the variance split checked on
simulated data with known components, and read from judged results with per-repeat values."""

from __future__ import annotations

import random
from statistics import fmean, stdev

import pytest

from qareport.judge_noise import (
    JudgeNoise,
    NoiseShares,
    Share,
    VarianceSplit,
    noise_shares,
    repeats_to_halve,
    split_variance,
)

CASE, ATTEMPT, JUDGE = 0.04, 0.01, 0.02
DRAWS = 300


def simulate(generator: random.Random, *, cases: int, attempts: int, repeats: int,
             drop: float = 0.0) -> list[list[list[float]]]:
    """y = 0.6 + case + attempt + judge noise, normal with the known variances; `drop`: the share of
    repeats lost (a repeat that failed), at least one kept per attempt."""
    data = []
    for _ in range(cases):
        case_effect = generator.gauss(0.0, CASE ** 0.5)
        case = []
        for _ in range(attempts):
            mean = 0.6 + case_effect + generator.gauss(0.0, ATTEMPT ** 0.5)
            values = [mean + generator.gauss(0.0, JUDGE ** 0.5) for _ in range(repeats)]
            kept = [v for n, v in enumerate(values) if n == 0 or generator.random() >= drop]
            case.append(kept)
        data.append(case)
    return data


def assert_unbiased(estimates: list[float], truth: float) -> None:
    """The mean over the draws lies within 4 standard errors of the truth (and the standard error
    is small enough for that to mean something)."""
    error = stdev(estimates) / len(estimates) ** 0.5
    assert abs(fmean(estimates) - truth) < 4 * error, (fmean(estimates), truth, error)
    assert error < 0.15 * truth


@pytest.mark.parametrize("drop", [0.0, 0.3])
def test_the_three_components_are_estimated_without_bias_on_simulated_data(drop):
    generator = random.Random(21 + int(drop * 10))
    splits = [split_variance(simulate(generator, cases=40, attempts=3, repeats=3, drop=drop)) for _ in range(DRAWS)]
    assert_unbiased([s.judge for s in splits], JUDGE)
    assert_unbiased([s.attempt for s in splits], ATTEMPT)
    assert_unbiased([s.case for s in splits], CASE)
    assert splits[0].cases == 40 and splits[0].cells == 120


def test_with_one_attempt_per_case_the_system_component_holds_case_and_attempt():
    generator = random.Random(5)
    splits = [split_variance(simulate(generator, cases=60, attempts=1, repeats=2)) for _ in range(DRAWS)]
    assert all(s.attempt is None for s in splits)
    assert_unbiased([s.judge for s in splits], JUDGE)
    assert_unbiased([s.case for s in splits], CASE + ATTEMPT)


def test_a_hand_computed_split():
    # two cases, one attempt each, two repeats: cell variances 0.02 and 0.08 -> judge 0.05;
    # case means 0.5 and 0.8 -> variance 0.045, less judge / 2 = 0.025 -> case 0.02
    split = split_variance([[[0.4, 0.6]], [[0.6, 1.0]]])
    assert split.judge == pytest.approx(0.05)
    assert split.attempt is None
    assert split.case == pytest.approx(0.045 - 0.025)
    assert (split.cases, split.cells, split.repeats) == (2, 2, 4)


def test_without_repeats_nothing_is_said_of_the_judge():
    split = split_variance([[[0.4]], [[0.6]], [[0.9]]])
    assert split.judge is None
    assert split.case == pytest.approx(((0.4 - 19 / 30) ** 2 + (0.6 - 19 / 30) ** 2 + (0.9 - 19 / 30) ** 2) / 2)
    assert split_variance([]).case is None and split_variance([[[]]]).cases == 0


# --- the judge's shares: of one judgment, of a case's value, with intervals and a plan -------------------


@pytest.mark.parametrize(("repeats", "exp"), [(1, 0.50), (2, 0.33), (3, 0.25), (5, 0.17), (10, 0.09)])
def test_the_judges_share_of_a_cases_value_falls_with_the_repeats_as_computed_by_hand(repeats, exp):
    # judge variance 0.02 and case variance 0.02: half of one judgment is the judge's; the value used is
    # the mean of `repeats` judgments, whose judge variance is 0.02 / repeats
    split = VarianceSplit(judge=0.02, attempt=None, case=0.02, cases=30, cells=30, repeats=30 * repeats,
                          inverse_repeats=1 / repeats, inverse_attempts=1.0)
    one, used = split.judge_shares()
    assert one == pytest.approx(0.5)
    assert used == pytest.approx(exp, abs=0.005)
    assert used == pytest.approx(1 / (1 + repeats))
    assert split.mean_repeats == pytest.approx(repeats)


def test_attempts_divide_both_the_judges_and_the_attempts_part_of_a_cases_value():
    # judge 0.02, attempt 0.01, case 0.04; two attempts of three repeats each:
    # value variance = 0.04 + 0.01 / 2 + 0.02 / 6
    split = VarianceSplit(judge=0.02, attempt=0.01, case=0.04, cases=10, cells=20, repeats=60,
                          inverse_repeats=1 / 6, inverse_attempts=1 / 2)
    one, used = split.judge_shares()
    assert one == pytest.approx(0.02 / 0.07)
    assert used == pytest.approx((0.02 / 6) / (0.04 + 0.005 + 0.02 / 6))
    assert split.mean_repeats == pytest.approx(3)


def test_the_split_of_judged_values_knows_the_repeats_each_case_rests_on():
    three = split_variance([[[0.4, 0.6, 0.5]], [[0.6, 1.0, 0.8]], [[0.1, 0.3, 0.2]]])
    assert three.inverse_repeats == pytest.approx(1 / 3) and three.mean_repeats == pytest.approx(3)
    one, used = three.judge_shares()
    judge, case = max(three.judge, 0.0), max(three.case, 0.0)
    assert one == pytest.approx(judge / (judge + case))
    assert used == pytest.approx(judge / 3 / (judge / 3 + case))
    mixed = split_variance([[[0.4, 0.6]], [[0.6, 1.0, 0.8, 0.7]]])  # 2 and 4 repeats: mean of 1/2 and 1/4
    assert mixed.inverse_repeats == pytest.approx(3 / 8) and mixed.mean_repeats == pytest.approx(8 / 3)
    attempts = split_variance([[[0.4, 0.6], [0.5, 0.7]], [[0.6, 1.0], [0.2, 0.4]]])
    assert attempts.inverse_repeats == pytest.approx(1 / 4) and attempts.inverse_attempts == pytest.approx(1 / 2)


@pytest.mark.parametrize(("judge", "system", "repeats", "exp"), [
    (0.02, 0.02, 3, 7),  # share 1/4 -> at most 1/8: 0.02 / R / (0.02 / R + 0.02) <= 1/8 from R = 7
    (0.02, 0.02, 1, 3),  # share 1/2 -> at most 1/4: R = 3
    (0.01, 0.04, 2, 5),  # share 1/9 -> at most 1/18: 0.01 / R <= 0.04 / 17, R >= 4.25
    (0.02, 0.0, 3, None),  # the judge is all the variance: no number of repeats halves its share
    (0.0, 0.02, 3, None),  # nothing to halve
    (0.5, 0.001, 3, None),  # it would take more than the most repeats allowed
])
def test_the_repeats_that_halve_the_judges_share_of_a_cases_value(judge, system, repeats, exp):
    got = repeats_to_halve(judge, system, repeats=repeats)
    assert got == exp
    if got is not None:
        def share(r: float) -> float:
            return (judge / r) / (judge / r + system)
        assert share(got) <= share(repeats) / 2 + 1e-12 < share(got - 1)


def test_the_shares_intervals_are_seeded_and_hold_their_estimates():
    data = simulate(random.Random(8), cases=25, attempts=1, repeats=3)
    first, again = noise_shares(data), noise_shares(data)
    assert first == again
    assert first is not None and first.repeats == pytest.approx(3)
    split = split_variance(data)
    assert (first.one_judgment.value, first.case_value.value) == pytest.approx(split.judge_shares())
    for share in (first.one_judgment, first.case_value):
        assert 0.0 <= share.low < share.value < share.high <= 1.0
    assert first.case_value.high < first.one_judgment.high  # three repeats: the value is steadier
    assert noise_shares(data, seed=1) != first
    assert noise_shares(data[:1]) is None and noise_shares([]) is None
    assert noise_shares([[[0.5]], [[0.7]]]) is None  # no judgment repeated: the judge cannot be told apart


@pytest.mark.parametrize(("cases", "attempts"), [(40, 1), (20, 2)])
def test_the_shares_intervals_cover_the_true_shares_about_95_times_in_100(cases, attempts):
    # 200 simulated suites with known components; Monte Carlo error of a 95 % coverage over 200 draws:
    # sqrt(0.95 * 0.05 / 200) = 0.015. Accept from 3 errors below (0.905) and refuse an interval so wide it
    # (almost) always covers.
    repeats = 3
    truth_one = JUDGE / (JUDGE + ATTEMPT + CASE)
    truth_used = (JUDGE / attempts / repeats) / (JUDGE / attempts / repeats + ATTEMPT / attempts + CASE)
    generator = random.Random(1 + cases)
    covered_one = covered_used = 0
    draws = 200
    for _ in range(draws):
        shares = noise_shares(simulate(generator, cases=cases, attempts=attempts, repeats=repeats), resamples=1000)
        assert shares is not None
        covered_one += shares.one_judgment.low <= truth_one <= shares.one_judgment.high
        covered_used += shares.case_value.low <= truth_used <= shares.case_value.high
    assert 0.905 <= covered_one / draws <= 0.99
    assert 0.905 <= covered_used / draws <= 0.99


def test_the_planning_line_says_the_share_of_a_cases_value_and_the_repeats_that_halve_it():
    data = simulate(random.Random(3), cases=30, attempts=1, repeats=3)
    noise = JudgeNoise("answer_f1", "answer F1", split_variance(data), noise_shares(data))
    shares = noise.shares
    assert shares is not None and shares.repeats_to_halve is not None
    line = noise.plan()
    assert line is not None
    assert line.startswith(f"answer F1: with 3 repeats the judge is {shares.case_value.value * 100:.0f} % of a "
                           "case's value (95 % ")
    assert line.endswith(f"; {shares.repeats_to_halve} repeats would halve that")
    stored = noise.to_dict()
    assert stored["judge_share"] == pytest.approx(shares.one_judgment.value)
    assert stored["judge_share_of_value"] == pytest.approx(shares.case_value.value)
    assert (stored["judge_share_of_value_low"], stored["judge_share_of_value_high"]) == (
        shares.case_value.low, shares.case_value.high)
    assert stored["repeats_to_halve"] == shares.repeats_to_halve and stored["plan"] == line
    assert JudgeNoise("answer_f1", "answer F1", split_variance(data)).plan() is None


@pytest.mark.parametrize(("used", "halve", "exp_end"), [
    (0.0, None, "; more repeats would not change it"),
    (0.9, None, "; no number of repeats up to 20 halves that: a steadier judge would"),
    (0.25, 7, "; 7 repeats would halve that"),
])
def test_the_planning_line_says_when_repeats_cannot_help(used, halve, exp_end):
    shares = NoiseShares(Share(0.5, 0.3, 0.7), Share(used, None, None), 3.0, halve)
    noise = JudgeNoise("answer_f1", "answer F1", split_variance([[[0.4, 0.6]], [[0.6, 1.0]]]), shares)
    assert noise.plan() == f"answer F1: with 3 repeats the judge is {used * 100:.0f} % of a case's value{exp_end}"
