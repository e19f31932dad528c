"""A worksheet that writes its rows' XML faster than XlsxWriter's general code: the same bytes.

In constant-memory mode XlsxWriter turns each cell of a finished row into XML through general
functions: the cell's type found by its class name, attributes gathered in a list, three regular
expressions run on every text. At a million cells that is a third of a large workbook's time.
`RowsWorksheet` writes the two kinds of cell nearly every row is made of, texts and numbers, in
one step each, and runs an escape only on a text that holds what it escapes; every other cell
(blanks, booleans, formulas, dates, a text shaped like a rich string) goes to XlsxWriter's own
cell writer, and so does every row without cells.

It also keeps the links of a written row compactly. XlsxWriter holds every link as an object of
nine attributes until the sheet is closed (about 470 bytes a link: two sheets of 50,000 linked
rows hold 45 MB); once a row is written, its links within the workbook are kept as (row, column,
location, tooltip, text) and written by XlsxWriter's own `<hyperlink>` writer at the close.

It replaces private methods of XlsxWriter's `Worksheet` (and `Sheet` calls its undecorated cell
writers), so `tests/test_rows_xml.py` writes the same cells through both and compares the files
byte for byte, and pyproject.toml allows only XlsxWriter 3.x (checked on 3.3.1).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

from xlsxwriter.url import UrlTypes
from xlsxwriter.utility import xl_rowcol_to_cell_fast
from xlsxwriter.worksheet import CellNumberTuple, CellStringTuple, Worksheet
from xlsxwriter.xmlwriter import re_control_chars_1, re_control_chars_2


class RowsWorksheet(Worksheet):  # type: ignore[misc]  # xlsxwriter has no type information
    """An XlsxWriter worksheet (constant-memory mode) whose text and number cells are written in
    one step each."""

    previous_row: int  # the row whose cells wait in `table` (set by XlsxWriter)
    _written_links: list[tuple[int, int, str, str, str]]  # (row, column, location, tooltip, text)

    _direct_row: int = -1  # the last row `write_plain_row` wrote

    def write_plain_row(self, row: int, cells: Sequence[tuple[int, str | float]]) -> bool:
        """Write a row of texts and numbers without a format of their own straight to the file, as
        `_write_single_row` would write them (no cell objects, no table); the row is then done:
        nothing else may be written into it. False, having written nothing, when the row is not
        after every row written so far, or a value is one XlsxWriter writes its own way (a truth
        value, a number that is not finite, a text shaped like a rich string or longer than half a
        cell's limit)."""
        if not cells or (row <= self.previous_row and (self.table or row < self.previous_row
                                                        or row == self._direct_row)):
            return False
        row_info = self.row_info.get(row)
        row_format = row_info.row_format if row_info is not None else None
        parts: list[str] = []
        for column, value in cells:
            if isinstance(value, str):
                text = _inline_string(value) if len(value) <= self.xls_strmax // 2 else None
                if text is None:
                    return False
                parts.append(_text_cell(row, column, self._style(None, row_format, column), text))
            elif type(value) is bool or not math.isfinite(value):
                return False
            else:
                parts.append(_number_cell(row, column, self._style(None, row_format, column), value))
        columns = [column for column, _ in cells]
        if self._check_dimensions(row, min(columns)) or self._check_dimensions(row, max(columns)):
            return False
        if row > self.previous_row:
            self._write_single_row(row)  # the row before, as writing any cell of this one would
        self.previous_row = self._direct_row = row
        self._write_row(row, None, row_info)
        parts.append("</row>")
        self.fh.write("".join(parts))
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
        self._keep_links_compact(row)
        self.previous_row = current_row_num
        row_info = self.row_info.get(row)
        self._write_row(row, None, row_info)
        row_format = row_info.row_format if row_info is not None else None
        parts: list[str] = []
        for column in sorted(cells):
            cell = cells[column]
            kind = type(cell)
            if kind is CellStringTuple:
                text = _inline_string(cell.string)
                if text is not None:
                    parts.append(_text_cell(row, column, self._style(cell.format, row_format, column), text))
                    continue
            elif kind is CellNumberTuple:
                parts.append(_number_cell(row, column, self._style(cell.format, row_format, column), cell.number))
                continue
            if parts:
                self.fh.write("".join(parts))
                parts.clear()
            self._write_cell(row, column, cell)
        parts.append("</row>")
        self.fh.write("".join(parts))
        self.table.clear()

    def _keep_links_compact(self, row: int) -> None:
        """The row's links within the workbook as tuples (see the module's docstring)."""
        links = self.hyperlinks.get(row)
        if not links or any(url._link_type is not UrlTypes.INTERNAL for url in links.values()):
            return  # a link out of the workbook takes a relationship: XlsxWriter writes it as it is
        if not hasattr(self, "_written_links"):
            self._written_links = []
        self._written_links += [(row, column, links[column]._link, links[column]._tip, links[column]._text)
                                for column in sorted(links)]
        del self.hyperlinks[row]

    def _write_hyperlinks(self) -> None:
        """XlsxWriter's `<hyperlinks>` element: every link in row and column order, the compact ones
        and the ones XlsxWriter still holds."""
        written = getattr(self, "_written_links", [])
        if not written:
            super()._write_hyperlinks()
            return
        held = [(row, column, self.hyperlinks[row][column]) for row in sorted(self.hyperlinks)
                for column in sorted(self.hyperlinks[row])]
        self._xml_start_tag("hyperlinks")
        for row, column, *link in heapq.merge(written, held, key=lambda item: (item[0], item[1])):
            if len(link) > 1:
                self._write_hyperlink_internal(row, column, _WrittenLink(*link))
                continue
            url = link[0]
            if url._link_type in (UrlTypes.URL, UrlTypes.EXTERNAL):  # as `Worksheet._write_hyperlinks`
                self.rel_count += 1
                self._write_hyperlink_external(row, column, self.rel_count, url)
                self.external_hyper_links.append(["/hyperlink", url._target(), "External"])
            else:
                self._write_hyperlink_internal(row, column, url)
        self._xml_end_tag("hyperlinks")
        self._written_links = []

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


class _WrittenLink:
    """What XlsxWriter's writer of a link within the workbook reads of its link object."""

    __slots__ = ("_link", "_text", "_tip")
    _link_type = UrlTypes.INTERNAL

    def __init__(self, location: str, tip: str, text: str) -> None:
        self._link, self._tip, self._text = location, tip, text


def _text_cell(row: int, column: int, style: str, text: str) -> str:
    """An inline-text cell; `text` is its `<is>` element (`_inline_string`)."""
    return f'<c r="{xl_rowcol_to_cell_fast(row, column)}"{style} t="inlineStr">{text}</c>'


def _number_cell(row: int, column: int, style: str, number: float) -> str:
    return f'<c r="{xl_rowcol_to_cell_fast(row, column)}"{style}><v>{number:.16G}</v></c>'


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
