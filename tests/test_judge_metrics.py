"""The arithmetic of the judged metrics and the string-distance retrieval-context metrics."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qareport.judge.answer_correctness import claim_scores
from qareport.judge.answer_relevance import cosine_similarity, relevance_score
from qareport.judge.checks import claim_count_problem
from qareport.judge.prices import DEFAULT_PRICES, ModelPrice, PriceTable, parse_prices
from qareport.judge.retrieval_answer import attributed_fraction, f1_keys
from qareport.retrieval_context import (
    average_precision_of_verdicts as average_precision,
)
from qareport.retrieval_context import (
    context_overlap,
    f1_score,
    levenshtein_distance,
    matched_reference_retrieval_steps,
    parse_contexts,
    string_similarity,
    with_retrieval_context_scores,
)


@pytest.mark.parametrize(
    "reference, actual, matching, exp",
    [
        (2, 2, 2, (1.0, 1.0, 1.0)),
        (2, 3, 1, (0.5, 1 / 3, 0.4)),
        (4, 1, 1, (0.25, 1.0, 0.4)),
        (3, 5, 0, (0.0, 0.0, 0.0)),  # F1 is 0.0, not undefined, when recall and precision are 0
        (1, 1, 0, (0.0, 0.0, 0.0)),
    ],
)
def test_claim_scores(reference, actual, matching, exp):
    got = claim_scores(reference, actual, matching)
    assert got == pytest.approx(exp)


@pytest.mark.parametrize(
    "reference, actual, matching, problem",
    [
        (0, 2, 0, "reference answer must have at least 1 claim"),
        (2, 0, 0, "actual answer must have at least 1 claim"),
        (2, 2, -1, "cannot be negative"),
        (2, 5, 3, "exceed the reference answer's claims (2)"),
        (5, 2, 3, "exceed the actual answer's claims (2)"),
    ],
)
def test_contradicting_claim_counts_are_refused(reference, actual, matching, problem):
    assert problem in claim_count_problem(reference, actual, matching)
    with pytest.raises(ValueError):
        claim_scores(reference, actual, matching)


@given(st.integers(1, 50), st.integers(1, 50), st.data())
def test_claim_scores_lie_in_unit_interval_and_f1_between(reference, actual, data):
    matching = data.draw(st.integers(0, min(reference, actual)))
    recall, precision, f1 = claim_scores(reference, actual, matching)
    assert claim_count_problem(reference, actual, matching) is None
    for value in (recall, precision, f1):
        assert 0.0 <= value <= 1.0
    assert min(recall, precision) - 1e-12 <= f1 <= max(recall, precision) + 1e-12
    # swapping the sides swaps recall and precision
    assert claim_scores(actual, reference, matching)[:2] == pytest.approx((precision, recall))


@pytest.mark.parametrize(
    "recall, precision, exp",
    [(None, 1.0, None), (1.0, None, None), (0.0, 0.0, 0.0), (1.0, 0.5, 2 / 3), (1.0, 1.0, 1.0)],
)
def test_f1_score(recall, precision, exp):
    assert f1_score(recall, precision) == (pytest.approx(exp) if exp is not None else None)


def test_cosine_similarity():
    assert cosine_similarity([1, 0], [1, 0]) == 1.0
    assert cosine_similarity([1, 0], [0, 2]) == 0.0
    assert cosine_similarity([1, 1], [-1, -1]) == pytest.approx(-1.0)
    assert cosine_similarity([0, 0], [1, 1]) == 0.0
    with pytest.raises(ValueError):
        cosine_similarity([1], [1, 2])


def test_relevance_is_the_mean_cosine_similarity():
    question = [1.0, 0.0]
    generated = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    exp = (1.0 + 0.0 + 1 / math.sqrt(2)) / 3
    assert relevance_score(question, generated, [False, False, False]) == pytest.approx(exp)
    # one committal question is enough for the score to count (RAGAS: not all noncommittal)
    assert relevance_score(question, generated, [True, True, False]) == pytest.approx(exp)


def test_relevance_is_zero_when_every_generated_question_is_noncommittal():
    assert relevance_score([1.0, 0.0], [[1.0, 0.0], [1.0, 0.1]], [True, True]) == 0.0


def test_relevance_needs_generated_questions():
    with pytest.raises(ValueError):
        relevance_score([1.0], [], [])


@pytest.mark.parametrize(
    "verdicts, exp",
    [
        ([], 0.0),
        ([False, False], 0.0),
        ([True], 1.0),
        ([True, False, True], (1 + 2 / 3) / 2),
        ([False, True], 0.5),
        # RAGAS divides by the relevant contexts retrieved, not by all relevant items: for relevant
        # ranks 1, 3, 4 of 5 this is 0.8056 (the formula over 4 relevant items of SPEC.md's steps
        # example would give 0.604; that is a different metric)
        ([True, False, True, True, False], (1 + 2 / 3 + 3 / 4) / 3),
    ],
)
def test_average_precision(verdicts, exp):
    assert average_precision(verdicts) == pytest.approx(exp)


def test_attributed_fraction():
    assert attributed_fraction([True, False, True, True]) == 0.75
    with pytest.raises(ValueError):
        attributed_fraction([])


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


@given(st.text(alphabet="abcé ", max_size=40), st.text(alphabet="abcdé ", max_size=90))
def test_levenshtein_matches_the_textbook_algorithm(a, b):
    assert levenshtein_distance(a, b) == _edit_distance(a, b)
    assert levenshtein_distance(b, a) == levenshtein_distance(a, b)


@pytest.mark.parametrize(
    "a, b, exp",
    [("", "", 1.0), ("abc", "", 0.0), ("kitten", "sitting", 1 - 3 / 7), ("same", "same", 1.0)],
)
def test_string_similarity(a, b, exp):
    assert string_similarity(a, b) == pytest.approx(exp)


def test_context_overlap_thresholds_like_ragas():
    reference = ["Transformer OSLO T1 is in Substation Oslo.", "Transformer OSLO T2 is in Substation Oslo."]
    retrieved = [
        "Transformer OSLO T1 is in Substation Oslo.",
        "The weather in Bergen is rainy today, as it often is.",
        "Transformer OSLO T2 is in substation Oslo!",
    ]
    got = context_overlap(reference, retrieved)
    assert got.found == (True, True)
    assert got.relevant == (True, False, True)
    assert got.recall == 1.0
    assert got.precision == pytest.approx((1 + 2 / 3) / 2)


def test_context_overlap_similarity_exactly_at_threshold():
    # similarity exactly 0.5: RAGAS counts it for precision (>=) but not for recall (>)
    got = context_overlap(["abcd"], ["abxy"])
    assert string_similarity("abcd", "abxy") == 0.5
    assert got.recall == 0.0
    assert got.precision == 1 / (1 + 1e-10)  # RAGAS's arithmetic, as graphrag-eval 5.x gives it


@given(st.lists(st.text(alphabet="ab", max_size=8), min_size=1, max_size=4),
       st.lists(st.text(alphabet="ab", max_size=8), min_size=1, max_size=4),
       st.sampled_from([0.0, 0.25, 0.5, 0.6, 0.75, 1.0]))
def test_context_overlap_verdicts_are_those_of_every_pair_measured(reference, retrieved, threshold):
    # qareport skips pairs whose lengths cannot reach the threshold; the verdicts must not change
    similarity = [[string_similarity(ref, ret) for ret in retrieved] for ref in reference]
    got = context_overlap(reference, retrieved, threshold=threshold)
    assert got.found == tuple(max(row) > threshold for row in similarity)
    assert got.relevant == tuple(max(row[j] for row in similarity) >= threshold for j in range(len(retrieved)))


@pytest.mark.parametrize(
    "reference, retrieved, recall, precision",
    [([], [], 1.0, 1.0), ([], ["x"], 1.0, 0.0), (["x"], [], 0.0, 0.0)],
)
def test_context_overlap_empty_lists_follow_langevals(reference, retrieved, recall, precision):
    got = context_overlap(reference, retrieved)
    assert (got.recall, got.precision) == (recall, precision)
    assert got.recall_reason


@pytest.mark.parametrize(
    "output, problem",
    [
        ("not json", "not JSON"),
        ('{"id": 1}', "got dict"),
        ('[{"id": "a"}]', "item 0 must be an object with a string 'text'"),
    ],
)
def test_parse_contexts_says_what_is_wrong(output, problem):
    with pytest.raises(ValueError, match="retrieval output") as info:
        parse_contexts(output)
    assert problem in str(info.value)


def _case(actual_output: str, reference_output: str, *, matches: str = "r1") -> dict:
    return {
        "status": "success",
        "actual_steps": [
            {"name": "retrieval", "id": "r1", "status": "success", "output": actual_output},
            {"name": "sparql_query", "id": "s1", "status": "success", "output": "{}"},
        ],
        "reference_steps": [
            [{"name": "retrieval", "output": "[]"}],  # not the last group: ignored
            [{"name": "retrieval", "output": reference_output, "matches": matches},
             {"name": "sparql_query", "output": "{}", "matches": "s1"}],
        ],
    }


def test_retrieval_context_keys_only_on_matched_retrieval_steps():
    contexts = json.dumps([{"id": "1", "text": "Transformer OSLO T1 is in Substation Oslo."}])
    matched = _case(contexts, contexts)
    unmatched = _case(contexts, contexts, matches="other")
    errored = {**_case(contexts, contexts), "status": "error"}
    matched, unmatched, errored = with_retrieval_context_scores([matched, unmatched, errored])
    step = matched["actual_steps"][0]
    assert step["retrieval_context_recall"] == 1.0
    assert step["retrieval_context_precision"] == 0.9999999999  # RAGAS divides by relevant + 1e-10
    assert step["retrieval_context_f1"] == 0.99999999995
    assert "retrieval_context_recall" not in matched["actual_steps"][1]
    assert not any(k.startswith("retrieval_context") for k in unmatched["actual_steps"][0])
    assert not any(k.startswith("retrieval_context") for k in errored["actual_steps"][0])
    assert len(matched_reference_retrieval_steps(matched)) == 1


def test_retrieval_context_error_for_unparsable_output():
    case = _case("oops", json.dumps([{"id": "1", "text": "t"}]))
    [case] = with_retrieval_context_scores([case])
    step = case["actual_steps"][0]
    assert step["retrieval_context_recall_error"].startswith("actual step: retrieval output")
    assert "retrieval_context_recall" not in step


def test_f1_keys_follow_graphrag():
    assert f1_keys({"x_recall": 1.0}, "x") == {}
    assert f1_keys({"x_recall": 1.0, "x_precision": 0.5}, "x") == {"x_f1": pytest.approx(2 / 3)}
    got = f1_keys({"x_recall": 0.0, "x_precision": 0.0, "x_recall_cost": 0.1, "x_precision_cost": 0.2}, "x")
    assert got == {"x_f1": 0.0, "x_f1_cost": pytest.approx(0.3)}


# --- prices --------------------------------------------------------------------------------------


def test_price_table_cost_arithmetic():
    table = PriceTable()
    # gpt-4o-mini: $0.15 / 1M input, $0.60 / 1M output
    assert table.cost(("gpt-4o-mini",), 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert table.cost(("gpt-4o-mini-2024-07-18",), 2000, 500) == pytest.approx(0.0006)
    assert table.cost(("text-embedding-3-small",), 1_000_000) == pytest.approx(0.02)
    assert table.cost(("llama3",), 10, 10) is None
    assert table.cost(("llama3", "gpt-4o-mini"), 1_000_000) == pytest.approx(0.15)
    assert DEFAULT_PRICES["gpt-4o-mini"] == ModelPrice(0.15, 0.60)


def test_price_overrides():
    overrides = parse_prices({"llama3": {"input_per_million": 1, "output_per_million": 2}})
    assert PriceTable(overrides).cost(("llama3",), 1_000_000, 1_000_000) == pytest.approx(3.0)


@pytest.mark.parametrize(
    "value, problem",
    [
        ([1], "must be a mapping"),
        ({"m": 3}, "'judge.prices.m' must be {input_per_million, output_per_million}"),
        ({"m": {"input_per_million": -1}}, "must be a number >= 0"),
        ({"m": {"input": 1}}, "unknown keys"),
        ({"m": {"output_per_million": 1}}, "must give input_per_million"),
    ],
)
def test_bad_prices_are_refused(value, problem):
    with pytest.raises(ValueError) as info:
        parse_prices(value)
    assert problem in str(info.value)
