"""Reference steps as a kind of target: graphrag-eval's steps score of each turn.

    __init__.py       the kind (`ReferenceSteps`): metrics, the one-line reason, the details cell
    matching.py       group matching: 5.x (the last group) or 6.x (every group), chosen by `semantics`
    step_shapes.py    the shapes of the steps the matching reads, checked as it reaches them
    verdicts.py       how each reference step fared, and why it lost points
    outcome.py        the records both make: each match, each verdict, the question's outcome
    step_kind.py      the protocol every kind of step implements
    registry.py       the kinds of step, in the order they are asked
    parsed_outputs.py each output of a question parsed once, each SPARQL column read once
    sparql.py  json_output.py  retrieval.py  time_series.py  data_points.py
    iri_discovery.py  exact.py          one module per kind of step
    tables.py         the SPARQL verdict: does an actual result hold the reference result, and why not
    sparql_cells.py   the cells of a SPARQL result, read as graphrag-eval reads them
    sparql_view.py    a SPARQL step as an analyst reviews it: both queries, the rows returned and required
    column_mapping.py the search for a mapping of reference columns onto actual columns

The scoring (`qareport.qa`, `matching`, the step kinds) follows graphrag-eval, whose per-question
result carries steps and answer keys together; this kind reads its fields from that result
(`TurnResult.qa`, a `QuestionScores`), and the `StepsOutcome` evaluation keeps under its name in `TurnResult.scores`
to say which call matched each reference step, with what score, or why none did.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jinja2 import Template

from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.evaluation_options import PassRules
from qareport.input_shapes import plain
from qareport.kinds.kind_base import Kind, mean_over_turns
from qareport.kinds.kind_records import Column, DetailRow, Metric, OutputText
from qareport.kinds.qa_turn import QA_TURN, StepGroups, reference_steps_problems, steps_of
from qareport.kinds.steps.called import steps_text
from qareport.kinds.steps.outcome import StepsOutcome, StepVerdict
from qareport.kinds.steps.sparql_view import SparqlView, is_sparql_step, sparql_view
from qareport.kinds.steps.verdicts import verdicts_of
from qareport.question_scores import QuestionScores
from qareport.records import CaseResult, Problem, TestCase, TurnResult
from qareport.yaml_values import line_of

if TYPE_CHECKING:
    from qareport.evaluation_options import EvaluationOptions
from qareport.templating import template_environment

DETAILS_TEMPLATE = "steps_details.txt"
KIND_NAME = "reference_steps"


def turn_verdicts(turn: TurnResult) -> tuple[StepVerdict, ...] | None:
    """The verdicts of a turn's reference steps, or None when the turn keeps no `StepsOutcome`
    (a result built elsewhere: then only the reference steps' `matches` are known)."""
    outcome = turn.scores.get(KIND_NAME)
    qa = turn.qa
    if not isinstance(outcome, StepsOutcome) or qa is None:
        return None
    if outcome.verdicts is not None:
        return outcome.verdicts
    return verdicts_of(qa.as_graphrag_eval(), outcome)


def _fallback_verdicts(qa: QuestionScores) -> list[StepVerdict]:
    """What the result alone says: the last group's steps and their `matches`."""
    groups = qa.reference_steps or []
    last_group = groups[-1] if groups and isinstance(groups[-1], list) else []
    return [
        StepVerdict(len(groups), len(groups), index, step.get("name"), actual_id=step.get("matches"),
                    reason=None if step.get("matches") else "no successful call matched")
        for index, step in enumerate(last_group) if isinstance(step, dict)
    ]


def _reference_step(groups: Sequence[Any], verdict: StepVerdict) -> Mapping[str, Any] | None:
    """The reference step a verdict is about."""
    if not 1 <= verdict.group_number <= len(groups):
        return None
    group = groups[verdict.group_number - 1]
    step = group[verdict.reference_index] if isinstance(group, (list, tuple)) and \
        0 <= verdict.reference_index < len(group) else None
    return step if isinstance(step, Mapping) else None


def _sparql_view(groups: Sequence[Any], verdict: StepVerdict, actual: Sequence[Mapping[str, Any]]) -> SparqlView | None:
    step = _reference_step(groups, verdict)
    return sparql_view(step, actual, verdict.actual_id) if step is not None and is_sparql_step(step) else None


def _step_line(verdict: StepVerdict, view: SparqlView | None) -> dict[str, Any]:
    shown = view is not None and verdict.scored and verdict.lost_points  # a step that lost points is reviewed
    return {
        "group": verdict.group_number,
        "name": verdict.name,
        "matches": verdict.actual_id,
        "score": verdict.score,
        "reason": verdict.reason,
        "scored": verdict.scored,
        "sparql": None if view is None or not shown else {
            "reference_query": view.reference_query, "actual_id": view.actual_id,
            "actual_query": view.actual_query, "returned": view.returned, "required": view.required,
        },
    }


def _steps_turn(turn: TurnResult) -> dict[str, Any] | None:
    qa = turn.qa
    if qa is None or not qa.has_steps:
        return None
    groups = qa.reference_steps or []
    actual = [s for s in qa.actual_steps or [] if isinstance(s, dict)]
    outcome = turn.scores.get(KIND_NAME)
    verdicts = turn_verdicts(turn)
    semantics = outcome.semantics if isinstance(outcome, StepsOutcome) else 5
    shown = list(verdicts) if verdicts is not None else _fallback_verdicts(qa)
    return {
        "number": turn.number,
        "user_message": turn.user_message,
        "semantics": semantics,
        "has_reference": bool(groups) and qa.steps_score is not None,
        "steps_score": qa.steps_score,
        "steps_error": qa.steps_error,
        "steps_note": qa.steps_note,
        "groups": len(groups),
        "reference": [_step_line(verdict, _sparql_view(groups, verdict, actual)) for verdict in shown],
        "actual": [{"id": s.get("id"), "name": s.get("name"), "status": s.get("status")} for s in actual],
        "failed": [
            {"id": s.get("id"), "name": s.get("name"), "error": s.get("error", "")}
            for s in actual if s.get("status") == "error"
        ],
    }


def render_steps_details(result: CaseResult, *, templates_dir: str | None = None) -> str:
    """The "steps details" cell: each reference step with the call that matched it and its score,
    or why none did; then the calls and which of them failed."""
    return StepsDetailsCell(templates_dir)(result)


class StepsDetailsCell:
    """`render_steps_details` for the cases of a run, with one template, fetched when first
    needed (fetching it for each case would check the file each time)."""

    def __init__(self, templates_dir: str | None):
        self.templates_dir = templates_dir
        self.template: Template | None = None

    def __call__(self, result: CaseResult) -> str:
        turns = [t for t in (_steps_turn(turn) for turn in result.turns) if t is not None]
        if not turns:
            return ""
        if self.template is None:
            self.template = template_environment(self.templates_dir).get_template(DETAILS_TEMPLATE)
        return self.template.render(turns=turns, multi_turn=len(result.case.turns) > 1).strip("\n")


def explain_turn(turn: TurnResult) -> str | None:
    """Why a turn lost steps points, in one line ("sparql_query not called; retrieval recall@5
    0.50: missed doc/17"); None when it did not."""
    qa = turn.qa
    if qa is None:
        return None
    if qa.steps_error:
        return f"steps not scored: {qa.steps_error}"
    score = qa.steps_score
    if not isinstance(score, (int, float)) or score >= 1:
        return None
    verdicts = turn_verdicts(turn)
    if verdicts is None:
        unmatched = [str(v.name) for v in _fallback_verdicts(qa) if not v.actual_id]
        if unmatched:
            return "no successful call matched " + ", ".join(unmatched)
        return f"steps score {score:.2f}"
    lost = [v for v in verdicts if v.lost_points and v.scored]
    if not lost:
        return f"steps score {score:.2f}"
    several_groups = len({v.group_number for v in verdicts}) > 1  # 6.x, with more than one group
    return "; ".join((f"group {v.group_number}: " if several_groups else "") + v.describe() for v in lost)


def turn_detail_rows(turn: TurnResult) -> list[tuple[Any, ...]]:
    """The Details rows of a turn's steps, as `ReferenceSteps.details_rows` gives them (without the
    turn): each reference step the rules look at (`matched` with the call that matched it and its
    score, `missed` with 0.0 and why, `not scored` when 6.x stopped before its group), each SPARQL step
    followed by rows of their own ("steps (SPARQL)", so that filters on the verdicts are not disturbed):
    its `reference query`, the `actual query` of the call beside it (the one that matched, else the
    last of its name), and the `rows returned` and `rows required` (`sparql_view`), then each
    call that matched none of them (`extra`; `called` when the turn has no reference)."""
    qa = turn.qa
    if qa is None or not qa.has_steps:
        return []
    if qa.steps_error:
        return [("steps", "not scored", None, None, None, None, qa.steps_error)]
    groups = qa.reference_steps or []
    verdicts = turn_verdicts(turn)
    shown = list(verdicts) if verdicts is not None else _fallback_verdicts(qa)
    outcome = turn.scores.get(KIND_NAME)
    several = len(groups) > 1 and isinstance(outcome, StepsOutcome) and outcome.semantics == 6
    rows: list[tuple[Any, ...]] = []
    actual = [step for step in qa.actual_steps or [] if isinstance(step, dict)]
    for verdict in shown:
        aspect = f"steps group {verdict.group_number}" if several else "steps"
        if not verdict.scored:
            rows.append((aspect, "not scored", None, verdict.name, None, None, verdict.reason))
        elif verdict.actual_id:
            score = 1.0 if verdict.score is None else verdict.score
            rows.append((aspect, "matched", verdict.actual_id, verdict.name, None, score, verdict.reason))
        else:
            rows.append((aspect, "missed", None, verdict.name, None, 0.0,
                         verdict.reason or "no successful call matched"))
        view = _sparql_view(groups, verdict, actual) if verdict.scored else None
        if view is None:
            continue
        for what, text in view.lines():  # the queries and rows, to review
            call = view.actual_id if what in ("actual query", "rows returned") else None
            rows.append((f"{aspect} (SPARQL)", what, call, verdict.name, None, None, text))
    matched = {str(verdict.actual_id) for verdict in shown if verdict.actual_id}
    has_reference = bool(groups) and qa.steps_score is not None
    for step in qa.actual_steps or []:
        if not isinstance(step, dict) or str(step.get("id")) in matched:
            continue
        why = f"failed: {step.get('error', '')}".rstrip(": ") if step.get("status") == "error" else None
        rows.append(("steps", "extra" if has_reference else "called", step.get("id"), step.get("name"),
                     None, None, why))
    return rows


def parse_steps_groups(value: Any, *, line: int | None) -> StepGroups:
    """`reference_steps` as written: a list of groups, each a list of steps with a `name`."""
    if not isinstance(value, list) or not all(isinstance(group, list) for group in value):
        raise ShapeError(
            "'reference_steps' must be a list of groups, each a list of steps "
            f"(got {describe_value(value)})",
            line,
        )
    groups = []
    for g_index, group in enumerate(value):
        for s_index, step in enumerate(group):
            if not isinstance(step, dict) or "name" not in step:
                raise ShapeError(
                    f"reference step {s_index + 1} of group {g_index + 1} must be a mapping "
                    f"with a 'name' (got {describe_value(step)})",
                    line_of(group, s_index) or line,
                )
        groups.append(tuple(plain(step) for step in group))
    return tuple(groups)


def parse_actual_steps(value: Any, *, line: int | None) -> tuple[dict[str, Any], ...]:
    """A response's `actual_steps`: a list of steps with a `name`."""
    if not isinstance(value, list):
        raise ShapeError(f"'actual_steps' must be a list of steps (got {describe_value(value)})", line)
    for index, step in enumerate(value):
        if not isinstance(step, dict) or "name" not in step:
            raise ShapeError(
                f"actual step {index + 1} must be a mapping with a 'name' (got {describe_value(step)})",
                line_of(value, index) or line,
            )
    return tuple(value)  # response records are plain already (see loading._raw_response_records)


class ReferenceSteps(Kind):
    """The tool calls a system made, against the reference's groups of steps (graphrag-eval's rules)."""

    name = KIND_NAME
    label = "reference steps"
    metrics = (Metric("steps_score", "steps score", headline=True),)
    in_questions = True
    shared = QA_TURN
    output_text = OutputText("steps", "steps called", lambda output: steps_text(steps_of(output)))

    @property
    def output_key(self) -> str:
        return "actual_steps"

    def read_target(self, target: Mapping[str, Any], *, line: int | None) -> StepGroups | None:
        value = target.get(self.name)
        return None if value is None else parse_steps_groups(value, line=line_of(target, self.name))

    def parse_output(self, turn: Mapping[str, Any], *, line: int | None) -> tuple[dict[str, Any], ...] | None:
        value = turn.get(self.output_key)
        return None if value is None else parse_actual_steps(value, line=line)

    def reference_problems(self, case: TestCase, options: EvaluationOptions) -> list[Problem]:
        return reference_steps_problems(case, options.steps_semantics)

    def attempt_metrics(self, result: CaseResult) -> dict[str, float | None]:
        return {"steps_score": mean_over_turns(t.qa.steps_score for t in result.turns if t.qa is not None)}

    def pass_rule(self, rules: PassRules) -> str:
        return "steps score 1"

    def passes(self, result: CaseResult, rules: PassRules) -> bool | None:
        score = self.attempt_metrics(result)["steps_score"]
        return None if score is None or not self.has_target(result.case) else score == 1

    def explain(self, result: CaseResult) -> str | None:
        several = len(result.case.turns) > 1
        reasons = [
            (f"turn {turn.number}: " if several else "") + reason
            for turn in result.turns if turn.qa is not None and (reason := explain_turn(turn))
        ]
        return "; ".join(reasons) or None

    def details_rows(self, result: CaseResult) -> Iterator[DetailRow]:
        if result.status == "error" and self.has_target(result.case):  # as indicator selection says it
            yield (None, "steps", "not scored (error)", None, None, None, None, result.error or None)
            return
        for turn in result.turns:
            for row in turn_detail_rows(turn):
                yield (turn.number, *row)

    def present(self, results: Sequence[CaseResult]) -> bool:
        """Reference steps in a test case, or steps in a response: either gets the columns."""
        return any(self.has_target(r.case) for r in results) or any(
            steps_of(o) is not None for r in results if r.response for o in r.response.turns
        )

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        return [
            Column("steps score", lambda r: self.case_metrics(r)["steps_score"], 10, "score", score=True,
                   metric="steps_score"),
            Column("steps details", StepsDetailsCell(templates_dir), 60, wrap=True),
        ]


STEPS = ReferenceSteps()
