"""What a judge's reply must be: one JSON object of a known shape, with consistent numbers.

Each `check_*` function takes the reply's text and returns the parsed values, or raises
JudgeOutputError saying what is wrong (the judge gets that message when it is asked once more).
`SCHEMAS` holds the matching `response_format` of each metric for servers that take JSON schemas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qareport.errors import JudgeOutputError


def claim_count_problem(reference: int, actual: int, matching: int) -> str | None:
    """Why three claim counts cannot all be true at once, or None when they can.

    graphrag-eval's checks: at least one claim on each side, and the matching claims are no more
    than the claims on either side.
    """
    if reference < 1:
        return f"the reference answer must have at least 1 claim (got {reference})"
    if actual < 1:
        return f"the actual answer must have at least 1 claim (got {actual})"
    if matching < 0:
        return f"matching claims cannot be negative (got {matching})"
    if matching > reference:
        return f"matching claims ({matching}) exceed the reference answer's claims ({reference})"
    if matching > actual:
        return f"matching claims ({matching}) exceed the actual answer's claims ({actual})"
    return None


def preview(content: str | None, limit: int = 80) -> str:
    if content is None:
        return "nothing"
    text = " ".join(content.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def _json_object(content: str | None) -> dict[str, Any]:
    if content is None or not content.strip():
        raise JudgeOutputError("the reply is empty", content)
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except ValueError:
        raise JudgeOutputError(f"the reply is not JSON (got {preview(content)})", content) from None
    if not isinstance(value, dict):
        raise JudgeOutputError(f"the reply is not a JSON object (got {preview(content)})", content)
    return value


def _count(value: Any, name: str, content: str | None) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise JudgeOutputError(f"'{name}' must be an integer (got {value!r})", content)
    return value


def _flag(value: Any, name: str, content: str | None) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise JudgeOutputError(f"'{name}' must be true or false (got {value!r})", content)


def _string(value: Any, name: str, content: str | None) -> str:
    if not isinstance(value, str):
        raise JudgeOutputError(f"'{name}' must be a string (got {value!r})", content)
    return value.strip()


def _items(obj: Mapping[str, Any], name: str, content: str | None) -> list[Mapping[str, Any]]:
    value = obj.get(name)
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise JudgeOutputError(f"'{name}' must be a list of objects (got {preview(json.dumps(value))})", content)
    return value


@dataclass(frozen=True, slots=True)
class ClaimCounts:
    reference: int
    actual: int
    matching: int
    reason: str


def check_answer_correctness(content: str | None) -> ClaimCounts:
    obj = _json_object(content)
    missing = [k for k in ("reference_claims_count", "actual_claims_count", "matching_claims_count")
               if k not in obj]
    if missing:
        raise JudgeOutputError(f"the reply lacks {', '.join(repr(m) for m in missing)}", content)
    reference = _count(obj["reference_claims_count"], "reference_claims_count", content)
    actual = _count(obj["actual_claims_count"], "actual_claims_count", content)
    matching = _count(obj["matching_claims_count"], "matching_claims_count", content)
    problem = claim_count_problem(reference, actual, matching)
    if problem:
        raise JudgeOutputError(f"contradicting claim counts: {problem}", content)
    reason = _string(obj.get("reason", ""), "reason", content)
    return ClaimCounts(reference, actual, matching, reason)


def check_generated_questions(content: str | None, *, count: int) -> list[tuple[str, bool]]:
    obj = _json_object(content)
    questions = []
    for item in _items(obj, "questions", content):
        question = _string(item.get("question", ""), "question", content)
        if question:
            questions.append((question, _flag(item.get("noncommittal"), "noncommittal", content)))
    if not questions:
        raise JudgeOutputError("the reply has no question", content)
    return questions[:count]


def check_statements(content: str | None) -> list[tuple[str, str, bool]]:
    obj = _json_object(content)
    statements = []
    for item in _items(obj, "statements", content):
        statement = _string(item.get("statement", ""), "statement", content)
        reason = _string(item.get("reason", ""), "reason", content)
        statements.append((statement, reason, _flag(item.get("attributed"), "attributed", content)))
    if not statements:
        raise JudgeOutputError("the reply has no statement of the reference answer", content)
    return statements


def check_verdicts(content: str | None, *, contexts: int) -> list[tuple[str, bool]]:
    obj = _json_object(content)
    items = _items(obj, "verdicts", content)
    if len(items) != contexts:
        raise JudgeOutputError(f"expected {contexts} verdicts, one per context (got {len(items)})", content)
    numbers = []
    for position, item in enumerate(items, start=1):
        number = item.get("context", position)
        number = _count(number, "context", content)
        numbers.append(number)
    if sorted(numbers) != list(range(1, contexts + 1)):
        raise JudgeOutputError(f"the verdicts must number the contexts 1 to {contexts} (got {numbers})", content)
    verdicts: list[tuple[str, bool] | None] = [None] * contexts
    for number, item in zip(numbers, items):
        verdicts[number - 1] = (
            _string(item.get("reason", ""), "reason", content),
            _flag(item.get("useful"), "useful", content),
        )
    return [v for v in verdicts if v is not None]


def _schema(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "strict": True,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


SCHEMAS = {
    "answer_correctness": _schema("answer_correctness", {
        "reason": {"type": "string"},
        "reference_claims_count": {"type": "integer"},
        "actual_claims_count": {"type": "integer"},
        "matching_claims_count": {"type": "integer"},
    }),
    "answer_relevance": _schema("answer_relevance", {
        "questions": {"type": "array", "items": _object({
            "question": {"type": "string"}, "noncommittal": {"type": "boolean"}})},
    }),
    "retrieval_answer_recall": _schema("retrieval_answer_recall", {
        "statements": {"type": "array", "items": _object({
            "statement": {"type": "string"}, "reason": {"type": "string"},
            "attributed": {"type": "boolean"}})},
    }),
    "retrieval_answer_precision": _schema("retrieval_answer_precision", {
        "verdicts": {"type": "array", "items": _object({
            "context": {"type": "integer"}, "reason": {"type": "string"},
            "useful": {"type": "boolean"}})},
    }),
}
SCHEMAS["retrieval_context_recall"] = _schema("retrieval_context_recall",
                                              SCHEMAS["retrieval_answer_recall"]["json_schema"]["schema"]["properties"])
SCHEMAS["retrieval_context_precision"] = _schema(
    "retrieval_context_precision", SCHEMAS["retrieval_answer_precision"]["json_schema"]["schema"]["properties"])
