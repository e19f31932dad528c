"""The decisions built on the clustered statistics, tested on simulated suites whose truth is known.

Each simulation draws a suite of templates (clusters) of questions, each question answered a few times
(attempts), twice: last week and this week. A question's true pass rate is the suite's level plus its
template's effect plus its own; each attempt passes or fails with that chance; a case's value is the
share of its attempts that passed. Between the weeks every template moves by its own amount (mean 0:
the template-level null) and, when a drop is planted, every question's rate falls by it.

Every simulation is seeded, so each rate is one fixed number; the bounds are binomial ones: a rate
estimated from n independent draws has standard error sqrt(p (1 - p) / n), and each comment says how
far the bound lies from the rate measured.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from qareport.clustered_statistics import benjamini_hochberg, clustered_interval, clustered_paired_change, holm
from qareport.comparison import BreakdownChange, Comparison, HeadlineDelta, compare_runs, decide_noise
from qareport.records import RunSnapshot
from qareport.runs import case_row_from_stored
from qareport.workbook.summary_results import shown_interval

LEVEL, TEMPLATE_SD, QUESTION_SD, TEMPLATE_CHANGE_SD = 0.65, 0.12, 0.12, 0.12


def binomial_se(rate: float, draws: int) -> float:
    return math.sqrt(rate * (1 - rate) / draws)


def simulate_weeks(generator: np.random.Generator, *, templates: int, per_template: int, attempts: int,
                   drop: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Two weeks of one suite: cases x attempts of 0/1 outcomes each, and each case's template."""
    template = np.repeat(generator.normal(0, TEMPLATE_SD, templates), per_template)
    truth = np.clip(LEVEL + template + generator.normal(0, QUESTION_SD, template.size), 0.3, 0.95)
    moved = np.repeat(generator.normal(0, TEMPLATE_CHANGE_SD, templates), per_template)
    after = np.clip(truth - drop + moved, 0.0, 1.0)
    old = (generator.random((truth.size, attempts)) < truth[:, None]).astype(float)
    new = (generator.random((truth.size, attempts)) < after[:, None]).astype(float)
    return old, new, [f"template {index // per_template}" for index in range(truth.size)]


def measured_change(generator: np.random.Generator, *, templates: int, drop: float) -> tuple[float, float]:
    """One simulated pair of weeks (10 questions a template, 3 attempts each): the clustered test's p-value
    and the observed change."""
    old, new, clusters = simulate_weeks(generator, templates=templates, per_template=10, attempts=3, drop=drop)
    change = clustered_paired_change(old, new, clusters=clusters, resamples=100)
    assert change is not None
    return change.p_value, change.delta


def headline_decided(p_values: list[float], *, null_breakdowns: int,
                     generator: np.random.Generator) -> tuple[HeadlineDelta, ...]:
    """Three headline metrics with these p-values as `decide_noise` decides them, beside a long family
    of unchanged breakdowns (their p-values uniform): the decision the workbook makes."""
    headline = tuple(HeadlineDelta(metric, None, None, 0, 0, p_value=p_value)
                     for metric, p_value in zip(("steps_score", "answer_recall", "answer_precision"), p_values))
    breakdown = tuple(BreakdownChange("tag", f"tag {i}", "steps_score", 10, 1, 0.5, 0.5, 0.0, 0.0, float(p))
                      for i, p in enumerate(generator.random(null_breakdowns)))
    return decide_noise(Comparison("last", "", "", (), headline, breakdown=breakdown)).headline


@pytest.mark.parametrize(("templates", "drop"), [(30, 0.15), (8, 0.30)])
def test_a_real_drop_in_every_template_is_beyond_noise_however_many_breakdowns_are_tested(templates, drop):
    generator = np.random.default_rng(templates)
    draws = 300
    caught = 0
    for _ in range(draws):
        p_value, delta = measured_change(generator, templates=templates, drop=drop)
        decided = headline_decided([p_value, 0.6, 0.9], null_breakdowns=60, generator=generator)
        caught += bool(decided[0].beyond_noise) and delta < 0
    # measured 0.99 (30 templates) and 0.87 (8); the same p-values in one Benjamini-Hochberg family with
    # the 60 breakdowns were caught 0.74 and 0.00 of the time. At a true 0.85 the binomial error of 300
    # draws is 0.021, so 0.8 is 2.4 of them below even that
    assert caught / draws >= 0.8


