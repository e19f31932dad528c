"""The library API on the seed's power-system example: run_evaluation, then compute_aggregates.

`data/qa_power_system_reference.yaml` is the seed's reference dataset plus a template built from
its response example; `data/qa_power_system_responses.json` holds the seed's responses (the OSLO
evaluation example, the STAVANGER response example, the error form) and two more: one with a
failed call before a result with permuted, extra columns and shuffled rows, one missing a row
and its token counts.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from qareport.aggregates import compute_aggregates
from qareport.qa import QA_RESULT_KEYS, evaluate_question, order_result_keys, run_evaluation

DATA = Path(__file__).parent / "data"
OSLO = "c10bbc8dce98a4b8832d125134a16153"
STAVANGER = "8bbea9a10876a04ad77a82fd2aedee40"
NO2 = "d566b1e9da418ac83e520a66cc7af4d7"
NO1 = "03d4283773b4387114342518176b128b"
STAVANGER_LINES = "f91fc938d606e5f6089912bebfaf114b"
TRANSFORMERS = "list_all_transformers_within_Substation_SUBSTATION"
SUBSTATIONS = "list_all_substations_within_bidding_zone_REGION"
CONNECTED = "list_all_substations_that_are_connected_via_an_ac_line_or_a_dc_line_to_substation_named_SUBSTATION"


@pytest.fixture()
def reference_qas():
    return yaml.safe_load((DATA / "qa_power_system_reference.yaml").read_text(encoding="utf-8"))


@pytest.fixture()
def chat_responses():
    return json.loads((DATA / "qa_power_system_responses.json").read_text(encoding="utf-8"))


@pytest.fixture()
def results(reference_qas, chat_responses):
    return {result["question_id"]: result for result in run_evaluation(reference_qas, chat_responses)}


def test_one_result_per_question_in_dataset_order(reference_qas, chat_responses):
    got = [(r["template_id"], r["question_id"]) for r in run_evaluation(reference_qas, chat_responses)]
    assert got == [(TRANSFORMERS, OSLO), (TRANSFORMERS, STAVANGER), (SUBSTATIONS, NO2), (SUBSTATIONS, NO1),
                   (CONNECTED, STAVANGER_LINES)]


def test_oslo_question_matches_the_seeds_evaluation_example(results, reference_qas):
    got = results[OSLO]
    assert list(got) == [
        "template_id", "question_id", "question_text", "reference_answer", "reference_steps", "status",
        "actual_answer", "actual_steps", "steps_score", "input_tokens", "output_tokens", "total_tokens",
        "elapsed_sec",
    ]
    assert got["status"] == "success"
    assert got["steps_score"] == 1.0
    assert [step["matches"] for step in got["reference_steps"][-1]] == ["call_3", "call_3b3zHJnBXwYYSg04BiFGAAgO"]
    assert (got["input_tokens"], got["output_tokens"], got["total_tokens"], got["elapsed_sec"]) == (
        221339, 212, 221551, 6.601679801940918)
    assert "matches" not in reference_qas[0]["questions"][0]["reference_steps"][-1][0]


def test_error_form_response_gives_status_error_and_its_message(results):
    assert results[STAVANGER] == {
        "template_id": TRANSFORMERS,
        "question_id": STAVANGER,
        "question_text": "List all transformers within Substation STAVANGER",
        "reference_answer": "STAVANGET1",
        "reference_steps": results[STAVANGER]["reference_steps"],
        "status": "error",
        "error": "Error message",
    }
    assert "matches" not in results[STAVANGER]["reference_steps"][-1][0]


def test_permuted_extra_columns_after_a_failed_call_still_match(results):
    got = results[NO2]
    assert got["steps_score"] == 1.0
    assert got["reference_steps"][-1][0]["matches"] == "call_no2_ok"


def test_missing_token_fields_are_left_out(results):
    got = results[NO1]
    assert got["status"] == "success" and got["steps_score"] == 0.0
    assert not {"input_tokens", "output_tokens", "total_tokens", "elapsed_sec"} & set(got)
    assert "matches" not in got["reference_steps"][-1][0]


def test_latest_successful_call_matches_in_the_seeds_response_example(results):
    got = results[STAVANGER_LINES]
    assert got["steps_score"] == 1.0
    assert got["reference_steps"][-1][0]["matches"] == "call_Qm1mzX7g5q9SVPrR2QzEMTp3"
    assert "matches" not in got["reference_steps"][0][0]  # earlier groups are not scored


def test_missing_response_gives_an_error_result(reference_qas, chat_responses):
    del chat_responses[NO2]
    got = {r["question_id"]: r for r in run_evaluation(reference_qas, chat_responses)}[NO2]
    assert got["status"] == "error"
    assert got["error"] == f"no response for question {NO2}"
    assert list(got) == ["template_id", "question_id", "question_text", "reference_answer", "reference_steps",
                         "status", "error"]


def test_responses_may_be_a_list_of_records(reference_qas, chat_responses):
    as_list = list(chat_responses.values())
    assert run_evaluation(reference_qas, as_list) == run_evaluation(reference_qas, chat_responses)


def test_two_responses_for_one_question_are_refused(reference_qas, chat_responses):
    records = list(chat_responses.values())
    with pytest.raises(ValueError, match="second response for question"):
        run_evaluation(reference_qas, [*records, records[0]])


def test_inputs_are_not_modified(reference_qas, chat_responses):
    before = copy.deepcopy((reference_qas, chat_responses))
    results = run_evaluation(reference_qas, chat_responses)
    results[0]["actual_steps"][0]["output"] = "changed by a judge"
    results[0]["reference_steps"][0][0]["output"] = "changed"
    assert (reference_qas, chat_responses) == before


def test_judge_is_called_once_with_all_results(reference_qas, chat_responses):
    calls = []

    def judge(results):
        calls.append(len(results))
        for result in results:
            if "actual_answer" in result:
                result["answer_relevance"] = 0.9

    results = run_evaluation(reference_qas, chat_responses, judge=judge)
    assert calls == [5]
    assert {r["question_id"] for r in results if "answer_relevance" in r} == {OSLO, NO2, NO1, STAVANGER_LINES}


def test_steps_that_cannot_be_scored_give_steps_error_not_a_score():
    question = {"id": "abc", "question_text": "?", "reference_steps": [[{"name": "sparql_query", "output": "{}",
                "output_media_type": "application/sparql-results+json"}]]}
    response = {"question_id": "abc", "actual_steps": [{"name": "sparql_query", "id": "c1", "status": "success",
                "output": "{}"}], "input_tokens": 1}
    got = evaluate_question(template_id="t", question=question, response=response)
    assert got["status"] == "success"
    assert "steps_score" not in got
    assert got["steps_error"].startswith("question 'abc': reference step 1 of the last group ('sparql_query') has no")
    assert list(got) == ["template_id", "question_id", "question_text", "reference_steps", "status", "actual_steps",
                         "steps_error", "input_tokens"]


def test_no_steps_score_without_actual_steps():
    question = {"id": "q", "question_text": "?", "reference_steps": [[{"name": "x", "output": "y"}]]}
    got = evaluate_question(template_id="t", question=question, response={"question_id": "q", "actual_answer": "a"})
    assert "steps_score" not in got and "steps_error" not in got


def test_question_id_comes_from_the_response_as_in_graphrag_eval():
    question = {"id": "q1", "question_text": "?"}
    got = evaluate_question(template_id="t", question=question, response={"question_id": "Q-1"})
    assert got["question_id"] == "Q-1"


def test_order_result_keys_puts_judge_keys_where_graphrag_eval_has_them(results):
    judged = dict(results[OSLO], answer_relevance=0.9, answer_recall=1.0, custom="kept")
    ordered = list(order_result_keys(judged))
    assert ordered.index("answer_relevance") == ordered.index("actual_answer") + 1
    assert ordered.index("answer_recall") < ordered.index("actual_steps")
    assert ordered[-1] == "custom"
    assert set(QA_RESULT_KEYS) >= set(ordered) - {"custom"}


def test_aggregates_of_the_power_system_run(reference_qas, chat_responses):
    got = compute_aggregates(run_evaluation(reference_qas, chat_responses))
    per_template = got["per_template"]
    assert list(per_template) == [TRANSFORMERS, SUBSTATIONS, CONNECTED]
    assert [(t["number_of_error_samples"], t["number_of_success_samples"]) for t in per_template.values()] == [
        (1, 1), (0, 2), (0, 1)]
    assert per_template[SUBSTATIONS]["steps_score"] == {"sum": 1.0, "mean": 0.5, "median": 0.5, "min": 0.0, "max": 1.0}
    assert per_template[SUBSTATIONS]["input_tokens"] == {
        "sum": 147188, "mean": 147188, "median": 147188, "min": 147188, "max": 147188}
    assert per_template[SUBSTATIONS]["steps"] == {
        "total": {"sparql_query": 3}, "errors": {"sparql_query": 1}, "once_per_sample": {"sparql_query": 2}}
    assert per_template[CONNECTED]["steps"] == {
        "total": {"retrieval": 1, "autocomplete_search": 1, "sparql_query": 2},
        "once_per_sample": {"retrieval": 1, "autocomplete_search": 1, "sparql_query": 1},
        "errors": {"sparql_query": 1},
    }
    assert got["micro"]["number_of_error_samples"] == 1
    assert got["micro"]["number_of_success_samples"] == 4
    assert got["micro"]["steps_score"] == {"sum": 3.0, "mean": 0.75, "median": 1.0, "min": 0.0, "max": 1.0}
    assert got["macro"]["steps_score"] == {"mean": pytest.approx(2.5 / 3)}
