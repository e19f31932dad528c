"""Custom LLM metrics (graphrag-eval 6.x's `custom_evaluations`): the judge reads what an evaluation
names (the question, the reference and actual answers, the reference and actual steps of one tool
with some of their keys), follows its instructions and gives back its named outputs, separated by
tabs, in order.

The keys of a result are the evaluation's outputs, each value read as JSON when it is JSON (so
`0.75` is a number and `true` a boolean) and kept as text otherwise; when the inputs are missing or
the reply cannot be used (after one corrective retry), every output is None and `<name>_error`
says why, as in graphrag-eval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from qareport.errors import JudgeOutputError, MetricFailed
from qareport.ge6_config import CustomEvaluation
from qareport.judge.checks import preview
from qareport.judge.client import JudgeClient
from qareport.judge.json_depth import load_json
from qareport.judge.prompts import Prompts
from qareport.judge.usage import Ledger
from qareport.judged_values import CUSTOM_PREFIX, CustomOutputs

PREFIX = CUSTOM_PREFIX

HEADERS = {
    "question": "Question",
    "reference_answer": "Reference answer",
    "reference_steps": "Reference steps",
    "actual_answer": "Actual answer",
    "actual_steps": "Actual steps",
}


def metric_name(evaluation: CustomEvaluation) -> str:
    return PREFIX + evaluation.name


def failed_outputs(evaluation: CustomEvaluation) -> CustomOutputs:
    """Every output None: what a result gets when the evaluation failed (beside its error)."""
    return CustomOutputs(dict.fromkeys(evaluation.output_keys))


def build_prompt(evaluation: CustomEvaluation, result: Mapping[str, Any]) -> str:
    """The evaluation's prompt for one result; MetricFailed when an input it names is missing."""
    values = {}
    for name in evaluation.inputs:
        values[name] = _input(evaluation, name, result)
    outputs = "\n".join(f"- {key}: {description}" for key, description in evaluation.outputs)
    inputs = "\n\n".join(f"# {HEADERS[name]}\n{values[name]}" for name in evaluation.inputs)
    return (
        f"{evaluation.instructions.strip()}\n\n"
        f"Reply with exactly these values, in this order, on one line, separated by tab characters:\n"
        f"{outputs}\n\n{inputs}"
    )


def _input(evaluation: CustomEvaluation, name: str, result: Mapping[str, Any]) -> str:
    key = "question_text" if name == "question" else name
    if key not in result:
        where = "the question" if name in ("question", "reference_answer", "reference_steps") else "the response"
        raise MetricFailed(f"{where} has no {name.replace('_', ' ')}, which custom evaluation "
                           f"'{evaluation.name}' reads")
    value = result[key]
    if name == "reference_steps":
        groups = value if isinstance(value, list) else []
        return "\n\n".join(_steps_text(evaluation, group) for group in groups)
    if name == "actual_steps":
        return _steps_text(evaluation, value)
    if name == "actual_answer":
        from qareport.question_scores import answer_text

        return answer_text(value) or ""
    return str(value)


def _steps_text(evaluation: CustomEvaluation, steps: Any) -> str:
    """The steps of the evaluation's tool, with the keys it names (JSON text parsed), as JSON."""
    shown = []
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, str):
            try:
                step = load_json(step)
            except ValueError:
                raise MetricFailed(f"a step is text that is not JSON, which custom evaluation "
                                   f"'{evaluation.name}' cannot read") from None
        if not isinstance(step, Mapping) or step.get("name") != evaluation.steps_name:
            continue
        picked = {}
        for key in evaluation.steps_keys:
            value = step.get(key)
            if isinstance(value, str):
                try:
                    value = load_json(value)
                except ValueError:
                    pass
            picked[key] = value
        shown.append(picked)
    return json.dumps(shown, indent=2, ensure_ascii=False, default=str)


def check_reply(content: str | None, evaluation: CustomEvaluation) -> dict[str, Any]:
    """The outputs of a reply: as many tab-separated values as the evaluation has outputs."""
    values = (content or "").split("\t")
    expected = len(evaluation.outputs)
    if len(values) != expected:
        raise JudgeOutputError(
            f"expected {expected} tab-separated values ({', '.join(evaluation.output_keys)}), got "
            f"{len(values)}: {preview(content)}", content)
    parsed = {}
    for key, value in zip(evaluation.output_keys, values):
        try:
            parsed[key] = load_json(value)
        except ValueError:  # not JSON, or nested too deep (`TooDeep`): kept as the text it is
            parsed[key] = value
        number = parsed[key]
        if isinstance(number, float) and not math.isfinite(number):  # JSON's reader takes NaN, Infinity
            raise JudgeOutputError(f"'{key}' is not a finite number (got {value.strip()!r})", content)
    return parsed


def judge_custom(client: JudgeClient, prompts: Prompts, ledger: Ledger, *, evaluation: CustomEvaluation,
                 result: Mapping[str, Any]) -> CustomOutputs:
    """The outputs of one evaluation for one result; raises MetricFailed."""
    prompt = build_prompt(evaluation, result)
    return CustomOutputs(client.ask_checked(metric_name(evaluation), prompt,
                                            lambda content: check_reply(content, evaluation),
                                            ledger, retry_prompt=prompts.retry_values))


def output_keys(evaluations: Sequence[CustomEvaluation]) -> tuple[str, ...]:
    return tuple(key for evaluation in evaluations for key in evaluation.output_keys)
