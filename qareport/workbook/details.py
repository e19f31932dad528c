"""The Details sheet: the facts of the details cells in long form, one row per term.

One row per case, turn, dimension and term, with its verdict (TP, FP, FN, not in target): ready
for filters and pivot tables. Cases without indicator-selection output get one row saying why
(`not scored (error)` ...), so every case can be found here.

Only the keys a pivot needs repeat on every row (case id, its tags, turn, dimension): names and
user messages are in Overview, once, one click away through the case id's link; dimension scores
are in the details cell and, averaged per dimension, in Statistics (a pivot over term rows would
weight them by term count). That keeps a 10,000-case workbook small enough to mail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from qareport.records import CaseResult, DimensionScore
from qareport.workbook import styles
from qareport.workbook.cells import write

SHEET_NAME = "Details"
HEADERS = ("case id", "tags / template", "turn", "dimension", "verdict", "term id", "term name", "selected label")
WIDTHS = (40, 24, 6, 16, 13, 20, 50, 40)  # the most a column grows to
WRAPPED = frozenset({2, 7, 8})  # tags, term name, selected label


def _dimension_rows(dimension: DimensionScore) -> Iterator[tuple[Any, ...]]:
    for verdicts in (dimension.true_positives, dimension.false_negatives, dimension.false_positives):
        for verdict in verdicts:
            selected = verdict.selected_name if verdict.label_differs else None
            yield (dimension.dimension_name, verdict.verdict, verdict.term.id, verdict.term.name, selected)
    if dimension.in_target and not (dimension.true_positives or dimension.false_negatives):
        yield (dimension.dimension_name, None, None, None, None)


def detail_rows(result: CaseResult) -> Iterator[tuple[Any, ...]]:
    head = (result.case.id, ", ".join(result.case.groups))
    produced = False
    for turn in result.turns:
        if turn.indicator is None:
            continue
        for dimension in (*turn.indicator.dimensions, *turn.indicator.not_in_target):
            for row in _dimension_rows(dimension):
                produced = True
                yield (*head, turn.number, *row)
    if not produced and result.has_indicator_target:
        why = result.error or ("no response" if result.status == "missing" else "nothing to score")
        yield (*head, None, None, f"not scored ({result.status})", None, why, None)


def write_details(
    ws: Worksheet, results: Sequence[CaseResult], overview_rows: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Fill the sheet; returns the first row of each case (for links from Overview).

    The first row of each case links back to its Overview row."""
    for column, header in enumerate(HEADERS, start=1):
        write(ws, 1, column, header)
    styles.style_header_row(ws, 1, 1, len(HEADERS))
    first_rows: dict[str, int] = {}
    longest = [len(h) + 2 for h in HEADERS]
    row = 2
    for result in results:
        for values in detail_rows(result):
            if result.case.id not in first_rows:
                first_rows[result.case.id] = row
                if overview_rows and result.case.id in overview_rows:
                    styles.link(ws.cell(row=row, column=1), "Overview", f"A{overview_rows[result.case.id]}",
                                tooltip="this case in Overview")
            tallest = 1
            written = []
            for column, value in enumerate(values, start=1):
                if value is None:
                    continue
                cell = write(ws, row, column, value)
                written.append(cell)
                if isinstance(value, str):
                    longest[column - 1] = max(longest[column - 1], len(value) + 2)
                    if column in WRAPPED and len(value) > WIDTHS[column - 1] - 2:
                        cell.alignment = styles.WRAP_TOP
                        tallest = max(tallest, styles.display_lines(value, WIDTHS[column - 1]))
            if tallest > 1:  # a tall row: everything at the top, beside the first line of its text
                ws.row_dimensions[row].height = styles.row_height_for(tallest)
                for cell in written:  # (not ws[row]: that scans the whole sheet for its width)
                    if not cell.alignment.wrap_text:
                        cell.alignment = styles.TOP
            row += 1
    styles.set_widths(ws, {i: min(w, max(8, longest[i - 1])) for i, w in enumerate(WIDTHS, start=1)})
    styles.finish_table_sheet(ws, columns=len(HEADERS), rows=row - 1)
    return first_rows
