"""Put the evaluators together: one test case and its response in, one `CaseResult` out.

Each kind of target scores its own part of a turn (`kinds.Kind.evaluate_turn`, or an evaluation it
shares with other kinds); this module only asks the run's kinds, decides the case's status, and
collects the per-case problems evaluation finds. It names no kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from qareport.collector import collector_paused
from qareport.evaluation_options import EvaluationOptions, Semantics
from qareport.kinds import Kind, PassRules, RunKinds, SharedEvaluation, TurnInput, catalogue
from qareport.question_scores import Judgment
from qareport.records import (
    QA_RECORD,
    CaseResult,
    CaseStatus,
    Problem,
    Response,
    Suite,
    TestCase,
    Turn,
    TurnOutput,
    TurnResult,
)

__all__ = ["Evaluation", "EvaluationOptions", "combine_attempts", "evaluate_case", "evaluate_suite",
           "judged_evaluation", "qa_results", "reference_problems"]


DEFAULT_OPTIONS = EvaluationOptions()


@dataclass(frozen=True, slots=True)
class Evaluation:
    """All case results of a run, in test-case order, and the problems evaluation found."""

    results: tuple[CaseResult, ...]
    problems: tuple[Problem, ...]


def evaluate_case(
    case: TestCase, response: Response | None, *, options: EvaluationOptions = DEFAULT_OPTIONS,
    kinds: RunKinds | None = None,
) -> tuple[CaseResult, list[Problem]]:
    """Evaluate every turn of one case against its response, by `kinds` (default: the catalogue's)."""
    kinds = kinds if kinds is not None else catalogue()
    problems: list[Problem] = []
    if not case.turns:  # the test case itself could not be read; loading reported why
        return CaseResult(case, "invalid", error=case.comments or "invalid test case"), problems
    for shared in _shared_evaluations(kinds):  # e.g. a Q&A dataset's question, scored as graphrag-eval does
        if (whole := shared.evaluate_case(case, response, options)) is not None:
            return whole
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
    invalid = False
    for index, turn in enumerate(case.turns):
        output = response.turns[index] if index < len(response.turns) else None
        turn_result, turn_invalid = _evaluate_turn(case, turn, response, output, options, problems, kinds)
        turn_results.append(turn_result)
        invalid = invalid or turn_invalid
    errors = [f"turn {t.number}: {t.error}" for t in turn_results if t.error]
    return CaseResult(
        case,
        "invalid" if invalid else "success",
        turns=tuple(turn_results),
        error="; ".join(errors) or None,
        response=response,
    ), problems


@lru_cache(maxsize=8)
def _plan(registered: tuple[Kind, ...]) -> tuple[tuple[Kind, SharedEvaluation | None, tuple[str, ...]], ...]:
    """How a turn is scored by a run's kinds, worked out once per set of kinds: each kind that
    scores itself, and each shared evaluation once (at its first kind), with the names of the
    kinds that share it (any of their parts in the turn asks for it)."""
    plan: list[tuple[Kind, SharedEvaluation | None, tuple[str, ...]]] = []
    seen: list[SharedEvaluation] = []
    for kind in registered:
        shared = kind.shared
        if shared is None:
            plan.append((kind, None, (kind.name,)))
        elif not any(done is shared for done in seen):
            seen.append(shared)
            plan.append((kind, shared, tuple(other.name for other in registered if other.shared is shared)))
    return tuple(plan)


def _shared_evaluations(kinds: RunKinds) -> tuple[SharedEvaluation, ...]:
    """The run's shared evaluations, each once, in the order of their first kind."""
    return tuple(shared for _, shared, _ in _plan(kinds.kinds) if shared is not None)


def reference_problems(case: TestCase, semantics: Semantics = DEFAULT_OPTIONS.steps_semantics, *,
                       kinds: RunKinds | None = None) -> list[Problem]:
    """The faults of a case's targets that any response would meet under `semantics` (an empty
    group of reference steps under 6.x, ...): what `validate` reports for test cases given without
    responses."""
    options = replace(DEFAULT_OPTIONS, steps_semantics=semantics)
    return [problem for kind in (kinds if kinds is not None else catalogue())
            for problem in kind.reference_problems(case, options)]


def _evaluate_turn(
    case: TestCase,
    turn: Turn,
    response: Response,
    output: TurnOutput | None,
    options: EvaluationOptions,
    problems: list[Problem],
    kinds: RunKinds,
) -> tuple[TurnResult, bool]:
    """One turn scored by every kind it has a part of (a kind scored in an evaluation it shares
    with others: that evaluation, once); whether it makes the case invalid."""
    error = None
    if output is None:
        error = "the response has no output for this turn; scored as if nothing was produced"
        problems.append(Problem(response.location, f"case '{case.id}', turn {turn.number}: {error}", case.id))
    scores: dict[str, Any] = {}
    invalid = False
    targets, outputs = turn.target.parts, output.parts if output is not None else {}
    for kind, shared, names in _plan(kinds.kinds):
        if shared is None:
            part = targets.get(kind.name)
            if part is not None:
                scores[kind.name] = kind.evaluate_turn(TurnInput(
                    case, turn.number, part, outputs.get(kind.name), turn=turn, response=response,
                    turn_output=output, options=options))
        elif any(targets.get(name) is not None or outputs.get(name) is not None for name in names):
            scored = shared.evaluate(TurnInput(case, turn.number, targets.get(kind.name), outputs.get(kind.name),
                                               turn=turn, response=response, turn_output=output, options=options))
            scores.update(scored.scores)
            problems.extend(scored.problems)
            invalid = invalid or scored.invalid
    return TurnResult(turn.number, turn.user_message, error=error, scores=scores), invalid


def evaluate_suite(
    suite: Suite,
    *,
    options: EvaluationOptions = DEFAULT_OPTIONS,
    judge: Callable[[list[dict[str, Any]]], Sequence[Iterable[Judgment]]] | None = None,
    kinds: RunKinds | None = None,
) -> Evaluation:
    """Evaluate every case by the run's `kinds` (default: the catalogue's; the Q&A results with their
    retrieval contexts scored by string similarity, no LLM); then let the judge (if any), given the
    Q&A results as graphrag-eval's dicts (`qa_results`), return its judgments of each (the LLM
    metrics, typed), from which each judged result is built as a new record."""
    kinds = kinds if kinds is not None else catalogue()
    results = []
    problems: list[Problem] = []
    with collector_paused():  # the results live on, and scoring makes no reference cycles: see `collector`
        for case in suite.cases:
            attempts = suite.attempts.get(case.id)
            if attempts:
                result, case_problems = _evaluate_attempts(case, attempts, options, kinds)
            else:
                result, case_problems = evaluate_case(case, suite.responses.get(case.id), options=options, kinds=kinds)
            results.append(result)
            problems.extend(case_problems)
    if judge is not None:
        judgments = judge(list(qa_results(results)))
        results = list(_with_judgments(results, iter(judgments)))
    return Evaluation(tuple(_with_passes(results, options.pass_rules, kinds)), tuple(problems))


def judged_evaluation(evaluation: Evaluation, judgments: Iterable[Iterable[Judgment]], *,
                      options: EvaluationOptions = DEFAULT_OPTIONS, kinds: RunKinds | None = None) -> Evaluation:
    """`evaluation` judged as its own stage: each Q&A result judged by its `judgments` (one per
    result, in `qa_results` order, as `Judge.judge_results` returns them), each attempt's pass
    verdict given again (an answer's rule reads the judged F1). What `evaluate_suite(judge=)` does
    in one go, for a caller that keeps what the judge's run returned beside the judgments."""
    kinds = kinds if kinds is not None else catalogue()
    results = _with_judgments(evaluation.results, iter(judgments))
    return Evaluation(tuple(_with_passes(results, options.pass_rules, kinds)), evaluation.problems)


def _with_passes(results: Iterable[CaseResult], rules: PassRules, kinds: RunKinds) -> Iterator[CaseResult]:
    """The results with each attempt's pass verdict (once judged: an answer's rule needs its F1)."""
    for result in results:
        if not result.attempts:
            yield result
            continue
        yield combine_attempts(tuple(replace(a, passed=kinds.attempt_passed(a, rules)) for a in result.attempts))


def _evaluate_attempts(case: TestCase, responses: Iterable[Response],
                       options: EvaluationOptions, kinds: RunKinds) -> tuple[CaseResult, list[Problem]]:
    """Each attempt scored on its own, every Q&A result dict marked with its `attempt` (so the
    judge judges, and caches, each attempt apart); a problem every attempt meets (a note on the
    test case) is said once."""
    attempts = []
    problems: dict[Problem, None] = {}
    for response in responses:
        result, found = evaluate_case(case, response, options=options, kinds=kinds)
        number = result.attempt
        turns = tuple(turn if turn.qa is None
                      else replace(turn, scores={**turn.scores, QA_RECORD: turn.qa.with_values(attempt=number)})
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
    over its attempts (`RunKinds.case_metrics`)."""
    evaluated = [a for a in attempts if a.status == "success"]
    first = evaluated[0] if evaluated else attempts[0]
    status: CaseStatus = first.status
    troubles = [f"attempt {a.attempt}: {a.error or a.status}" for a in attempts
                if a.status != "success" or a.error]
    return replace(
        first,
        status=status,
        error="; ".join(troubles) or None,
        passed=None,  # a verdict of an attempt, not of the case (`consistency` counts them)
        attempts=attempts,
    )


def _with_judgments(results: Iterable[CaseResult], judgments: Iterator[Iterable[Judgment]]) -> Iterator[CaseResult]:
    """The case results with each Q&A result judged by its `judgments`, taken in `qa_results` order."""
    for result in results:
        if result.attempts:
            yield combine_attempts(tuple(_with_judgments(result.attempts, judgments)))
            continue
        if not any(turn.qa is not None for turn in result.turns):
            yield result
            continue
        turns = tuple(turn if turn.qa is None
                      else replace(turn, scores={**turn.scores, QA_RECORD: turn.qa.with_judgments(next(judgments))})
                      for turn in result.turns)
        yield replace(result, turns=turns)


def qa_results(results: Iterable[CaseResult]) -> Iterable[dict[str, Any]]:
    """Every graphrag-eval result dict of the run (Q&A cases and conversation turns; each
    attempt's of a case answered several times), built from the model (`as_graphrag_eval`)."""
    for result in results:
        if result.attempts:
            yield from qa_results(result.attempts)
            continue
        for turn in result.turns:
            if turn.qa is not None:
                yield turn.qa.as_graphrag_eval()

