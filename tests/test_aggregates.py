"""Per-template, micro and macro aggregates, exactly as graphrag-eval 5.2 computes them.

`data/aggregates_expected.json` is what graphrag-eval 5.2.0's `compute_aggregates`, run once on
Python 3.12.1 (the Python it requires), returned for `data/aggregates_results.json`: realistic
results (the power-system example of the seed evaluated by qareport, with judge-like answer and
retrieval metrics, plus synthetic questions in four templates, one of them errors only).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qareport.aggregates import ALWAYS_REPORTED, compute_aggregates, series_statistics, sum_as_python312

DATA = Path(__file__).parent / "data"
ZERO = {"sum": 0, "mean": 0, "median": 0, "min": 0, "max": 0}
USAGE = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110, "elapsed_sec": 2.5}


def stats(sum_, mean_, median_, min_, max_):
    return {"sum": sum_, "mean": mean_, "median": median_, "min": min_, "max": max_}


def sample(template="t", **fields):
    return {"template_id": template, "question_id": "q", "question_text": "?", "status": "success", **fields}


def step(name, status="success", output='{"results": {"bindings": [{"x": {}}]}}', **fields):
    result = {"name": name, "id": "c", "status": status, **fields}
    if output is not None:
        result["output"] = output
    return result


EMPTY_SPARQL = '{"head": {"vars": ["x"]}, "results": {"bindings": []}}'


# --- the graphrag-eval fixture ------------------------------------------------------------------------


def key_orders(value, path=""):
    """Every dict's key order, by path, except the order of the templates."""
    if not isinstance(value, dict):
        return {}
    orders = {} if path == "/per_template" else {path: list(value)}
    for key, item in value.items():
        orders.update(key_orders(item, f"{path}/{key}"))
    return orders


