"""Kinds of target: what a test case can expect of a turn, one module per kind, registered here.

A kind is everything qareport knows about one sort of expectation (indicator selection, reference
steps, reference answer, ...): how to read its part of a target and of a response turn, how to score
a turn, which per-case metrics it yields and how they aggregate, how to say in one line why a case
lost points, and what it contributes to the Overview, Details and Statistics sheets. Everything
downstream (the case rows of the results file and of a stored run, the comparison with a baseline,
the headline metrics, the workbook's columns) asks the run's `RunKinds` instead of naming kinds.

Adding a kind means writing one module with a `Kind` subclass (and, if it renders a details cell, one
template) and calling `register(...)` at import time, which adds it to the catalogue: no other
module changes. A run's kinds (`for_run`: the catalogue's, plus the run's custom evaluations kind)
are made once per run and passed down; nothing changes the catalogue during a run. Everything such a module needs is
exported here (`__all__`).

Every metric a kind declares lies in [0, 1] and higher is better, so a drop is a regression.

Every kind, the built-in ones too, keeps its parsed parts in the records' `parts` mappings and its
scores in `TurnResult.scores`, under its name; the loader and the evaluator ask the kinds and name none.
Kinds that are scored together in one evaluation of a turn (graphrag-eval scores a question's answer
and steps in one result dict) share a `SharedEvaluation`.

The protocol's records are in `kind_records`, the `Kind` base class in `kind_base`,
the catalogue and `RunKinds` in `registry`; a kind's author imports them all from here.
"""

from __future__ import annotations

from qareport.errors import ShapeError
from qareport.evaluation_options import PassRules
from qareport.kinds.kind_base import Kind, mean_over_turns
from qareport.kinds.kind_records import (
    CellFormat,
    Chart,
    Column,
    ColumnPlace,
    DetailRow,
    Facts,
    KindFigures,
    Metric,
    OutputText,
    SharedEvaluation,
    SuiteFigures,
    SuiteOptions,
    Table,
    TurnInput,
    TurnScores,
)
from qareport.kinds.registry import AGGREGATE_LABELS as AGGREGATE_LABELS
from qareport.kinds.registry import GRADE_FACT as GRADE_FACT
from qareport.kinds.registry import NOT_GRADED as NOT_GRADED
from qareport.kinds.registry import GradeMove as GradeMove
from qareport.kinds.registry import (
    RunKinds,
    catalogue,
    for_run,
    metric_format,
    register,
    register_kind,
    unregister,
)
from qareport.kinds.registry import stored_grade as stored_grade
from qareport.records import CaseResult

# (the names imported `as` themselves are outside __all__ and imported from here by the package)
# what a kind's author needs, in one import: the protocol, the records it reads and returns, the
# error that a malformed part raises (it becomes a Problem with file and line), and the catalogue
__all__ = [
    "CaseResult",
    "CellFormat",
    "Chart",
    "Column",
    "ColumnPlace",
    "DetailRow",
    "Facts",
    "Kind",
    "KindFigures",
    "Metric",
    "OutputText",
    "PassRules",
    "RunKinds",
    "ShapeError",
    "SharedEvaluation",
    "SuiteFigures",
    "SuiteOptions",
    "Table",
    "TurnInput",
    "TurnScores",
    "catalogue",
    "for_run",
    "mean_over_turns",
    "metric_format",
    "register",
    "register_kind",
    "unregister",
]


def _register_builtins() -> None:
    from qareport.kinds.answers import ANSWERS
    from qareport.kinds.indicator_selection import INDICATOR_SELECTION
    from qareport.kinds.steps import STEPS

    for kind in (INDICATOR_SELECTION, STEPS, ANSWERS):
        register(kind)


_register_builtins()