def test_under_a_template_level_null_the_headline_raises_at_most_6_percent_false_alarms():
    generator = np.random.default_rng(7)
    draws = 250
    alarms = 0
    for _ in range(draws):
        p_values = [measured_change(generator, templates=30, drop=0.0)[0] for _ in range(3)]
        alarms += any(item.beyond_noise for item in headline_decided(p_values, null_breakdowns=60,
                                                                     generator=generator))
    # any of three unchanged headline metrics called beyond noise: Holm holds that at 0.05; measured
    # 0.032. 250 draws: binomial error 0.014 at 0.05, so 0.06 leaves 0.7 of them above the nominal level
    assert alarms / draws <= 0.06


def test_the_headline_family_is_holm_over_the_headline_metrics_and_each_breakdown_family_its_own_bh():
    headline = tuple(HeadlineDelta(m, None, None, 0, 0, p_value=p)
                     for m, p in (("a", 0.01), ("b", 0.04), ("c", 0.03)))
    breakdown = tuple(BreakdownChange(by, f"{by} {i}", "a", 5, 1, 0.5, 0.4, -0.2, 0.0, p)
                      for by, ps in (("tag", (0.001, 0.02, 0.5)), ("template", (0.04, 0.01)),
                                     ("dimension", (0.03,)))
                      for i, p in enumerate(ps))
    decided = decide_noise(Comparison("last", "", "", (), headline, breakdown=breakdown))
    assert [d.q_value for d in decided.headline] == pytest.approx(list(holm([0.01, 0.04, 0.03]).q_values))
    assert [d.q_value for d in decided.headline] == pytest.approx([0.03, 0.06, 0.06])
    for by in ("tag", "template", "dimension"):
        family = [item for item in decided.breakdown if item.by == by]
        assert [item.q_value for item in family] == pytest.approx(
            list(benjamini_hochberg([item.p_value for item in family]).q_values))
    assert [item.beyond_noise for item in decided.breakdown] == [True, True, False, True, True, True]


def test_holm_equals_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    generator = np.random.default_rng(5)
    for _ in range(20):
        p_values = generator.random(7) ** 3
        got = holm(p_values.tolist())
        exp = multitest.multipletests(p_values, method="holm")[1]
        np.testing.assert_allclose(got.q_values, exp, rtol=1e-12)


