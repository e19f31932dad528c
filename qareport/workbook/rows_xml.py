"""The one place qareport reaches into XlsxWriter's internals: a faster writer of a finished row.

In constant-memory mode XlsxWriter turns each cell of a finished row into XML through general code
(the cell's type found by its class name, attributes gathered in a list, three regular expressions
run on every text). Writing a 10,000-case workbook through XlsxWriter's public API alone took 12.7
CPU seconds, against 8.0 with this module (`benchmarks/bench_write.py`). `RowsWorksheet` writes
the text and number cells of a finished row in one step each, running an escape only on a text
that holds what it escapes, and hands every other cell (blanks, truth values, formulas, dates, a
text shaped like a rich string) and every row without cells to XlsxWriter's own writers. Cells
are put into the sheet through XlsxWriter's public writers (`write_string`, `write_number`,
`write_url`, ...), except a row of plain texts and numbers that `write_plain_row` writes whole.

It overrides one private method (`Worksheet._write_single_row`), calls the ones that method calls
(`_write_row`, `_write_cell`) and `_check_dimensions`, and reads the state they read (`table`,
`previous_row`, `row_info`, `col_info`, `xls_strmax`, the file handle). So `worksheet_class()`
hands it out only when the installed XlsxWriter has that shape (3.3 has it; the 3.2 series keeps
cells in other records) and XlsxWriter's own `Worksheet` otherwise: the same workbook, written
slower. `tests/test_rows_xml.py` fails loudly when a 3.3 or later XlsxWriter lacks the shape, and
writes the same cells through both writers to compare the files byte for byte; pyproject.toml
keeps XlsxWriter below its next major.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from xlsxwriter import worksheet as xlsxwriter_worksheet
from xlsxwriter.utility import xl_rowcol_to_cell_fast
from xlsxwriter.worksheet import Worksheet
from xlsxwriter.xmlwriter import re_control_chars_1, re_control_chars_2

# XlsxWriter's records of a text and a number cell (3.3 names; absent in 3.2, which names them otherwise)
CellStringTuple: Any = getattr(xlsxwriter_worksheet, "CellStringTuple", None)
CellNumberTuple: Any = getattr(xlsxwriter_worksheet, "CellNumberTuple", None)
_INTERNALS = ("_write_single_row", "_write_row", "_write_cell", "_check_dimensions")
_STATE = ("table", "previous_row", "row_info", "col_info", "xls_strmax")  # and `fh`, opened when writing


def fast_rows_supported() -> bool:
    """Whether the installed XlsxWriter has the internals `RowsWorksheet` replaces and reads."""
    if CellStringTuple is None or CellNumberTuple is None:
        return False
    if CellStringTuple._fields != ("string", "format") or CellNumberTuple._fields != ("number", "format"):
        return False
    if not all(callable(getattr(Worksheet, name, None)) for name in _INTERNALS):
        return False
    probe = Worksheet()
    return all(hasattr(probe, name) for name in _STATE)


def worksheet_class() -> type[Worksheet]:
    """The worksheet class to add sheets with: `RowsWorksheet` when the installed XlsxWriter has
    the shape it was written for, else XlsxWriter's own (the same workbook, written slower)."""
    return RowsWorksheet if _FAST_ROWS else Worksheet