def test_realistic_results_aggregate_exactly_as_graphrag_eval_does():
    results = json.loads((DATA / "aggregates_results.json").read_text(encoding="utf-8"))
    exp = json.loads((DATA / "aggregates_expected.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(compute_aggregates(results)))  # as a results file would hold it
    assert got == exp
    assert key_orders(got) == key_orders(exp)


def test_results_are_not_modified():
    results = json.loads((DATA / "aggregates_results.json").read_text(encoding="utf-8"))
    before = json.dumps(results)
    compute_aggregates(results)
    assert json.dumps(results) == before


# --- tables ------------------------------------------------------------------------------------------


def test_no_results():
    assert compute_aggregates([]) == {
        "per_template": {},
        "micro": {
            "number_of_error_samples": 0,
            "number_of_success_samples": 0,
            **{metric: ZERO for metric in ALWAYS_REPORTED},
        },
        "macro": {metric: {"mean": 0} for metric in ALWAYS_REPORTED},
    }


def test_only_error_samples_report_token_and_time_statistics_as_zero():
    got = compute_aggregates([sample(status="error", error="boom"), sample(status="error", error="again")])
    assert got["per_template"] == {
        "t": {
            "number_of_error_samples": 2,
            "number_of_success_samples": 0,
            **{metric: ZERO for metric in ALWAYS_REPORTED},
        }
    }
    assert got["micro"]["number_of_error_samples"] == 2
    assert got["macro"] == {metric: {"mean": 0} for metric in ALWAYS_REPORTED}


@pytest.mark.parametrize(
    ("fields", "errors", "successes"),
    [
        pytest.param({"status": "error", "error": "x"}, 1, 0, id="error form"),
        pytest.param({"status": "success", "error": None}, 1, 0, id="an error key makes an error sample"),
        pytest.param({"status": "error"}, 0, 1, id="status error without an error key is a success sample"),
        pytest.param({"steps_error": "bad step"}, 0, 1, id="a steps_error is not a sample error"),
    ],
)
def test_a_sample_is_an_error_sample_iff_it_has_an_error_key(fields, errors, successes):
    micro = compute_aggregates([sample(**fields)])["micro"]
    assert (micro["number_of_error_samples"], micro["number_of_success_samples"]) == (errors, successes)


def test_statistics_over_success_samples_only():
    results = [
        sample(steps_score=1.0, answer_recall=0.5, **USAGE),
        sample(steps_score=0.0, **{**USAGE, "input_tokens": 300, "elapsed_sec": 1.0}),
        sample(status="error", error="boom", steps_score=0.7, input_tokens=10**6),
    ]
    summary = compute_aggregates(results)["per_template"]["t"]
    assert list(summary) == [
        "number_of_error_samples", "number_of_success_samples", "answer_recall", "steps_score",
        "input_tokens", "output_tokens", "total_tokens", "elapsed_sec",
    ]
    assert summary["answer_recall"] == stats(0.5, 0.5, 0.5, 0.5, 0.5)
    assert summary["steps_score"] == stats(1.0, 0.5, 0.5, 0.0, 1.0)
    assert summary["input_tokens"] == stats(400, 200, 200.0, 100, 300)
    assert summary["elapsed_sec"] == stats(3.5, 1.75, 1.75, 1.0, 2.5)


@pytest.mark.parametrize(
    ("values", "exp"),
    [
        pytest.param([1, 2], stats(3, 1.5, 1.5, 1, 2), id="ints: mean becomes a float when it must"),
        pytest.param([2, 2, 2], stats(6, 2, 2, 2, 2), id="ints stay ints"),
        pytest.param([1, 3], stats(4, 2, 2.0, 1, 3), id="median of an even count is a float"),
        pytest.param([0.1] * 10, stats(1.0, 0.1, 0.1, 0.1, 0.1), id="Python 3.12 compensated sum"),
        pytest.param([1, 0.5], stats(1.5, 0.75, 0.75, 0.5, 1), id="ints and floats"),
        pytest.param([], ZERO, id="empty series"),
    ],
)
def test_series_statistics(values, exp):
    got = series_statistics(values)
    assert got == exp
    assert [type(v) for v in got.values()] == [type(v) for v in exp.values()]


@pytest.mark.parametrize(
    "values",
    [[0.1] * 10, [1e16, 1.0, -1e16], [1, 2**70, 0.5], [True, 0.1, 2], [0.1, 0.2, 0.3], [-0.0], [3, 4]],
)
def test_sum_is_python_312s(values):
    # expected values are what Python 3.12.1's builtin sum() returns for these lists
    exp = {
        (0.1,) * 10: 1.0, (1e16, 1.0, -1e16): 1.0, (1, 2**70, 0.5): 1.1805916207174113e21,
        (True, 0.1, 2): 3.1, (0.1, 0.2, 0.3): 0.6, (-0.0,): 0.0, (3, 4): 7,
    }[tuple(values)]
    got = sum_as_python312(values)
    assert got == exp and type(got) is type(exp)


def test_step_counters():
    results = [
        sample(actual_steps=[
            step("autocomplete_search", output=EMPTY_SPARQL),
            step("sparql_query", status="error", output=None, error="boom"),
            step("sparql_query"),
            step("autocomplete_search", output="not json"),
        ]),
        sample(actual_steps=[step("sparql_query", output=EMPTY_SPARQL)]),
        sample(actual_steps=[]),
        sample(status="error", error="x", actual_steps=[step("sparql_query", status="error", output=None)]),
    ]
    steps = compute_aggregates(results)["per_template"]["t"]["steps"]
    assert steps == {
        "total": {"autocomplete_search": 2, "sparql_query": 3},
        "once_per_sample": {"autocomplete_search": 1, "sparql_query": 2},
        "empty_results": {"autocomplete_search": 1, "sparql_query": 1},
        "errors": {"sparql_query": 1},
    }
    assert list(steps) == ["total", "once_per_sample", "empty_results", "errors"]  # first use order


def test_templates_without_steps_have_no_steps_entry():
    assert "steps" not in compute_aggregates([sample(actual_steps=[])])["per_template"]["t"]


def test_retrieval_step_metrics_sit_in_steps_per_template_and_at_the_top_of_micro():
    results = [
        sample("a", actual_steps=[step("retrieval", output="[]", retrieval_answer_recall=1.0,
                                       retrieval_context_recall=0.5, retrieval_answer_recall_error=None)]),
        sample("a", actual_steps=[step("retrieval", output="[]", retrieval_answer_recall=0.5)]),
        sample("b", actual_steps=[step("retrieval", output="[]", retrieval_answer_recall=0.0,
                                       unrelated_metric=3)]),
        sample("b", actual_steps=[step("sparql_query", retrieval_answer_recall=0.9)]),  # not a retrieval step
    ]
    got = compute_aggregates(results)
    assert got["per_template"]["a"]["steps"]["retrieval_answer_recall"] == stats(1.5, 0.75, 0.75, 0.5, 1.0)
    assert got["per_template"]["a"]["steps"]["retrieval_context_recall"] == stats(0.5, 0.5, 0.5, 0.5, 0.5)
    assert got["per_template"]["b"]["steps"]["retrieval_answer_recall"] == stats(0.0, 0.0, 0.0, 0.0, 0.0)
    assert got["micro"]["retrieval_answer_recall"] == stats(1.5, 0.5, 0.5, 0.0, 1.0)
    assert list(got["micro"])[-2:] == ["retrieval_answer_recall", "retrieval_context_recall"]
    assert got["macro"]["retrieval_answer_recall"] == {"mean": 0.375}
    assert got["macro"]["retrieval_context_recall"] == {"mean": 0.5}


def test_micro_pools_samples_and_macro_averages_template_means():
    results = [
        sample("a", steps_score=1.0), sample("a", steps_score=1.0), sample("a", steps_score=0.0),
        sample("b", steps_score=0.0),
    ]
    got = compute_aggregates(results)
    assert got["micro"]["steps_score"] == stats(2.0, 0.5, 0.5, 0.0, 1.0)
    assert got["macro"]["steps_score"] == {"mean": pytest.approx(1 / 3)}
    assert list(got["per_template"]) == ["a", "b"]


def test_a_step_named_mean_is_averaged_by_macro_as_graphrag_eval_does():
    results = [sample(actual_steps=[step("mean"), step("mean")])]
    assert compute_aggregates(results)["macro"]["total"] == {"mean": 2}


# --- where graphrag-eval crashes: count what can be counted ----------------------------------------


def test_unusable_steps_and_values_never_raise():
    results = [
        sample(
            steps_score="high",  # not a number: left out
            input_tokens=5,
            actual_steps=[
                {"name": "sparql_query", "id": "no-status", "output": EMPTY_SPARQL},  # no status: not an error
                {"name": "sparql_query", "status": "success"},  # no output: not an empty result
                {"status": "success", "output": "x"},  # no name: not counted
                {"name": ["unhashable"], "status": "success"},
                "not a step",
                {"name": "retrieval", "status": "success", "output": 7, "retrieval_answer_recall": "0.5"},
            ],
        ),
        sample(actual_steps=None),
        {"question_id": "no template", "status": "success", "steps_score": 1.0},
        "not a result",
    ]
    got = compute_aggregates(results)
    assert got["per_template"]["t"]["steps"] == {
        "total": {"sparql_query": 2, "retrieval": 1},
        "once_per_sample": {"sparql_query": 1, "retrieval": 1},
        "empty_results": {"sparql_query": 1},
    }
    assert "steps_score" not in got["per_template"]["t"]
    assert got["per_template"]["t"]["input_tokens"] == stats(5, 5, 5, 5, 5)
    assert got["per_template"][None]["steps_score"] == stats(1.0, 1.0, 1.0, 1.0, 1.0)
    assert got["micro"]["number_of_success_samples"] == 3
