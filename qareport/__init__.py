"""qareport: evaluate a question-answering or text-to-query system into an Excel workbook.

The library mirrors graphrag-eval 5.x's entry points, so its users move over by changing the
import: `run_evaluation(reference_qas, chat_responses)` and `compute_aggregates(results)`. A run
step by step: `load_suite` → `evaluate_suite` → `build_report` → `write_workbook` (and
`write_results_file(results_document(report), path)`); `run_pipeline(RunOptions(...))` does all of
it as `qareport run` does. `register_kind(MyKind())` adds a kind of target (`qareport.kinds`) to
the catalogue; the steps take a run's `RunKinds` (`kinds=`, by default the catalogue's), which
`run_pipeline` makes once per run.
Names are imported on first use, so `qareport --help` does not pay for pandas and openpyxl.
"""

from __future__ import annotations

import logging
import typing
from importlib import import_module

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)

# the library never writes to the terminal: its notes go to the "qareport" logger, which stays
# silent (no "last resort" output on stderr) unless the application configures logging
logging.getLogger("qareport").addHandler(logging.NullHandler())

_EXPORTS = {
    # graphrag-eval 5.x's entry points, and its retrieval metrics
    "run_evaluation": "qareport.library",
    "compute_aggregates": "qareport.aggregates",
    "recall_at_k": "qareport.retrieval_metrics",
    "average_precision": "qareport.retrieval_metrics",
    # a run, step by step: load → evaluate → report model → workbook / results file
    "load_suite": "qareport.loading",
    "Suite": "qareport.records",
    "Problem": "qareport.records",
    "evaluate_suite": "qareport.evaluation",
    "EvaluationOptions": "qareport.evaluation_options",
    "Evaluation": "qareport.evaluation",
    "CaseResult": "qareport.records",
    "Judgment": "qareport.question_scores",
    "summarize": "qareport.statistics",
    "SuiteStatistics": "qareport.statistics",
    "build_report": "qareport.report",
    "Report": "qareport.report",
    "RunInfo": "qareport.records",
    "RunSnapshot": "qareport.records",
    "Unloaded": "qareport.records",
    "read_run": "qareport.run_reading",
    "read_reviews": "qareport.run_reviews",
    "Review": "qareport.records",
    "write_workbook": "qareport.workbook",
    "WrittenWorkbook": "qareport.workbook",
    "results_document": "qareport.results_file",
    "write_results_file": "qareport.results_file",
    # the whole run, as the command line does it
    "run_pipeline": "qareport.pipeline",
    "RunOptions": "qareport.pipeline",
    "RunOutcome": "qareport.pipeline",
    # a kind of target of one's own
    "Kind": "qareport.kinds",
    "RunKinds": "qareport.kinds",
    "register_kind": "qareport.kinds",
    # errors
    "QAReportError": "qareport.errors",
}

if typing.TYPE_CHECKING:  # the exports' real types, for mypy and pyright (at run time they load on first use)
    from qareport.aggregates import compute_aggregates as compute_aggregates
    from qareport.errors import QAReportError as QAReportError
    from qareport.evaluation import Evaluation as Evaluation
    from qareport.evaluation import evaluate_suite as evaluate_suite
    from qareport.evaluation_options import EvaluationOptions as EvaluationOptions
    from qareport.kinds import Kind as Kind
    from qareport.kinds import RunKinds as RunKinds
    from qareport.kinds import register_kind as register_kind
    from qareport.library import run_evaluation as run_evaluation
    from qareport.loading import load_suite as load_suite
    from qareport.pipeline import RunOptions as RunOptions
    from qareport.pipeline import RunOutcome as RunOutcome
    from qareport.pipeline import run_pipeline as run_pipeline
    from qareport.question_scores import Judgment as Judgment
    from qareport.records import CaseResult as CaseResult
    from qareport.records import Problem as Problem
    from qareport.records import Review as Review
    from qareport.records import RunInfo as RunInfo
    from qareport.records import RunSnapshot as RunSnapshot
    from qareport.records import Suite as Suite
    from qareport.records import Unloaded as Unloaded
    from qareport.report import Report as Report
    from qareport.report import build_report as build_report
    from qareport.results_file import results_document as results_document
    from qareport.results_file import write_results_file as write_results_file
    from qareport.retrieval_metrics import average_precision as average_precision
    from qareport.retrieval_metrics import recall_at_k as recall_at_k
    from qareport.run_reading import read_run as read_run
    from qareport.run_reviews import read_reviews as read_reviews
    from qareport.statistics import SuiteStatistics as SuiteStatistics
    from qareport.statistics import summarize as summarize
    from qareport.workbook import WrittenWorkbook as WrittenWorkbook
    from qareport.workbook import write_workbook as write_workbook

__all__ = ["__version__", *sorted(_EXPORTS)]


if not typing.TYPE_CHECKING:  # hidden from type checkers, so that a name not exported is an error there too

    def __getattr__(name: str) -> object:
        if name in _EXPORTS:
            value = getattr(import_module(_EXPORTS[name]), name)
            globals()[name] = value
            return value
        raise AttributeError(f"module 'qareport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
