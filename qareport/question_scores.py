"""A question's scores in the report model: graphrag-eval's per-question result, as a frozen record.

graphrag-eval scores a question (or a conversation turn) in one result dict: its ids and reference,
the status, the steps score and the answer metrics, and, once a judge has looked, the judge's
keys, among them the open set that graphrag-eval 6.x's custom LLM metrics write. The report
model keeps that result as a `QuestionScores` (`TurnResult.qa`): immutable, with a typed field
for each key graphrag-eval defines (`steps_score`, `answer_f1`, `actual_steps`, ...; None when the
result has no such key) and an explicit mapping for the open part (`extra`: the judge's costs and
repeats, custom LLM metrics, `attempt`), read with `value(key)`.

graphrag-eval's dict exists only at the library boundary: `as_graphrag_eval()` gives it (a new
dict each time, with the keys in the order they were written) for `compute_aggregates`, the
results file and the judge's library API; `from_graphrag_eval` takes one back (a judged copy).
The record remembers which keys the dict had and in which order (`keys`), so the dict it gives
back is the one it was built from, key for key (a key may be there with the value None). Changing
a record means building a new one (`with_values`; the judge's `Judgment`s by `with_judgments`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from qareport.judged_values import MetricJudgment, graphrag_eval_values, step_values

NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def answer_text(value: Any) -> str | None:
    """An answer as text, for a cell or a judge's prompt: a text as it is; a structured answer (the
    content parts published runs hold, `[{"type": "text", "text": ...}, ...]`) as its text parts
    joined by blank lines, or as JSON when it has no text part; a number or boolean as it reads.
    Never Python's repr. None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, Mapping)):
        parts = value if isinstance(value, list) else [value]
        texts = [part if isinstance(part, str) else part["text"] for part in parts
                 if isinstance(part, str) or (isinstance(part, Mapping) and isinstance(part.get("text"), str)
                                              and part.get("type", "text") == "text")]
        if texts:
            return "\n\n".join(texts)
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, bool):
        return json.dumps(value)
    return str(value)


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """One question's (one turn's) graphrag-eval result. Build it with `from_graphrag_eval`;
    `as_graphrag_eval` gives the dict back, key for key and in the same order."""

    keys: tuple[str, ...]
    """The result's keys, in the order they were written (which of the fields below it has)."""
    # graphrag-eval's keys, in its order (`qa.QA_RESULT_KEYS`)
    template_id: Any = None
    question_id: Any = None
    question_text: Any = None
    reference_answer: Any = None  # text, or structured (content parts)
    reference_steps: list[list[dict[str, Any]]] | None = None  # with each matched step's `matches`
    status: str | None = None
    error: Any = None  # why the question could not be evaluated (the response's error text)
    actual_answer: Any = None
    # the judge's answer metrics
    answer_relevance: float | None = None
    answer_relevance_cost: float | None = None
    answer_relevance_reason: str | None = None
    answer_relevance_error: str | None = None
    answer_eval_error: str | None = None
    answer_reference_claims_count: int | None = None
    answer_actual_claims_count: int | None = None
    answer_matching_claims_count: int | None = None
    answer_correctness_reason: str | None = None
    answer_recall: float | None = None
    answer_precision: float | None = None
    answer_f1: float | None = None
    # the steps and their score
    actual_steps: list[dict[str, Any]] | None = None  # with the judge's retrieval keys
    steps_score: float | None = None
    steps_error: str | None = None
    steps_note: str | None = None  # qareport's: a step graphrag-eval would stop on
    # what the response used
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    elapsed_sec: float | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: NO_EXTRA)
    """Every other key (the judge's costs, reasons and repeats, custom LLM metrics, `attempt`, ...)."""

    @classmethod
    def from_graphrag_eval(cls, result: Mapping[str, Any]) -> QuestionScores:
        """The record of a graphrag-eval result dict (later changes to `result` itself do not reach it)."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in result.items():
            (known if key in FIELD_KEYS else extra)[key] = value
        return cls(keys=tuple(result), extra=MappingProxyType(extra) if extra else NO_EXTRA, **known)

    def as_graphrag_eval(self) -> dict[str, Any]:
        """graphrag-eval's result dict of the question: a new dict, keys in their written order."""
        extra = self.extra
        return {key: extra[key] if key in extra else getattr(self, key) for key in self.keys}

    def with_values(self, **values: Any) -> QuestionScores:
        """A new record with `values` set (a new key after the others)."""
        known = {key: value for key, value in values.items() if key in FIELD_KEYS}
        extra = {key: value for key, value in values.items() if key not in FIELD_KEYS}
        keys = self.keys + tuple(key for key in values if key not in self.keys)
        return replace(self, keys=keys, extra=MappingProxyType({**self.extra, **extra}), **known)

    def with_judgments(self, judgments: Iterable[Judgment]) -> QuestionScores:
        """A new record with the judge's values (`judged_values.graphrag_eval_values` names their
        keys): those of the question set in the judgments' order, those of a step merged into a new
        copy of that step with its F1 keys; the keys then in graphrag-eval's order (`FIELD_ORDER`),
        the others after them in the order they were written, as graphrag-eval orders a judged result."""
        values: dict[str, Any] = {}
        steps: list[dict[str, Any]] | None = None
        for judgment in judgments:
            if judgment.step is None:
                for metric in judgment.metrics:
                    values.update(graphrag_eval_values(metric))
                continue
            if steps is None:
                steps = list(self.actual_steps or ())
            step = steps[judgment.step]
            steps[judgment.step] = {**step, **step_values(step, judgment.metrics)}
        if steps is not None:
            values["actual_steps"] = steps
        if not values:
            return self
        judged = self.with_values(**values)
        written = set(judged.keys)
        keys = (*(key for key in FIELD_ORDER if key in written),
                *(key for key in judged.keys if key not in FIELD_KEYS))
        return replace(judged, keys=keys)

    # --- any key, by name --------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """Whether the result has `key` (even with the value None)."""
        return key in self.keys

    def value(self, key: str) -> Any:
        """The value under `key`, None when absent; for keys named at run time (a judged metric's,
        a custom LLM metric's output)."""
        if key in self.extra:
            return self.extra[key]
        return getattr(self, key) if key in FIELD_KEYS else None

    def number(self, key: str) -> float | None:
        """The value under `key` when it is a finite number (not a bool), else None."""
        return as_number(self.value(key))

    def items(self) -> Iterator[tuple[str, Any]]:
        """Every key and value, in written order."""
        return iter(self.as_graphrag_eval().items())

    # --- derived -------------------------------------------------------------------------------

    @property
    def attempt(self) -> int | None:
        """The attempt this result scores, when the case was answered several times."""
        attempt = self.extra.get("attempt")
        return attempt if isinstance(attempt, int) else None

    @property
    def has_steps(self) -> bool:
        """Whether the result has reference or actual steps."""
        return "reference_steps" in self.keys or "actual_steps" in self.keys

    @property
    def answer_relevance_questions(self) -> tuple[Mapping[str, Any], ...]:
        """The questions the judge generated from the answer (each `{question, noncommittal}`)."""
        found = self.extra.get("answer_relevance_questions") or ()
        return tuple(item for item in found if isinstance(item, Mapping))


@dataclass(frozen=True, slots=True)
class Judgment:
    """What the judge concluded on a question (`step` None: one metric of it) or, for the retrieval
    metrics, on one of its actual steps (`step`: its index in `actual_steps`; every metric judged
    on that step): each metric's typed judgment (`judged_values.MetricJudgment`)."""

    step: int | None
    metrics: tuple[MetricJudgment, ...]


FIELD_ORDER = tuple(f.name for f in fields(QuestionScores) if f.name not in ("keys", "extra"))
"""The keys graphrag-eval defines, in its order (`qa.QA_RESULT_KEYS`), each a field of `QuestionScores`."""
FIELD_KEYS = frozenset(FIELD_ORDER)


def as_number(value: Any) -> float | None:
    """`value` when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value
