"""The workbook: one module per sheet, and the file written in one place, atomically and
reproducibly.

Sheets, in order: Summary, Overview, Details, Statistics, Changes (with a baseline), Trend (with a
history), Problems (when there were any, or a sheet had to be cut), then the hidden machine-readable sheets
(`results_sheet`). The sheets lay out the report model (`qareport.report.Report`) and compute
nothing. This package is the only part of qareport that imports XlsxWriter (writing);
`qareport.run_reading` reads earlier workbooks with python-calamine (`runs.read_sheets`).

The file is streamed: XlsxWriter's constant-memory mode writes each sheet's rows to a temporary
file as soon as the next row is started (see `sheet`), so a 10,000-case report never holds its
million cells. That mode writes strings inline rather than in a shared-string table (the measured trade-off is
in benchmarks/bench_workbook.py's notes).

Saving is atomic (a temporary file in the target folder, renamed over the target) and
reproducible with no rewriting of the zip: the document properties carry the run's date
(`SOURCE_DATE_EPOCH` when set) and XlsxWriter gives every zip entry one fixed date and order.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import xlsxwriter
from xlsxwriter.exceptions import XlsxWriterException

from qareport.collector import collector_paused
from qareport.comparison import Comparison
from qareport.errors import QAReportError
from qareport.files import atomic_path, scratch_folder
from qareport.report import Report
from qareport.run_sheets import cut_sheets
from qareport.trend import parse_created
from qareport.workbook import sheet_looks
from qareport.workbook.cells import clean_text
from qareport.workbook.changes import write_changes
from qareport.workbook.compare import write_compare
from qareport.workbook.details import write_details
from qareport.workbook.overview import review_order, write_overview
from qareport.workbook.problems_sheet import write_problems
from qareport.workbook.results_sheet import write_results_sheets
from qareport.workbook.sheet import Book, Sheet, write
from qareport.workbook.sheet_names import (
    CHANGES,
    COMPARE,
    DETAILS,
    FULL_TEXTS,
    OVERVIEW,
    PROBLEMS,
    STATISTICS,
    SUMMARY,
    TREND,
)
from qareport.workbook.statistics_sheet import write_statistics
from qareport.workbook.summary import write_summary
from qareport.workbook.summary_grid import SummaryLinks
from qareport.workbook.trend import write_trend


def _first_rows_by_kind(comparison: Comparison) -> dict[str, int]:
    rows: dict[str, int] = {}
    for row, change in enumerate(comparison.changes, start=2):
        rows.setdefault(change.kind, row)
    return rows


@dataclass(frozen=True, slots=True)
class WrittenWorkbook:
    """What was written where: the rows of each sheet (its header included), in sheet order."""

    path: Path
    rows: Mapping[str, int]


def _write_sheets(book: Book, report: Report) -> None:
    """Every sheet, added in reading order and written row by row."""
    comparison, problems, run = report.comparison, report.problems, report.run
    summary = book.add_sheet(SUMMARY)
    overview = book.add_sheet(OVERVIEW)
    details = book.add_sheet(DETAILS)
    stats_sheet = book.add_sheet(STATISTICS)
    changes = book.add_sheet(CHANGES) if comparison is not None else None
    compare = book.add_sheet(COMPARE) if report.side_by_side else None
    trend = book.add_sheet(TREND) if report.trend else None
    cut = cut_sheets(report)
    problems_sheet = book.add_sheet(PROBLEMS) if problems or cut else None
    overview_rows: dict[str, int] = {}
    for row, index in enumerate(review_order(report), start=2):  # the Overview's order, known before it is written
        overview_rows.setdefault(report.results[index].case.id, row)

    details_rows = write_details(details, report, overview_rows)
    change_rows: dict[str, int] = {}
    compare_rows: dict[str, int] = {}
    if compare is not None and comparison is not None:
        compare_rows = write_compare(compare, report.side_by_side, overview_rows=overview_rows,
                                     old_label=f"last run ({_display_time(comparison.baseline_created)})",
                                     new_label=f"this run ({_display_time(run.created)})")
    if changes is not None and comparison is not None:
        change_rows = write_changes(changes, comparison, overview_rows, compare_rows=compare_rows,
                                    labels=report.kind_set)
    cut_texts: list[tuple[str, str, str]] = []
    layout = write_overview(overview, report, details_rows=details_rows,
                            change_rows=change_rows, cut_texts=cut_texts)
    write_statistics(stats_sheet, report)
    if trend is not None:
        write_trend(trend, report.trend, report.kind_set)
    if problems_sheet is not None:
        write_problems(problems_sheet, problems, tuple(cut.values()))
    write_summary(
        summary, report,
        links=SummaryLinks(
            overview_rows=overview_rows,
            first_change_rows=_first_rows_by_kind(comparison) if comparison else {},
            problems_sheet=PROBLEMS if problems_sheet is not None else None,
            review_column=layout.review_column,
            change_column=layout.change_column,
            last_overview_row=layout.last_row,
        ),
    )
    if cut_texts:
        write_full_texts(book.add_sheet(FULL_TEXTS), cut_texts)
    write_results_sheets(book, report)
    book.flush()
    summary.worksheet.activate()
    book.workbook.set_properties({
        "title": "QA evaluation report",
        "author": f"qareport {run.qareport_version}",
        "created": _naive_utc(run.created),  # XlsxWriter writes it as both created and modified
    })


def write_full_texts(ws: Sheet, texts: list[tuple[str, str, str]]) -> None:
    """Texts too long for one cell, in parts that fit: read them top to bottom."""
    headers = ("case id", "column", "part", "text")
    for column, header in enumerate(headers, start=1):
        write(ws, 1, column, header)
    sheet_looks.style_header_row(ws, 1, 1, len(headers))
    sheet_looks.set_widths(ws, {1: 24, 2: 18, 3: 6, 4: 120})
    ws.flush()
    row = 2
    for case_id, header, text in texts:
        parts = _parts(clean_text(text))
        for number, part in enumerate(parts, start=1):
            ws.write_values(row, (case_id, header, f"{number}/{len(parts)}", part))
            row += 1
    sheet_looks.finish_table_sheet(ws, columns=len(headers), rows=row - 1)


FULL_TEXT_PART = 30_000  # characters a part (a cell holds 32,767)
FULL_TEXT_LINES = 250  # line breaks a part (a cell holds 253)


def _parts(text: str) -> list[str]:
    """The text in pieces that each fit a cell, cut at line ends where it can be."""
    parts: list[str] = []
    lines = text.split("\n")
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and end - start < FULL_TEXT_LINES and size + len(lines[end]) + 1 <= FULL_TEXT_PART:
            size += len(lines[end]) + 1
            end += 1
        if end == start:  # one line longer than a part: cut it
            line = lines[start]
            parts.append(line[:FULL_TEXT_PART])
            lines[start] = line[FULL_TEXT_PART:]
            if not lines[start]:
                start += 1
            continue
        parts.append("\n".join(lines[start:end]))
        start = end
    return parts


def _display_time(created: str) -> str:
    moment = parse_created(created)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else str(created)


def _naive_utc(created: str) -> datetime:
    moment = parse_created(created) or datetime.now(tz=UTC)
    return moment.astimezone(UTC).replace(tzinfo=None, microsecond=0)


class _OutputFile(io.BufferedWriter):
    """The file XlsxWriter's zip is written to. After a failure (a full disk, a stop) it is
    abandoned: what the zip object still writes, when the garbage collector closes it, goes nowhere,
    so the failure is reported once and not followed by "Exception ignored in ZipFile.__del__"."""

    abandoned = False
    _position = 0  # where the zip object believes it is, once abandoned

    def write(self, data: Any) -> int:
        if self.abandoned:
            size = memoryview(data).nbytes
            self._position += size
            return size
        return super().write(data)

    def flush(self) -> None:
        if not self.abandoned:
            super().flush()

    def seek(self, offset: int, whence: int = 0) -> int:
        if not self.abandoned:
            return super().seek(offset, whence)
        self._position = offset if whence == io.SEEK_SET else self._position + offset
        return self._position

    def tell(self) -> int:
        return self._position if self.abandoned else super().tell()

    def close(self) -> None:
        if not self.abandoned:
            super().close()

    def abandon(self) -> None:
        """Drop what is buffered and close the file without writing more."""
        if self.abandoned:
            return
        try:
            self._position = super().tell()
        except (OSError, ValueError):
            self._position = 0
        self.abandoned = True
        try:
            self.raw.close()
        except OSError:
            pass


def write_workbook(report: Report, path: str | Path) -> WrittenWorkbook:
    """Write the report to `path`, atomically (`qareport.files`): readers never see a half-written
    file, and a failure leaves any previous report in place."""
    target = Path(path)
    with collector_paused(set_aside=False), atomic_path(target, what="the workbook") as temporary:
        try:
            # the rows of constant-memory sheets wait in files of their own: in a folder removed in any case
            with scratch_folder(prefix="qareport-rows-") as rows_folder:
                output = _OutputFile(io.FileIO(temporary, "w"))
                try:
                    workbook = xlsxwriter.Workbook(output, {"constant_memory": True, "tmpdir": str(rows_folder)})
                    book = Book(workbook)
                    try:
                        _write_sheets(book, report)
                    except BaseException:
                        output.abandon()  # closing the workbook below then writes nothing
                        raise
                    finally:
                        workbook.close()
                    output.close()
                except BaseException:
                    output.abandon()
                    raise
        except XlsxWriterException as error:
            raise QAReportError(f"{target}: cannot write the workbook: {error}") from error
    return WrittenWorkbook(target, {sheet.name: sheet.rows_written for sheet in book.sheets})
