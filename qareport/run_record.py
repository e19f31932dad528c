"""A run as plain data: one flat row per case, for the results file, baselines and trends.

The same rows are written to the results file (`--results`) and to the workbook's hidden
`qareport_results` sheet, so either can serve as the baseline of a later run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qareport.records import CaseResult
from qareport.set_metrics import mean_or_none

CASE_METRICS = (
    "macro_precision", "macro_recall", "steps_score", "answer_recall", "answer_precision",
    "answer_f1", "answer_relevance",
)
CASE_FIELDS = (
    "case_id", "kind", "name", "groups", "status", "error", "definition_hash", *CASE_METRICS,
    "input_tokens", "output_tokens", "total_tokens", "elapsed_sec",
)


def _qa_mean(result: CaseResult, key: str) -> float | None:
    values = [
        turn.qa[key] for turn in result.turns
        if turn.qa and isinstance(turn.qa.get(key), (int, float)) and not isinstance(turn.qa.get(key), bool)
    ]
    return mean_or_none(values)


def case_row(result: CaseResult) -> dict[str, Any]:
    """The headline figures of one case, flat, JSON-ready."""
    response = result.response
    row: dict[str, Any] = {
        "case_id": result.case.id,
        "kind": result.case.kind,
        "name": result.case.name,
        "groups": list(result.case.groups),
        "status": result.status,
        "error": result.error,
        "definition_hash": result.case.definition_hash,
        "macro_precision": result.macro_precision,
        "macro_recall": result.macro_recall,
    }
    for key in CASE_METRICS[2:]:
        row[key] = _qa_mean(result, key)
    for key in ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec"):
        row[key] = getattr(response, key) if response is not None else None
    return row


def case_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    return [case_row(result) for result in results]
