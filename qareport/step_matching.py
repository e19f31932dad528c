"""Steps score: which actual tool calls reproduce the reference's last group of steps. Pure.

The rules are graphrag-eval 5.2's (`get_steps_matches`, `evaluate_steps`,
`compare_steps_outputs`), so a steps score here equals graphrag-eval's on every input it accepts:

* Only the **last** group of `reference_steps` is scored.
* The candidates for a reference step are the actual steps with status `success` and the same
  `name`. Reference steps are taken in group order; each tries its candidates latest first and
  takes the first whose output scores above 0. An actual step matches at most one reference step.
* Outputs are compared according to the reference step's `output_media_type`:
  `application/sparql-results+json` by `sparql_tables.compare_sparql_results` on the step's
  `required_columns`, `ordered` (default false) and `ignore_duplicates` (default true), where an
  actual output that is not JSON (DESCRIBE / CONSTRUCT in Turtle) never matches;
  `application/json` by equality of the parsed JSON; otherwise, for two `retrieval` steps, by
  `recall_at_k` of the document ids, with `k` from the actual step's `args`; otherwise by exact
  equality.
* The score is the sum of the match scores over the number of steps in the last group.

Where graphrag-eval raises (a reference or matched actual step without what the comparison needs,
an empty last group, output that must be JSON and is not, ...), `evaluate_steps` returns an outcome
whose `error` names the question, the step and what to fix, and whose `score` is None. As in
graphrag-eval, a step is only checked when the rules reach it: a reference step without output
that no actual step could match does not stop the scoring.

One input graphrag-eval accepts is refused: `required_columns` given as a single string (which
graphrag-eval would read as a list of one-letter columns).
"""

from __future__ import annotations

import json
from functools import lru_cache
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from qareport.describing import describe_value
from qareport.retrieval_metrics import recall_at_k
from qareport.sparql_tables import SparqlResultError, compare_sparql_results

SPARQL_RESULTS_JSON = "application/sparql-results+json"
JSON = "application/json"
RETRIEVAL = "retrieval"


@dataclass(frozen=True, slots=True)
class StepMatch:
    """A reference step of the last group and the actual step that reproduced its output."""

    reference_index: int  # 0-based, within the last group
    actual_index: int  # 0-based, within the actual steps
    actual_id: Any
    score: float  # in (0, 1]


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
    error: str | None = None


class _StepsError(Exception):
    """A step lacks what scoring needs; the message says which and what to fix."""


def evaluate_steps(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    actual_steps: Sequence[Mapping[str, Any]],
    *,
    question_id: str | None = None,
) -> StepsOutcome:
    """Score `actual_steps` against the last group of `reference_groups` (see the module doc).

    Neither argument is modified. `question_id` only serves to name the question in `error`.
    """
    prefix = f"question {question_id!r}: " if question_id is not None else ""
    failed_calls = _failed_calls(actual_steps)
    try:
        last_group = _last_group(reference_groups)
        candidates = _candidates_by_name(last_group, actual_steps)
        matches = _match_last_group(last_group, actual_steps, candidates)
    except _StepsError as error:
        return StepsOutcome(score=None, failed_calls=failed_calls, error=prefix + str(error))
    total = 0.0  # added in match order from 0.0, as graphrag-eval does, for identical floats
    for match in matches:
        total += match.score
    return StepsOutcome(score=total / len(last_group), matches=matches, failed_calls=failed_calls)


def annotate_reference_steps(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    outcome: StepsOutcome,
    actual_steps: Sequence[Mapping[str, Any]],
) -> list[list[dict[str, Any]]]:
    """A deep copy of `reference_groups` in which each matched reference step of the last group
    has `matches` set to the id of its actual step, as graphrag-eval writes it."""
    annotated: list[list[dict[str, Any]]] = [[dict(step) for step in group] for group in reference_groups]
    for match in outcome.matches:
        actual_id = match.actual_id
        if 0 <= match.actual_index < len(actual_steps):
            actual_id = actual_steps[match.actual_index].get("id", actual_id)
        annotated[-1][match.reference_index]["matches"] = actual_id
    return annotated


# --- structure ---------------------------------------------------------------------------------


