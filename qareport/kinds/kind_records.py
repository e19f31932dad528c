"""The records of the kind protocol: a kind's metrics, Overview columns, Statistics tables, Details
rows and facts, what a turn's evaluation receives and gives, and the evaluation several kinds share.
A kind's author imports them from `qareport.kinds`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from qareport.evaluation_options import EvaluationOptions
from qareport.records import CaseResult, Problem, Response, TestCase, Turn, TurnOutput

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
class OutputText:
    """How a kind's output of a turn reads beside last run's in the Compare sheet: its key in a
    stored run's outputs of a turn (never renamed: last week's run is read back by it), its label,
    and its text of a turn's output (None: the turn has no output of the kind)."""

    key: str
    label: str
    text: Callable[[TurnOutput], str | None]


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
    judge: bool = False
    """A judge's column: shown when the run has a judge, or when the baseline's Overview had it (an
    empty column then, so the column letters stay from week to week)."""

    @property
    def where(self) -> ColumnPlace:
        """The column's place: as given, else text for wrapped columns, else number."""
        if self.place is not None:
            return self.place
        return "text" if self.wrap else "number"


@dataclass(frozen=True, slots=True)
class Chart:
    """Horizontal score bars drawn from a `Table`: one bar per row (its first cell names it) for each
    of `series` (1-based columns of the table), below the Statistics sheet's tables."""

    title: str
    category_title: str  # what a row is ("tag", "template")
    series: tuple[int, ...]
    totals: int = 0  # the table's last rows that are totals, not categories (left out of the chart)


@dataclass(frozen=True, slots=True)
class Table:
    """A table a kind adds to the Statistics sheet: a title, a header row and value rows, with the
    note under its title and the chart drawn from it, if any. The sheet lays it out as it is."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    formats: tuple[CellFormat | None, ...] = ()
    note: str | None = None
    chart: Chart | None = None
    row_formats: tuple[CellFormat | None, ...] = ()
    """Per row, a format for its number columns instead of the columns' own (a table whose rows are
    metrics of different units: tokens, seconds, dollars); None or absent: the columns' formats."""
    leading: bool = False
    """A table of the kind's suite figures (the means of its metrics): every kind's leading tables come
    first on the Statistics sheet, in kind order, then every kind's other tables."""


@dataclass(frozen=True, slots=True)
class SuiteOptions:
    """What a run's suite figures are computed with (`Kind.suite_figures`)."""

    steps_semantics: int | None = None  # graphrag-eval's rules (5 or 6) for its aggregates; None: the default
    custom_metrics: tuple[str, ...] = ()  # the custom LLM metrics' output keys, aggregated like the others
    # the run's kinds' labels (`RunKinds.metric_label`); None: the catalogue's
    metric_label: Callable[[str], str] | None = None


class SuiteFigures:
    """A kind's figures over a run, computed once (`Kind.suite_figures`), or those of an evaluation
    several kinds share (`SharedEvaluation.suite_figures`): what the Statistics sheet, the results
    file and the console summary read of it. A kind's own subclass keeps its figures typed."""

    name: str = ""  # the kind's (or shared evaluation's) name: its section is `kinds.<name>` of the results file

    def tables(self) -> tuple[Table, ...]:
        """Its tables on the Statistics sheet, in order."""
        return ()

    def results_section(self) -> Mapping[str, Any] | None:
        """Its section of the results file, JSON-ready, under `kinds.<name>` (None: none)."""
        return None

    def results_entries(self) -> Mapping[str, Any]:
        """Entries at the results file's top level: the built-in kinds' historic places, kept for
        graphrag-eval's users (`results`, `aggregates`, `data_query_metrics`)."""
        return {}

    def console_notes(self, status_counts: Mapping[str, int]) -> list[str]:
        """What the console summary line adds after the digest's figures (none by default)."""
        return []


@dataclass(frozen=True, slots=True)
class KindFigures(SuiteFigures):
    """A kind's figures given as its `statistics_tables` and `results_section` (the protocol's defaults)."""

    name: str
    kind_tables: tuple[Table, ...] = ()
    section: Mapping[str, Any] | None = None

    def tables(self) -> tuple[Table, ...]:
        return self.kind_tables

    def results_section(self) -> Mapping[str, Any] | None:
        return self.section


@dataclass(frozen=True, slots=True)
class TurnInput:
    """What a kind needs to score one turn: its part of the target and of the system's output, and,
    for what a kind needs beyond them, the whole turn, the response and the run's options."""

    case: TestCase
    turn_number: int
    target: object
    output: object  # None when the system produced nothing of this kind for the turn
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

    def suite_figures(self, results: Sequence[CaseResult], options: SuiteOptions) -> SuiteFigures | None:
        """Its figures over the run (asked once, at the first of its kinds): None, none."""
        return None

    def evaluate_case(self, case: TestCase, response: Response | None,
                      options: EvaluationOptions) -> tuple[CaseResult, list[Problem]] | None:
        """A whole case that this evaluation scores as one (a question of a graphrag-eval Q&A
        dataset, as graphrag-eval evaluates it); None, the default: the case is scored turn by turn."""
        return None
