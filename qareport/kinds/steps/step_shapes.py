"""The shapes of the steps the matching reads, checked as it reaches them: the reference groups
(a non-empty list of non-empty groups of named steps), the actual steps (named, with a status),
the successful calls and the failed ones. Pure. Each fault raises a `StepsError` (a
`ReferenceStepsError` for the reference's) whose message names the step and says what to fix;
the common shapes are accepted in one pass, without a message made for each step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from qareport.describing import describe_value
from qareport.evaluation_options import Semantics
from qareport.kinds.steps.step_kind import ReferenceStepsError, StepsError, actual_label, reference_label

RETRIEVAL = "retrieval"
SIX_ONLY_STEPS = ("retrieve_data_points", "retrieve_time_series", "iri_discovery")
"""Reference steps only graphrag-eval 6.x's rules score (5.x has no comparison for them)."""


@dataclass(frozen=True, slots=True)
class FailedCall:
    """An actual step whose status is `error`."""

    index: int  # 0-based, within the actual steps
    id: Any
    name: Any
    error: str | None



def failed_calls(actual_steps: Any) -> tuple[FailedCall, ...]:
    if not is_list(actual_steps):
        return ()
    for step in actual_steps:  # most responses have no failed call: found without making a list
        if type(step) is not dict or step.get("status") == "error":
            break
    else:
        return ()
    return tuple([
        FailedCall(index=index, id=step.get("id"), name=step.get("name"), error=text_or_none(step.get("error")))
        for index, step in enumerate(actual_steps)
        if (type(step) is dict or isinstance(step, Mapping)) and step.get("status") == "error"
    ])


def failed_retrieval_notes(actual_steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """graphrag-eval 5.2 reads the output of every `retrieval` call, and stops on one without."""
    return [
        f"{actual_label(index, step)} is a retrieval call without output (status {step.get('status')!r}), "
        "on which graphrag-eval 5.2 stops; it is left out here"
        for index, step in enumerate(actual_steps)
        if step.get("name") == RETRIEVAL and "output" not in step
    ]


def text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def is_list(value: Any) -> bool:
    if type(value) is list:  # the common case, without the slower abstract-class check
        return True
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def groups_list(reference_groups: Any) -> Sequence[Any]:
    if not is_list(reference_groups):
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


def checked_group(group: Any, what: str, in_group: str) -> Sequence[Mapping[str, Any]]:
    if not is_list(group):
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
            require_hashable(step["name"], f"the 'name' of reference step {index + 1} {in_group}",
                              ReferenceStepsError)
    return cast(Sequence[Mapping[str, Any]], group)


def last_group(reference_groups: Any) -> Sequence[Mapping[str, Any]]:
    groups = groups_list(reference_groups)
    return checked_group(groups[-1], "the last group", "of the last group")


SIX_RULES_ADVICE = ("run with --steps-semantics 6 (steps_semantics: 6 in qareport.yaml; in Python, "
                    "qareport.graphrag_eval_6)")


def refuse_six_only_steps(group: Sequence[Mapping[str, Any]]) -> None:
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
    if semantics != 5 or not is_list(reference_groups) or not reference_groups or not is_list(reference_groups[-1]):
        return None
    named = [(index, step) for index, step in enumerate(reference_groups[-1])
             if isinstance(step, Mapping) and step.get("name") in SIX_ONLY_STEPS and step.get("output")]
    if not named:
        return None
    steps = ", ".join(reference_label(index, step) for index, step in named)
    return (f"{steps} {'is a step' if len(named) == 1 else 'are steps'} only graphrag-eval 6.x's rules compare "
            f"as such (5.x compares outputs of calls of the same name, as text); {SIX_RULES_ADVICE}")


def all_groups(reference_groups: Any) -> list[Sequence[Mapping[str, Any]]]:
    groups = groups_list(reference_groups)
    if plain_groups(groups):  # the common groups, without a message made for each
        plain: list[Sequence[Mapping[str, Any]]] = groups if type(groups) is list else list(groups)
        return plain
    return [checked_group(group, f"group {number}", f"of group {number}")
            for number, group in enumerate(groups, start=1)]


def plain_groups(groups: Sequence[Any]) -> bool:
    """Every group a non-empty list of dicts, each with a text 'name': what `checked_group` accepts
    as it is. (Loops rather than nested generators, which cost a call per group and per step.)"""
    for group in groups:
        if type(group) is not list or not group:
            return False
        for step in group:
            if type(step) is not dict or type(step.get("name")) is not str:
                return False
    return True


def check_actual_steps(actual_steps: Any) -> None:
    """Every actual step is an object with a name and a status (graphrag-eval reads both of every
    step, at the latest in its aggregates)."""
    if not is_list(actual_steps):
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
            require_hashable(step["name"], f"the 'name' of actual step {index + 1}")


def successful_calls(actual_steps: Any) -> list[int]:
    """`check_actual_steps`, and the indices of the successful actual steps in call order: the
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
    check_actual_steps(actual_steps)
    return [index for index, step in enumerate(actual_steps) if step["status"] == "success"]


_NO_STATUS = object()


def candidates_by_name(
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


def require_hashable(value: Any, what: str, error: type[StepsError] = StepsError) -> Any:
    try:
        hash(value)
    except TypeError:
        raise error(f"{what} must be a string (got {describe_value(value)}).") from None
    return value
