"""The shape of graphrag-eval 6.x's per-question result dicts: its keys in its order, as its library
API returns them (`shaped_as_6`) and as the results file holds them under 6.x rules
(`ordered_as_6`). A module of its own, below the judge and the kinds, so that the Q&A kinds' results
file entries and the 6.x library API (`graphrag_eval_6`) share it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qareport.ge6_config import Ge6Config
from qareport.records import USAGE_FIELDS

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
