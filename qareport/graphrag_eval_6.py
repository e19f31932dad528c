"""graphrag-eval 6.x's entry points, so that code written for it moves over by changing the import:

    from qareport.graphrag_eval_6 import run_evaluation, compute_aggregates

    results = await run_evaluation(qa_dataset, responses_dict, "config.yaml")   # or asyncio.run(...)
    aggregates = compute_aggregates(results, "config.yaml")

The steps are scored by 6.6's rules (every reference group, error responses too, the time-series
and IRI-discovery steps); the result dicts have 6.6's keys in its order (`answer_correctness_error`,
no `*_cost` keys); `compute_aggregates` aggregates by 6.6's rules, the custom metrics' outputs
included. With a configuration that has an `llm` section, qareport's judge (cached, concurrent,
retried) computes answer correctness (with the file's prompt, if any), answer relevance, the
retrieval answer and context metrics and the custom metrics; without one, no LLM is called, as in
graphrag-eval. `from qareport import run_evaluation` keeps graphrag-eval 5.x's behaviour.

Unlike graphrag-eval, the inputs are not changed: the results carry copies of the reference steps
with `matches`; pass `write_matches=True` to have `matches` written into `qa_dataset` as well.
Notes (options of the configuration that are ignored, LLM metrics skipped) go to the "qareport"
logger; nothing is printed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qareport import qa
from qareport.aggregates import compute_aggregates as aggregate
from qareport.ge6_config import Ge6Config, read_ge6_config
from qareport.records import USAGE_FIELDS

__all__ = ["compute_aggregates", "run_evaluation"]

_logger = logging.getLogger("qareport")

RESULT_KEYS_6 = (
    "template_id", "question_id", "question_text", *USAGE_FIELDS, "actual_answer", "reference_answer",
    "reference_steps", "status", "error", "actual_steps", "steps_score", "steps_error", "steps_note",
    "answer_relevance", "answer_relevance_error",
    "answer_reference_claims_count", "answer_actual_claims_count", "answer_matching_claims_count",
    "answer_correctness_reason", "answer_recall", "answer_precision", "answer_f1", "answer_correctness_error",
)
"""graphrag-eval 6.6's per-question keys, in its order (`steps_error` and `steps_note` are qareport's:
a question it would stop on); the custom metrics' outputs follow, evaluation by evaluation."""
STEP_KEYS_6 = (
    "retrieval_answer_recall", "retrieval_answer_recall_error", "retrieval_answer_precision",
    "retrieval_answer_precision_error", "retrieval_answer_f1", "retrieval_context_recall",
    "retrieval_context_recall_error", "retrieval_context_precision", "retrieval_context_precision_error",
    "retrieval_context_f1",
)
"""The keys the judge adds to a retrieval step under 6.6, in its order."""
RENAMED = {"answer_eval_error": "answer_correctness_error"}


async def run_evaluation(
    qa_dataset: list[dict[str, Any]],
    responses_dict: dict[str, Any],
    config_file_path: str | Path | None = None,
    *,
    write_matches: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate every question of every template, by graphrag-eval 6.6's rules; one result dict per
    question, in dataset order. The work runs in a thread, so the event loop stays free."""
    config = read_ge6_config(config_file_path)
    return await asyncio.to_thread(_evaluate, qa_dataset, responses_dict, config, write_matches)


def compute_aggregates(samples: list[dict[str, Any]], config_file_path: str | Path | None = None) -> dict[str, Any]:
    """Per-template, micro and macro aggregates by graphrag-eval 6.6's rules, the outputs of the
    configuration's custom metrics among the aggregated metrics."""
    config = read_ge6_config(config_file_path)
    return aggregate(samples, semantics=6, custom_metrics=config.custom_metric_keys)


def _evaluate(qa_dataset: list[dict[str, Any]], responses: dict[str, Any], config: Ge6Config,
              write_matches: bool) -> list[dict[str, Any]]:
    results = qa.run_evaluation(qa_dataset, responses, semantics=6, write_matches=write_matches)
    for line in config.ignored:
        _logger.warning("%s", line)
    if config.generation is not None:
        results = _judged(results, config)
    return [shaped_as_6(result, config) for result in results]


def _judged(results: list[dict[str, Any]], config: Ge6Config) -> list[dict[str, Any]]:
    from qareport.judge.runner import Judge
    from qareport.settings import resolve_ge6_judge_settings

    settings, reason = resolve_ge6_judge_settings(config, options={}, config={}, environ=os.environ, semantics=6)
    if settings is None:
        _logger.warning("LLM metrics skipped: %s", reason)
        return results
    with Judge(settings) as judge:
        judged: list[dict[str, Any]] = judge.judge_results(results).results
        return judged


def shaped_as_6(result: Mapping[str, Any], config: Ge6Config) -> dict[str, Any]:
    """A result dict with graphrag-eval 6.6's keys in its order: the correctness error renamed,
    qareport's extra judge keys (costs, reasons, the generated questions) left out, and
    `actual_steps` always there, as 6.6 writes it."""
    values = {RENAMED.get(key, key): value for key, value in result.items()}
    values.setdefault("actual_steps", [])
    custom = [key for evaluation in config.custom_evaluations
              for key in (*evaluation.output_keys, evaluation.error_key)]
    shaped = {key: values[key] for key in (*RESULT_KEYS_6, *custom) if key in values}
    shaped["actual_steps"] = [_step_as_6(step) for step in shaped["actual_steps"]] \
        if isinstance(shaped["actual_steps"], list) else shaped["actual_steps"]
    return shaped


def ordered_as_6(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result dict as the results file holds it under 6.x rules: 6.6's keys in its order (the
    correctness error renamed, `actual_steps` always there, `[]` when the response had none), then
    every other key qareport added (the judge's costs and reasons, custom outputs) in its own order.
    Without a judge this is exactly what `run_evaluation` returns; `shaped_as_6` leaves the extras out."""
    values = {RENAMED.get(key, key): value for key, value in result.items()}
    values.setdefault("actual_steps", [])
    ordered = {key: values[key] for key in RESULT_KEYS_6 if key in values}
    ordered.update(values)  # the rest after them, in their own order
    return ordered


def _step_as_6(step: Any) -> Any:
    if not isinstance(step, Mapping) or not any(key in step for key in STEP_KEYS_6):
        return step
    judged = [key for key in STEP_KEYS_6 if key in step]
    kept = {key: value for key, value in step.items()
            if not key.startswith(("retrieval_answer_", "retrieval_context_"))}
    return {**kept, **{key: step[key] for key in judged}}
