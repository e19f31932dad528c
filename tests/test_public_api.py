"""The public API: what a user imports from `qareport`, and the types it needs to use it."""

from __future__ import annotations

import inspect
import typing
from importlib import resources
from pathlib import Path

import pytest

import qareport

# What a user needs, written down independently of the package: graphrag-eval 5.x's entry points,
# a run step by step, the whole run as the command line does it, a kind of their own, the errors.
NEEDED = {
    "run_evaluation", "compute_aggregates", "recall_at_k", "average_precision",
    "load_suite", "Suite", "Problem", "evaluate_suite", "EvaluationOptions", "Evaluation", "CaseResult",
    "Judgment",  # what `evaluate_suite`'s judge returns
    "summarize", "SuiteStatistics", "build_report", "Report", "RunInfo", "RunSnapshot", "Unloaded", "read_run",
    "read_reviews", "Review",
    "write_workbook", "WrittenWorkbook", "results_document", "write_results_file",
    "run_pipeline", "RunOptions", "RunOutcome",
    "Kind", "RunKinds", "register_kind",
    "QAReportError",
}
REPO = Path(__file__).resolve().parent.parent


def test_the_package_exports_what_a_user_needs_and_nothing_else():
    assert set(qareport.__all__) - {"__version__"} == NEEDED


def _qareport_types(annotation: object) -> typing.Iterator[type]:
    """The qareport classes named anywhere in an annotation (inside Sequence[...], X | None ...)."""
    if isinstance(annotation, type) and annotation.__module__.startswith("qareport"):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from _qareport_types(argument)


@pytest.mark.parametrize("name", sorted(n for n in NEEDED if inspect.isfunction(getattr(qareport, n))))
def test_every_type_an_exported_function_takes_or_returns_is_exported_too(name):
    function = getattr(qareport, name)
    # names a module imports only for type checking resolve to the exported ones
    exported = {n: getattr(qareport, n) for n in qareport.__all__ if isinstance(getattr(qareport, n), type)}
    hints = typing.get_type_hints(function, localns=exported)
    named = {kind.__name__ for hint in hints.values() for kind in _qareport_types(hint)}
    assert named <= set(qareport.__all__), f"{name} uses {sorted(named - set(qareport.__all__))}"


def test_the_package_says_it_is_typed():
    assert resources.files("qareport").joinpath("py.typed").is_file()




def test_qareport_kinds_exports_what_a_kind_author_needs_sorted_and_existing():
    from qareport import kinds

    # ruff's order (RUF022): constants, then classes, then functions, each alphabetically
    assert kinds.__all__ == sorted(kinds.__all__, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert all(hasattr(kinds, name) for name in kinds.__all__)
    needed = {"Column", "Metric", "Table", "TurnInput", "DetailRow", "ShapeError", "Kind", "CaseResult",
              "register", "register_kind", "unregister", "RunKinds", "catalogue", "for_run", "mean_over_turns"}
    assert needed <= set(kinds.__all__), needed - set(kinds.__all__)
    namespace: dict[str, object] = {}
    exec("from qareport.kinds import *", namespace)
    assert {name for name in namespace if not name.startswith("__")} == set(kinds.__all__)
