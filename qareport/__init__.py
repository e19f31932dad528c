"""qareport: evaluate a question-answering or text-to-query system into an Excel workbook.

The library mirrors graphrag-eval 5.x's entry points, so its users move over by changing the
import: `run_evaluation(reference_qas, chat_responses)` and `compute_aggregates(results)`.
Names are imported on first use, so `qareport --help` does not pay for pandas and openpyxl.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "QAReportError": "qareport.errors",
    "average_precision": "qareport.retrieval_metrics",
    "compute_aggregates": "qareport.aggregates",
    "evaluate_suite": "qareport.evaluation",
    "load_suite": "qareport.loading",
    "recall_at_k": "qareport.retrieval_metrics",
    "run_evaluation": "qareport.library",
    "summarize": "qareport.statistics",
    "write_workbook": "qareport.workbook",
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
