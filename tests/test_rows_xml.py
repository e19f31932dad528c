"""The fast row writer writes exactly the bytes XlsxWriter's own writer does, cell for cell."""

from __future__ import annotations

import random
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from qareport.workbook import rows_xml
from qareport.workbook.rows_xml import RowsWorksheet

needs_the_row_writer = pytest.mark.skipif(
    not rows_xml.fast_rows_supported(), reason=f"XlsxWriter {xlsxwriter.__version__} is written by its own worksheet")

TEXTS = [
    "plain", "", " leading space", "trailing space ", "\tleading tab", "line one\nline two", "ends with newline\n",
    "a & b < c > d \"quoted\"", "_x0041_ looks like an escape", "_X0041_ upper case", "_x00zz_ not hex",
    "control \x01\x02\x1f and carriage\rreturn", "non-characters \ufffe \uffff", "no\u00a0break", "\u3000ideographic",
    "<r>looks rich</r>", "<r>half rich", "emoji 😀 and ünïcödé", "=1+1 a formula-like text", "x" * 5000,
    "\x1cseparator", "nbsp at end\u00a0", "\u2028line separator",
]
NUMBERS = [0, 1, -1, 0.1, 1 / 3, 1e-300, 1.7976931348623157e308, 123456789012345678, 2.5, -0.0, 10**15 + 0.5]


def _write(path: Path, worksheet_class: type | None) -> None:
    """Every kind of cell qareport writes, and the ones left to XlsxWriter, in rows of mixed cells
    with row heights, a row format, column formats and links."""
    rng = random.Random(11)
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    workbook.set_properties({"created": datetime(2026, 1, 1)})
    bold = workbook.add_format({"bold": True})
    wrap = workbook.add_format({"text_wrap": True, "valign": "top"})
    percent = workbook.add_format({"num_format": "0.00%"})
    date = workbook.add_format({"num_format": "yyyy-mm-dd"})
    worksheet = workbook.add_worksheet("cells", worksheet_class=worksheet_class)
    worksheet.set_column(3, 3, 12, percent)  # a column format for cells without one
    worksheet.set_row(2, 30, bold)  # a row format
    worksheet.set_row(5, 45)
    worksheet.set_row(7, 20)  # a row of attributes only
    row = 0
    for text in TEXTS:
        worksheet.write_string(row, 0, text)
        worksheet.write_string(row, 1, text, wrap)
        worksheet.write_number(row, 3, rng.choice(NUMBERS))
        worksheet.write_number(row, 4, rng.choice(NUMBERS), bold)
        row += 1 if row != 6 else 2
    worksheet.write_blank(row, 0, None, bold)
    worksheet.write_boolean(row, 1, True)
    worksheet.write_formula(row, 2, "=SUM(D1:D3)", None, 3)
    worksheet.write_url(row, 3, "internal:'cells'!A1", bold, "a link")
    worksheet.write_datetime(row, 4, datetime(2026, 11, 24, 6, 0), date)
    worksheet.write_string(row, 6, "after a gap")
    for number in range(row + 1, row + 200):  # many ordinary rows, skipping some
        if number % 7:
            worksheet.write_row(number, 0, [f"case-{number}", number * 0.25, "", f"text {number} & more"])
    links = workbook.add_worksheet("links", worksheet_class=worksheet_class)
    for number in range(300):  # rows of links, some with a tooltip, some with two links, one going out
        links.write_url(number, 2, f"internal:'cells'!A{number + 1}", None, f"case-{number}",
                        "this case in cells" if number % 3 else None)
        if number % 5 == 0:
            links.write_url(number, 0, f"internal:'cells'!B{number + 1}", None, f"{number} & <more>")
        if number == 150:
            links.write_url(number, 4, "https://example.com/a?b=c&d", None, "out of the workbook")
    links.write_url(300, 1, "internal:'cells'!A1", None, "left for the close")  # a row not yet written
    plain = workbook.add_worksheet("plain rows", worksheet_class=worksheet_class)
    plain.set_column(2, 2, 10, percent)
    plain.set_row(3, 40)  # a height set before its row is written
    plain.write_string(0, 0, "a header", bold)
    for number in range(1, 60):  # rows of plain values, some written whole (`write_plain_row`), some not
        cells = [(0, f"case-{number}"), (2, rng.choice(NUMBERS)), (3, rng.choice(TEXTS)), (5, number)]
        if number % 4 == 0:
            cells.append((6, True))  # a truth value: XlsxWriter's own writer
        if number % 9 == 0:
            cells.append((7, "<r>rich-looking</r>"))
        if worksheet_class is RowsWorksheet and plain.write_plain_row(number, cells):
            continue
        for column, value in cells:  # as `Sheet._put` writes them
            if isinstance(value, str):
                plain.write_string(number, column, value)
            elif isinstance(value, bool):
                plain.write_boolean(number, column, value)
            else:
                plain.write_number(number, column, value)
    plain.write_string(61, 1, "after the plain rows", wrap)
    hidden = workbook.add_worksheet("data", worksheet_class=worksheet_class)
    hidden.write_string(0, 0, "only sheet cell")
    hidden.hide()
    workbook.close()


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@needs_the_row_writer
def test_rows_are_written_byte_for_byte_as_xlsxwriter_writes_them(tmp_path):
    _write(tmp_path / "stock.xlsx", Worksheet)
    _write(tmp_path / "fast.xlsx", RowsWorksheet)
    stock, fast = _members(tmp_path / "stock.xlsx"), _members(tmp_path / "fast.xlsx")
    assert stock.keys() == fast.keys()
    for name in stock:
        assert fast[name] == stock[name], name
    sheet = stock["xl/worksheets/sheet1.xml"].decode()
    # the sample reaches the cases the fast writer handles itself and those it leaves to XlsxWriter
    for written in ('xml:space="preserve"', "_x005F_x0041_", "_x0001_", "_xFFFE_", "&amp; b &lt; c &gt;",
                    't="b"', "<f>SUM(D1:D3)</f>", "<r>looks rich</r>", 's="'):
        assert written in sheet, written
    assert sheet.count("<hyperlink ") == 1
    links = stock["xl/worksheets/sheet2.xml"].decode()
    assert links.count("<hyperlink ") == 362 and 'tooltip="this case in cells"' in links and "r:id=" in links


