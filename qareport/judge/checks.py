"""What a judge's reply must be: one JSON object of a known shape, with consistent numbers.

Each `check_*` function takes the reply's text and returns the parsed values, or raises
JudgeOutputError saying what is wrong (the judge gets that message when it is asked once more).
`SCHEMAS` holds the matching `response_format` of each metric for servers that take JSON schemas.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.errors import JudgeOutputError, MetricFailed
from qareport.judge.json_depth import MAX_DEPTH, TooDeep, load_json


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
        value = load_json(text)
    except TooDeep:
        raise JudgeOutputError(f"the reply nests more than {MAX_DEPTH} levels deep", content) from None
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


def vector_problem(vector: Sequence[float]) -> str | None:
    """Why an embedding cannot be used (a component that is not finite, no length), or None."""
    if not all(math.isfinite(x) for x in vector):
        bad = next(x for x in vector if not math.isfinite(x))
        return f"a component is not a finite number ({bad!r})"
    if not any(vector):
        return "a vector is all zeros (it has no direction to compare)"
    return None


def check_embeddings(items: Sequence[Any], count: int) -> list[list[float]]:
    """The vectors of an embeddings reply for `count` inputs, in input order, as float32 values (as
    the API computes them, so a cached vector and a fresh one give the same score).

    The reply must hold `count` items whose `index` values are the integers 0 to count-1, each once
    and in that order (as the OpenAI API sends them: items out of order cannot be told from items
    labelled wrong), each vector of the same non-zero size, every component a finite number, and
    no vector all zeros. Raises MetricFailed saying what is wrong: the cases the reply covers fail
    (the runner asks again in smaller batches first), never get a wrong number.
    """
    if len(items) != count:
        raise MetricFailed(f"the reply has {len(items)} vectors for {count} inputs")
    indexes: list[int] = []
    for item in items:
        index = getattr(item, "index", None)
        if isinstance(index, bool) or not isinstance(index, int):
            raise MetricFailed(f"an index is not an integer (got {index!r})")
        indexes.append(index)
    if indexes != list(range(count)):
        shown = ", ".join(map(str, indexes[:8])) + (", ..." if count > 8 else "")
        if sorted(indexes) != list(range(count)):
            raise MetricFailed(f"the indexes must be 0 to {count - 1}, each once (got {shown})")
        raise MetricFailed(f"the vectors are not in the order of their indexes (got {shown})")
    vectors = []
    for index, item in zip(indexes, items):
        values = getattr(item, "embedding", None)
        if not isinstance(values, list) or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                for x in values):
            raise MetricFailed(f"vector {index} is not a list of numbers")
        vector = list(array("f", values))  # a value beyond float32's range becomes infinite: caught below
        problem = vector_problem(vector)
        if problem:
            raise MetricFailed(f"vector {index}: {problem}")
        vectors.append(vector)
    sizes = sorted({len(vector) for vector in vectors})
    if len(sizes) > 1 or (sizes and sizes[0] == 0):
        raise MetricFailed(f"the vectors have sizes {sizes}; one non-zero size is needed")
    return vectors


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
