"""graphrag-eval's `run_evaluation`, with its LLM behaviour: the judge runs when a key is set."""

from __future__ import annotations

import os
import sys
from typing import Any

from qareport import qa


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
        judge = Judge(settings) if settings is not None else None
        if judge is None and _has_answers(chat_responses):
            print(f"qareport: LLM metrics skipped: {reason}", file=sys.stderr)
    callback = None
    if judge is not None:
        callback = judge.judge_results if hasattr(judge, "judge_results") else judge
    return qa.run_evaluation(reference_qas, chat_responses, judge=callback)


def _has_answers(chat_responses: Any) -> bool:
    records = chat_responses.values() if isinstance(chat_responses, dict) else chat_responses
    return any(isinstance(r, dict) and r.get("actual_answer") for r in records)
