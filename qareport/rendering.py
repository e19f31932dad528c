"""Text for cells, from Jinja2 templates a user can override (`--templates DIR`)."""

from __future__ import annotations

from typing import Any

from qareport.records import CaseResult, DimensionScore, TermVerdict, TurnResult
from qareport.templating import template_environment

INDICATOR_DETAILS_TEMPLATE = "indicator_selection_details.txt"
STEPS_DETAILS_TEMPLATE = "steps_details.txt"


def _term(verdict: TermVerdict) -> dict[str, Any]:
    return {
        "id": verdict.term.id,
        "name": verdict.term.name,
        "selected_name": verdict.selected_name,
        "label_differs": verdict.label_differs,
        "verdict": verdict.verdict,
    }


def _dimension(score: DimensionScore) -> dict[str, Any]:
    return {
        "name": score.dimension_name,
        "recall": score.recall,
        "precision": score.precision,
        "true_positives": [_term(t) for t in score.true_positives],
        "false_negatives": [_term(t) for t in score.false_negatives],
        "false_positives": [_term(t) for t in score.false_positives],
    }


def _turn(turn: TurnResult) -> dict[str, Any]:
    indicator = turn.indicator
    assert indicator is not None
    return {
        "number": turn.number,
        "user_message": turn.user_message,
        "dimensions": [_dimension(d) for d in indicator.dimensions],
        "not_in_target": [_dimension(d) for d in indicator.not_in_target],
        "no_target_dimensions": not indicator.dimensions,
        "recall": indicator.macro_recall,
        "precision": indicator.macro_precision,
    }


def render_indicator_details(result: CaseResult, *, templates_dir: str | None = None) -> str:
    """The "indicator selection details" cell of one case ('' when it has no such target)."""
    turns = [t for t in result.turns if t.indicator is not None]
    if not turns:
        return ""
    template = template_environment(templates_dir).get_template(INDICATOR_DETAILS_TEMPLATE)
    text = template.render(turns=[_turn(t) for t in turns], multi_turn=len(result.case.turns) > 1)
    return text.strip("\n")


def _steps_turn(turn: TurnResult) -> dict[str, Any] | None:
    qa = turn.qa
    if qa is None or ("reference_steps" not in qa and "actual_steps" not in qa):
        return None
    groups = qa.get("reference_steps") or []
    last_group = groups[-1] if groups and isinstance(groups[-1], list) else []
    actual = [s for s in qa.get("actual_steps") or [] if isinstance(s, dict)]
    return {
        "number": turn.number,
        "user_message": turn.user_message,
        "has_reference": bool(groups) and qa.get("steps_score") is not None,
        "steps_score": qa.get("steps_score"),
        "steps_error": qa.get("steps_error"),
        "reference": [
            {"name": step.get("name"), "matches": step.get("matches")}
            for step in last_group if isinstance(step, dict)
        ],
        "actual": [{"id": s.get("id"), "name": s.get("name"), "status": s.get("status")} for s in actual],
        "failed": [
            {"id": s.get("id"), "name": s.get("name"), "error": s.get("error", "")}
            for s in actual if s.get("status") == "error"
        ],
    }


def render_steps_details(result: CaseResult, *, templates_dir: str | None = None) -> str:
    """The "steps details" cell: which call matched each reference step, which calls failed."""
    turns = [t for t in (_steps_turn(turn) for turn in result.turns) if t is not None]
    if not turns:
        return ""
    template = template_environment(templates_dir).get_template(STEPS_DETAILS_TEMPLATE)
    return template.render(turns=turns, multi_turn=len(result.case.turns) > 1).strip("\n")
