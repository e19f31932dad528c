"""Steps score: which actual tool calls reproduce the reference's groups of steps. Pure.

Two sets of rules, graphrag-eval's, chosen by `semantics`:

**5** (graphrag-eval 5.2: `get_steps_matches`, `evaluate_steps`)

* Only the **last** group of `reference_steps` is scored.
* The candidates for a reference step are the actual steps with status `success` and the same
  `name`. Reference steps are taken in group order; each tries its candidates latest first and
  takes the first whose output scores above 0. An actual step matches at most one reference step.
* The score is the sum of the match scores over the number of steps in the last group.

**6** (graphrag-eval 6.6: `match_groups`, `calculate_steps_score`)

* **Every** group is scored, the last first. Within a group the reference steps are taken last
  first, and each tries every successful actual step (whatever its name: the step kinds decide
  which pairs can match), latest first, up to the earliest call matched by the later group; the
  first scoring above 0 is its match, and an actual step matches one reference step per group.
* When a group is not matched in full, the groups before it are not tried.
* The score is the mean over the groups of (the sum of the group's match scores over its size).

Outputs are compared by the step kinds (`registry.STEP_KINDS`: SPARQL results, retrieval, the
time-series lookups, IRI discovery, JSON, exact text), each saying under which rules it applies.

Where graphrag-eval raises (a step without what the comparison needs, an empty group, output that
must be JSON and is not, ...), `evaluate_steps` returns an outcome whose `error` names the question,
the step and what to fix, and whose `score` is None. As in graphrag-eval, a step is only checked
when the rules reach it: a reference step without output that no actual step could match does not
stop the scoring. Where graphrag-eval stops on an input that qareport scores (an infinite number in
a SPARQL result, an ASK answer without `head` for a SELECT reference, a failed retrieval call under
5.x, a column list written as a string), the outcome carries a note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from qareport.describing import describe_value
from qareport.kinds.steps.exact import EXACT_OUTPUT
from qareport.kinds.steps.parsed_outputs import close_scope, open_scope
from qareport.kinds.steps.registry import chosen_kinds, step_kind_for
from qareport.kinds.steps.step_kind import (
    DEFAULT_SEMANTICS,
    Comparison,
    ReferenceStepsError,
    Semantics,
    StepKind,
    StepPair,
    StepsError,
    actual_label,
    reference_label,
)

if TYPE_CHECKING:  # verdicts.py reads outcomes: the type alone is needed here
    from qareport.kinds.steps.verdicts import StepVerdict

RETRIEVAL = "retrieval"
SIX_ONLY_STEPS = ("retrieve_data_points", "retrieve_time_series", "iri_discovery")
"""Reference steps only graphrag-eval 6.x's rules score (5.x has no comparison for them)."""


class StepMatch(NamedTuple):
    """A reference step and the actual step that reproduced its output (a named tuple, made
    several times faster than a frozen dataclass)."""

    reference_index: int  # 0-based, within its group
    actual_index: int  # 0-based, within the actual steps
    actual_id: Any
    score: float  # in (0, 1]
    group_index: int = -1  # the group within reference_steps, as Python indexes it (-1: the last)


_new_match = tuple.__new__  # a match made without the named tuple's own __new__, a Python function


@dataclass(frozen=True, slots=True)
class FailedCall:
    """An actual step whose status is `error`."""

    index: int  # 0-based, within the actual steps
    id: Any
    name: Any
    error: str | None


@dataclass(frozen=True, slots=True)
class StepsOutcome:
    """The steps score of one question, how it came about, or why it could not be computed."""

    score: float | None
    matches: tuple[StepMatch, ...] = ()
    failed_calls: tuple[FailedCall, ...] = ()
    error: str | None = None  # "question 'X': <fault>" (graphrag-eval users see which question)
    notes: tuple[str, ...] = ()  # where graphrag-eval would have stopped, and what was done instead
    semantics: Semantics = DEFAULT_SEMANTICS
    # how each reference step fared (`verdicts.step_verdicts`), when worked out with the evaluation
    verdicts: tuple[StepVerdict, ...] | None = None
    fault: str | None = None  # the error without the question: what is wrong and how to fix it
    fault_in_reference: bool = False  # the error is in the reference steps (the test file), not the response


