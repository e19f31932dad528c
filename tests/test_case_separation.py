"""Per-case changes with attempts: complete separation in any metric, and the error rate of the list.

A case answered several times in both runs regressed when, in some metric of its kind, every attempt
of this run lies below every attempt of the last; how many such cases luck alone would list is said,
and `--fail-on-regression` fails only on more than luck explains. Simulated weeks of unchanged flaky
cases check both: the stated expectation is what happens, and the gate rarely fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from qareport.attempt_statistics import CaseVerdict, Separation, chance_of_at_least, separate_attempts
from qareport.case_changes import RegressionChance
from qareport.comparison import compare_runs
from qareport.gates import regression_gate
from qareport.records import RunSnapshot
from qareport.runs import case_row_from_stored


def row(case_id: str, recalls, precisions=None) -> dict:
    precisions = list(precisions) if precisions is not None else [1.0] * len(recalls)
    return {"case_id": case_id, "name": case_id, "kind": "conversation", "status": "success",
            "definition_hash": "h", "groups": [], "macro_recall": float(np.mean(recalls)),
            "macro_precision": float(np.mean(precisions)),
            "attempts": {"macro_recall": [float(v) for v in recalls], "macro_precision": precisions}}


def compare(old: list[dict], new: list[dict]):
    return compare_runs(RunSnapshot("last", "2026-01-01", "0", tuple(map(case_row_from_stored, old))),
                        RunSnapshot("this", "2026-01-08", "0", tuple(map(case_row_from_stored, new))),
                        detailed=False)


def test_a_drop_on_every_attempt_of_a_metric_other_than_the_main_one_is_a_regression():
    comparison = compare([row("c", [1.0] * 5, [1.0] * 5)], [row("c", [1.0] * 5, [0.5] * 5)])
    assert [(m.case_id, m.kind) for m in comparison.movements] == [("c", "regression")]
    assert regression_gate(comparison).passed is False


@pytest.mark.parametrize("attempts", [2, 3, 4, 7])
def test_every_attempt_passing_then_none_is_a_regression_whatever_the_number_of_attempts(attempts):
    got = separate_attempts({"recall": [1.0] * attempts}, {"recall": [0.0] * attempts})
    assert got.verdict is CaseVerdict.REGRESSED and got.down == ("recall",)
    assert got.chance_down == pytest.approx(1 / math.comb(2 * attempts, attempts))


def test_attempts_that_overlap_in_every_metric_moved_within_noise():
    got = separate_attempts({"recall": [1, 1, 1, 0], "precision": [1, 1, 1, 1]},
                            {"recall": [0, 0, 0, 1], "precision": [1, 1, 1, 1]})
    assert got.verdict is CaseVerdict.WITHIN_NOISE and got.down == got.up == ()


def test_the_chance_of_a_separation_counts_each_split_once_across_metrics_of_the_same_attempts():
    # recall and precision part the same attempts: one split of C(6, 3) = 20, not two
    same = separate_attempts({"recall": [1, 1, 1], "precision": [1, 1, 1]}, {"recall": [0, 0, 0], "precision": [0, 0, 0]})
    assert same.chance_down == pytest.approx(1 / 20)
    # ties leave no gap: 4 passes among 6 pooled attempts cannot part 3 lowest from the rest
    assert separate_attempts({"recall": [1, 1, 1]}, {"recall": [1, 0, 0]}).chance_down == 0.0


def test_the_chance_of_at_least_so_many_is_the_poisson_binomial_tail():
    generator = np.random.default_rng(3)
    chances = generator.random(12) / 4
    draws = generator.random((200_000, 12)) < chances
    for observed in (0, 1, 2, 4):
        exp = float(np.mean(draws.sum(axis=1) >= observed))
        assert chance_of_at_least(observed, chances.tolist()) == pytest.approx(exp, abs=0.004)  # 4 MC errors


def flaky_weeks(generator: np.random.Generator, rates: np.ndarray, attempts: int) -> list[Separation]:
    """Two weeks of the same unchanged flaky cases (each passes an attempt with its own rate; recall
    0 or 1, precision 0.5 or 1), each case's attempts separated as the comparison does."""
    weeks = [((generator.random((rates.size, attempts)) < rates[:, None]).astype(float).tolist(),
              np.where(generator.random((rates.size, attempts)) < rates[:, None], 1.0, 0.5).tolist())
             for _ in range(2)]
    (old_recall, old_precision), (new_recall, new_precision) = weeks
    return [separate_attempts({"macro_recall": old_recall[i], "macro_precision": old_precision[i]},
                              {"macro_recall": new_recall[i], "macro_precision": new_precision[i]})
            for i in range(rates.size)]


def test_on_300_unchanged_flaky_cases_the_gate_fails_rarely_and_the_list_is_as_large_as_stated():
    generator = np.random.default_rng(28)
    rates = generator.uniform(0.3, 0.7, 300)  # each case's own chance of passing an attempt, unchanged
    weeks = 200
    failed = 0
    listed: list[int] = []
    stated: list[float] = []
    for _ in range(weeks):
        cases = flaky_weeks(generator, rates, 5)
        regressed = sum(case.verdict is CaseVerdict.REGRESSED for case in cases)
        chances = [case.chance_down for case in cases]
        chance = RegressionChance(len(cases), regressed, sum(chances), chance_of_at_least(regressed, chances))
        failed += chance.beyond_chance()  # what `--fail-on-regression` fails on (`regression_gate`)
        listed.append(regressed)
        stated.append(chance.expected)
    # the gate fails when more cases separated than luck explains at the 5 % level: measured 0.01
    # of weeks; 200 weeks give a binomial error of 0.015 at 0.05, so 0.1 lies 3.3 of them above it
    assert failed / weeks <= 0.10
    # "about 0.44 would be listed by luck alone": the stated number is what luck lists, week by week.
    # measured 0.43 listed a week against 0.44 stated; the Poisson error of a mean over
    # 200 weeks is about 0.047
    assert np.mean(listed) == pytest.approx(np.mean(stated), abs=0.15)
