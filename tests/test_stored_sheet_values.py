"""The hidden sheets of a stored run read back as the values written, in their cells."""

from __future__ import annotations

import xlsxwriter

from qareport.runs import read_sheets


def test_stored_sheets_read_back_from_cell_a1_with_empty_cells_as_none_and_whole_numbers_as_ints(tmp_path):
    path = tmp_path / "stored.xlsx"
    workbook = xlsxwriter.Workbook(str(path))
    sheet = workbook.add_worksheet("qareport_run")
    sheet.write_row(1, 1, ["key", 3.0, 0.1, 1e300, True, "", "text"])  # column A and row 1 left empty
    sheet.write_number(2, 3, -0.0)
    sheet.hide()
    workbook.add_worksheet("Overview")
    workbook.close()
    got = read_sheets(path, ["qareport_run", "absent"])
    assert list(got) == ["qareport_run"]
    rows = got["qareport_run"]
    assert rows[0] == (None,) * 8
    assert rows[1] == (None, "key", 3, 0.1, 1e300, True, None, "text")
    assert type(rows[1][2]) is int and type(rows[1][4]) is float
    assert rows[2] == (None, None, None, 0, None, None, None, None)


def test_a_stored_text_longer_than_a_cell_is_spread_over_cells_that_each_fit_and_gathered_back_whole(tmp_path):
    from qareport.runs import PART, PART_LINES, gather_row, spread_row
    from qareport.workbook.cells import fit_text

    header = ("key", "value", "reason")
    long_text = "x" * (2 * PART + 5)
    many_lines = "\n".join(f"line {number}" for number in range(3 * PART_LINES))
    row = spread_row(["k", long_text, many_lines], header)
    assert len(row) > len(header) and all(fit_text(value) == value for value in row if isinstance(value, str))
    assert gather_row(row, header) == ["k", long_text, many_lines]
    assert spread_row(["k", 0.5, "short"], header) == ("k", 0.5, "short")  # a row that fits is as it was
    path = tmp_path / "spread.xlsx"
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    sheet = workbook.add_worksheet("qareport_changes")
    sheet.write_row(0, 0, header)
    sheet.write_row(1, 0, row)
    sheet.write_row(2, 0, ["short", 1, None])
    workbook.close()
    _, first, second = read_sheets(path, ["qareport_changes"])["qareport_changes"]
    assert gather_row(first, header) == ["k", long_text, many_lines]
    assert gather_row(second, header) == ["short", 1, None]
