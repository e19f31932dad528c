"""What scoring one question's steps comes to: each match, each reference step's verdict, and the
outcome that holds them. Records only: `matching` makes the matches and the outcome, `verdicts`
explains them afterwards; this module imports neither, so the data flows one way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from qareport.evaluation_options import DEFAULT_SEMANTICS, Semantics
from qareport.kinds.steps.step_shapes import FailedCall


class StepMatch(NamedTuple):
    """A reference step and the actual step that reproduced its output (a named tuple, made
    several times faster than a frozen dataclass)."""

    reference_index: int  # 0-based, within its group
    actual_index: int  # 0-based, within the actual steps
    actual_id: Any
    score: float  # in (0, 1]
    group_index: int = -1  # the group within reference_steps, as Python indexes it (-1: the last)


VERB_STARTS = ("not called", "failed", "called", "returned", "answered", "result", "recall", "not scored")
"""Reasons that read on after a step's name ("sparql_query not called"); others follow a colon
("iri_discovery: IRI not found in any autocomplete_search binding")."""


@dataclass(frozen=True, slots=True)
class StepVerdict:
    """One reference step: its match (call id and score) or why it has none."""

    group_number: int  # 1-based, within reference_steps
    groups: int  # how many groups reference_steps has
    reference_index: int  # 0-based, within its group
    name: Any
    score: float | None = None  # the match score; None without a match
    actual_id: Any = None
    reason: str | None = None  # why it lost points (no match, or a score below 1)
    scored: bool = True  # 6.x: False when the matching stopped at a later group

    @property
    def lost_points(self) -> bool:
        return self.score is None or self.score < 1.0

    def describe(self) -> str:
        """"sparql_query not called", "retrieve_data_points: granularity 2h, expected 1h"."""
        if self.reason is None:
            return f"{self.name} scored {self.score:.2f}" if self.score is not None else f"{self.name} not matched"
        joiner = " " if self.reason.startswith(VERB_STARTS) else ": "
        return f"{self.name}{joiner}{self.reason}"


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
