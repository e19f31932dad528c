"""Set metrics: the counts, the ratios, and the policy for empty sets."""

import pytest

from qareport.set_metrics import mean_or_none, ratio, score_sets


@pytest.mark.parametrize(
    "expected, predicted, exp_tp, exp_fp, exp_fn, exp_precision, exp_recall",
    [
        # the methodology's worked example
        (["GDP", "GDPPC"], ["GDP", "GDPPC", "GDP_CONST"], 2, 1, 0, 2 / 3, 1.0),
        (["A"], ["A"], 1, 0, 0, 1.0, 1.0),
        (["A", "B"], ["C"], 0, 1, 2, 0.0, 0.0),
        (["A", "B"], [], 0, 0, 2, 0.0, 0.0),  # nothing predicted: precision 0/0 -> 0.0
        ([], ["A"], 0, 1, 0, 0.0, 0.0),  # nothing expected: recall 0/0 -> 0.0
        ([], [], 0, 0, 0, 0.0, 0.0),
        (["A", "A", "B"], ["A", "A"], 1, 0, 1, 1.0, 0.5),  # duplicates count once
    ],
)
def test_score_sets_counts_and_ratios(expected, predicted, exp_tp, exp_fp, exp_fn, exp_precision, exp_recall):
    got = score_sets(expected, predicted)
    assert (len(got.true_positives), len(got.false_positives), len(got.false_negatives)) == (exp_tp, exp_fp, exp_fn)
    assert got.precision == pytest.approx(exp_precision)
    assert got.recall == pytest.approx(exp_recall)


@pytest.mark.parametrize("a, b", [(["A", "B"], ["B", "C", "D"]), ([], ["A"]), (["A"], []), (["A", "B"], ["A", "B"])])
def test_recall_of_a_against_b_is_precision_of_b_against_a(a, b):
    assert score_sets(a, b).recall == score_sets(b, a).precision


def test_score_sets_keeps_the_order_of_first_appearance():
    got = score_sets(["B", "A", "C"], ["C", "X", "B", "Y"])
    assert got.true_positives == ("C", "B")
    assert got.false_positives == ("X", "Y")
    assert got.false_negatives == ("A",)


@pytest.mark.parametrize("numerator, denominator, zero_division, exp", [(1, 2, 0.0, 0.5), (0, 0, 0.0, 0.0), (0, 0, 1.0, 1.0)])
def test_ratio_uses_the_named_policy_only_when_undefined(numerator, denominator, zero_division, exp):
    assert ratio(numerator, denominator, zero_division=zero_division) == exp


def test_mean_of_nothing_is_none_not_zero():
    assert mean_or_none([]) is None
    assert mean_or_none([None, 1.0, 0.0]) == 0.5
