"""Retrieval answer recall and precision (RAGAS LLM context recall / context precision), on each
successful actual `retrieval` step: the share of reference-answer statements the retrieved contexts
support, and the average precision of the judge's per-context "useful" verdicts. F1 is their
harmonic mean when both exist. Every score lies in [0, 1]; higher is better.

Keys on the step: retrieval_answer_recall (+ _reason, _cost | _error), retrieval_answer_precision
(+ _reason, _cost | _error), retrieval_answer_f1, retrieval_answer_f1_cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qareport.judge.checks import check_statements, check_verdicts
from qareport.judge.client import JudgeClient
from qareport.judge.prompts import Prompts
from qareport.judge.usage import Ledger
from qareport.retrieval_context import average_precision_of_verdicts, f1_score

RECALL = "retrieval_answer_recall"
PRECISION = "retrieval_answer_precision"
ERROR_KEYS = {RECALL: f"{RECALL}_error", PRECISION: f"{PRECISION}_error"}


def attributed_fraction(attributed: Sequence[bool]) -> float:
    """Share of reference-answer statements the contexts support (RAGAS LLM context recall).

    Needs at least one statement: a reference answer always has one, so zero means the judge's
    output is unusable.
    """
    if not attributed:
        raise ValueError("at least one statement is needed")
    return sum(1 for a in attributed if a) / len(attributed)


def judge_retrieval_recall(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                           reference: Any, contexts: list[str]) -> dict[str, Any]:
    """The recall keys of one retrieval step; raises MetricFailed when they cannot be had."""
    return _recall_keys(client, prompts, ledger, RECALL, contexts, question=question, reference_answer=reference)


def judge_retrieval_precision(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                              reference: Any, actual: Any, contexts: list[str]) -> dict[str, Any]:
    """The precision keys of one retrieval step, judged against the reference answer, else the
    actual answer; raises MetricFailed when they cannot be had."""
    if reference:
        answer, kind, tag = reference, "reference answer", "reference_answer"
    else:
        answer, kind, tag = actual, "answer", "answer"
    return _precision_keys(client, prompts, ledger, PRECISION, contexts, question=question, answer=answer,
                           answer_kind=kind, answer_tag=tag)


def _recall_keys(client: JudgeClient, prompts: Prompts, ledger: Ledger, metric: str, contexts: list[str],
                 **prompt_values: Any) -> dict[str, Any]:
    """A recall metric's keys: the share of statements the judge attributes to the contexts."""
    if not contexts:
        return {metric: 0.0, f"{metric}_reason": "no contexts were retrieved"}
    prompt = prompts.render(metric, contexts=contexts, **prompt_values)
    statements = client.ask_checked(metric, prompt, check_statements, ledger, retry_prompt=prompts.retry)
    reason = "\n".join(
        f"{'attributed' if attributed else 'not attributed'}: {statement} ({why})"
        for statement, why, attributed in statements
    )
    return {metric: attributed_fraction([a for _, _, a in statements]), f"{metric}_reason": reason}


def _precision_keys(client: JudgeClient, prompts: Prompts, ledger: Ledger, metric: str, contexts: list[str],
                    **prompt_values: Any) -> dict[str, Any]:
    """A precision metric's keys: the average precision of the judge's per-context "useful" verdicts."""
    if not contexts:
        return {metric: 0.0, f"{metric}_reason": "no contexts were retrieved"}
    prompt = prompts.render(metric, contexts=contexts, **prompt_values)
    verdicts = client.ask_checked(metric, prompt, lambda c: check_verdicts(c, contexts=len(contexts)),
                                  ledger, retry_prompt=prompts.retry)
    reason = "\n".join(
        f"context {number}: {'useful' if useful else 'not useful'} ({why})"
        for number, (why, useful) in enumerate(verdicts, start=1)
    )
    return {metric: average_precision_of_verdicts([useful for _, useful in verdicts]), f"{metric}_reason": reason}


def f1_keys(values: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """`{prefix}_f1` and `{prefix}_f1_cost` from the recall and precision keys, when both exist
    (graphrag-eval's rule); the cost only when both costs are known."""
    f1 = f1_score(values.get(f"{prefix}_recall"), values.get(f"{prefix}_precision"))
    if f1 is None:
        return {}
    keys = {f"{prefix}_f1": f1}
    recall_cost = values.get(f"{prefix}_recall_cost")
    precision_cost = values.get(f"{prefix}_precision_cost")
    if recall_cost is not None and precision_cost is not None:
        keys[f"{prefix}_f1_cost"] = recall_cost + precision_cost
    return keys


CONTEXT_RECALL = "retrieval_context_recall"
CONTEXT_PRECISION = "retrieval_context_precision"
ERROR_KEYS.update({CONTEXT_RECALL: f"{CONTEXT_RECALL}_error", CONTEXT_PRECISION: f"{CONTEXT_PRECISION}_error"})


def judge_context_recall(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                         reference_contexts: Sequence[str], contexts: list[str]) -> dict[str, Any]:
    """graphrag-eval 6.x's LLM context recall of one matched retrieval step: the share of the
    reference contexts' statements that the retrieved contexts support. Raises MetricFailed."""
    return _recall_keys(client, prompts, ledger, CONTEXT_RECALL, contexts, question=question,
                        reference="\n".join(reference_contexts))


def judge_context_precision(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                            reference_contexts: Sequence[str], contexts: list[str]) -> dict[str, Any]:
    """graphrag-eval 6.x's LLM context precision of one matched retrieval step: the average
    precision of the judge's "useful for the reference contexts" verdicts. Raises MetricFailed."""
    return _precision_keys(client, prompts, ledger, CONTEXT_PRECISION, contexts, question=question,
                           reference="\n".join(reference_contexts))
