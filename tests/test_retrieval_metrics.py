"""Recall@k and average precision of retrieved document ids."""

import pytest

from qareport.retrieval_metrics import average_precision, recall_at_k


@pytest.mark.parametrize(
    ("relevant", "retrieved", "k", "exp"),
    [
        pytest.param([1, 3, 5, 6], [1, 4, 3, 5, 7], 5, 0.75, id="readme example: 3 of 4 relevant in top 5"),
        pytest.param(["a", "b"], ["a", "b"], 2, 1.0, id="all found"),
        pytest.param(["a", "b"], ["c", "d"], 2, 0.0, id="none found"),
        pytest.param(["a", "b", "c"], ["c", "x", "a"], 2, 0.0, id="both lists are cut at k"),
        pytest.param(["a", "b", "c"], ["b", "a"], 2, 1.0, id="denominator is the relevant ids within k"),
        pytest.param(["a", "b"], ["b", "a", "c"], 10, 1.0, id="k beyond both lists"),
        pytest.param(["a", "b", "c"], ["c"], None, 1 / 3, id="k None keeps the lists whole"),
        pytest.param(["a", "a"], ["a"], 5, 0.5, id="duplicate relevant ids count in the denominator"),
        pytest.param(["a"], ["a", "a"], 5, 1.0, id="duplicate retrieved ids count once"),
    ],
)
def test_recall_at_k(relevant, retrieved, k, exp):
    assert recall_at_k(relevant, retrieved, k) == pytest.approx(exp)


@pytest.mark.parametrize("retrieved", [[], ["a"]])
def test_recall_without_relevant_ids_is_zero(retrieved):
    assert recall_at_k([], retrieved, 3) == 0.0


def test_recall_default_k_is_ten():
    relevant = list(range(20))
    assert recall_at_k(relevant, relevant) == 1.0
    assert recall_at_k(relevant, list(range(10, 20))) == 0.0


def test_recall_is_a_float():
    assert type(recall_at_k(["a"], ["a"], 1)) is float


@pytest.mark.parametrize(
    ("relevant", "retrieved", "exp"),
    [
        pytest.param({1, 3, 5, 6}, [1, 4, 3, 5, 7], (1 + 2 / 3 + 3 / 4) / 4, id="the formula, not the README's 0.8056"),
        pytest.param({"a"}, ["a"], 1.0, id="single hit at rank 1"),
        pytest.param({"a"}, ["x", "a"], 0.5, id="single hit at rank 2"),
        pytest.param({"a", "b"}, ["a", "b"], 1.0, id="perfect ranking"),
        pytest.param({"a", "b"}, ["x", "y"], 0.0, id="no hit"),
        pytest.param({"a", "b"}, [], 0.0, id="nothing retrieved"),
        pytest.param(set(), ["a"], 0.0, id="no relevant id"),
        pytest.param({"a"}, ["a", "a"], 1.0, id="a repeated hit counts once"),
    ],
)
def test_average_precision(relevant, retrieved, exp):
    assert average_precision(relevant, retrieved) == pytest.approx(exp)


def test_average_precision_of_the_readme_example_is_0_604():
    assert round(average_precision({1, 3, 5, 6}, [1, 4, 3, 5, 7]), 3) == 0.604


@pytest.mark.parametrize(
    ("relevant", "retrieved"),
    [([1, 2, 3], [3, 2, 1, 1, 9]), (["x"], ["y", "x", "x"]), ([1, 1, 2], [2, 2, 2])],
)
def test_every_score_lies_between_zero_and_one(relevant, retrieved):
    for score in (recall_at_k(relevant, retrieved, 2), average_precision(relevant, retrieved)):
        assert 0.0 <= score <= 1.0