class RowsWorksheet(Worksheet):  # type: ignore[misc]  # xlsxwriter has no type information
    """An XlsxWriter worksheet (constant-memory mode) whose rows of texts and numbers become XML in
    one pass each."""

    previous_row: int  # the row whose cells wait in `table` (set by XlsxWriter)
    _direct_row: int = -1  # the last row `write_plain_row` wrote

    def write_plain_row(self, row: int, cells: Sequence[tuple[int, str | float]]) -> bool:
        """Write a row of texts and numbers without a format of their own straight to the file, as
        `_write_single_row` would write them, without holding them as cells first; the row is then
        done: nothing else may be written into it. False, having written nothing, when the row is
        not after every row written so far, or a value is one XlsxWriter writes its own way (a
        truth value, a number that is not finite, a text shaped like a rich string or longer than
        half a cell's limit)."""
        if not cells or (row <= self.previous_row and (self.table or row < self.previous_row
                                                        or row == self._direct_row)):
            return False
        if any(isinstance(value, str) and len(value) > self.xls_strmax // 2 for _, value in cells):
            return False
        xml = _row_cells_xml(self, row, {column: _PlainCell(value) for column, value in cells})
        columns = [column for column, _ in cells]
        if xml is None or self._check_dimensions(row, min(columns)) or self._check_dimensions(row, max(columns)):
            return False
        if row > self.previous_row:
            self._write_single_row(row)  # the row before, as writing any cell of this one would
        self.previous_row = self._direct_row = row
        self._write_row(row, None, self.row_info.get(row))
        self.fh.write(xml)
        return True

    def _write_single_row(self, current_row_num: int = 0) -> None:
        row = self.previous_row
        cells = self.table.get(row)
        if row == self._direct_row:
            if cells:
                raise RuntimeError(f"row {row + 1} was written whole; a cell cannot be added to it")
            self.previous_row = current_row_num
            return
        if not cells:
            super()._write_single_row(current_row_num)  # a row of attributes or comments only
            return
        self.previous_row = current_row_num
        self._write_row(row, None, self.row_info.get(row))
        row_format = _row_format(self, row)
        parts: list[str] = []
        for column in sorted(cells):
            xml = _cell_xml(self, row, column, cells[column], row_format)
            if xml is not None:
                parts.append(xml)
                continue
            self.fh.write("".join(parts))
            parts.clear()
            self._write_cell(row, column, cells[column])  # XlsxWriter's own cell writer
        parts.append("</row>")
        self.fh.write("".join(parts))
        self.table.clear()


class _PlainCell:
    """A value given to `write_plain_row`, read as XlsxWriter's cell records are read."""

    __slots__ = ("number", "string")
    format = None

    def __init__(self, value: str | float) -> None:
        self.string = self.number = value


def _row_cells_xml(sheet: Any, row: int, cells: dict[int, _PlainCell]) -> str | None:
    """The cells of a row given whole and its closing tag; None when one of them is a value
    XlsxWriter writes its own way."""
    row_format = _row_format(sheet, row)
    parts = [_cell_xml(sheet, row, column, cells[column], row_format) for column in sorted(cells)]
    if None in parts:
        return None
    return "".join(parts) + "</row>"  # type: ignore[arg-type]  # no None left


def _row_format(sheet: Any, row: int) -> Any:
    row_info = sheet.row_info.get(row)
    return row_info.row_format if row_info is not None else None


def _cell_xml(sheet: Any, row: int, column: int, cell: Any, row_format: Any) -> str | None:
    """A text or finite number cell as XlsxWriter writes it; None for any other cell, and for a
    text XlsxWriter writes as a rich string."""
    kind = type(cell)
    if kind is _PlainCell:
        kind = CellStringTuple if isinstance(cell.string, str) else CellNumberTuple
        if kind is CellNumberTuple and type(cell.number) is bool:
            return None
    if kind is CellStringTuple:
        text = _inline_string(cell.string)
        if text is None:
            return None
        return (f'<c r="{xl_rowcol_to_cell_fast(row, column)}"'
                f'{_style(sheet, cell.format, row_format, column)} t="inlineStr">{text}</c>')
    if kind is CellNumberTuple and math.isfinite(cell.number):
        return (f'<c r="{xl_rowcol_to_cell_fast(row, column)}"'
                f'{_style(sheet, cell.format, row_format, column)}><v>{cell.number:.16G}</v></c>')
    return None


def _style(sheet: Any, cell_format: Any, row_format: Any, column: int) -> str:
    """The cell's style attribute, chosen as XlsxWriter chooses it: the cell's format, else the
    row's, else the column's."""
    if cell_format:
        return f' s="{cell_format._get_xf_index()}"'
    if row_format:
        return f' s="{row_format._get_xf_index()}"'
    column_info = sheet.col_info.get(column)
    if column_info is not None and column_info.column_format is not None:
        return f' s="{column_info.column_format._get_xf_index()}"'
    return ""


def _inline_string(string: str) -> str | None:
    """The `<is>` element of a text, escaped as XlsxWriter escapes it; None for a text it writes
    as a rich string (one that starts with "<r>" and ends with "</r>")."""
    if "_x" in string:  # a literal _xHHHH_ is escaped so that Excel does not read it as a character
        string = re_control_chars_1.sub(r"_x005F\1", string)
    if not string.isprintable():  # control characters (and U+FFFE, U+FFFF) become _xHHHH_
        string = re_control_chars_2.sub(lambda match: f"_x{ord(match.group(1)):04X}_", string)
        string = string.replace("\ufffe", "_xFFFE_").replace("\uffff", "_xFFFF_")
    if string.startswith("<r>") and string.endswith("</r>"):
        return None
    preserve = ' xml:space="preserve"' if string[:1].isspace() or string[-1:].isspace() else ""
    if "&" in string or "<" in string or ">" in string:
        string = string.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<is><t{preserve}>{string}</t></is>"


_FAST_ROWS = fast_rows_supported()
