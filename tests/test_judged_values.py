"""A judge reply is typed from its check to the record's fields: each metric's judgment is a
`MetricJudgment` with typed figures; graphrag-eval's keys are named in one place
(`judged_values.graphrag_eval_values`), the boundary where the judge's library API gets its dicts.
Against the loopback server of tests/openai_stub.py."""

from __future__ import annotations

import itertools
import threading

import pytest
from conftest import judge_settings

from qareport.judge import Judge
from qareport.judged_values import (
    Correctness,
    Cost,
    CustomOutputs,
    MetricJudgment,
    Relevance,
    RetrievalScore,
    graphrag_eval_values,
)
from qareport.question_scores import QuestionScores

QA = {"question_id": "q0", "question_text": "Which transformers?", "status": "success",
      "reference_answer": "T1; T2", "actual_answer": "T1; T3"}


def test_a_correctness_reply_is_typed_figures_that_are_the_records_fields(server, tmp_path):
    server.rules["answer_correctness"] = lambda prompt, body: {
        "reason": "one of two", "reference_claims_count": 2, "actual_claims_count": 2, "matching_claims_count": 1}
    with Judge(judge_settings(server, tmp_path)) as judge:
        run = judge.judge_results([QA])
    ((judgment,),) = run.judgments
    (metric,) = judgment.metrics
    assert judgment.step is None and metric.metric == "answer_correctness" and metric.error is None
    assert metric.figures == Correctness(reference_claims=2, actual_claims=2, matching_claims=1, reason="one of two",
                                         recall=0.5, precision=0.5, f1=0.5)
    assert isinstance(metric.cost, Cost)
    record = QuestionScores.from_graphrag_eval(QA).with_judgments(judgment for judgment in run.judgments[0])
    assert (record.answer_recall, record.answer_precision, record.answer_f1) == (0.5, 0.5, 0.5)
    assert (record.answer_reference_claims_count, record.answer_matching_claims_count) == (2, 1)
    assert record.answer_correctness_reason == "one of two"
    assert run.results[0] == record.as_graphrag_eval()  # the library API's dict: the record's, key for key


def test_repeats_are_combined_as_typed_figures_scores_averaged_counts_kept(server, tmp_path):
    counter = itertools.count()
    lock = threading.Lock()

    def rule(prompt: str, body: dict) -> dict:
        with lock:
            matching = next(counter) % 2 + 1  # 1, 2
        return {"reason": f"found {matching}", "reference_claims_count": 2, "actual_claims_count": 2,
                "matching_claims_count": matching}

    server.rules["answer_correctness"] = rule
    with Judge(judge_settings(server, tmp_path, repeats=2)) as judge:
        run = judge.judge_results([QA])
    ((judgment,),) = run.judgments
    (metric,) = judgment.metrics
    assert isinstance(metric.figures, Correctness)
    assert metric.figures.f1 == pytest.approx(0.75) and metric.figures.recall == pytest.approx(0.75)
    assert metric.figures.matching_claims == 1 and metric.figures.reason == "found 1"  # the first repeat's
    assert metric.repeats == (0.5, 1.0)
    assert run.results[0]["answer_f1_repeats"] == [0.5, 1.0]


def test_graphrag_evals_keys_for_each_metrics_judgment_in_its_order():
    assert graphrag_eval_values(MetricJudgment("answer_relevance", Relevance(0.25, ()), cost=Cost(0.01))) == {
        "answer_relevance": 0.25, "answer_relevance_questions": [], "answer_relevance_cost": 0.01}
    assert list(graphrag_eval_values(MetricJudgment("retrieval_context_recall", RetrievalScore(1.0, "all"),
                                                    cost=Cost(None), repeats=(1.0, None)))) == [
        "retrieval_context_recall", "retrieval_context_recall_reason", "retrieval_context_recall_cost",
        "retrieval_context_recall_repeats"]
    assert graphrag_eval_values(MetricJudgment("answer_correctness", error="no answer")) == {
        "answer_eval_error": "no answer"}  # failed before asking: no cost written
    failed = MetricJudgment("custom:tone", CustomOutputs({"tone": None, "why": None}), error="bad reply",
                            cost=Cost(0.0))
    assert list(graphrag_eval_values(failed).items()) == [
        ("tone", None), ("why", None), ("tone_error", "bad reply"), ("tone_cost", 0.0)]
