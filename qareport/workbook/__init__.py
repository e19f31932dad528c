"""The workbook: one module per sheet, and the file written in one place, atomically and
reproducibly.

Sheets, in order: Summary, Overview, Details, Statistics, Changes (with a baseline), Trend (with a
history), Problems (when there were any), then the hidden machine-readable sheets
(`results_sheet`). This package and `qareport.baseline` (reading) are the only parts of qareport
that import openpyxl.

Saving is atomic (a temporary file renamed over the target) and reproducible: the workbook's
dates are the run's date (`SOURCE_DATE_EPOCH` when set), and `package.finish_package` rewrites
the zip with fixed entry dates and order, and with its strings shared.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from openpyxl import Workbook

from qareport.comparison import Comparison, compare_runs, headline_metrics, parse_created, trend_points
from qareport.errors import QAReportError
from qareport.records import CaseResult, Problem, RunInfo, RunSnapshot
from qareport.run_record import case_rows
from qareport.statistics import SuiteStatistics
from qareport.workbook.changes import write_changes
from qareport.workbook.details import write_details
from qareport.workbook.overview import write_overview
from qareport.workbook.package import finish_package
from qareport.workbook.problems_sheet import write_problems
from qareport.workbook.results_sheet import write_results_sheets
from qareport.workbook.statistics_sheet import write_statistics
from qareport.workbook.summary import SummaryLinks, write_summary
from qareport.workbook.trend import write_trend

SHEET_ORDER = ("Summary", "Overview", "Details", "Statistics", "Changes", "Trend", "Problems")


def _first_rows_by_kind(comparison: Comparison) -> dict[str, int]:
    rows: dict[str, int] = {}
    for row, change in enumerate(comparison.changes, start=2):
        rows.setdefault(change.kind, row)
    return rows


def build_workbook(
    results: Sequence[CaseResult],
    statistics: SuiteStatistics,
    problems: Sequence[Problem],
    run: RunInfo,
    *,
    templates_dir: str | None = None,
    baseline: RunSnapshot | None = None,
    history: Sequence[RunSnapshot] = (),
    source: str = "this run",
) -> Workbook:
    """The whole workbook in memory. `baseline` adds the Changes sheet; `history` the Trend sheet
    (the baseline is a point of the trend too)."""
    rows = case_rows(results)
    current = RunSnapshot(source=source, created=run.created, qareport_version=run.qareport_version, cases=tuple(rows))
    headline = headline_metrics(rows)
    comparison = compare_runs(baseline, current) if baseline is not None else None
    points = trend_points([*history, *([baseline] if baseline else [])], current) if history else ()

    workbook = Workbook()
    summary = workbook.active
    summary.title = "Summary"
    overview = workbook.create_sheet("Overview")
    details = workbook.create_sheet("Details")
    stats_sheet = workbook.create_sheet("Statistics")
    overview_rows: dict[str, int] = {}
    for row, result in enumerate(results, start=2):
        overview_rows.setdefault(result.case.id, row)

    details_rows = write_details(details, results, overview_rows)
    change_rows: dict[str, int] = {}
    if comparison is not None:
        change_rows = write_changes(workbook.create_sheet("Changes"), comparison, overview_rows)
    write_overview(overview, results, templates_dir=templates_dir, details_rows=details_rows,
                   change_rows=change_rows, comparison=comparison)
    write_statistics(stats_sheet, statistics, run, rows)
    if points:
        write_trend(workbook.create_sheet("Trend"), points)
    if problems:
        write_problems(workbook.create_sheet("Problems"), problems)
    write_summary(
        summary, run=run, rows=rows, headline=headline, comparison=comparison, problems=len(problems),
        links=SummaryLinks(
            overview_rows=overview_rows,
            first_change_rows=_first_rows_by_kind(comparison) if comparison else {},
            problems_sheet="Problems" if problems else None,
        ),
    )
    write_results_sheets(workbook, rows, run, headline, comparison)

    workbook.active = 0
    moment = _naive_utc(run.created)
    workbook.properties.creator = f"qareport {run.qareport_version}"
    workbook.properties.title = "QA evaluation report"
    workbook.properties.created = moment
    workbook.properties.modified = moment
    return workbook


def _naive_utc(created: str) -> datetime:
    moment = parse_created(created) or datetime.now(tz=timezone.utc)
    return moment.astimezone(timezone.utc).replace(tzinfo=None, microsecond=0)


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
        finish_package(temporary, workbook.properties)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a report is for sharing
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
    baseline: RunSnapshot | None = None,
    history: Sequence[RunSnapshot] = (),
) -> None:
    workbook = build_workbook(
        results, statistics, problems, run, templates_dir=templates_dir, baseline=baseline,
        history=history, source=str(path),
    )
    save_atomically(workbook, path)