class StepsScore(NamedTuple):
    """The steps score of one question and its matches, or the fault that stopped the scoring: what
    a result dict needs, without the records a `StepsOutcome` adds (`score_steps`; a named tuple,
    made several times faster than the frozen dataclass, for every question of `qa.run_evaluation`)."""

    score: float | None
    matches: tuple[StepMatch, ...] = ()
    notes: tuple[str, ...] = ()
    fault: str | None = None  # what is wrong and how to fix it (the StepsError's message)
    fault_in_reference: bool = False  # in the reference steps (a ReferenceStepsError), not the response
    every_call_succeeded: bool = False  # known to have no failed call


def evaluate_steps(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    actual_steps: Sequence[Mapping[str, Any]],
    *,
    question_id: str | None = None,
    semantics: Semantics = DEFAULT_SEMANTICS,
) -> StepsOutcome:
    """Score `actual_steps` against `reference_groups` under graphrag-eval `semantics` (5 or 6; see
    the module doc). Neither argument is modified. `question_id` only names the question in `error`.
    """
    return steps_outcome(score_steps(reference_groups, actual_steps, semantics=semantics), actual_steps,
                         question_id=question_id, semantics=semantics)


def score_steps(reference_groups: Sequence[Sequence[Mapping[str, Any]]], actual_steps: Sequence[Mapping[str, Any]],
                *, semantics: Semantics = DEFAULT_SEMANTICS) -> StepsScore:
    """`evaluate_steps`'s score, matches and notes, or the fault that stopped it."""
    scope = open_scope()  # each output parsed once for all the pairs compared
    try:
        return _score_steps(reference_groups, actual_steps, semantics)
    finally:
        close_scope(scope)


def steps_outcome(scored: StepsScore, actual_steps: Sequence[Mapping[str, Any]], *, question_id: str | None,
                  semantics: Semantics) -> StepsOutcome:
    """The `StepsOutcome` of a question scored by `score_steps`."""
    failed_calls = () if scored.every_call_succeeded else _failed_calls(actual_steps)
    if scored.fault is not None:
        return StepsOutcome(score=None, failed_calls=failed_calls, error=steps_error(scored.fault, question_id),
                            semantics=semantics, fault=scored.fault, fault_in_reference=scored.fault_in_reference)
    return StepsOutcome(score=scored.score, matches=scored.matches, failed_calls=failed_calls, notes=scored.notes,
                        semantics=semantics)


def steps_error(fault: str, question_id: str | None) -> str:
    """The steps error of a question: "question 'X': <fault>" (graphrag-eval users see which question)."""
    return f"question {question_id!r}: {fault}" if question_id is not None else fault


def _score_steps(reference_groups: Sequence[Sequence[Mapping[str, Any]]], actual_steps: Sequence[Mapping[str, Any]],
                 semantics: Semantics) -> StepsScore:
    matcher = _Matcher(actual_steps)
    try:
        if semantics == 6:
            groups = _all_groups(reference_groups)
            successful = _successful_calls(actual_steps)
            matches = matcher.match_all_groups(groups, successful)
            score = _mean_of_group_scores(groups, matches)
        else:
            last_group = _last_group(reference_groups)
            _refuse_six_only_steps(last_group)
            successful = _successful_calls(actual_steps)
            matches = matcher.match_last_group(last_group, _candidates_by_name(last_group, actual_steps, successful))
            total = 0.0  # added in match order from 0.0, as graphrag-eval does, for identical floats
            for match in matches:
                total += match.score
            score = total / len(last_group)
            matcher.notes.extend(_failed_retrieval_notes(actual_steps))
    except StepsError as error:
        return StepsScore(None, fault=str(error), fault_in_reference=isinstance(error, ReferenceStepsError))
    notes = tuple(dict.fromkeys(matcher.notes)) if matcher.notes else ()
    # every call successful (the checked steps are a sequence): no failed call to look for
    return StepsScore(score, matches, notes, None, False, len(successful) == len(actual_steps))


