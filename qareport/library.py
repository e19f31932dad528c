"""graphrag-eval's `run_evaluation`, with its LLM behaviour: the judge runs when a key is set."""

from __future__ import annotations

import logging
import os
from typing import Any

from qareport import qa
from qareport.retrieval_context import with_retrieval_context_scores


def run_evaluation(
    reference_qas: list[dict[str, Any]],
    chat_responses: dict[str, Any] | list[dict[str, Any]],
    *,
    judge: Any = "auto",
    write_matches: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate every question of every template; returns graphrag-eval's per-question results.

    `judge="auto"` uses the LLM judge when OPENAI_API_KEY (or OPENAI_BASE_URL) is set, as
    graphrag-eval does; `judge=None` never calls an LLM; a `qareport.judge.Judge` is used as is.
    `write_matches=True` also sets `matches` in the caller's reference steps, as graphrag-eval
    does; by default the input is left as it was. Why the LLM metrics were skipped, if they were,
    goes to the "qareport" logger; nothing is printed.
    """
    if judge == "auto":
        from qareport.judge import Judge
        from qareport.settings import resolve_judge_settings

        settings, reason = resolve_judge_settings(options={}, config={}, environ=os.environ)
        if settings is None:
            if _has_answers(chat_responses):
                logging.getLogger("qareport").warning("LLM metrics skipped: %s", reason)
            return run_evaluation(reference_qas, chat_responses, judge=None, write_matches=write_matches)
        with Judge(settings) as owned_judge:
            return run_evaluation(reference_qas, chat_responses, judge=owned_judge, write_matches=write_matches)
    # the retrieval context metrics are string similarities, no LLM: always computed
    results = with_retrieval_context_scores(
        qa.run_evaluation(reference_qas, chat_responses, judge=None, write_matches=write_matches))
    if judge is None:
        return results
    if hasattr(judge, "judge_results"):  # a qareport Judge returns judged copies
        judged: list[dict[str, Any]] = judge.judge_results(results).results
        return judged
    judge(results)  # any other callable adds its keys in place, as graphrag-eval's judges do
    return results


def _has_answers(chat_responses: Any) -> bool:
    records = chat_responses.values() if isinstance(chat_responses, dict) else chat_responses
    return any(isinstance(r, dict) and r.get("actual_answer") for r in records)
