"""The workbook: one module per sheet, and the file written in one place, atomically.

This package is the only part of qareport that imports openpyxl.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from openpyxl import Workbook

from qareport.errors import QAReportError
from qareport.records import CaseResult, Problem, RunInfo
from qareport.statistics import SuiteStatistics
from qareport.workbook.details import write_details
from qareport.workbook.overview import write_overview
from qareport.workbook.problems_sheet import write_problems
from qareport.workbook.statistics_sheet import write_statistics


def build_workbook(
    results: Sequence[CaseResult],
    statistics: SuiteStatistics,
    problems: Sequence[Problem],
    run: RunInfo,
    *,
    templates_dir: str | None = None,
) -> Workbook:
    workbook = Workbook()
    overview = workbook.active
    overview.title = "Overview"
    details = workbook.create_sheet("Details")
    stats_sheet = workbook.create_sheet("Statistics")
    details_rows = write_details(details, results)
    write_overview(overview, results, templates_dir=templates_dir, details_rows=details_rows)
    write_statistics(stats_sheet, statistics, run)
    if problems:
        write_problems(workbook.create_sheet("Problems"), problems)
    return workbook


def save_atomically(workbook: Workbook, path: str | Path) -> None:
    """Save next to the target and rename over it: readers never see a half-written file, and a
    failure leaves any previous report in place."""
    target = Path(path)
    if target.parent and not target.parent.exists():
        raise QAReportError(f"{target}: the folder {target.parent} does not exist; create it first")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(handle)
    try:
        workbook.save(temporary)
        os.replace(temporary, target)
    except OSError as error:
        raise QAReportError(f"{target}: cannot write the workbook: {error.strerror or error}") from error
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def write_workbook(
    results: Sequence[CaseResult],
    statistics: SuiteStatistics,
    problems: Sequence[Problem],
    run: RunInfo,
    path: str | Path,
    *,
    templates_dir: str | None = None,
) -> None:
    save_atomically(
        build_workbook(results, statistics, problems, run, templates_dir=templates_dir), path
    )
