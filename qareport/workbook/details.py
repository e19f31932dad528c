"""The Details sheet: the facts of the details cells in long form, one row per term.

One row per case, turn, dimension and term, with its verdict (TP, FP, FN, not in target): ready
for filters and pivot tables. Cases without indicator-selection output get one row saying why,
so every case can be found here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from qareport.records import CaseResult, DimensionScore
from qareport.workbook import styles
from qareport.workbook.cells import write

SHEET_NAME = "Details"
HEADERS = (
    "case id", "name", "tags / template", "status", "turn", "user message", "dimension",
    "in target", "verdict", "term id", "term name", "selected label", "dimension recall",
    "dimension precision",
)
WIDTHS = (24, 30, 16, 10, 6, 36, 14, 9, 13, 16, 40, 30, 10, 10)


def _dimension_rows(dimension: DimensionScore) -> Iterator[tuple[Any, ...]]:
    for verdicts in (dimension.true_positives, dimension.false_negatives, dimension.false_positives):
        for verdict in verdicts:
            selected = verdict.selected_name if verdict.label_differs else None
            yield (
                dimension.dimension_name, "yes" if dimension.in_target else "no", verdict.verdict,
                verdict.term.id, verdict.term.name, selected,
                dimension.recall if dimension.in_target else None,
                dimension.precision if dimension.in_target else None,
            )
    if dimension.in_target and not (dimension.true_positives or dimension.false_negatives):
        yield (dimension.dimension_name, "yes", None, None, None, None, dimension.recall, dimension.precision)


def detail_rows(result: CaseResult) -> Iterator[tuple[Any, ...]]:
    head = (result.case.id, result.case.name, ", ".join(result.case.groups), result.status)
    produced = False
    for turn in result.turns:
        if turn.indicator is None:
            continue
        for dimension in (*turn.indicator.dimensions, *turn.indicator.not_in_target):
            for row in _dimension_rows(dimension):
                produced = True
                yield (*head, turn.number, turn.user_message, *row)
    if not produced and result.has_indicator_target:
        yield (*head, None, None, None, None, result.error or "nothing to score", None, None, None, None, None)


def write_details(ws: Worksheet, results: Sequence[CaseResult]) -> dict[str, int]:
    """Fill the sheet; returns the first row of each case (for links from Overview)."""
    for column, header in enumerate(HEADERS, start=1):
        write(ws, 1, column, header)
    styles.style_header_row(ws, 1, 1, len(HEADERS))
    first_rows: dict[str, int] = {}
    row = 2
    for result in results:
        for values in detail_rows(result):
            first_rows.setdefault(result.case.id, row)
            for column, value in enumerate(values, start=1):
                cell = write(ws, row, column, value)
                if column >= len(HEADERS) - 1 and value is not None:
                    cell.number_format = styles.SCORE_FORMAT
            row += 1
    ws.freeze_panes = "B2"
    ws.auto_filter.ref = f"A1:N{max(row - 1, 1)}"
    styles.set_widths(ws, dict(enumerate(WIDTHS, start=1)))
    return first_rows
