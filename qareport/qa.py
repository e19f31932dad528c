"""Reference Q&A datasets and their responses, in and out in graphrag-eval's dict formats.

`run_evaluation(reference_qas, chat_responses)` returns one result dict per question, with the keys
of graphrag-eval's "Evaluation Results", in its order:

    template_id, question_id, question_text, reference_answer?, reference_steps?, status, error?,
    actual_answer?, actual_steps?, steps_score? | steps_error?, input_tokens?, output_tokens?,
    total_tokens?, elapsed_sec?

`reference_steps` is a copy in which each reference step of the last group that an actual step
reproduced has `matches: <actual step id>`; `actual_steps` is a copy of the response's steps.
The LLM-judged keys (answer correctness and relevance, retrieval answer / context metrics) are
added by the judge, if one is given.

Where graphrag-eval raises, a result says why instead:

* no response for a question: status `error`, error "no response for question <id>";
* steps that cannot be scored (see `step_matching`): status stays `success`, `steps_error` says
  which step is at fault and what to fix, and there is no `steps_score`;
* a response without token counts or elapsed time: those keys are left out.

An error-form response (one with an `error` key, as `{question_id, status: error, error}`) gives
status `error` and its error text, as in graphrag-eval. No input is modified (unless asked with
`write_matches`, see `run_evaluation`).

`semantics` chooses graphrag-eval's steps rules (see `kinds.steps.matching`): 5, the default, or 6,
under which every reference group is scored and an error response is scored too (on the steps it
carries, 0.0 without any), as is a response without `actual_steps` (0.0). A question whose steps
graphrag-eval would stop on, but which qareport scores, gets `steps_note`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from qareport.evaluation_options import DEFAULT_SEMANTICS, Semantics
from qareport.kinds.steps import matching
from qareport.kinds.steps.matching import (
    StepsScore,
    annotate_reference_steps,
    score_steps,
    steps_error,
)
from qareport.kinds.steps.outcome import StepsOutcome
from qareport.question_scores import FIELD_ORDER
from qareport.records import (
    USAGE_FIELDS,  # copied from a successful response when present
)

RESPONSE_ID_KEYS = ("question_id", "id", "test_case_id")
"""Keys that may name the question of a response record, in order of preference."""

QA_RESULT_KEYS = FIELD_ORDER
"""Every key a result may have, in graphrag-eval's order (`steps_error`, `steps_note` are qareport's):
the fields of `QuestionScores`, where the order is written once."""

Judge = Callable[[list[dict[str, Any]]], None]


def run_evaluation(
    reference_qas: list[dict[str, Any]],
    chat_responses: Mapping[str, dict[str, Any]] | list[dict[str, Any]],
    *,
    judge: Judge | None = None,
    semantics: Semantics = DEFAULT_SEMANTICS,
    write_matches: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate every question of every template, in order; one result dict per question.

    `chat_responses` maps question ids to response records (as graphrag-eval takes them), or is a
    list of records that name their question by `question_id` (or `id`, `test_case_id`). `judge`,
    if given, is called once with the list of results and adds the LLM-judged metrics in place.
    `semantics`: graphrag-eval's steps rules, 5 or 6. `write_matches`: also set `matches` in the
    caller's own reference steps, as graphrag-eval does (it writes into its input); by default the
    input is left as it was and only the results' copies carry `matches`.
    Raises ValueError when the dataset or the responses are not shaped as graphrag-eval expects.
    """
    responses = index_responses(chat_responses)
    results = []
    for template_number, template in enumerate(_as_list(reference_qas, "the reference Q&A dataset"), start=1):
        if (type(template) is not dict and not isinstance(template, Mapping)) or "template_id" not in template:
            raise ValueError(
                f"template {template_number} of the reference Q&A dataset has no 'template_id'; "
                "each template is {template_id, questions}."
            )
        template_id = template["template_id"]
        questions = _as_list(template.get("questions"), f"'questions' of template {template_id!r}")
        for question in questions:
            question_id = question.get("id") if type(question) is dict or isinstance(question, Mapping) else None
            result = _evaluate_question(
                template_id, question,
                responses.get(question_id) if type(question_id) is str or is_hashable(question_id) else None,
                semantics, keep_outcome=False,
            )[0]
            if write_matches:
                write_matches_into(question, result)
            results.append(result)
    if judge is not None:
        judge(results)
    return results


def write_matches_into(question: Any, result: Mapping[str, Any]) -> None:
    """Set `matches` in `question`'s own reference steps where the result's copies have it."""
    groups = question.get("reference_steps") if isinstance(question, Mapping) else None
    annotated = result.get("reference_steps")
    if not isinstance(groups, list) or not isinstance(annotated, list):
        return
    for group, annotated_group in zip(groups, annotated):
        if isinstance(group, list) and isinstance(annotated_group, list):
            for step, annotated_step in zip(group, annotated_group):
                if isinstance(step, dict) and isinstance(annotated_step, dict) and "matches" in annotated_step:
                    step["matches"] = annotated_step["matches"]


