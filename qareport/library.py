"""graphrag-eval's `run_evaluation`, with its LLM behaviour: the judge runs when a key is set."""

from __future__ import annotations

import os
import sys
from typing import Any

from qareport import qa
from qareport.judge_metrics import add_retrieval_context_scores


def run_evaluation(
    reference_qas: list[dict[str, Any]],
    chat_responses: dict[str, Any] | list[dict[str, Any]],
    *,
    judge: Any = "auto",
) -> list[dict[str, Any]]:
    """Evaluate every question of every template; returns graphrag-eval's per-question results.

    `judge="auto"` uses the LLM judge when OPENAI_API_KEY (or OPENAI_BASE_URL) is set, as
    graphrag-eval does; `judge=None` never calls an LLM; a `qareport.judge.Judge` is used as is.
    """
    if judge == "auto":
        from qareport.judge import Judge, resolve_judge_settings

        settings, reason = resolve_judge_settings(options={}, config={}, environ=os.environ)
        if settings is None:
            if _has_answers(chat_responses):
                print(f"qareport: LLM metrics skipped: {reason}", file=sys.stderr)
            return run_evaluation(reference_qas, chat_responses, judge=None)
        with Judge(settings) as owned_judge:
            return run_evaluation(reference_qas, chat_responses, judge=owned_judge)
    if judge is None:
        results = qa.run_evaluation(reference_qas, chat_responses, judge=None)
        add_retrieval_context_scores(results)  # string similarity, no LLM: always computed
        return results
    callback = judge.judge_results if hasattr(judge, "judge_results") else judge
    return qa.run_evaluation(reference_qas, chat_responses, judge=callback)


def _has_answers(chat_responses: Any) -> bool:
    records = chat_responses.values() if isinstance(chat_responses, dict) else chat_responses
    return any(isinstance(r, dict) and r.get("actual_answer") for r in records)
