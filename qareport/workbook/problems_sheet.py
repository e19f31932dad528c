"""The Problems sheet: every input problem, with where it is and what to fix."""

from __future__ import annotations

from collections.abc import Sequence

from qareport.records import Location, Problem
from qareport.workbook import sheet_looks, styles
from qareport.workbook.sheet import Sheet, write

HEADERS = ("file", "line", "case id", "problem")
PATH_WIDTH = 40
MESSAGE_WIDTH = 100


def write_problems(ws: Sheet, problems: Sequence[Problem], cut: Sequence[str] = ()) -> None:
    """Fill the sheet row by row (the widths are known from the problems before the first row):
    first what the workbook could not hold (`cut`: sheets cut at a worksheet's last row), then the
    problems, as many as the sheet holds."""
    workbook = Location("the workbook")
    problems = [*(Problem(workbook, text[:1].upper() + text[1:]) for text in cut), *problems]
    if len(problems) + 1 > ws.max_rows:
        problems = problems[:ws.max_rows - 1]
    for column, header in enumerate(HEADERS, start=1):
        write(ws, 1, column, header)
    sheet_looks.style_header_row(ws, 1, 1, len(HEADERS))
    longest_path = max([len(p.location.path) for p in problems] + [10])
    longest_id = max([len(p.case_id or "") for p in problems] + [10])
    sheet_looks.set_widths(ws, {1: min(PATH_WIDTH, longest_path + 2), 2: 7, 3: min(40, longest_id + 2),
                                4: MESSAGE_WIDTH})
    sheet_looks.fit_header_row(ws, HEADERS)
    ws.flush()
    for row, problem in enumerate(problems, start=2):
        write(ws, row, 1, problem.location.path).alignment = styles.WRAP_TOP
        write(ws, row, 2, problem.location.line).alignment = styles.TOP
        write(ws, row, 3, problem.case_id).alignment = styles.TOP
        write(ws, row, 4, problem.message).alignment = styles.WRAP_TOP
        lines = max(styles.display_lines(problem.message, MESSAGE_WIDTH),
                    styles.display_lines(problem.location.path, PATH_WIDTH))
        ws.set_height(row, styles.row_height_for(lines))
        ws.flush()
    sheet_looks.finish_table_sheet(ws, columns=len(HEADERS), rows=len(problems) + 1, freeze="A2")
