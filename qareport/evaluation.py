"""Put the evaluators together: one test case and its response in, one `CaseResult` out.

Each kind of target has its own evaluator (`indicator_selection` for dimension terms, `qa` for
reference steps and answers); this module only routes turns to them, decides the case's status,
and collects the per-case problems evaluation finds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from qareport import qa
from qareport.collector import collector_paused
from qareport.kinds import PassRules, TurnInput, attempt_passed, extra_kinds
from qareport.kinds.indicator_selection import DEFAULT_ACCEPTABLE_EXTRAS, score_indicator_selection
from qareport.kinds.steps import KIND_NAME as STEPS_KIND
from qareport.kinds.steps import with_verdicts
from qareport.kinds.steps.matching import StepsOutcome, six_only_steps_advice
from qareport.kinds.steps.parsed_outputs import question_scope
from qareport.kinds.steps.step_kind import DEFAULT_SEMANTICS, Semantics
from qareport.records import (
    DEFAULT_TERM_MATCHING,
    USAGE_FIELDS,
    CaseResult,
    CaseStatus,
    Location,
    Problem,
    Response,
    Suite,
    TermMatching,
    TestCase,
    Turn,
    TurnOutput,
    TurnResult,
)
from qareport.retrieval_context import with_context_scores
from qareport.set_metrics import mean_or_none


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    match_terms_by: TermMatching = DEFAULT_TERM_MATCHING
    steps_semantics: Semantics = DEFAULT_SEMANTICS  # graphrag-eval's steps rules: 5 or 6
    acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS  # extra terms an `acceptable` grade allows
    pass_rules: PassRules = field(default_factory=PassRules)  # when an attempt of a case answered several times passes


@dataclass(frozen=True, slots=True)
class Evaluation:
    """All case results of a run, in test-case order, and the problems evaluation found."""

    results: tuple[CaseResult, ...]
    problems: tuple[Problem, ...]


def question_dict(case: TestCase, turn: Turn) -> dict[str, Any]:
    """A turn's reference in graphrag-eval's question shape."""
    question: dict[str, Any] = {"id": case.id, "question_text": turn.user_message}
    if turn.target.reference_answer is not None:
        question["reference_answer"] = turn.target.reference_answer
    if turn.target.reference_steps is not None:
        question["reference_steps"] = [list(group) for group in turn.target.reference_steps]
    return question


def response_dict(case_id: str, response: Response, output: TurnOutput | None, *, with_tokens: bool) -> dict[str, Any]:
    """A response (or one turn of it) in graphrag-eval's response shape."""
    record: dict[str, Any] = {"question_id": case_id}
    if response.status != "success":  # the error form, with any steps it carries (scored under 6.x)
        record.update(status="error", error=response.error)
    elif output is not None and output.actual_answer is not None:
        record["actual_answer"] = output.actual_answer
    if output is not None and output.actual_steps is not None:
        record["actual_steps"] = [dict(step) for step in output.actual_steps]
    if with_tokens:
        for field in USAGE_FIELDS:
            value = getattr(response, field)
            if value is not None:
                record[field] = value
    return record


def _needs_qa(turn: Turn, output: TurnOutput | None) -> bool:
    """Whether the turn has anything for the Q&A evaluator: a reference, or an answer or steps
    (an answer alone is still judged for relevance, as graphrag-eval does)."""
    has_reference = turn.target.reference_steps is not None or turn.target.reference_answer is not None
    has_output = output is not None and (output.actual_answer is not None or output.actual_steps is not None)
    return has_reference or has_output