def _failed_calls(actual_steps: Any) -> tuple[FailedCall, ...]:
    if not _is_list(actual_steps):
        return ()
    return tuple(
        FailedCall(index=index, id=step.get("id"), name=step.get("name"), error=_text_or_none(step.get("error")))
        for index, step in enumerate(actual_steps)
        if isinstance(step, Mapping) and step.get("status") == "error"
    )


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _last_group(reference_groups: Any) -> Sequence[Mapping[str, Any]]:
    if not _is_list(reference_groups):
        raise _StepsError(
            f"'reference_steps' must be a list of groups of steps (got {describe_value(reference_groups)}); "
            "write it as a list of lists of steps."
        )
    if not reference_groups:
        raise _StepsError(
            "'reference_steps' is empty; give at least one group of steps, the last group being the "
            "steps whose outputs the answer comes from."
        )
    group = reference_groups[-1]
    if not _is_list(group):
        raise _StepsError(
            f"the last group of 'reference_steps' must be a list of steps (got {describe_value(group)}); "
            "write 'reference_steps' as a list of lists of steps."
        )
    if not group:
        raise _StepsError(
            "the last group of 'reference_steps' is empty; put in it the steps whose outputs the "
            "answer comes from."
        )
    for index, step in enumerate(group):
        if not isinstance(step, Mapping) or "name" not in step:
            raise _StepsError(
                f"reference step {index + 1} of the last group has no 'name'; name the tool the step calls."
            )
        _require_hashable(step["name"], f"the 'name' of reference step {index + 1} of the last group")
    return group


def _candidates_by_name(
    group: Sequence[Mapping[str, Any]], actual_steps: Any
) -> dict[Any, list[int]]:
    """Indices of the successful actual steps, in call order, by name (names of `group` only)."""
    if not _is_list(actual_steps):
        raise _StepsError(
            f"'actual_steps' must be a list of steps (got {describe_value(actual_steps)}); "
            "give the tool calls in the order they were made."
        )
    wanted = {step["name"] for step in group}
    candidates: dict[Any, list[int]] = {}
    for index, step in enumerate(actual_steps):
        if not isinstance(step, Mapping):
            raise _StepsError(
                f"actual step {index + 1} must be an object with 'name', 'status' and 'output' "
                f"(got {describe_value(step)})."
            )
        if "name" not in step:
            raise _StepsError(f"actual step {index + 1} has no 'name'; name the tool the step called.")
        if "status" not in step:
            raise _StepsError(
                f"{_actual_label(index, step)} has no 'status'; set it to 'success' or 'error'."
            )
        if step["status"] == "success":
            name = _require_hashable(step["name"], f"the 'name' of actual step {index + 1}")
            if name in wanted:
                candidates.setdefault(name, []).append(index)
    return candidates


def _match_last_group(
    group: Sequence[Mapping[str, Any]],
    actual_steps: Sequence[Mapping[str, Any]],
    candidates: dict[Any, list[int]],
) -> tuple[StepMatch, ...]:
    used: set[int] = set()
    matches = []
    for reference_index, reference_step in enumerate(group):
        for actual_index in reversed(candidates.get(reference_step["name"], [])):
            if actual_index in used:
                continue
            actual_step = actual_steps[actual_index]
            score = _compare_outputs(reference_step, actual_step, reference_index, actual_index)
            if score > 0.0:
                if "id" not in actual_step:
                    raise _StepsError(
                        f"{_actual_label(actual_index, actual_step)} matches "
                        f"{_reference_label(reference_index, reference_step)} but has no 'id'; "
                        "give every step the id of its tool call."
                    )
                matches.append(StepMatch(reference_index, actual_index, actual_step["id"], score))
                used.add(actual_index)
                break
    return tuple(matches)


# --- comparing outputs ---------------------------------------------------------------------------