def annotate_reference_steps(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    outcome: StepsOutcome | StepsScore,
    actual_steps: Sequence[Mapping[str, Any]],
) -> list[list[dict[str, Any]]]:
    """A copy of `reference_groups` in which each matched reference step has `matches` set to the
    id of its actual step, as graphrag-eval writes it.

    A step that appears in several places (a YAML anchor and its aliases) stays one object in the
    copy, so `matches` shows wherever it appears, the last match written winning, as it does in
    graphrag-eval (which writes into its input).
    """
    copies: dict[int, dict[str, Any]] = {}
    annotated = []
    for group in reference_groups:  # loops rather than a comprehension calling dict() for every step
        copied = []
        for step in group:
            key = id(step)
            if key in copies:
                copied.append(copies[key])
            else:
                copies[key] = copy = step.copy() if type(step) is dict else dict(step)
                copied.append(copy)
        annotated.append(copied)
    for match in outcome.matches:
        actual_id = match.actual_id
        if 0 <= match.actual_index < len(actual_steps):
            actual_id = actual_steps[match.actual_index].get("id", actual_id)
        annotated[match.group_index][match.reference_index]["matches"] = actual_id
    return annotated


def compare_pair(pair: StepPair, *, explain: bool = False) -> Comparison:
    """One reference step against one actual step, by the step kind that applies (5.x first checks
    that both have an output, as graphrag-eval 5.2 does). Raises StepsError."""
    if pair.semantics == 5:
        if not pair.reference.get("output"):
            raise ReferenceStepsError(f"{pair.reference_label} has no 'output'; add the output the step must produce.")
        if "output" not in pair.actual:
            raise StepsError(
                f"{pair.actual_label} has status 'success' but no 'output'; record the step's output, or set "
                "its status to 'error'."
            )
    kind = step_kind_for(pair.reference, pair.actual, semantics=pair.semantics)
    return kind.compare(pair, explain=explain)