def index_responses(chat_responses: Mapping[str, dict[str, Any]] | list[dict[str, Any]]) -> dict[Any, Any]:
    """Response records by question id, from a mapping (kept as is) or a list of records."""
    if isinstance(chat_responses, Mapping):
        return dict(chat_responses)
    indexed: dict[Any, Any] = {}
    for number, record in enumerate(_as_list(chat_responses, "the responses"), start=1):
        if type(record) is dict and "question_id" in record:  # the common record, without the search below
            key: str | None = "question_id"
        else:
            key = next((k for k in RESPONSE_ID_KEYS if isinstance(record, Mapping) and k in record), None)
        if key is None:
            raise ValueError(
                f"response {number} does not name its question; give it a 'question_id'."
            )
        question_id = record[key]
        if question_id in indexed:
            raise ValueError(
                f"response {number} is the second response for question {question_id!r}; keep one "
                "response per question."
            )
        indexed[question_id] = record
    return indexed


def evaluate_question(
    *, template_id: Any, question: dict[str, Any], response: dict[str, Any] | None,
    semantics: Semantics = DEFAULT_SEMANTICS,
) -> dict[str, Any]:
    """The graphrag-eval result dict of one question (see the module docstring)."""
    return _evaluate_question(template_id, question, response, semantics, keep_outcome=False)[0]


def evaluate_question_outcome(
    *, template_id: Any, question: dict[str, Any], response: dict[str, Any] | None,
    semantics: Semantics = DEFAULT_SEMANTICS,
) -> tuple[dict[str, Any], StepsOutcome | None]:
    """`evaluate_question`, and how its steps score came about (None when steps were not scored)."""
    return _evaluate_question(template_id, question, response, semantics, keep_outcome=True)


def _evaluate_question(template_id: Any, question: dict[str, Any], response: dict[str, Any] | None,
                       semantics: Semantics, *, keep_outcome: bool) -> tuple[dict[str, Any], StepsOutcome | None]:
    """The result dict, and with `keep_outcome` the `StepsOutcome` (a result dict alone needs no
    more than the steps' `StepsScore`, which costs less to make)."""
    if (type(question) is not dict and not isinstance(question, Mapping)) or "id" not in question \
            or "question_text" not in question:
        raise ValueError(
            f"a question of template {template_id!r} lacks 'id' or 'question_text' "
            f"(got {_short(question)}); each question is {{id, question_text, reference_answer?, "
            "reference_steps?}."
        )
    question_id = question["id"]

    if response is None or (type(response) is not dict and not isinstance(response, Mapping)):
        result: dict[str, Any] = {"template_id": template_id, "question_id": question_id}
        _add_reference(result, question, annotated_steps=None)
        result["status"] = "error"
        result["error"] = (
            f"no response for question {question_id}"
            if response is None
            else f"the response for question {question_id} is not an object (got {_short(response)})"
        )
        return result, None

    failed = "error" in response
    scored: StepsScore | None = None
    steps_outcome: StepsOutcome | None = None
    annotated_steps = None
    # 5.x scores the steps of a successful response that has some; 6.x scores every response
    if "reference_steps" in question and (semantics == 6 or ("actual_steps" in response and not failed)):
        actual_steps = response.get("actual_steps", [])
        scored = score_steps(question["reference_steps"], actual_steps, semantics=semantics)
        if keep_outcome:
            steps_outcome = matching.steps_outcome(scored, actual_steps, question_id=question_id, semantics=semantics)
        if scored.fault is None:
            annotated_steps = annotate_reference_steps(question["reference_steps"], scored, actual_steps)
    result = {"template_id": template_id, "question_id": response.get("question_id", question_id)}
    _add_reference(result, question, annotated_steps=annotated_steps)
    if failed:
        result["status"] = "error"
        result["error"] = response["error"]
        if semantics == 5:
            return result, None
    else:
        result["status"] = "success"
    if "actual_answer" in response:
        result["actual_answer"] = response["actual_answer"]
    if "actual_steps" in response:
        result["actual_steps"] = copy_steps(response["actual_steps"])
    if scored is not None:
        if scored.fault is None:
            result["steps_score"] = scored.score
            if scored.notes:
                result["steps_note"] = "; ".join(scored.notes)
        else:
            result["steps_error"] = steps_error(scored.fault, question_id)
    for key in USAGE_FIELDS:  # under 6.x an error response keeps them too, as 6.6 does
        if key in response:
            result[key] = response[key]
    return result, steps_outcome


def order_result_keys(result: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `result` with its keys in graphrag-eval's order (`QA_RESULT_KEYS`), other keys
    after them in their own order; for results a judge has added keys to."""
    known = {key: result[key] for key in QA_RESULT_KEYS if key in result}
    known.update((key, value) for key, value in result.items() if key not in known)
    return known


def copy_steps(value: Any) -> Any:
    """New lists and new step dicts, sharing the values inside the steps (outputs, args), which no
    part of qareport changes: the caller's input stays as it was, at a fraction of a deep copy's
    cost (deep copies of every step were a fifth of the evaluation time)."""
    if isinstance(value, list):
        return [item.copy() if type(item) is dict else copy_steps(item) for item in value]
    if isinstance(value, dict):
        return dict(value)
    return value


def _add_reference(result: dict[str, Any], question: Mapping[str, Any], *, annotated_steps: Any) -> None:
    result["question_text"] = question["question_text"]
    if "reference_answer" in question:
        result["reference_answer"] = question["reference_answer"]
    if "reference_steps" in question:
        result["reference_steps"] = (
            annotated_steps if annotated_steps is not None else copy_steps(question["reference_steps"])
        )


def _as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list (got {_short(value)}).")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def is_hashable(value: Any) -> bool:
    if type(value) is str:
        return True
    try:
        hash(value)
    except TypeError:
        return False
    return True