def _compare_outputs(
    reference_step: Mapping[str, Any],
    actual_step: Mapping[str, Any],
    reference_index: int,
    actual_index: int,
) -> float:
    """Score in [0, 1] of one actual step's output against one reference step's output.

    The indices (0-based, in the last group and in the actual steps) only serve the error
    messages. Raises `_StepsError` where graphrag-eval would raise.
    """
    reference_label = _reference_label(reference_index, reference_step)
    actual_label = _actual_label(actual_index, actual_step)
    reference_output = reference_step.get("output")
    if not reference_output:
        raise _StepsError(f"{reference_label} has no 'output'; add the output the step must produce.")
    if "output" not in actual_step:
        raise _StepsError(
            f"{actual_label} has status 'success' but no 'output'; record the step's output, or set "
            "its status to 'error'."
        )
    actual_output = actual_step["output"]
    media_type = reference_step.get("output_media_type")

    if media_type == SPARQL_RESULTS_JSON:
        reference_result = _parse_reference_json(reference_output, reference_label, media_type)
        if "required_columns" not in reference_step:
            raise _StepsError(
                f"{reference_label} has no 'required_columns'; add the list of columns the answer "
                "must contain."
            )
        try:
            actual_result = _parsed_json(actual_output)
        except (TypeError, ValueError):
            actual_result = str(actual_output)  # not JSON (DESCRIBE / CONSTRUCT): never matches
        try:
            return compare_sparql_results(
                reference_result,
                actual_result,
                reference_step["required_columns"],
                ordered=reference_step.get("ordered", False),
                ignore_duplicates=reference_step.get("ignore_duplicates", True),
            )
        except SparqlResultError as error:
            raise _StepsError(f"{reference_label}: {error}; fix the reference step.") from None

    if media_type == JSON:
        reference_value = _parse_reference_json(reference_output, reference_label, media_type)
        try:
            actual_value = _parsed_json(actual_output)
        except (TypeError, ValueError) as error:
            raise _StepsError(
                f"{actual_label} has an 'output' that is not JSON ({error}), and {reference_label} "
                f"expects {media_type}; record the step's output as JSON text."
            ) from None
        return float(reference_value == actual_value)

    if reference_step["name"] == actual_step["name"] == RETRIEVAL:
        reference_ids = _context_ids(reference_output, reference_label, "reference")
        actual_ids = _context_ids(actual_output, actual_label, "actual")
        args = actual_step.get("args")
        if not isinstance(args, Mapping) or "k" not in args:
            raise _StepsError(
                f"{actual_label} has no 'k' in its 'args'; record how many documents the retrieval "
                "asked for."
            )
        try:
            return recall_at_k(reference_ids, actual_ids, args["k"])
        except TypeError:
            raise _StepsError(
                f"{actual_label} has 'k' {args['k']!r} in its 'args', or document ids that are not "
                "strings or numbers; 'k' must be an integer."
            ) from None

    return float(reference_output == actual_output)


def _parsed_json(output: Any) -> Any:
    """`json.loads`, once per output text: a reference step is compared with every call of the
    question, and a call with every reference step. The value is shared, so it is only read."""
    if isinstance(output, str):
        return _loads_text(output)
    return json.loads(output)


@lru_cache(maxsize=256)
def _loads_text(text: str) -> Any:
    return json.loads(text)


def _parse_reference_json(output: Any, label: str, media_type: str) -> Any:
    try:
        return _parsed_json(output)
    except (TypeError, ValueError) as error:
        raise _StepsError(
            f"{label} has an 'output' that is not JSON ({error}), but its output_media_type is "
            f"{media_type}; give the output as JSON text."
        ) from None


def _context_ids(output: Any, label: str, side: str) -> list[Any]:
    """The `id` of each retrieved document of a retrieval step's JSON output."""
    try:
        documents = json.loads(output)
    except (TypeError, ValueError) as error:
        raise _StepsError(
            f"{label} has an 'output' that is not JSON ({error}); a retrieval step's output must be a "
            "JSON list of documents, each with an 'id'."
        ) from None
    # graphrag-eval iterates whatever the JSON is (so an empty object or string gives no ids)
    if isinstance(documents, (list, dict, str)) and all(
        isinstance(document, dict) and "id" in document for document in documents
    ):
        return [cast(dict, document)["id"] for document in documents]
    raise _StepsError(
        f"{label} has an 'output' that is not a JSON list of documents, each with an 'id'; fix the "
        f"{side} retrieval output."
    )


# --- messages ----------------------------------------------------------------------------------


def _reference_label(index: int, step: Mapping[str, Any]) -> str:
    return f"reference step {index + 1} of the last group ({step.get('name')!r})"


def _actual_label(index: int, step: Mapping[str, Any]) -> str:
    details = [repr(step.get("name"))]
    if step.get("id") is not None:
        details.append(f"id {step['id']!r}")
    return f"actual step {index + 1} ({', '.join(details)})"


def _require_hashable(value: Any, what: str) -> Any:
    try:
        hash(value)
    except TypeError:
        raise _StepsError(f"{what} must be a string (got {describe_value(value)}).") from None
    return value
