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
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

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

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qareport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
