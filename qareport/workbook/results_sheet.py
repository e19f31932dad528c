"""The hidden, machine-readable sheets: the run as data, so the workbook alone can be a baseline,
a point of a trend, or the source of an email. The format is defined in `qareport.runs` (read back
in `qareport.run_reading`); this module only lays its tables out. The sheets are hidden, not very
hidden, so anyone curious can unhide them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from qareport.report import Report
from qareport.run_sheets import stored_run_tables
from qareport.workbook import styles
from qareport.workbook.sheet import Book, Sheet, write


def _write_rows(ws: Sheet, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A header and rows of values, written row by row."""
    for column, name in enumerate(header, start=1):
        write(ws, 1, column, name).font = styles.BOLD
    ws.flush()
    for row_number, values in enumerate(rows, start=2):
        ws.write_values(row_number, values)
    ws.worksheet.freeze_panes("A2")


def write_results_sheets(book: Book, report: Report) -> None:
    for table in stored_run_tables(report):
        _write_rows(book.add_sheet(table.sheet, hidden=True), table.header, table.rows)
