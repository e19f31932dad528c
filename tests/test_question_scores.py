"""A question's graphrag-eval result in the report model: a frozen `QuestionScores`, read by attribute;
graphrag-eval's dict is built from it only at the library boundary (`as_graphrag_eval`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from qareport.evaluation import evaluate_suite, qa_results
from qareport.judged_values import Correctness, CustomOutputs, MetricJudgment, Relevance, RetrievalScore
from qareport.kinds.qa_figures import question_results
from qareport.loading import load_suite
from qareport.qa import QA_RESULT_KEYS, run_evaluation
from qareport.question_scores import FIELD_ORDER, Judgment, QuestionScores

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "testcases"


@pytest.fixture(scope="module")
def suite():
    return load_suite([FOLDER / "power-system"], [FOLDER / "responses" / "power-system.json"])


def _records(results):
    return [turn.qa for result in results for turn in result.turns if turn.qa is not None]


def test_a_turns_graphrag_eval_result_is_a_frozen_record_read_by_attribute(suite):
    records = _records(evaluate_suite(suite).results)
    assert records and all(isinstance(qa, QuestionScores) for qa in records)
    scored = [qa for qa in records if qa.steps_score is not None]
    assert scored
    for qa in records:
        result = qa.as_graphrag_eval()
        assert (qa.question_id, qa.status, qa.steps_error) == (result["question_id"], result["status"],
                                                             result.get("steps_error"))
        assert qa.steps_score == result.get("steps_score")
        assert qa.actual_steps == result.get("actual_steps")
        assert qa.keys == tuple(result) and dict(qa.items()) == result
    with pytest.raises(dataclasses.FrozenInstanceError):
        scored[0].steps_score = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        scored[0].with_values(attempt=1).extra["attempt"] = 2  # type: ignore[index]


def test_every_key_graphrag_eval_defines_is_a_typed_field_and_the_rest_is_the_open_part():
    result = {"template_id": "t", "question_id": "q", "question_text": "?", "status": "success",
              "steps_score": 0.5, "answer_f1": None, "faithfulness": 0.75, "faithfulness_cost": 0.01}
    record = QuestionScores.from_graphrag_eval(result)
    assert FIELD_ORDER == QA_RESULT_KEYS  # graphrag-eval's keys, in its order (a judged record's order)
    assert (record.steps_score, record.status, record.answer_f1) == (0.5, "success", None)
    assert dict(record.extra) == {"faithfulness": 0.75, "faithfulness_cost": 0.01}
    assert record.has("answer_f1") and not record.has("answer_recall")  # a key there with None stays there
    assert (record.value("faithfulness"), record.number("faithfulness"), record.value("answer_recall")) == (0.75, 0.75, None)
    assert list(record.as_graphrag_eval().items()) == list(result.items())


def test_a_dict_built_at_the_library_boundary_does_not_change_the_model(suite):
    results = evaluate_suite(suite).results
    before = [json.dumps(qa.as_graphrag_eval(), sort_keys=False, default=str) for qa in _records(results)]
    for built in [*qa_results(results), *question_results(results)]:
        built["steps_score"] = -1.0
        built["answer_f1"] = 0.0
        built.pop("status", None)
    assert [json.dumps(qa.as_graphrag_eval(), sort_keys=False, default=str) for qa in _records(results)] == before


def test_the_judges_judgments_build_new_records_leaving_the_unjudged_ones_as_they_were(suite):
    """The judge is given graphrag-eval's dicts and returns typed judgments; writing into the dicts
    it is given (as graphrag-eval's judge writes into its results) reaches no record."""
    plain = evaluate_suite(suite).results
    before = [qa.as_graphrag_eval() for qa in _records(plain)]

    def judge(results: list[dict]) -> list[tuple[Judgment, ...]]:
        for result in results:
            result["answer_f1"] = 0.0
        return [(Judgment(None, (MetricJudgment("answer_correctness", Correctness(f1=0.5)),
                                 MetricJudgment("custom:x", CustomOutputs({"answer_f1_cost": 0.01})))),)
                if result["status"] == "success"
                else () for result in results]

    judged = _records(evaluate_suite(suite, judge=judge).results)
    assert judged and all(qa.answer_f1 == 0.5 and qa.value("answer_f1_cost") == 0.01
                          for qa in judged if qa.status == "success")
    assert all(not qa.has("answer_f1") for qa in judged if qa.status != "success")
    assert [qa.as_graphrag_eval() for qa in _records(plain)] == before
    assert all(not qa.has("answer_f1") for qa in _records(plain))


def test_a_judged_record_has_graphrag_evals_key_order_and_new_copies_of_its_judged_steps():
    steps = [{"id": "s1", "name": "retrieval"}, {"id": "s2", "name": "retrieval"}]
    record = QuestionScores.from_graphrag_eval({"template_id": "t", "question_id": "q", "question_text": "?",
                                                "status": "success", "actual_answer": "a",
                                                "actual_steps": steps, "attempt": 2})
    judged = record.with_judgments([
        Judgment(None, (MetricJudgment("answer_correctness", Correctness(f1=0.5)),
                        MetricJudgment("custom:custom", CustomOutputs({"custom_score": 1})))),
        Judgment(None, (MetricJudgment("answer_relevance", Relevance(0.25)),)),
        Judgment(1, (MetricJudgment("retrieval_answer_recall", RetrievalScore(1.0)),)),
    ])
    assert list(judged.as_graphrag_eval()) == ["template_id", "question_id", "question_text", "status",
                                               "actual_answer", "answer_relevance", "answer_f1", "actual_steps",
                                               "attempt", "custom_score"]
    assert judged.actual_steps == [steps[0], {"id": "s2", "name": "retrieval", "retrieval_answer_recall": 1.0}]
    assert judged.actual_steps[0] is steps[0] and steps[1] == {"id": "s2", "name": "retrieval"}
    assert record.as_graphrag_eval()["actual_steps"] is steps and not record.has("answer_f1")
    assert record.with_judgments(()) is record


def test_the_records_give_back_run_evaluations_dicts_key_for_key():
    """A record built from graphrag-eval's result dict gives that dict back, keys in the same order."""
    dataset = [{"template_id": "t", "questions": [
        {"id": "q1", "question_text": "?", "reference_answer": "a",
         "reference_steps": [[{"name": "sparql_query", "args": {"query": "x"}, "output": "[]"}]]},
        {"id": "q2", "question_text": "??"},
    ]}]
    responses = [{"question_id": "q1", "actual_answer": "b", "input_tokens": 3,
                  "actual_steps": [{"id": "s1", "name": "sparql_query", "args": {"query": "x"}, "output": "[]",
                                    "status": "success"}]}]
    for result in run_evaluation(dataset, responses):
        record = QuestionScores.from_graphrag_eval(result)
        assert json.dumps(record.as_graphrag_eval()) == json.dumps(result)
        assert record.with_values(attempt=2).as_graphrag_eval() == {**result, "attempt": 2}
        assert record.attempt is None and record.with_values(attempt=2).attempt == 2