class _Matcher:
    """The matching of one question's steps, and the notes its comparisons leave."""

    def __init__(self, actual_steps: Sequence[Mapping[str, Any]]):
        self.actual_steps = actual_steps
        self.notes: list[str] = []

    def score_5(self, reference: Mapping[str, Any], reference_index: int, actual_index: int, place: str) -> float:
        pair = StepPair(reference, self.actual_steps[actual_index], reference_index, actual_index, place, 5)
        return self.scored(pair, compare_pair(pair))

    def score_6(self, reference: Mapping[str, Any], reference_index: int, actual_index: int, place: str,
                kind: StepKind) -> float:
        """`compare_pair` under 6.x, by `kind`, without 5.x's checks."""
        pair = StepPair(reference, self.actual_steps[actual_index], reference_index, actual_index, place, 6)
        return self.scored(pair, kind.compare(pair))

    def scored(self, pair: StepPair, comparison: Comparison) -> float:
        if comparison.note is not None:
            self.notes.append(f"{pair.actual_label} against {pair.reference_label}: {comparison.note}")
        return comparison.score

    def matched(self, reference: Mapping[str, Any], reference_index: int, actual_index: int,
                score: float, group_index: int, place: str) -> StepMatch:
        """The match; StepsError when the actual step has no id."""
        actual = self.actual_steps[actual_index]
        if "id" not in actual:
            raise StepsError(
                f"{actual_label(actual_index, actual)} matches {reference_label(reference_index, reference, place)} "
                "but has no 'id'; give every step the id of its tool call."
            )
        return _new_match(StepMatch, (reference_index, actual_index, actual["id"], score, group_index))

    def match_last_group(self, group: Sequence[Mapping[str, Any]],
                         candidates: dict[Any, list[int]]) -> tuple[StepMatch, ...]:
        used: set[int] = set()
        matches = []
        for reference_index, reference in enumerate(group):
            for actual_index in reversed(candidates.get(reference["name"], [])):
                if actual_index in used:
                    continue
                score = self.score_5(reference, reference_index, actual_index, "of the last group")
                if score > 0.0:
                    matches.append(self.matched(reference, reference_index, actual_index, score, -1,
                                                "of the last group"))
                    used.add(actual_index)
                    break
        return tuple(matches)

    def match_all_groups(self, groups: Sequence[Sequence[Mapping[str, Any]]],
                         calls: list[int]) -> tuple[StepMatch, ...]:
        """`calls`: the indices of the successful actual steps, in call order."""
        matches: list[StepMatch] = []
        actual_steps = self.actual_steps
        search_upto = len(actual_steps)
        score, matched = self.score_6, self.matched
        for group_index in reversed(range(len(groups))):
            group = groups[group_index]
            place = _GROUP_PLACES[group_index] if group_index < len(_GROUP_PLACES) else f"of group {group_index + 1}"
            used: set[int] = set()
            found = []
            successful = [index for index in reversed(calls) if index < search_upto]
            for reference_index in reversed(range(len(group))):
                reference = group[reference_index]
                try:
                    chosen = chosen_kinds(reference, semantics=6)
                except (KeyError, TypeError):  # parts that cannot be a key: `step_kind_for` asks the kinds
                    chosen = {}
                for actual_index in successful:
                    if actual_index in used:
                        continue
                    actual = actual_steps[actual_index]
                    kind = chosen.get(actual["name"])  # the successful calls' names are checked: keys
                    if kind is None:
                        kind = step_kind_for(reference, actual, semantics=6)
                    if kind is EXACT_OUTPUT and "output" in actual:
                        # most 6.x pairs (calls of other tools): `ExactOutput.compare`'s score, without a pair made
                        pair_score = 1.0 if reference.get("output") == actual["output"] else 0.0
                    else:
                        pair_score = score(reference, reference_index, actual_index, place, kind)
                    if pair_score > 0.0:
                        if "id" not in actual:
                            matched(reference, reference_index, actual_index, pair_score, group_index, place)
                        found.append(_new_match(StepMatch, (reference_index, actual_index, actual["id"], pair_score,
                                                            group_index)))
                        used.add(actual_index)
                        break
            matches.extend(found)
            if len(found) < len(group):
                break  # a reference step has no call: the earlier groups are not tried
            search_upto = min(used)  # the calls of `found`
        return tuple(matches)


_GROUP_PLACES = tuple(f"of group {number}" for number in range(1, 17))  # made once, not for every question


def searched_calls(groups: Sequence[Sequence[Mapping[str, Any]]], matches: Sequence[StepMatch],
                   group_index: int, actual_count: int) -> tuple[int, bool]:
    """Under 6.x: how many of the first calls `group_index` was matched against, and whether it was
    tried at all (a later group not matched in full stops the matching)."""
    upto = actual_count
    for later in range(len(groups) - 1, group_index, -1):
        found = [m.actual_index for m in matches if m.group_index == later]
        if len(found) < len(groups[later]) or not found:
            return upto, False
        upto = min(found)
    return upto, True


def _mean_of_group_scores(groups: Sequence[Sequence[Mapping[str, Any]]], matches: Sequence[StepMatch]) -> float:
    """6.6's arithmetic, step for step, for identical floats."""
    by_group = [0.0] * len(groups)  # a sum per group, from 0.0 in match order, as 6.6's defaultdict(float)
    for match in matches:
        by_group[match.group_index] += match.score
    total: float = 0
    for group_index in range(len(groups)):
        total += by_group[group_index] / len(groups[group_index])
    return total / len(groups)


# --- structure ---------------------------------------------------------------------------------


