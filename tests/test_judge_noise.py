"""The judge's share of a metric's variance (qareport.judge_noise): the variance split checked on
simulated data with known components, and read from judged results with per-repeat values."""

from __future__ import annotations

import random
from statistics import fmean, stdev

import pytest

from qareport.judge_noise import split_variance

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
