"""How each reference step fared, and why it lost points, in the analyst's words. Pure.

`step_verdicts` reads a scored question again (its reference groups, its actual steps and the
`StepsOutcome` of `matching.evaluate_steps`) and says for every reference step the rules looked
at: which call matched it and with what score, or why none did:

    not called                                   no call of that tool at all
    failed: 429 Too Many Requests                every call of it failed (the latest error)
    returned other rows (3 of 5 required rows)   the latest call's output, as its step kind reads it
    recall@5 0.50: missed doc/17                 a partial match (retrieval)
    called only after the steps of group 3       6.x: called, but too late for its group
    not scored: group 3 was not matched in full  6.x: the matching stopped before this group

Reasons are only worked out here, for the steps that lost points, never while scoring; the
evaluation works them out once per turn, right after scoring, and keeps them with the outcome
(`kinds.steps.with_verdicts`). The records, `StepVerdict` among them, are `outcome`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from qareport.kinds.steps.matching import compare_pair, searched_calls
from qareport.kinds.steps.outcome import StepMatch, StepsOutcome, StepVerdict
from qareport.kinds.steps.parsed_outputs import question_scope
from qareport.kinds.steps.registry import tool_names
from qareport.kinds.steps.step_kind import StepPair, StepsError, short


def step_verdicts(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    actual_steps: Sequence[Mapping[str, Any]],
    outcome: StepsOutcome,
) -> tuple[StepVerdict, ...]:
    """A verdict for every reference step the rules look at: the last group under 5.x, every group
    under 6.x (see the module docstring). Empty when the outcome is an error."""
    if outcome.error is not None or not reference_groups:
        return ()
    with question_scope():  # each output parsed once for all the pairs compared again
        return _verdicts(reference_groups, actual_steps, outcome)


def _verdicts(reference_groups: Sequence[Sequence[Mapping[str, Any]]], actual_steps: Sequence[Mapping[str, Any]],
              outcome: StepsOutcome) -> tuple[StepVerdict, ...]:
    count = len(reference_groups)
    by_place = {(_group_index(match, count), match.reference_index): match for match in outcome.matches}
    numbers = range(count) if outcome.semantics == 6 else [count - 1]
    verdicts = []
    for group_index in numbers:
        group = reference_groups[group_index]
        upto, tried = len(actual_steps), True
        if outcome.semantics == 6:
            upto, tried = searched_calls(reference_groups, outcome.matches, group_index, len(actual_steps))
        used = {m.actual_index for m in outcome.matches if _group_index(m, count) == group_index}
        for reference_index, reference in enumerate(group):
            common: dict[str, Any] = {"group_number": group_index + 1, "groups": count,
                                      "reference_index": reference_index, "name": reference.get("name")}
            match = by_place.get((group_index, reference_index))
            if match is not None:
                verdicts.append(StepVerdict(**common, score=match.score, actual_id=match.actual_id,
                                            reason=_partial_reason(reference, actual_steps, match, group_index,
                                                                   count, outcome)))
            elif not tried:
                stopped = _first_incomplete_later_group(reference_groups, outcome.matches, group_index)
                verdicts.append(StepVerdict(**common, scored=False,
                                            reason=f"not scored: group {stopped} was not matched in full"))
            else:
                verdicts.append(StepVerdict(**common, reason=_miss_reason(
                    reference, reference_index, group_index, count, actual_steps, upto, used, outcome)))
    return tuple(verdicts)


def _group_index(match: StepMatch, count: int) -> int:
    return match.group_index % count


def _place(group_index: int, count: int, outcome: StepsOutcome) -> str:
    return "of the last group" if outcome.semantics == 5 else f"of group {group_index + 1}"


def _compare(reference: Mapping[str, Any], reference_index: int, actual_steps: Sequence[Mapping[str, Any]],
             actual_index: int, group_index: int, count: int, outcome: StepsOutcome) -> tuple[float, str | None]:
    pair = StepPair(reference, actual_steps[actual_index], reference_index, actual_index,
                    _place(group_index, count, outcome), outcome.semantics)
    try:
        comparison = compare_pair(pair, explain=True)
    except StepsError as error:
        return 0.0, short(str(error), 120)
    return comparison.score, comparison.reason


def _partial_reason(reference: Mapping[str, Any], actual_steps: Sequence[Mapping[str, Any]], match: StepMatch,
                    group_index: int, count: int, outcome: StepsOutcome) -> str | None:
    if match.score >= 1.0:
        return None
    return _compare(reference, match.reference_index, actual_steps, match.actual_index, group_index, count,
                    outcome)[1]


def _miss_reason(reference: Mapping[str, Any], reference_index: int, group_index: int, count: int,
                 actual_steps: Sequence[Mapping[str, Any]], upto: int, used: set[int],
                 outcome: StepsOutcome) -> str:
    names = tool_names(reference, semantics=outcome.semantics)
    calls = [i for i, step in enumerate(actual_steps[:upto]) if isinstance(step, Mapping) and step.get("name") in names]
    if not calls:
        later = [i for i in range(upto, len(actual_steps)) if actual_steps[i].get("name") in names]
        if later and group_index + 1 < count:
            return f"called only after the steps of group {group_index + 2}"
        return "not called"
    successes = [i for i in calls if actual_steps[i].get("status") == "success"]
    if not successes:
        error = actual_steps[calls[-1]].get("error")
        return f"failed: {short(error, 60)}" if error else "failed"
    free = [i for i in successes if i not in used]
    if not free:
        return "called, but each call matched another reference step"
    score, reason = _compare(reference, reference_index, actual_steps, free[-1], group_index, count, outcome)
    if reason:
        return reason
    return "returned something else" if score == 0.0 else f"scored {score:.2f}"


def _first_incomplete_later_group(groups: Sequence[Sequence[Any]], matches: Sequence[StepMatch],
                                  group_index: int) -> int:
    for later in range(len(groups) - 1, group_index, -1):
        found = [m for m in matches if m.group_index == later]
        if len(found) < len(groups[later]):
            return later + 1
    return group_index + 2


def with_verdicts(qa: dict[str, Any], outcome: StepsOutcome) -> StepsOutcome:
    """`outcome` keeping the verdicts of its reference steps (`qa` is the turn's result dict).

    They are worked out once, as the turn is evaluated: the case's reason, the facts a later run
    compares and the details cell all read them, and the question's outputs are still parsed then
    (`parsed_outputs`); worked out on demand they cost each reader another comparison."""
    verdicts = verdicts_of(qa, outcome)
    return outcome if verdicts is None else replace(outcome, verdicts=verdicts)


def verdicts_of(qa: dict[str, Any], outcome: StepsOutcome) -> tuple[StepVerdict, ...] | None:
    groups = qa.get("reference_steps")
    if not isinstance(groups, list) or not all(isinstance(group, list) for group in groups):
        return None
    actual = qa.get("actual_steps")
    return step_verdicts(groups, actual if isinstance(actual, list) else [], outcome)
