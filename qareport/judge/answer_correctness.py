"""Answer correctness (graphrag-eval): the judge counts the claims of the reference answer, of the
actual answer, and the matching ones; recall = matching / reference, precision = matching / actual,
F1 is their harmonic mean. Every score lies in [0, 1]; higher is better.

A judgment gives a `judged_values.Correctness` (graphrag-eval's keys for it are named there).
"""

from __future__ import annotations

from typing import Any

from qareport.errors import MetricFailed
from qareport.judge.checks import ClaimCounts, check_answer_correctness, claim_count_problem
from qareport.judge.client import JudgeClient
from qareport.judge.prompts import Prompts
from qareport.judge.usage import Ledger
from qareport.judged_values import ANSWER_CORRECTNESS, Correctness
from qareport.retrieval_context import f1_score

METRIC = ANSWER_CORRECTNESS


def claim_scores(reference: int, actual: int, matching: int) -> tuple[float, float, float]:
    """(recall, precision, F1) of consistent claim counts (see `claim_count_problem`).

    recall = matching / reference and precision = matching / actual; both denominators are at least
    1 for consistent counts, so neither ratio is ever undefined here.
    """
    problem = claim_count_problem(reference, actual, matching)
    if problem:
        raise ValueError(problem)
    recall = matching / reference
    precision = matching / actual
    f1 = f1_score(recall, precision)
    assert f1 is not None
    return recall, precision, f1


def judge_answer_correctness(client: JudgeClient, prompts: Prompts, ledger: Ledger, *,
                             question: str, reference: Any, actual: Any,
                             prompt_template: str | None = None) -> Correctness:
    """The answer correctness of one case; raises MetricFailed when they cannot be had.
    `prompt_template`: a graphrag-eval 6.x custom prompt (str.format with {question},
    {reference_answer}, {actual_answer}) instead of `templates/judge/answer_correctness.txt`."""
    if not str(reference).strip():
        raise MetricFailed("the reference answer is empty")
    if not str(actual).strip():
        raise MetricFailed("the actual answer is empty")
    if prompt_template is not None:
        prompt = prompt_template.format(question=question, reference_answer=reference, actual_answer=actual)
    else:
        prompt = prompts.render(METRIC, question=question, reference_answer=reference, actual_answer=actual)
    counts: ClaimCounts = client.ask_checked(METRIC, prompt, check_answer_correctness, ledger,
                                             retry_prompt=prompts.retry)
    recall, precision, f1 = claim_scores(counts.reference, counts.actual, counts.matching)
    return Correctness(reference_claims=counts.reference, actual_claims=counts.actual,
                       matching_claims=counts.matching, reason=counts.reason, recall=recall,
                       precision=precision, f1=f1)