def _failed_calls(actual_steps: Any) -> tuple[FailedCall, ...]:
    if not _is_list(actual_steps):
        return ()
    for step in actual_steps:  # most responses have no failed call: found without making a list
        if type(step) is not dict or step.get("status") == "error":
            break
    else:
        return ()
    return tuple([
        FailedCall(index=index, id=step.get("id"), name=step.get("name"), error=_text_or_none(step.get("error")))
        for index, step in enumerate(actual_steps)
        if (type(step) is dict or isinstance(step, Mapping)) and step.get("status") == "error"
    ])


def _failed_retrieval_notes(actual_steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """graphrag-eval 5.2 reads the output of every `retrieval` call, and stops on one without."""
    return [
        f"{actual_label(index, step)} is a retrieval call without output (status {step.get('status')!r}), "
        "on which graphrag-eval 5.2 stops; it is left out here"
        for index, step in enumerate(actual_steps)
        if step.get("name") == RETRIEVAL and "output" not in step
    ]


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _is_list(value: Any) -> bool:
    if type(value) is list:  # the common case, without the slower abstract-class check
        return True
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _groups_list(reference_groups: Any) -> Sequence[Any]:
    if not _is_list(reference_groups):
        raise ReferenceStepsError(
            f"'reference_steps' must be a list of groups of steps (got {describe_value(reference_groups)}); "
            "write it as a list of lists of steps."
        )
    if not reference_groups:
        raise ReferenceStepsError(
            "'reference_steps' is empty; give at least one group of steps, the last group being the "
            "steps whose outputs the answer comes from."
        )
    groups: Sequence[Any] = reference_groups  # typed without a call of cast(), made for every question
    return groups


def _checked_group(group: Any, what: str, in_group: str) -> Sequence[Mapping[str, Any]]:
    if not _is_list(group):
        raise ReferenceStepsError(
            f"{what} of 'reference_steps' must be a list of steps (got {describe_value(group)}); "
            "write 'reference_steps' as a list of lists of steps."
        )
    if not group:
        fix = ("put in it the steps whose outputs the answer comes from" if what == "the last group"
               else "put in it the steps the system must call, or remove it")
        raise ReferenceStepsError(f"{what} of 'reference_steps' is empty; {fix}.")
    for index, step in enumerate(group):
        if (type(step) is not dict and not isinstance(step, Mapping)) or "name" not in step:
            raise ReferenceStepsError(f"reference step {index + 1} {in_group} has no 'name'; name the tool the step "
                                      "calls.")
        if type(step["name"]) is not str:
            _require_hashable(step["name"], f"the 'name' of reference step {index + 1} {in_group}",
                              ReferenceStepsError)
    return cast(Sequence[Mapping[str, Any]], group)


def _last_group(reference_groups: Any) -> Sequence[Mapping[str, Any]]:
    groups = _groups_list(reference_groups)
    return _checked_group(groups[-1], "the last group", "of the last group")


SIX_RULES_ADVICE = ("run with --steps-semantics 6 (steps_semantics: 6 in qareport.yaml; in Python, "
                    "qareport.graphrag_eval_6)")


def _refuse_six_only_steps(group: Sequence[Mapping[str, Any]]) -> None:
    """Under 5.x: a step of the scored group that only 6.x's rules compare, written without an output
    (as such steps are: they are compared by their args), is the wrong rules, not a missing output."""
    for index, step in enumerate(group):
        if step["name"] in SIX_ONLY_STEPS and not step.get("output"):
            raise ReferenceStepsError(
                f"{reference_label(index, step)} is scored only by graphrag-eval 6.x's rules; {SIX_RULES_ADVICE}."
            )


def six_only_steps_advice(reference_groups: Any, semantics: Semantics) -> str | None:
    """Under 5.x, when the scored group has a step only 6.x's rules compare but which 5.x can score
    (it has an output, compared as text, as graphrag-eval 5.2 does): why its score may be 0, and
    what to do. None otherwise."""
    if semantics != 5 or not _is_list(reference_groups) or not reference_groups or not _is_list(reference_groups[-1]):
        return None
    named = [(index, step) for index, step in enumerate(reference_groups[-1])
             if isinstance(step, Mapping) and step.get("name") in SIX_ONLY_STEPS and step.get("output")]
    if not named:
        return None
    steps = ", ".join(reference_label(index, step) for index, step in named)
    return (f"{steps} {'is a step' if len(named) == 1 else 'are steps'} only graphrag-eval 6.x's rules compare "
            f"as such (5.x compares outputs of calls of the same name, as text); {SIX_RULES_ADVICE}")


def _all_groups(reference_groups: Any) -> list[Sequence[Mapping[str, Any]]]:
    groups = _groups_list(reference_groups)
    if _plain_groups(groups):  # the common groups, without a message made for each
        plain: list[Sequence[Mapping[str, Any]]] = groups if type(groups) is list else list(groups)
        return plain
    return [_checked_group(group, f"group {number}", f"of group {number}")
            for number, group in enumerate(groups, start=1)]


def _plain_groups(groups: Sequence[Any]) -> bool:
    """Every group a non-empty list of dicts, each with a text 'name': what `_checked_group` accepts
    as it is. (Loops rather than nested generators, which cost a call per group and per step.)"""
    for group in groups:
        if type(group) is not list or not group:
            return False
        for step in group:
            if type(step) is not dict or type(step.get("name")) is not str:
                return False
    return True


def _check_actual_steps(actual_steps: Any) -> None:
    """Every actual step is an object with a name and a status (graphrag-eval reads both of every
    step, at the latest in its aggregates)."""
    if not _is_list(actual_steps):
        raise StepsError(
            f"'actual_steps' must be a list of steps (got {describe_value(actual_steps)}); "
            "give the tool calls in the order they were made."
        )
    for index, step in enumerate(actual_steps):
        if type(step) is not dict and not isinstance(step, Mapping):
            raise StepsError(
                f"actual step {index + 1} must be an object with 'name', 'status' and 'output' "
                f"(got {describe_value(step)})."
            )
        if "name" not in step:
            raise StepsError(f"actual step {index + 1} has no 'name'; name the tool the step called.")
        if "status" not in step:
            raise StepsError(f"{actual_label(index, step)} has no 'status'; set it to 'success' or 'error'.")
        if step["status"] == "success" and type(step["name"]) is not str:
            _require_hashable(step["name"], f"the 'name' of actual step {index + 1}")


def _successful_calls(actual_steps: Any) -> list[int]:
    """`_check_actual_steps`, and the indices of the successful actual steps in call order: the
    common steps (dicts with a text name and a status) in one pass, any other way checked first."""
    if type(actual_steps) is list:
        successful = []
        for index, step in enumerate(actual_steps):
            if type(step) is not dict or type(step.get("name")) is not str:
                break
            status = step.get("status", _NO_STATUS)
            if status == "success":
                successful.append(index)
            elif status is _NO_STATUS:
                break
        else:
            return successful
    _check_actual_steps(actual_steps)
    return [index for index, step in enumerate(actual_steps) if step["status"] == "success"]


_NO_STATUS = object()


def _candidates_by_name(
    group: Sequence[Mapping[str, Any]], actual_steps: Any, successful: list[int]
) -> dict[Any, list[int]]:
    """Indices of the `successful` actual steps, in call order, by name (names of `group` only)."""
    wanted = {step["name"] for step in group}
    candidates: dict[Any, list[int]] = {}
    for index in successful:
        name = actual_steps[index]["name"]
        if name in wanted:
            candidates.setdefault(name, []).append(index)
    return candidates


def _require_hashable(value: Any, what: str, error: type[StepsError] = StepsError) -> Any:
    try:
        hash(value)
    except TypeError:
        raise error(f"{what} must be a string (got {describe_value(value)}).") from None
    return value