def evaluate_case(
    case: TestCase, response: Response | None, *, options: EvaluationOptions = EvaluationOptions()
) -> tuple[CaseResult, list[Problem]]:
    """Evaluate every turn of one case against its response."""
    problems: list[Problem] = []
    if not case.turns:  # the test case itself could not be read; loading reported why
        return CaseResult(case, "invalid", error=case.comments or "invalid test case"), problems
    if case.kind == "qa":
        return _evaluate_question_case(case, response, options.steps_semantics)
    if response is None:
        return CaseResult(case, "missing", error="no response for this case"), problems
    if response.status == "invalid":
        return CaseResult(case, "invalid", error=response.error, response=response), problems

    if response.status == "error":
        return CaseResult(case, "error", error=response.error, response=response), problems

    if len(response.turns) > len(case.turns):
        problems.append(Problem(
            response.location,
            f"case '{case.id}': the response has {len(response.turns)} turns but the case has "
            f"{len(case.turns)} user messages with a target; the extra turns are ignored",
            case.id,
        ))
    turn_results = []
    for index, turn in enumerate(case.turns):
        output = response.turns[index] if index < len(response.turns) else None
        turn_results.append(_evaluate_turn(case, turn, response, output, options, problems))
    precisions = [t.indicator.macro_precision for t in turn_results if t.indicator]
    recalls = [t.indicator.macro_recall for t in turn_results if t.indicator]
    errors = [f"turn {t.number}: {t.error}" for t in turn_results if t.error]
    steps_errors = [t for t in turn_results if t.qa and t.qa.get("steps_error")]
    return CaseResult(
        case,
        "invalid" if steps_errors else "success",
        turns=tuple(turn_results),
        error="; ".join(errors) or None,
        macro_precision=mean_or_none(precisions),
        macro_recall=mean_or_none(recalls),
        response=response,
    ), problems


def _evaluate_question_case(case: TestCase, response: Response | None,
                            semantics: Semantics) -> tuple[CaseResult, list[Problem]]:
    """A Q&A question; a missing or unusable response still yields graphrag's error sample, so
    the aggregates count it as an error instead of leaving it out."""
    turn = case.turns[0]
    result, outcome = _scored_question(
        template_id=case.groups[0] if case.groups else None,
        question=question_dict(case, turn),
        response=None if response is None else response_dict(
            case.id, response, response.turns[0] if response.turns else None, with_tokens=True
        ),
        semantics=semantics,
    )
    status: CaseStatus
    error: str | None
    if response is None:
        status, error = "missing", "no response for this question"
    elif response.status == "invalid":
        status, error = "invalid", response.error
    elif result.get("status") == "error":
        status, error = "error", str(result.get("error"))
    elif result.get("steps_error"):
        status, error = "invalid", str(result["steps_error"])
    else:
        status, error = "success", None
    problems = []
    if result.get("steps_error") and response is not None:
        problems.append(steps_problem(case, turn, response, outcome, f"question '{case.id}'"))
    problems.extend(_advice(case, turn, outcome, semantics, f"question '{case.id}'"))
    if result.get("steps_note") and response is not None:
        problems.append(Problem(response.location, f"question '{case.id}': note: {result['steps_note']}", case.id))
    turn_result = TurnResult(1, turn.user_message, qa=result, scores={STEPS_KIND: outcome} if outcome else {})
    return CaseResult(case, status, turns=(turn_result,), error=error, response=response), problems


def steps_problem(case: TestCase, turn: Turn, response: Response, outcome: StepsOutcome | None,
                  who: str) -> Problem:
    """The problem of steps that could not be scored, named once and located where it is fixed: at
    the test case's `reference_steps` when the fault is in the reference, else at the response."""
    fault = outcome.fault if outcome is not None and outcome.fault else None
    where = reference_location(case, turn) if outcome is not None and outcome.fault_in_reference else response.location
    return Problem(where, f"{who}: {fault or (outcome.error if outcome else 'steps not scored')}", case.id)


def _advice(case: TestCase, turn: Turn, outcome: StepsOutcome | None, semantics: Semantics, who: str) -> list[Problem]:
    """A note at the test case when its scored steps were written for other rules (see
    `six_only_steps_advice`)."""
    if outcome is None or outcome.error is not None:
        return []
    advice = six_only_steps_advice(turn.target.reference_steps, semantics)
    return [Problem(reference_location(case, turn), f"{who}: note: {advice}", case.id)] if advice else []


