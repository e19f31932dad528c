"""Judging is a stage of its own: the evaluation, then the judge's run (typed: its judgments, usage,
failure), then the evaluation judged; what the run returned flows one way, nothing set aside."""

from __future__ import annotations

import json

from test_attempts_judge import DATASET

from qareport.evaluation import evaluate_suite, judged_evaluation, qa_results
from qareport.judged_values import Correctness, MetricJudgment
from qareport.loading import load_suite
from qareport.question_scores import Judgment


def _suite(tmp_path):
    (tmp_path / "qa.yaml").write_text(DATASET, encoding="utf-8")
    records = [{"question_id": "q1", "actual_answer": "Oslo", "attempt": n} for n in (1, 2)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return load_suite([str(tmp_path / "qa.yaml")], [str(tmp_path / "r.jsonl")])


def _judgments(results):
    """Attempt 1's answer judged right, attempt 2's wrong."""
    return [(Judgment(None, (MetricJudgment("answer_correctness", Correctness(f1=1.0 if result["attempt"] == 1
                                                                          else 0.0)),)),)
            for result in results]


def test_an_evaluation_judged_as_its_own_stage_gets_the_judgments_and_the_pass_verdicts_they_decide(tmp_path):
    suite = _suite(tmp_path)
    plain = evaluate_suite(suite)
    judged = judged_evaluation(plain, _judgments(list(qa_results(plain.results))))
    (case,) = judged.results
    assert [a.turns[0].qa.answer_f1 for a in case.attempts] == [1.0, 0.0]
    assert [a.passed for a in case.attempts] == [True, False]
    assert judged.problems == plain.problems
    assert all(a.turns[0].qa.answer_f1 is None for a in plain.results[0].attempts)  # a new evaluation
    assert judged == evaluate_suite(suite, judge=_judgments)  # the same as judging in one go
