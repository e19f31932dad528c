"""qareport: evaluate a question-answering or text-to-query system into an Excel workbook.

The library mirrors graphrag-eval 5.x's entry points, so its users move over by changing the
import: `run_evaluation(reference_qas, chat_responses)` and `compute_aggregates(results)`.
"""

from __future__ import annotations

__version__ = "0.1.0"

from qareport.aggregates import compute_aggregates  # noqa: E402
from qareport.errors import QAReportError  # noqa: E402
from qareport.evaluation import evaluate_suite  # noqa: E402
from qareport.library import run_evaluation  # noqa: E402
from qareport.loading import load_suite  # noqa: E402
from qareport.retrieval_metrics import average_precision, recall_at_k  # noqa: E402
from qareport.statistics import summarize  # noqa: E402

__all__ = [
    "QAReportError",
    "__version__",
    "average_precision",
    "compute_aggregates",
    "evaluate_suite",
    "load_suite",
    "recall_at_k",
    "run_evaluation",
    "summarize",
]
