"""The records of the kind protocol: a kind's metrics, Overview columns, Statistics tables, Details
rows and facts, what a turn's evaluation receives and gives, and the evaluation several kinds share.
A kind's author imports them from `qareport.kinds`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from qareport.records import CaseResult, Problem, Response, TestCase, Turn, TurnOutput

if TYPE_CHECKING:
    from qareport.evaluation_options import EvaluationOptions



CellFormat = Literal["score", "integer", "seconds", "cost"]
ColumnPlace = Literal["score", "number", "text"]
"""Where an Overview column goes: `score` columns come first, right after the case's id, name and
status (the headline metrics); `number` columns after the reason (per-dimension and secondary
metrics); `text` columns last (details cells, answers: one click away, never the first screen)."""
Facts = Mapping[str, Sequence[str]]
"""What a kind remembers of a case so that a later run can say what changed: named lists of short
items ("found": ["COUNTRY MEX"], ...). Stored with the run (`runs.case_row`), compared by
`Kind.explain_change`."""
DetailRow = tuple[Any, ...]
"""A row of the Details sheet after the case's id and groups: (turn, dimension or aspect, verdict,
item id, item text, note[, score[, reason]]). `None` leaves a cell empty; a shorter row leaves the
last cells empty."""


@dataclass(frozen=True, slots=True)
class Metric:
    """A per-case metric: its key in results files and stored runs, and the label an analyst reads."""

    key: str
    label: str
    headline: bool = False  # one of the run's headline metrics (Summary, Trend, email, comparison)


@dataclass(frozen=True, slots=True)
class Column:
    """An Overview column: a header, how to get a case's value, and how to show it."""

    header: str
    value: Callable[[CaseResult], Any]
    width: float
    format: CellFormat | None = None
    wrap: bool = False
    score: bool = False  # gets the red-to-green colour scale
    place: ColumnPlace | None = None  # None: decided by `where`
    metric: str | None = None
    """The metric key the column shows: the Overview takes it from the case's row (computed once),
    and `value` is then only the way to compute it."""

    @property
    def where(self) -> ColumnPlace:
        """The column's place: as given, else text for wrapped columns, else number."""
        if self.place is not None:
            return self.place
        return "text" if self.wrap else "number"


@dataclass(frozen=True, slots=True)
class Table:
    """A table a kind adds to the Statistics sheet: a title, a header row and value rows."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    formats: tuple[CellFormat | None, ...] = ()


DEFAULT_ANSWER_PASS_F1 = 0.8


@dataclass(frozen=True, slots=True)
class PassRules:
    """The thresholds of the kinds' pass rules (`Kind.passes`) that a user may set."""

    answer_f1: float = DEFAULT_ANSWER_PASS_F1  # an answer passes at this answer F1 or above (--answer-pass-f1)


@dataclass(frozen=True, slots=True)
class TurnInput:
    """What a kind needs to score one turn: its part of the target and of the system's output, and,
    for what a kind needs beyond them, the whole turn, the response and the run's options."""

    case: TestCase
    turn_number: int
    target: Any
    output: Any  # None when the system produced nothing of this kind for the turn
    turn: Turn | None = None
    response: Response | None = None
    turn_output: TurnOutput | None = None  # None: the response has no output for this turn
    options: EvaluationOptions | None = None


@dataclass(frozen=True, slots=True)
class TurnScores:
    """What evaluating a turn gave: scores to keep in `TurnResult.scores` (by kind name, or a shared
    record's key), the problems it found, and whether they make the case invalid (not evaluated)."""

    scores: Mapping[str, Any]
    problems: tuple[Problem, ...] = ()
    invalid: bool = False


class SharedEvaluation:
    """One evaluation of a turn that scores several kinds together; the kinds name it as `shared`.

    It runs once per turn in which any of its kinds has a target or an output part."""

    def evaluate(self, turn: TurnInput) -> TurnScores:
        raise NotImplementedError

    def evaluate_question(self, case: TestCase, response: Response | None,
                          options: EvaluationOptions) -> tuple[CaseResult, list[Problem]]:
        """A question of a graphrag-eval Q&A dataset (a case of kind `qa`), whose kinds name this
        evaluation: the whole case, as graphrag-eval evaluates a question."""
        raise NotImplementedError(f"{type(self).__name__} does not evaluate Q&A questions")
