"""Reference steps as a kind of target: the graphrag-eval 5.x steps score of each turn.

The scoring itself (`qareport.qa`, `step_matching`, `sparql_tables`, `retrieval_metrics`) follows
graphrag-eval, whose per-question result dict carries steps and answer keys together; this kind reads
its keys from that dict (`TurnResult.qa`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qareport.kinds import Column, Kind, Metric, mean_over_turns
from qareport.records import CaseResult, TestCase, TurnOutput, TurnResult
from qareport.templating import template_environment

DETAILS_TEMPLATE = "steps_details.txt"


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
    template = template_environment(templates_dir).get_template(DETAILS_TEMPLATE)
    return template.render(turns=turns, multi_turn=len(result.case.turns) > 1).strip("\n")


def _explain_turn(qa: dict[str, Any]) -> str | None:
    if qa.get("steps_error"):
        return f"steps not scored: {qa['steps_error']}"
    score = qa.get("steps_score")
    if not isinstance(score, (int, float)) or score >= 1:
        return None
    groups = qa.get("reference_steps") or []
    last_group = groups[-1] if groups and isinstance(groups[-1], list) else []
    unmatched = [str(step.get("name")) for step in last_group if isinstance(step, dict) and not step.get("matches")]
    if unmatched:
        return "no successful call matched " + ", ".join(unmatched)
    return f"steps score {score:.2f}"


class ReferenceSteps(Kind):
    """The tool calls a system made, against the reference's groups of steps (graphrag-eval 5.x)."""

    builtin = True
    name = "reference_steps"
    label = "reference steps"
    metrics = (Metric("steps_score", "steps score", headline=True),)

    def target_of(self, case: TestCase, turn_index: int) -> Any:
        return case.turns[turn_index].target.reference_steps

    def output_of(self, output: TurnOutput | None) -> Any:
        return None if output is None else output.actual_steps

    def score_of(self, result: CaseResult, turn_index: int) -> Any:
        return result.turns[turn_index].qa if turn_index < len(result.turns) else None

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
        return {"steps_score": mean_over_turns(t.qa.get("steps_score") for t in result.turns if t.qa)}

    def explain(self, result: CaseResult) -> str | None:
        several = len(result.case.turns) > 1
        reasons = [
            (f"turn {turn.number}: " if several else "") + reason
            for turn in result.turns if turn.qa is not None and (reason := _explain_turn(turn.qa))
        ]
        return "; ".join(reasons) or None

    def present(self, results: Sequence[CaseResult]) -> bool:
        """Reference steps in a test case, or steps in a response: either gets the columns."""
        return any(self.has_target(r.case) for r in results) or any(
            o.actual_steps is not None for r in results if r.response for o in r.response.turns
        )

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        return [
            Column("steps score", lambda r: self.case_metrics(r)["steps_score"], 10, "score", score=True),
            Column("steps details", lambda r: render_steps_details(r, templates_dir=templates_dir), 60, wrap=True),
        ]


STEPS = ReferenceSteps()