def reference_problems(case: TestCase, semantics: Semantics = DEFAULT_SEMANTICS) -> list[Problem]:
    """The faults of a case's reference steps that any response would meet under `semantics` (an
    empty group under 6.x, a 6.x-only step in the last group under 5.x, ...): what `validate`
    reports for test cases given without responses."""
    from qareport.kinds.steps.matching import evaluate_steps

    problems = []
    for turn in case.turns:
        groups = turn.target.reference_steps
        if groups is None:
            continue
        outcome = evaluate_steps([list(group) for group in groups], [], question_id=case.id, semantics=semantics)
        who = f"question '{case.id}'" if case.kind == "qa" else f"case '{case.id}', turn {turn.number}"
        if outcome.fault_in_reference:
            problems.append(Problem(reference_location(case, turn), f"{who}: {outcome.fault}", case.id))
        problems.extend(_advice(case, turn, outcome, semantics, who))
    return problems


def reference_location(case: TestCase, turn: Turn) -> Location:
    """Where a turn's reference steps are written (the case's line when not known)."""
    return Location(case.location.path, turn.target.reference_steps_line or case.location.line)


def _scored_question(*, template_id: Any, question: dict[str, Any], response: dict[str, Any] | None,
                     semantics: Semantics) -> tuple[dict[str, Any], StepsOutcome | None]:
    """graphrag-eval's result dict of a question, with its retrieval contexts scored, and the
    outcome of its steps with their verdicts; each output is parsed once for all of it."""
    with question_scope():
        result, outcome = qa.evaluate_question_outcome(template_id=template_id, question=question,
                                                       response=response, semantics=semantics)
        result = _with_context_scores(result, semantics)
        return result, None if outcome is None else with_verdicts(result, outcome)


def _evaluate_turn(
    case: TestCase,
    turn: Turn,
    response: Response,
    output: TurnOutput | None,
    options: EvaluationOptions,
    problems: list[Problem],
) -> TurnResult:
    error = None
    if output is None:
        error = "the response has no output for this turn; scored as if nothing was produced"
        problems.append(Problem(response.location, f"case '{case.id}', turn {turn.number}: {error}", case.id))
    indicator = None
    if turn.target.indicator_selection is not None:
        indicator = score_indicator_selection(
            turn.target.indicator_selection,
            output.indicator_selection if output else None,
            match_terms_by=options.match_terms_by,
            acceptable_extras=options.acceptable_extras,
        )
    qa_result = None
    outcome = None
    if _needs_qa(turn, output):
        qa_result, outcome = _scored_question(
            template_id=None,
            question=question_dict(case, turn),
            response=response_dict(case.id, response, output, with_tokens=False),
            semantics=options.steps_semantics,
        )
        if qa_result.get("steps_error"):
            problems.append(steps_problem(case, turn, response, outcome, f"case '{case.id}', turn {turn.number}"))
        problems.extend(_advice(case, turn, outcome, options.steps_semantics, f"case '{case.id}', turn {turn.number}"))
        if qa_result.get("steps_note"):
            problems.append(Problem(
                response.location, f"case '{case.id}', turn {turn.number}: note: {qa_result['steps_note']}", case.id
            ))
    scores = {
        kind.name: kind.evaluate_turn(TurnInput(case, turn.number, part, kind.output_of(output)))
        for kind in extra_kinds()
        if (part := turn.target.parts.get(kind.name)) is not None
    }
    if outcome is not None:
        scores[STEPS_KIND] = outcome
    return TurnResult(turn.number, turn.user_message, indicator=indicator, qa=qa_result, error=error, scores=scores)


def evaluate_suite(
    suite: Suite,
    *,
    options: EvaluationOptions = EvaluationOptions(),
    judge: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
) -> Evaluation:
    """Evaluate every case (the Q&A results with their retrieval contexts scored by string
    similarity, no LLM); then let the judge (if any) return the Q&A results with the LLM metrics,
    which replace the unjudged ones."""
    results = []
    problems: list[Problem] = []
    with collector_paused():  # the results live on, and scoring makes no reference cycles: see `collector`
        for case in suite.cases:
            attempts = suite.attempts.get(case.id)
            if attempts:
                result, case_problems = _evaluate_attempts(case, attempts, options)
            else:
                result, case_problems = evaluate_case(case, suite.responses.get(case.id), options=options)
            results.append(result)
            problems.extend(case_problems)
    if judge is not None:
        judged = judge(list(qa_results(results)))
        results = list(_with_qa_results(results, iter(judged)))
    return Evaluation(tuple(_with_passes(results, options.pass_rules)), tuple(problems))


