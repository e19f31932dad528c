"""The results file (`--results`): per-question results and aggregates in graphrag-eval's format,
plus one flat row per case, for scripts and for comparing runs.

Top-level keys: `qareport` (version and date), `results` (graphrag-eval's per-question list),
`aggregates` (graphrag-eval's per_template / micro / macro), `data_query_metrics` (indicator
selection), `cases` (one flat row per case of any kind; see run_record.CASE_FIELDS).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from qareport.errors import QAReportError
from qareport.records import CaseResult, RunInfo
from qareport.run_record import case_rows
from qareport.statistics import SuiteStatistics, question_results

RESULTS_SUFFIXES = (".yaml", ".yml", ".json")


def results_document(results: list[CaseResult], statistics: SuiteStatistics, run: RunInfo) -> dict[str, Any]:
    return {
        "qareport": {"version": run.qareport_version, "created": run.created},
        "results": question_results(results),
        "aggregates": statistics.qa_aggregates or {},
        "data_query_metrics": {
            "all": asdict(statistics.data_query) if statistics.data_query else None,
            "per_group": [asdict(g) for g in statistics.per_group],
            "per_dimension": [asdict(d) for d in statistics.per_dimension],
        },
        "cases": case_rows(results),
    }


def write_results_file(document: dict[str, Any], path: str | Path) -> None:
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in RESULTS_SUFFIXES:
        raise QAReportError(f"{target}: the results file must end in .yaml, .yml or .json")
    if suffix == ".json":
        text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    else:
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except OSError as error:
        raise QAReportError(f"{target}: cannot write the results: {error.strerror or error}") from error
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def read_results_file(path: str | Path) -> dict[str, Any]:
    """A results file written by qareport (used as a baseline)."""
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
        document = json.loads(text) if target.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as error:
        raise QAReportError(f"{target}: cannot read the results file: {error}") from error
    if not isinstance(document, dict) or "cases" not in document:
        raise QAReportError(f"{target}: not a qareport results file (no 'cases' list)")
    return document
