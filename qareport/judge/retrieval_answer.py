"""Retrieval answer recall and precision (RAGAS LLM context recall / context precision), on each
successful actual `retrieval` step: the share of reference-answer statements the retrieved contexts
support, and the average precision of the judge's per-context "useful" verdicts. F1 is their
harmonic mean when both exist. Every score lies in [0, 1]; higher is better.

A judgment gives a `judged_values.RetrievalScore`; graphrag-eval's keys on the step (the score, its
reason, cost or error, and the F1 keys) are named in `judged_values`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qareport.judge.checks import check_statements, check_verdicts
from qareport.judge.client import JudgeClient
from qareport.judge.prompts import Prompts
from qareport.judge.usage import Ledger
from qareport.judged_values import (
    RETRIEVAL_ANSWER_PRECISION,
    RETRIEVAL_ANSWER_RECALL,
    RETRIEVAL_CONTEXT_PRECISION,
    RETRIEVAL_CONTEXT_RECALL,
    RetrievalScore,
)
from qareport.judged_values import f1_keys as f1_keys  # graphrag-eval's F1 rule, where the keys are named
from qareport.retrieval_context import average_precision_of_verdicts

RECALL = RETRIEVAL_ANSWER_RECALL
PRECISION = RETRIEVAL_ANSWER_PRECISION


def attributed_fraction(attributed: Sequence[bool]) -> float:
    """Share of reference-answer statements the contexts support (RAGAS LLM context recall).

    Needs at least one statement: a reference answer always has one, so zero means the judge's
    output is unusable.
    """
    if not attributed:
        raise ValueError("at least one statement is needed")
    return sum(1 for a in attributed if a) / len(attributed)


def judge_retrieval_recall(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                           reference: Any, contexts: list[str]) -> RetrievalScore:
    """The recall of one retrieval step; raises MetricFailed when they cannot be had."""
    return _recall_keys(client, prompts, ledger, RECALL, contexts, question=question, reference_answer=reference)


def judge_retrieval_precision(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                              reference: Any, actual: Any, contexts: list[str]) -> RetrievalScore:
    """The precision of one retrieval step, judged against the reference answer, else the
    actual answer; raises MetricFailed when they cannot be had."""
    if reference:
        answer, kind, tag = reference, "reference answer", "reference_answer"
    else:
        answer, kind, tag = actual, "answer", "answer"
    return _precision_keys(client, prompts, ledger, PRECISION, contexts, question=question, answer=answer,
                           answer_kind=kind, answer_tag=tag)


def _recall_keys(client: JudgeClient, prompts: Prompts, ledger: Ledger, metric: str, contexts: list[str],
                 **prompt_values: Any) -> RetrievalScore:
    """A recall metric's score: the share of statements the judge attributes to the contexts."""
    if not contexts:
        return RetrievalScore(0.0, "no contexts were retrieved")
    prompt = prompts.render(metric, contexts=contexts, **prompt_values)
    statements = client.ask_checked(metric, prompt, check_statements, ledger, retry_prompt=prompts.retry)
    reason = "\n".join(
        f"{'attributed' if attributed else 'not attributed'}: {statement} ({why})"
        for statement, why, attributed in statements
    )
    return RetrievalScore(attributed_fraction([a for _, _, a in statements]), reason)


def _precision_keys(client: JudgeClient, prompts: Prompts, ledger: Ledger, metric: str, contexts: list[str],
                    **prompt_values: Any) -> RetrievalScore:
    """A precision metric's score: the average precision of the judge's per-context "useful" verdicts."""
    if not contexts:
        return RetrievalScore(0.0, "no contexts were retrieved")
    prompt = prompts.render(metric, contexts=contexts, **prompt_values)
    verdicts = client.ask_checked(metric, prompt, lambda c: check_verdicts(c, contexts=len(contexts)),
                                  ledger, retry_prompt=prompts.retry)
    reason = "\n".join(
        f"context {number}: {'useful' if useful else 'not useful'} ({why})"
        for number, (why, useful) in enumerate(verdicts, start=1)
    )
    return RetrievalScore(average_precision_of_verdicts([useful for _, useful in verdicts]), reason)


CONTEXT_RECALL = RETRIEVAL_CONTEXT_RECALL
CONTEXT_PRECISION = RETRIEVAL_CONTEXT_PRECISION


def judge_context_recall(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                         reference_contexts: Sequence[str], contexts: list[str]) -> RetrievalScore:
    """graphrag-eval 6.x's LLM context recall of one matched retrieval step: the share of the
    reference contexts' statements that the retrieved contexts support. Raises MetricFailed."""
    return _recall_keys(client, prompts, ledger, CONTEXT_RECALL, contexts, question=question,
                        reference="\n".join(reference_contexts))


def judge_context_precision(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, question: str,
                            reference_contexts: Sequence[str], contexts: list[str]) -> RetrievalScore:
    """graphrag-eval 6.x's LLM context precision of one matched retrieval step: the average
    precision of the judge's "useful for the reference contexts" verdicts. Raises MetricFailed."""
    return _precision_keys(client, prompts, ledger, CONTEXT_PRECISION, contexts, question=question,
                           reference="\n".join(reference_contexts))
