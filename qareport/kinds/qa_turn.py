"""graphrag-eval's evaluation of a question, shared by the reference answer and the reference steps.

graphrag-eval scores a question's answer and steps in one result dict (`qareport.qa`); the two kinds
name `QA_TURN` as their shared evaluation (whose suite figures, graphrag-eval's aggregates, are in
`qa_figures`), which runs once per turn that has a reference or an output of either, and keeps
the result (as a `QuestionScores`) under `records.QA_RECORD` and the steps' `StepsOutcome` under
the steps kind's name. A Q&A dataset's question is evaluated the same way (`evaluate_question_case`),
with its template and token counts (`QATurn.evaluate_case`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from qareport.kinds.kind_records import SharedEvaluation, SuiteFigures, SuiteOptions, TurnInput, TurnScores
from qareport.question_scores import QuestionScores
from qareport.records import (
    QA_RECORD,
    USAGE_FIELDS,
    CaseResult,
    CaseStatus,
    Location,
    Problem,
    Response,
    Target,
    TestCase,
    Turn,
    TurnOutput,
    TurnResult,
)

if TYPE_CHECKING:  # the steps package imports this module: its modules are imported where used
    from qareport.evaluation_options import EvaluationOptions, Semantics
    from qareport.kinds.steps.outcome import StepsOutcome

REFERENCE_ANSWER = "reference_answer"  # the names of the two kinds that share this evaluation: the
REFERENCE_STEPS = "reference_steps"  # keys of their parts in the records, read typed below

Answer = str | list[Any] | dict[str, Any]  # a structured answer (content parts) is kept as data
StepGroups = tuple[tuple[dict[str, Any], ...], ...]


def reference_answer_of(target: Target) -> str | None:
    return cast("str | None", target.parts.get(REFERENCE_ANSWER))


def reference_steps_of(target: Target) -> StepGroups | None:
    return cast("StepGroups | None", target.parts.get(REFERENCE_STEPS))


def reference_steps_line(target: Target) -> int | None:
    """Where the reference steps are written: a fault in them is located there."""
    return target.lines.get(REFERENCE_STEPS)


def answer_of(output: TurnOutput) -> Answer | None:
    return cast("Answer | None", output.parts.get(REFERENCE_ANSWER))


def steps_of(output: TurnOutput) -> tuple[dict[str, Any], ...] | None:
    return cast("tuple[dict[str, Any], ...] | None", output.parts.get(REFERENCE_STEPS))


def question_dict(case: TestCase, turn: Turn) -> dict[str, Any]:
    """A turn's reference in graphrag-eval's question shape."""
    question: dict[str, Any] = {"id": case.id, "question_text": turn.user_message}
    if (answer := reference_answer_of(turn.target)) is not None:
        question["reference_answer"] = answer
    if (groups := reference_steps_of(turn.target)) is not None:
        question["reference_steps"] = [list(group) for group in groups]
    return question


def response_dict(case_id: str, response: Response, output: TurnOutput | None, *, with_tokens: bool) -> dict[str, Any]:
    """A response (or one turn of it) in graphrag-eval's response shape."""
    record: dict[str, Any] = {"question_id": case_id}
    if response.status != "success":  # the error form, with any steps it carries (scored under 6.x)
        record.update(status="error", error=response.error)
    elif output is not None and (answer := answer_of(output)) is not None:
        record["actual_answer"] = answer
    if output is not None and (steps := steps_of(output)) is not None:
        record["actual_steps"] = [dict(step) for step in steps]
    if with_tokens:
        for field in USAGE_FIELDS:
            value = getattr(response, field)
            if value is not None:
                record[field] = value
    return record


def scored_question(*, template_id: Any, question: dict[str, Any], response: dict[str, Any] | None,
                    semantics: Semantics) -> tuple[dict[str, Any], StepsOutcome | None]:
    """graphrag-eval's result dict of a question, with its retrieval contexts scored, and the
    outcome of its steps with their verdicts; each output is parsed once for all of it."""
    from qareport import qa
    from qareport.kinds.steps.parsed_outputs import question_scope
    from qareport.kinds.steps.verdicts import with_verdicts
    from qareport.retrieval_context import with_context_scores

    with question_scope():
        result, outcome = qa.evaluate_question_outcome(template_id=template_id, question=question,
                                                       response=response, semantics=semantics)
        # graphrag-eval 5.x scores retrieval contexts by string similarity; 6.x has no such metrics
        # (its LLM-judged ones replace them)
        result = with_context_scores(result) if semantics == 5 else result
        return result, None if outcome is None else with_verdicts(result, outcome)


def steps_problem(case: TestCase, turn: Turn, response: Response, outcome: StepsOutcome | None,
                  who: str) -> Problem:
    """The problem of steps that could not be scored, named once and located where it is fixed: at
    the test case's `reference_steps` when the fault is in the reference, else at the response."""
    fault = outcome.fault if outcome is not None and outcome.fault else None
    where = reference_location(case, turn) if outcome is not None and outcome.fault_in_reference else response.location
    return Problem(where, f"{who}: {fault or (outcome.error if outcome else 'steps not scored')}", case.id)


