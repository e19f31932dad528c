"""Titled tables on the Statistics sheet: `TableWriter` writes them one below the other and sizes
the columns to their headers' words, their numbers and their texts; notes split into lines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from qareport.workbook import sheet_looks, styles
from qareport.workbook.sheet import Cell, Sheet, write


class TableWriter:
    """Writes titled tables one below the other and remembers where the next one starts."""

    def __init__(self, ws: Sheet, widths: Mapping[int, float]):
        self.ws = ws
        self.row = 1
        self.widths = widths
        self.longest: dict[int, int] = {}  # the longest text written by table() per column
        self.needed: dict[int, float] = {}  # what each column's headers (whole words) and numbers need
        self.texts: list[Cell] = []  # table cells holding text, to wrap once widths are known
        self.rows_cells: dict[int, list[Cell]] = {}  # the table cells with a value, per row
        self.header_rows: dict[int, Sequence[str]] = {}  # each table's header row, sized once widths are known

    def width(self, column: int) -> float:
        return self.widths.get(column, 8.43)

    def fitted_widths(self, *, maximum: float = 60) -> dict[int, float]:
        """The starting widths, widened to the longest table text (within `maximum`), to the longest
        word of every header above the column and to its widest number."""
        fitted = dict(self.widths)
        for column, need in self.needed.items():
            fitted[column] = max(fitted.get(column, MIN_WIDTH), math.ceil(need))
        for column, length in self.longest.items():
            fitted[column] = max(fitted.get(column, MIN_WIDTH), min(maximum, length + 2))
        return fitted

    def size_header_rows(self, widths: Mapping[int, float]) -> None:
        """Make each table's header row tall enough for its titles at the final widths."""
        for row, headers in self.header_rows.items():
            lines = max(styles.display_lines(str(h), widths.get(column, 8.43))
                        for column, h in enumerate(headers, start=1))
            self.ws.set_height(row, styles.row_height_for(lines))

    def wrap_long_texts(self, widths: Mapping[int, float]) -> None:
        """Wrap the table texts wider than their column, and make their rows tall enough."""
        for cell in self.texts:
            width = widths.get(cell.column, 8.43)
            if len(str(cell.value)) > width - 2:
                cell.alignment = styles.WRAP_TOP
                lines = styles.display_lines(str(cell.value), width)
                current = self.ws.height(cell.row) or styles.LINE_HEIGHT_POINTS
                self.ws.set_height(cell.row, max(current, styles.row_height_for(lines)))
                for neighbour in self.rows_cells.get(cell.row, ()):  # numbers beside a tall text: at its top
                    if neighbour is not cell:
                        neighbour.alignment = styles.TOP

    def title(self, text: str) -> None:
        write(self.ws, self.row, 1, text).font = styles.TITLE_FONT
        self.row += 2

    def section(self, text: str, note: str | None = None) -> None:
        """A section title, and its note in lines of at most `NOTE_UNITS`, one line a row: a long
        note never runs on to the right past the tables (a printed page would shrink to hold it)."""
        write(self.ws, self.row, 1, text).font = styles.SECTION_FONT
        self.row += 1
        for line in note_lines(note or ""):
            write(self.ws, self.row, 1, line).font = styles.NOTE_FONT
            self.row += 1

    def table(
        self, headers: Sequence[str], rows: Sequence[Sequence[Any]], formats: Sequence[str | None],
        *, overflow_last: bool = False,
    ) -> tuple[int, int]:
        """Returns the first and last data row (for charts). Titles of number columns align right,
        over their numbers. With `overflow_last`, the last column's text runs on to the right
        (a sentence) instead of widening the column."""
        for column, header in enumerate(headers, start=1):
            write(self.ws, self.row, column, header)
        sheet_looks.style_header_row(self.ws, self.row, 1, len(headers))
        for column, fmt in enumerate(formats, start=1):
            if fmt:
                self.ws.cell(self.row, column).alignment = NUMBER_HEADER
        for column, header in enumerate(headers, start=1):
            if header:
                self.needed[column] = max(self.needed.get(column, 0.0),
                                          styles.header_units(str(header), filter_button=False))
        self.header_rows[self.row] = tuple(headers)
        first = self.row + 1
        for offset, values in enumerate(rows, start=1):
            for column, value in enumerate(values, start=1):
                cell = write(self.ws, self.row + offset, column, value)
                if value is not None:
                    self.rows_cells.setdefault(cell.row, []).append(cell)
                fmt = formats[column - 1] if column - 1 < len(formats) else None
                if fmt and isinstance(value, (int, float)):
                    cell.number_format = fmt
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.needed[column] = max(self.needed.get(column, 0.0), _number_units(value, fmt))
                if isinstance(value, str) and not (overflow_last and column == len(values)):
                    self.longest[column] = max(self.longest.get(column, 0), len(value))
                    self.texts.append(cell)
        last = self.row + len(rows)
        self.row = last + 2
        return first, last



NUMBER_HEADER = styles.Alignment(wrap=True, vertical="center", horizontal="right")
NOTE_UNITS = 100  # the widest line of a section's note, in column-width units (italics run narrower)
MIN_WIDTH = 8


def note_lines(note: str, units: float = NOTE_UNITS) -> list[str]:
    """A note in lines of whole words, each at most `units` wide."""
    lines: list[str] = []
    for word in note.split():
        if lines and styles.text_units(f"{lines[-1]} {word}") <= units:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def _number_units(value: float, number_format: str | None) -> float:
    """The width of a number as its format shows it, with the cell's padding."""
    if number_format == styles.COST_FORMAT:
        shown = f"${value:,.4f}"
    elif number_format == styles.INTEGER_FORMAT:
        shown = f"{value:,.0f}"
    elif number_format == styles.SECONDS_FORMAT:
        shown = f"{value:,.1f}"
    else:
        shown = f"{value:,.2f}"
    return styles.text_units(shown) + 1.5
