"""A worksheet written row by row: the cells of the rows not yet written, and nothing else.

XlsxWriter in constant-memory mode writes each row to disk as soon as a later row is started, and
a row once written cannot change. A sheet module therefore fills the cells of a row (values, then
fonts, fills, links, as it learns them), and `flush()` writes the pending rows in order and
forgets them. The list sheets flush after every row, so however many cases there are only one
row's cells are held; the short sheets laid out in blocks (Summary, Statistics) keep all their
rows until they are finished, which costs nothing at their size.

Rows and columns are counted from 1, as in the sheet a reader sees. `write` puts a value into a
cell: a number as a number, anything else as text the cell can hold (`cells`), never a formula.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.workbook import Workbook
from xlsxwriter.worksheet import Worksheet

from qareport import run_sheets
from qareport.workbook import styles
from qareport.workbook.cells import fit_text
from qareport.workbook.rows_xml import RowsWorksheet, worksheet_class

MAX_LINKS = 65_530  # Excel's limit per worksheet: beyond it a cell keeps its value and look, unlinked
MAX_LINKED_TEXT = 2_079
"""The longest text written as a link: XlsxWriter 3.2 holds an internal link's shown text to Excel's
2,079-character limit for a URL and drops the link with a warning; a longer text is written unlinked."""
MAX_TOOLTIP = 255  # Excel's limit for a link's tool tip: a longer one (a long case id) is cut, visibly


def fit_tooltip(tooltip: str | None) -> str | None:
    """A link's tool tip cut to what Excel accepts, ending in an ellipsis when cut."""
    if tooltip is None or len(tooltip) <= MAX_TOOLTIP:
        return tooltip
    return tooltip[:MAX_TOOLTIP - 1] + "\u2026"


class Cell:
    """One cell not yet written: its value and its look, set part by part."""

    __slots__ = (
        "alignment",
        "column",
        "fill",
        "font",
        "formula",
        "link",
        "merge_to",
        "number_format",
        "row",
        "value",
    )

    def __init__(self, row: int, column: int):
        self.row, self.column = row, column
        self.value: Any = None
        self.font: styles.Font | None = None
        self.fill: styles.Fill | None = None
        self.alignment: styles.Alignment | None = None
        self.number_format: str | None = None
        self.link: tuple[str, str | None] | None = None  # (location, tooltip)
        self.formula: str | None = None  # a live count or a link by id; `value` is its result now
        self.merge_to: int | None = None  # the last column of a merged span starting here (this row only)

    @property
    def column_letter(self) -> str:
        return str(xl_col_to_name(self.column - 1))


