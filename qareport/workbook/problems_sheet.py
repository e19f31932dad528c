"""The Problems sheet: every input problem, with where it is and what to fix."""

from __future__ import annotations

from collections.abc import Sequence

from openpyxl.worksheet.worksheet import Worksheet

from qareport.records import Problem
from qareport.workbook import styles
from qareport.workbook.cells import write

SHEET_NAME = "Problems"
HEADERS = ("file", "line", "case id", "problem")


def write_problems(ws: Worksheet, problems: Sequence[Problem]) -> None:
    for column, header in enumerate(HEADERS, start=1):
        write(ws, 1, column, header)
    styles.style_header_row(ws, 1, 1, len(HEADERS))
    for row, problem in enumerate(problems, start=2):
        write(ws, row, 1, problem.location.path)
        write(ws, row, 2, problem.location.line)
        write(ws, row, 3, problem.case_id)
        write(ws, row, 4, problem.message).alignment = styles.WRAP_TOP
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:D{max(len(problems) + 1, 1)}"
    styles.set_widths(ws, {1: 40, 2: 7, 3: 24, 4: 100})