def steps_advice(case: TestCase, turn: Turn, outcome: StepsOutcome | None, semantics: Semantics,
                 who: str) -> list[Problem]:
    """A note at the test case when its scored steps were written for other rules (see
    `six_only_steps_advice`)."""
    from qareport.kinds.steps.step_shapes import six_only_steps_advice

    if outcome is None or outcome.error is not None:
        return []
    advice = six_only_steps_advice(reference_steps_of(turn.target), semantics)
    return [Problem(reference_location(case, turn), f"{who}: note: {advice}", case.id)] if advice else []


def reference_steps_problems(case: TestCase, semantics: Semantics) -> list[Problem]:
    """The faults of a case's reference steps that any response would meet under `semantics` (an
    empty group under 6.x, a 6.x-only step in the last group under 5.x, ...)."""
    from qareport.kinds.steps.matching import evaluate_steps

    problems = []
    for turn in case.turns:
        groups = reference_steps_of(turn.target)
        if groups is None:
            continue
        outcome = evaluate_steps([list(group) for group in groups], [], question_id=case.id, semantics=semantics)
        who = f"question '{case.id}'" if case.kind == "qa" else f"case '{case.id}', turn {turn.number}"
        if outcome.fault_in_reference:
            problems.append(Problem(reference_location(case, turn), f"{who}: {outcome.fault}", case.id))
        problems.extend(steps_advice(case, turn, outcome, semantics, who))
    return problems


def reference_location(case: TestCase, turn: Turn) -> Location:
    """Where a turn's reference steps are written (the case's line when not known)."""
    return Location(case.location.path, reference_steps_line(turn.target) or case.location.line)


def _semantics(options: EvaluationOptions | None) -> Semantics:
    from qareport.evaluation_options import DEFAULT_SEMANTICS

    return options.steps_semantics if options is not None else DEFAULT_SEMANTICS


class QATurn(SharedEvaluation):
    """graphrag-eval's question evaluation of a conversation turn (no template, no token counts)."""

    def evaluate(self, turn: TurnInput) -> TurnScores:
        case, response = turn.case, turn.response
        assert turn.turn is not None and response is not None
        semantics = _semantics(turn.options)
        result, outcome = scored_question(
            template_id=None,
            question=question_dict(case, turn.turn),
            response=response_dict(case.id, response, turn.turn_output, with_tokens=False),
            semantics=semantics,
        )
        qa = QuestionScores.from_graphrag_eval(result)
        who = f"case '{case.id}', turn {turn.turn_number}"
        problems = []
        if qa.steps_error:
            problems.append(steps_problem(case, turn.turn, response, outcome, who))
        problems.extend(steps_advice(case, turn.turn, outcome, semantics, who))
        if qa.steps_note:
            problems.append(Problem(response.location, f"{who}: note: {qa.steps_note}", case.id))
        scores: dict[str, Any] = {QA_RECORD: qa}
        if outcome is not None:
            scores[REFERENCE_STEPS] = outcome
        return TurnScores(scores, tuple(problems), invalid=bool(qa.steps_error))


    def evaluate_case(self, case: TestCase, response: Response | None,
                      options: EvaluationOptions) -> tuple[CaseResult, list[Problem]] | None:
        """A question of a Q&A dataset (a case of kind `qa`) as a whole; a conversation case: None."""
        return evaluate_question_case(case, response, options.steps_semantics) if case.kind == "qa" else None

    def suite_figures(self, results: Sequence[CaseResult], options: SuiteOptions) -> SuiteFigures | None:
        """graphrag-eval's aggregates over the run's Q&A questions (`qa_figures`)."""
        from qareport.kinds.qa_figures import qa_figures

        return qa_figures(results, options)


QA_TURN = QATurn()


def evaluate_question_case(case: TestCase, response: Response | None,
                           semantics: Semantics) -> tuple[CaseResult, list[Problem]]:
    """A Q&A question; a missing or unusable response still yields graphrag's error sample, so
    the aggregates count it as an error instead of leaving it out."""
    turn = case.turns[0]
    result, outcome = scored_question(
        template_id=case.groups[0] if case.groups else None,
        question=question_dict(case, turn),
        response=None if response is None else response_dict(
            case.id, response, response.turns[0] if response.turns else None, with_tokens=True
        ),
        semantics=semantics,
    )
    qa = QuestionScores.from_graphrag_eval(result)
    status: CaseStatus
    error: str | None
    if response is None:
        status, error = "missing", "no response for this question"
    elif response.status == "invalid":
        status, error = "invalid", response.error
    elif qa.status == "error":
        status, error = "error", str(qa.error)
    elif qa.steps_error:
        status, error = "invalid", str(qa.steps_error)
    else:
        status, error = "success", None
    problems = []
    if qa.steps_error and response is not None:
        problems.append(steps_problem(case, turn, response, outcome, f"question '{case.id}'"))
    problems.extend(steps_advice(case, turn, outcome, semantics, f"question '{case.id}'"))
    if qa.steps_note and response is not None:
        problems.append(Problem(response.location, f"question '{case.id}': note: {qa.steps_note}", case.id))
    scores: dict[str, Any] = {QA_RECORD: qa}
    if outcome:
        scores[REFERENCE_STEPS] = outcome
    turn_result = TurnResult(1, turn.user_message, scores=scores)
    return CaseResult(case, status, turns=(turn_result,), error=error, response=response), problems
