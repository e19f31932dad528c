"""A question's scores in the report model: graphrag-eval's per-question result, as a frozen record.

graphrag-eval scores a question (or a conversation turn) in one result dict: its ids and reference,
the status, the steps score and the answer metrics, and, once a judge has looked, the judge's
keys, among them the open set that graphrag-eval 6.x's custom LLM metrics write. The report
model keeps that result as a `QuestionScores` (`TurnResult.qa`): immutable, read through typed
attributes (`steps_score`, `answer_f1`, `actual_steps`, ...) and, for the open part, `value(key)`.

graphrag-eval's dict exists only at the library boundary: `as_graphrag_eval()` gives it (a new
dict each time, with the keys in the order they were written) for `compute_aggregates`, the
results file, the judge's library API and `run_evaluation`; `from_graphrag_eval` takes one back
(a judged copy). Changing a record means building a new one (`with_values`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

ANSWER_METRICS = ("answer_recall", "answer_precision", "answer_f1", "answer_relevance")
"""The answer metrics the judge writes (graphrag-eval's keys)."""


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """One question's (one turn's) graphrag-eval result, read-only. Build it with
    `from_graphrag_eval`; `as_graphrag_eval` gives the dict back, byte for byte."""

    _values: Mapping[str, Any]

    @classmethod
    def from_graphrag_eval(cls, result: Mapping[str, Any]) -> QuestionScores:
        """The record of a graphrag-eval result dict (copied: later changes to `result` do not reach it)."""
        return cls(MappingProxyType(dict(result)))

    def as_graphrag_eval(self) -> dict[str, Any]:
        """graphrag-eval's result dict of the question: a new dict, keys in their written order."""
        return dict(self._values)

    def with_values(self, **values: Any) -> QuestionScores:
        """A new record with `values` set (added after the others when new)."""
        return QuestionScores(MappingProxyType({**self._values, **values}))

    # --- the open part: any key graphrag-eval or the judge wrote ------------------------------

    def has(self, key: str) -> bool:
        """Whether the result has `key` (even with the value None)."""
        return key in self._values

    def value(self, key: str) -> Any:
        """The value under `key`, None when absent; for keys without an attribute (custom LLM
        metrics, `*_cost`, `*_repeats`, ...)."""
        return self._values.get(key)

    def number(self, key: str) -> float | None:
        """The value under `key` when it is a finite number (not a bool), else None."""
        return as_number(self._values.get(key))

    def items(self) -> Iterator[tuple[str, Any]]:
        """Every key and value, in written order."""
        return iter(self._values.items())

    # --- identity and status -----------------------------------------------------------------

    @property
    def template_id(self) -> Any:
        return self._values.get("template_id")

    @property
    def question_id(self) -> Any:
        return self._values.get("question_id")

    @property
    def question_text(self) -> Any:
        return self._values.get("question_text")

    @property
    def status(self) -> str | None:
        status = self._values.get("status")
        return None if status is None else str(status)

    @property
    def error(self) -> Any:
        return self._values.get("error")

    @property
    def attempt(self) -> int | None:
        """The attempt this result scores, when the case was answered several times."""
        attempt = self._values.get("attempt")
        return attempt if isinstance(attempt, int) else None

    # --- answers -------------------------------------------------------------------------------

    @property
    def reference_answer(self) -> Any:
        return self._values.get("reference_answer")

    @property
    def actual_answer(self) -> Any:
        return self._values.get("actual_answer")

    @property
    def answer_recall(self) -> float | None:
        return self.number("answer_recall")

    @property
    def answer_precision(self) -> float | None:
        return self.number("answer_precision")

    @property
    def answer_f1(self) -> float | None:
        return self.number("answer_f1")

    @property
    def answer_relevance(self) -> float | None:
        return self.number("answer_relevance")

    @property
    def answer_correctness_reason(self) -> Any:
        return self._values.get("answer_correctness_reason")

    @property
    def answer_eval_error(self) -> Any:
        return self._values.get("answer_eval_error")

    @property
    def answer_relevance_questions(self) -> tuple[Mapping[str, Any], ...]:
        """The questions the judge generated from the answer (each `{question, noncommittal}`)."""
        found = self._values.get("answer_relevance_questions") or ()
        return tuple(item for item in found if isinstance(item, Mapping))

    # --- steps ---------------------------------------------------------------------------------

    @property
    def reference_steps(self) -> list[Any]:
        """The reference step groups (each step with its `matches`), empty when there are none."""
        groups = self._values.get("reference_steps")
        return groups if isinstance(groups, list) else []

    @property
    def actual_steps(self) -> tuple[Mapping[str, Any], ...]:
        """The response's steps (with the judge's retrieval keys), empty when there are none."""
        steps = self._values.get("actual_steps") or ()
        return tuple(step for step in steps if isinstance(step, Mapping))

    @property
    def has_steps(self) -> bool:
        """Whether the result has reference or actual steps."""
        return "reference_steps" in self._values or "actual_steps" in self._values

    @property
    def steps_score(self) -> float | None:
        score = self._values.get("steps_score")
        return score if isinstance(score, (int, float)) and not isinstance(score, bool) else None

    @property
    def steps_error(self) -> Any:
        return self._values.get("steps_error")

    @property
    def steps_note(self) -> Any:
        return self._values.get("steps_note")


def as_number(value: Any) -> float | None:
    """`value` when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value