def test_the_row_writer_is_used_on_every_xlsxwriter_from_3_3_and_left_out_before():
    """A new XlsxWriter that moved the internals the row writer replaces fails here, loudly; the
    3.2 series, which keeps cells in other records, gets XlsxWriter's own worksheet."""
    version = tuple(int(part) for part in xlsxwriter.__version__.split(".")[:2])
    if version >= (3, 3):
        assert rows_xml.fast_rows_supported(), f"XlsxWriter {xlsxwriter.__version__} changed its row writer"
        assert rows_xml.worksheet_class() is RowsWorksheet
    else:
        assert rows_xml.worksheet_class() is Worksheet


@needs_the_row_writer
def test_a_row_written_whole_refuses_what_xlsxwriter_must_write_and_a_second_writing(tmp_path):
    workbook = xlsxwriter.Workbook(str(tmp_path / "plain.xlsx"), {"constant_memory": True})
    sheet = workbook.add_worksheet("plain", worksheet_class=RowsWorksheet)
    assert sheet.write_plain_row(1, [(0, "a"), (1, 2.5)])
    assert not sheet.write_plain_row(1, [(0, "again")])  # the same row twice
    assert not sheet.write_plain_row(0, [(0, "before")])  # a row above one written
    assert not sheet.write_plain_row(2, [(0, True)])  # a truth value
    assert not sheet.write_plain_row(2, [(0, float("nan"))])
    assert not sheet.write_plain_row(2, [(0, "<r>x</r>")])
    assert sheet.write_plain_row(2, [(3, "b")])
    sheet.write_string(2, 4, "into a row written whole")
    with pytest.raises(RuntimeError, match="row 3 was written whole"):
        sheet.write_string(3, 0, "the next row")  # writes the row before it: the cell added to row 3
    sheet.table.clear()
    workbook.close()
