"""The Details sheet: the facts of the details cells in long form, one row per term.

One row per case, turn, dimension and term, with its verdict (TP, FP, FN, not in target): ready
for filters and pivot tables. Each kind of target gives its own rows (`Kind.details_rows`); for
indicator selection, cases without output get one row saying why (`not scored (error)` ...), so
every case can be found here. Reference steps give one row per reference step (dimension `steps`,
verdict `matched` / `missed` / `not scored`, term id the call that matched, term name the tool,
its score, and why it lost points) and one per call that matched none (`extra`); a case answered
with an error gets one steps row, `not scored (error)`, with the error.

Only the keys a pivot needs repeat on every row (case id, its tags, turn, dimension): names and
user messages are in Overview, once, one click away through the case id's link; dimension scores
are in the details cell and, averaged per dimension, in Statistics (a pivot over term rows would
weight them by term count). That keeps a 10,000-case workbook small enough to mail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from qareport.case_table import DETAILS_HEADERS as HEADERS
from qareport.case_table import MATCHED_BY, CaseDetails, detail_rows  # noqa: F401 (detail_rows: the rows, from here too)
from qareport.report import Report
from qareport.run_sheets import cut_sheets
from qareport.workbook import sheet_looks, styles
from qareport.workbook.sheet import Sheet, write

WIDTHS = (40, 24, 6, 16, 13, 32, 60, 40, 8, 50, 12)  # the most a column grows to (term id: call ids too)
WRAPPED = frozenset({2, 7, 8, 10})  # tags, term name, selected label, reason
SCORE_COLUMN = 9
MOST_LINES = 8
"""The tallest a Details row is drawn (a SPARQL query runs to dozens of lines): the row stays one to scan
and to print, and its cell still holds the whole text, one click away."""


def _wraps(column: int, value: Any) -> bool:
    """Whether a value is text too long for its column's width, so that it wraps."""
    return isinstance(value, str) and column in WRAPPED and len(value) > WIDTHS[column - 1] - 2


ATTEMPT = "attempt"  # the last column when cases were answered several times: one block of rows per attempt


def _widths(details: Sequence[CaseDetails]) -> tuple[dict[int, float], tuple[str, ...]]:
    """Each column as wide as its longest text, within its limit: a first pass over the rows, as
    the widths are needed before the first row is written; and the headers (`MATCHED_BY` only when
    a row has a value for it)."""
    longest = [styles.header_units(h) for h in (*HEADERS, MATCHED_BY)]
    matched_by = False
    attempts = False
    for case in details:  # the rows as held (`CaseDetails`): the head once, each row after it
        head = len(case.head)
        for index, value in enumerate(case.head):
            if isinstance(value, str) and len(value) + 2 > longest[index]:
                longest[index] = len(value) + 2
        for attempt, rows in case.blocks:
            attempts = attempts or attempt is not None
            for row in rows:
                for index, value in enumerate(row[:len(longest) - head], start=head):
                    if isinstance(value, str) and len(value) + 2 > longest[index]:
                        longest[index] = len(value) + 2
                matched_by = matched_by or (len(row) > len(HEADERS) - head and row[len(HEADERS) - head] is not None)
    headers: tuple[str, ...] = (*HEADERS, MATCHED_BY) if matched_by else HEADERS
    widths: dict[int, float] = {
        i: min(max(w, math.ceil(styles.header_units(headers[i - 1]))), max(8, math.ceil(longest[i - 1])))
        for i, w in enumerate(WIDTHS[:len(headers)], start=1)}
    if attempts:
        headers = (*headers, ATTEMPT)
        widths[len(headers)] = math.ceil(styles.header_units(ATTEMPT)) + 1
    return widths, headers


def write_details(ws: Sheet, report: Report, overview_rows: Mapping[str, int] | None = None) -> dict[str, int]:
    """Fill the sheet row by row with the report's Details rows (`Report.details`); returns the first
    row of each case (for links from Overview), which links back to its Overview row. Rows past a
    worksheet's last are left out (`run_sheets.cut_sheets` says so in the Problems sheet and the run's
    alerts)."""
    last = ws.max_rows if "Details" in cut_sheets(report) else None
    widths, headers = _widths(report.details)
    for column, header in enumerate(headers, start=1):
        write(ws, 1, column, header)
    sheet_looks.style_header_row(ws, 1, 1, len(headers))
    sheet_looks.set_widths(ws, widths)
    sheet_looks.fit_header_row(ws, headers)
    ws.flush()
    first_rows: dict[str, int] = {}
    row = 2
    shown = len(headers) - 1 if headers[-1] == ATTEMPT else None  # the columns before the attempt's
    for result, case in zip(report.results, report.details):
        case_id = result.case.id
        for attempt, values in case.rows():
            if last is not None and row > last:
                break
            if shown is not None:
                values = (*values[:shown], *[None] * (shown - len(values)), attempt)
            linked = False
            if case_id not in first_rows:
                first_rows[case_id] = row
                linked = _link_back(ws, row, case_id, overview_rows or {})
            _write_row(ws, row, values[:len(headers)], linked=linked)
            row += 1
    sheet_looks.finish_table_sheet(ws, columns=len(headers), rows=row - 1)
    return first_rows


def _link_back(ws: Sheet, row: int, case_id: str, overview_rows: Mapping[str, int]) -> bool:
    """The case's first row leads to its Overview row; whether it could."""
    if case_id not in overview_rows:
        return False
    sheet_looks.link(ws.cell(row, 1), "Overview", f"A{overview_rows[case_id]}", tooltip="this case in Overview")
    return True


def _write_row(ws: Sheet, row: int, values: tuple[Any, ...], *, linked: bool) -> None:
    if not linked and values[SCORE_COLUMN - 1] is None \
            and not any(_wraps(column, value) for column, value in enumerate(values, start=1)):
        ws.write_values(row, values)  # most rows: plain values, nothing to style
        return
    tallest = 1
    written = []
    for column, value in enumerate(values, start=1):
        if value is None:
            continue
        cell = write(ws, row, column, value)
        written.append(cell)
        if column == SCORE_COLUMN and isinstance(value, (int, float)):
            cell.number_format = styles.SCORE_FORMAT
        if _wraps(column, value):
            cell.alignment = styles.WRAP_TOP
            tallest = min(MOST_LINES, max(tallest, styles.display_lines(value, WIDTHS[column - 1])))
    if tallest > 1:  # a tall row: everything at the top, beside the first line of its text
        ws.set_height(row, styles.row_height_for(tallest))
        for cell in written:
            if cell.alignment is None or not cell.alignment.wrap:
                cell.alignment = styles.TOP
    ws.flush()
