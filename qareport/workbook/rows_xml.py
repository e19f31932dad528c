"""A worksheet that writes its rows' XML faster than XlsxWriter's general code: the same bytes.

In constant-memory mode XlsxWriter turns each cell of a finished row into XML through general
functions: the cell's type found by its class name, attributes gathered in a list, three regular
expressions run on every text. At a million cells that is a third of a large workbook's time.
`RowsWorksheet` writes the two kinds of cell nearly every row is made of, texts and numbers, in
one step each, and runs an escape only on a text that holds what it escapes; every other cell
(blanks, booleans, formulas, dates, a text shaped like a rich string) goes to XlsxWriter's own
cell writer, and so does every row without cells.

It replaces a private method of XlsxWriter's `Worksheet` (and `Sheet` calls its undecorated cell
writers), so `tests/test_rows_xml.py` writes the same cells through both and compares the files
byte for byte, and pyproject.toml allows only XlsxWriter 3.x (checked on 3.3.1).
"""

from __future__ import annotations

from typing import Any

from xlsxwriter.utility import xl_rowcol_to_cell_fast
from xlsxwriter.worksheet import CellNumberTuple, CellStringTuple, Worksheet
from xlsxwriter.xmlwriter import re_control_chars_1, re_control_chars_2


class RowsWorksheet(Worksheet):  # type: ignore[misc]  # xlsxwriter has no type information
    """An XlsxWriter worksheet (constant-memory mode) whose text and number cells are written in
    one step each."""

    previous_row: int  # the row whose cells wait in `table` (set by XlsxWriter)

    def _write_single_row(self, current_row_num: int = 0) -> None:
        row = self.previous_row
        cells = self.table.get(row)
        if not cells:
            super()._write_single_row(current_row_num)  # a row of attributes or comments only
            return
        self.previous_row = current_row_num
        row_info = self.row_info.get(row)
        if row_info is None:
            self._write_row(row, None)
        else:
            self._write_row(row, None, row_info)
        row_format = row_info.row_format if row_info is not None else None
        parts: list[str] = []
        for column in sorted(cells):
            cell = cells[column]
            kind = type(cell)
            if kind is CellStringTuple:
                text = _inline_string(cell.string)
                if text is not None:
                    parts.append(f'<c r="{xl_rowcol_to_cell_fast(row, column)}"'
                                 f'{self._style(cell.format, row_format, column)} t="inlineStr">{text}</c>')
                    continue
            elif kind is CellNumberTuple:
                parts.append(f'<c r="{xl_rowcol_to_cell_fast(row, column)}"'
                             f'{self._style(cell.format, row_format, column)}><v>{cell.number:.16G}</v></c>')
                continue
            if parts:
                self.fh.write("".join(parts))
                parts.clear()
            self._write_cell(row, column, cell)
        parts.append("</row>")
        self.fh.write("".join(parts))
        self.table.clear()

    def _style(self, cell_format: Any, row_format: Any, column: int) -> str:
        """The cell's style attribute, chosen as XlsxWriter chooses it: the cell's format, else the
        row's, else the column's."""
        if cell_format:
            return f' s="{cell_format._get_xf_index()}"'
        if row_format:
            return f' s="{row_format._get_xf_index()}"'
        column_info = self.col_info.get(column)
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