class Sheet:
    def __init__(self, workbook: Workbook, worksheet: Worksheet, formats: styles.Formats):
        self.workbook, self.worksheet = workbook, worksheet
        self.name: str = worksheet.get_name()
        self._formats = formats
        self._pending: dict[int, dict[int, Cell]] = {}
        self._heights: dict[int, float] = {}
        self._widths: dict[int, float] = {}
        self._links = 0
        self.rows_written = 0  # the last row written, for reports on the file
        self.max_rows = run_sheets.MAX_SHEET_ROWS  # a sheet's writer stops there and says so

    def cell(self, row: int, column: int) -> Cell:
        """The cell, to be written with its row (a row already written cannot be changed)."""
        cells = self._pending.setdefault(row, {})
        found = cells.get(column)
        if found is None:
            found = cells[column] = Cell(row, column)
        return found

    def set_height(self, row: int, height: float) -> None:
        self._heights[row] = height

    def height(self, row: int) -> float | None:
        return self._heights.get(row)

    def set_width(self, column: int, width: float) -> None:
        """A width in characters, stored as given (XlsxWriter's `set_column` would add a margin)."""
        self._widths[column] = width
        self.worksheet.set_column_pixels(column - 1, column - 1, round(width * 7))  # 7: Calibri 11's digit

    def width(self, column: int) -> float:
        return self._widths.get(column, styles.DEFAULT_WIDTH)

    def flush(self) -> None:
        """Write the pending rows, in order, and forget them."""
        for row in sorted(self._pending.keys() | self._heights.keys()):
            if row in self._heights:
                # in pixels of 0.75 point: set_row would round a height of 409 points down to 408.75
                self.worksheet.set_row_pixels(row - 1, self._heights.pop(row) / 0.75)
            for _column, cell in sorted(self._pending.pop(row, {}).items()):
                self._write(cell)
            self.rows_written = max(self.rows_written, row)

    def format_of(self, alignment: styles.Alignment | None, number_format: str | None = None) -> Any:
        """The workbook format of a cell with only this alignment and number format (for `write_now`)."""
        return self._formats.get(None, None, alignment, number_format)

    def write_now(self, row: int, column: int, value: str | float | bool, cell_format: Any) -> None:
        """Write a cell of a plain look (`format_of`) straight away, without holding it: a value
        already made writable (a fitted text, a finite number, a truth value). The row's held cells
        (links, fills) follow at `flush`: XlsxWriter orders a row's cells itself."""
        self._put(row - 1, column - 1, value, cell_format)

    def write_blank(self, row: int, column: int, cell_format: Any) -> None:
        """An empty cell with a look of its own (`format_of`), written straight away: what the
        analyst types into it takes that look (its alignment)."""
        self.worksheet.write_blank(row - 1, column - 1, None, cell_format)

    def write_values(self, row: int, values: Sequence[Any]) -> None:
        """Write a row of plain values (no look of their own) straight away, from column 1: what
        `write` and `flush` do for such cells, without holding them."""
        self.flush()
        index = row - 1
        cells: list[tuple[int, Any]] = []
        for column, value in enumerate(values):
            if value is None or value == "":
                continue
            if not isinstance(value, (int, float)) or not math.isfinite(value):  # bool is an int
                value = fit_text(str(value))
            cells.append((column, value))
        if not (isinstance(self.worksheet, RowsWorksheet) and self.worksheet.write_plain_row(index, cells)):
            for column, value in cells:
                self._put(index, column, value, None)
        self.rows_written = max(self.rows_written, row)

    def _write(self, cell: Cell) -> None:
        row, column, value = cell.row - 1, cell.column - 1, cell.value
        if value == "":
            value = None  # an empty text is an empty cell, as a reader would type it
        cell_format = self._formats.get(cell.font, cell.fill, cell.alignment, cell.number_format)
        if cell.merge_to is not None and cell.merge_to > cell.column:
            # the span first (blank, in this cell's look), then this cell's own value over its first cell
            self.worksheet.merge_range(row, column, row, cell.merge_to - 1, None, cell_format)
        if cell.formula is not None:
            self.worksheet.write_formula(row, column, cell.formula, cell_format, value)
            return
        if cell.link is not None and value is not None and self._links < MAX_LINKS \
                and not (isinstance(value, str) and len(value) > MAX_LINKED_TEXT):
            self._links += 1
            location, tooltip = cell.link
            self.worksheet.write_url(row, column, f"internal:{location}", cell_format,
                                     value if isinstance(value, str) else "", fit_tooltip(tooltip))
            if isinstance(value, str):
                return
        if value is None:
            if cell_format is not None:
                self.worksheet.write_blank(row, column, None, cell_format)
        else:
            self._put(row, column, value, cell_format)

    def _put(self, row: int, column: int, value: Any, cell_format: Any) -> None:
        """A text, truth value, number or datetime into a cell, rows and columns counted from 0."""
        worksheet = self.worksheet
        if isinstance(value, str):
            worksheet.write_string(row, column, value, cell_format)
        elif isinstance(value, bool):
            worksheet.write_boolean(row, column, value, cell_format)
        elif isinstance(value, (int, float)):
            worksheet.write_number(row, column, value, cell_format)
        else:  # a datetime: its number format is set by the caller
            worksheet.write_datetime(row, column, value, cell_format)


def write(ws: Sheet, row: int, column: int, value: Any, *, where_full: str = "") -> Cell:
    """Put a value into a cell: numbers as numbers, everything else as safe text (never a formula,
    whatever it starts with)."""
    cell = ws.cell(row, column)
    if value is None:
        return cell
    if isinstance(value, bool):
        cell.value = value
    elif isinstance(value, (int, float)):
        cell.value = value if math.isfinite(value) else str(value)
    else:
        cell.value = fit_text(str(value), where_full=where_full)
    return cell


class Book:
    """The workbook being written: its sheets, in the order they were added, and their formats."""

    def __init__(self, workbook: Workbook):
        self.workbook = workbook
        self.formats = styles.Formats(workbook)
        self.sheets: list[Sheet] = []

    def add_sheet(self, name: str, *, hidden: bool = False) -> Sheet:
        worksheet = self.workbook.add_worksheet(name, worksheet_class=worksheet_class())
        sheet = Sheet(self.workbook, worksheet, self.formats)
        if hidden:
            sheet.worksheet.hide()
        self.sheets.append(sheet)
        return sheet

    def flush(self) -> None:
        """Write what every sheet still holds (the sheets kept until finished)."""
        for sheet in self.sheets:
            sheet.flush()