def _with_passes(results: Iterable[CaseResult], rules: PassRules) -> Iterator[CaseResult]:
    """The results with each attempt's pass verdict (once judged: an answer's rule needs its F1)."""
    for result in results:
        if not result.attempts:
            yield result
            continue
        yield combine_attempts(tuple(replace(a, passed=attempt_passed(a, rules)) for a in result.attempts))


def _evaluate_attempts(case: TestCase, responses: Iterable[Response],
                       options: EvaluationOptions) -> tuple[CaseResult, list[Problem]]:
    """Each attempt scored on its own, every Q&A result dict marked with its `attempt` (so the
    judge judges, and caches, each attempt apart); a problem every attempt meets (a note on the
    test case) is said once."""
    attempts = []
    problems: dict[Problem, None] = {}
    for response in responses:
        result, found = evaluate_case(case, response, options=options)
        number = result.attempt
        turns = tuple(turn if turn.qa is None else replace(turn, qa={**turn.qa, "attempt": number})
                      for turn in result.turns)
        attempts.append(replace(result, turns=turns))
        problems.update(dict.fromkeys(found))
    return combine_attempts(tuple(attempts)), list(problems)


def combine_attempts(attempts: tuple[CaseResult, ...]) -> CaseResult:
    """One case's result from the results of its attempts (in attempt order).

    The case's status is `success` when any attempt was evaluated (the others count as attempts
    that did not pass), else the first attempt's; its `error` names each attempt that failed or
    had a turn it could not score. Its turns and response are the first evaluated attempt's (the
    details cell shows that attempt; the Details sheet has every attempt); its metrics are the means
    over its attempts (`kinds.case_metrics`), and so are `macro_precision` and `macro_recall`."""
    evaluated = [a for a in attempts if a.status == "success"]
    first = evaluated[0] if evaluated else attempts[0]
    status: CaseStatus = first.status
    troubles = [f"attempt {a.attempt}: {a.error or a.status}" for a in attempts
                if a.status != "success" or a.error]
    return replace(
        first,
        status=status,
        error="; ".join(troubles) or None,
        macro_precision=mean_or_none([a.macro_precision for a in attempts if a.macro_precision is not None]),
        macro_recall=mean_or_none([a.macro_recall for a in attempts if a.macro_recall is not None]),
        passed=None,  # a verdict of an attempt, not of the case (`consistency` counts them)
        attempts=attempts,
    )


def _with_context_scores(result: dict[str, Any], semantics: Semantics) -> dict[str, Any]:
    """graphrag-eval 5.x scores retrieval contexts by string similarity; 6.x has no such metrics
    (its LLM-judged ones replace them)."""
    return with_context_scores(result) if semantics == 5 else result


def _with_qa_results(results: Iterable[CaseResult], scored: Iterator[dict[str, Any]]) -> Iterator[CaseResult]:
    """The case results with their Q&A dicts replaced by `scored`, taken in `qa_results` order."""
    for result in results:
        if result.attempts:
            yield combine_attempts(tuple(_with_qa_results(result.attempts, scored)))
            continue
        if not any(turn.qa is not None for turn in result.turns):
            yield result
            continue
        turns = tuple(turn if turn.qa is None else replace(turn, qa=next(scored)) for turn in result.turns)
        yield replace(result, turns=turns)


def qa_results(results: Iterable[CaseResult]) -> Iterable[dict[str, Any]]:
    """Every graphrag-eval-shaped result dict of the run (Q&A cases and conversation turns; each
    attempt's of a case answered several times)."""
    for result in results:
        if result.attempts:
            yield from qa_results(result.attempts)
            continue
        for turn in result.turns:
            if turn.qa is not None:
                yield turn.qa