def test_a_sign_flip_p_value_is_not_floored_at_one_over_the_draws():
    generator = np.random.default_rng(11)
    old = generator.random((2000, 1))
    new = old - 0.27 + generator.normal(0, 0.1, (2000, 1))
    got = clustered_paired_change(old, new, clusters=[i // 10 for i in range(2000)], resamples=100)
    assert got is not None and 0 <= got.p_value < 1 / 10_001  # 200 templates, every one dropped
    few = clustered_paired_change([0.9] * 4, [0.1] * 4)  # 4 clusters: exactly 2 of 16 patterns as extreme
    assert few is not None and few.exact and few.p_value == 2 / 16


def _conversation(case_id: str, recall: float) -> dict:
    return {"case_id": case_id, "kind": "conversation", "name": case_id, "groups": ["weo"], "cluster": "weo",
            "status": "success", "definition_hash": "", "macro_recall": recall, "macro_precision": 1.0}


def test_with_every_case_in_one_cluster_the_suite_and_the_tag_holding_it_agree_and_the_interval_holds_the_change():
    old = [_conversation(f"c{i}", 1.0 if i % 4 else 0.75) for i in range(40)]
    new = [dict(row, macro_recall=row["macro_recall"] - (0.5 if i % 4 == 1 else 0.0)) for i, row in enumerate(old)]
    comparison = compare_runs(RunSnapshot("last", "2024-05-01", "0", tuple(map(case_row_from_stored, old))),
                              RunSnapshot("this", "2024-05-08", "0", tuple(map(case_row_from_stored, new))))
    suite = next(item for item in comparison.headline if item.metric == "macro_recall")
    tag = next(item for item in comparison.breakdown if item.group == "weo" and item.metric == "macro_recall")
    assert suite.p_value == pytest.approx(tag.p_value) and suite.p_value < 0.01
    assert suite.beyond_noise and tag.beyond_noise and suite.clusters == 1
    assert suite.low is not None and suite.high is not None and suite.low < suite.delta < suite.high
    shown = shown_interval(suite)  # the change printed beside it lies inside it
    low, high = (float(bound.replace("\u2212", "-")) for bound in shown.split(" – "))
    assert low <= suite.shown_delta <= high and low < high


def test_the_interval_shown_never_leaves_out_the_change_shown_beside_it():
    delta = HeadlineDelta("macro_recall", 0.9, 0.8, 40, 40, shared_old=0.875, shared_new=0.7549, shared_cases=40,
                          p_value=0.001, low=-0.1203, high=-0.1199)
    assert delta.shown_delta == pytest.approx(-0.13)
    assert shown_interval(delta) == "\u22120.13 – \u22120.12"


# --------------------------------------------------------------------------------------------------
# intervals on small and near-perfect suites


@pytest.mark.parametrize("cases", [10, 20, 60])
def test_near_a_perfect_score_the_interval_covers_the_true_rate_at_least_90_percent_of_the_time(cases):
    generator = np.random.default_rng(cases)
    draws = 500
    covered = 0
    for _ in range(draws):
        values = (generator.random(cases) < 0.95).astype(float)
        got = clustered_interval(values, resamples=200)
        assert got is not None and got.high > got.low  # never of zero width, even at 20 of 20
        covered += got.low <= 0.95 <= got.high
    # the Wilson interval's coverage at 0.95 is 0.92-0.99 for these sizes; measured 0.93-0.99 here.
    # 500 draws: binomial error 0.013 at 0.92, so 0.9 lies 1.5 of them below
    assert covered / draws >= 0.9


def test_a_perfect_clustered_suite_gets_an_interval_as_wide_as_its_clusters_allow():
    got = clustered_interval([1.0] * 40, clusters=[f"t{i // 10}" for i in range(40)])
    assert got is not None and got.low < 1.0 == got.high
    alone = clustered_interval([1.0] * 40)  # 40 independent cases say more than 4 templates of 10
    assert alone is not None and got.low < alone.low < 1.0


# --------------------------------------------------------------------------------------------------
# one reconciled verdict


def _digest(deltas, **fields):
    from qareport.digest import BaselineInfo, Digest

    return Digest("2026-01-08", "0", {"success": 40}, 0, (), tuple(deltas), (), "",
                  baseline=BaselineInfo("last.xlsx", "2026-01-01", "0", {}), **fields)


def _delta(delta: float, beyond: bool, detectable: float = 0.11) -> HeadlineDelta:
    return HeadlineDelta("macro_recall", 0.9, 0.9 + delta, 40, 40, shared_old=0.9, shared_new=0.9 + delta,
                         shared_cases=40, p_value=0.001 if beyond else 0.4, clusters=20, detectable=detectable,
                         q_value=0.002 if beyond else 0.5, beyond_noise=beyond)


def test_regressed_cases_beside_means_within_noise_are_reconciled_in_words():
    from qareport.digest import reconcile

    full, short = reconcile(_digest([_delta(-0.03, False)], regressed_total=4, every_attempt=4, by_chance=0.02,
                                    beyond_chance=True))
    assert full == ("4 cases regressed on every attempt; the suite's means moved by less than this run can resolve "
                    "(0.11 for macro recall)")
    assert short == "too few for the means to show"
    lucky, _ = reconcile(_digest([_delta(-0.01, False)], regressed_total=1, every_attempt=1, by_chance=0.6,
                                 beyond_chance=False))
    assert lucky.startswith("1 case regressed on every attempt, no more than luck explains (about 0.6 expected)")
    single, _ = reconcile(_digest([_delta(-0.01, False)], regressed_total=2))
    assert single.startswith("2 cases regressed in a single run, which cannot tell a change from a flip")


def test_a_mean_that_fell_beyond_noise_with_no_case_regressed_is_said_as_a_spread_drop():
    from qareport.digest import reconcile

    full, short = reconcile(_digest([_delta(-0.05, True)], regressed_total=0))
    assert full.startswith("macro recall fell beyond noise though no single case regressed") and "many" in short


def test_cases_and_means_that_agree_need_no_reconciling():
    from qareport.digest import reconcile

    assert reconcile(_digest([_delta(-0.05, True)], regressed_total=3, every_attempt=3)) is None
    assert reconcile(_digest([_delta(0.0, False)], regressed_total=0)) is None


# --------------------------------------------------------------------------------------------------
# what this run can see


@pytest.mark.parametrize(("templates", "floor"), [(30, 0.65), (8, 0.55)])
def test_a_drop_of_the_stated_detectable_size_is_caught_about_8_times_in_10_by_the_decision_made(templates, floor):
    from qareport.headline import detectable_change

    generator = np.random.default_rng(100 + templates)
    stated = []
    for _ in range(200):  # what a comparison of this design states, from its own per-case changes
        old, new, clusters = simulate_weeks(generator, templates=templates, per_template=10, attempts=3, drop=0.0)
        change = clustered_paired_change(old, new, clusters=clusters, resamples=50)
        assert change is not None
        stated.append(detectable_change(change.interval, of="differences", family=3))
    drop = float(np.mean(stated))
    draws = 250
    caught = 0
    for _ in range(draws):
        p_value, _ = measured_change(generator, templates=templates, drop=drop)
        caught += bool(headline_decided([p_value, 0.6, 0.9], null_breakdowns=0, generator=generator)[0].beyond_noise)
    # "about 8 times in 10", by Holm over three headline metrics: measured 0.81 (30 templates). With 8 the
    # exact sign flip over 8 clusters has less power than the t quantiles promise: measured 0.63 here
    # (0.66-0.73 over other seeds, 500 draws each); a known shortfall, said in the report. 250 draws:
    # binomial error 0.025 at 0.8 and 0.03 at 0.65
    assert floor <= caught / draws <= 0.95


def test_before_any_baseline_a_run_with_attempts_states_the_paired_figure_its_attempts_imply():
    from qareport.clustered_statistics import minimum_detectable_change
    from qareport.headline import headline_metrics

    generator = np.random.default_rng(9)
    truths = np.linspace(0.1, 0.9, 40)  # the cases differ a lot; each one's attempts little
    attempts = np.clip(truths[:, None] + generator.normal(0, 0.05, (40, 4)), 0, 1)
    rows = [case_row_from_stored({"case_id": f"c{i}", "kind": "conversation", "name": f"c{i}", "groups": [],
                                  "status": "success", "definition_hash": "h",
                                  "macro_recall": float(attempts[i].mean()),
                                  "attempts": {"macro_recall": attempts[i].tolist()}}) for i in range(40)]
    (recall,) = headline_metrics(rows)
    pooled = float(np.mean(attempts.var(axis=1, ddof=1)))
    exp = minimum_detectable_change(math.sqrt(2 * pooled / 4), cases=40, clusters=40).change
    assert recall.detectable == pytest.approx(exp)
    planned = minimum_detectable_change(float(attempts.mean(axis=1).std(ddof=1)), cases=40, clusters=40,
                                        of="values").change
    assert recall.detectable < planned / 5  # the unpaired plan would state a figure many times too large


@pytest.mark.parametrize("probability", [0.8, 0.975, 0.99167, 0.9975])
@pytest.mark.parametrize("degrees_of_freedom", [1, 3, 5, 7, 12, 29, 100, 999])
def test_the_fast_student_quantile_is_within_a_fifth_of_a_percent_of_scipys(probability, degrees_of_freedom):
    from scipy.stats import t

    from qareport.clustered_statistics import student_quantile

    exp = t.ppf(probability, degrees_of_freedom)
    assert student_quantile(probability, degrees_of_freedom) == pytest.approx(exp, rel=0.002)
