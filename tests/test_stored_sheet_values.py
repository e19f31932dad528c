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
