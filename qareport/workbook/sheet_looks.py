"""The shared looks (`styles`) applied to a sheet: a header row in the header style and tall enough
for its titles, column widths, links within the workbook, the score colour scale, and the way every
sheet prints. The looks themselves are values in `styles`, which knows no sheet.
"""

from __future__ import annotations

from collections.abc import Mapping

from qareport.workbook import styles
from qareport.workbook.sheet import Cell, Sheet


def style_header_row(ws: Sheet, row: int, first_column: int, last_column: int) -> None:
    for column in range(first_column, last_column + 1):
        cell = ws.cell(row, column)
        cell.font, cell.fill, cell.alignment = styles.HEADER_FONT, styles.HEADER_FILL, styles.HEADER_ALIGNMENT


def set_widths(ws: Sheet, widths: Mapping[int, float]) -> None:
    for column, width in widths.items():
        ws.set_width(column, width)


def link(cell: Cell, sheet: str, coordinate: str, *, tooltip: str | None = None) -> Cell:
    """Make a cell jump to a place in this workbook (a `location` link: no external target)."""
    cell.link = (f"'{sheet}'!{coordinate}", tooltip)
    cell.font = styles.LINK_FONT
    return cell


def score_colour_scale(ws: Sheet, cell_range: str) -> None:
    """Red at 0, yellow at 0.5, green at 1: the same scale for every score in the workbook."""
    ws.worksheet.conditional_format(cell_range, {
        "type": "3_color_scale",
        "min_type": "num", "min_value": 0, "min_color": "#F8696B",
        "mid_type": "num", "mid_value": 0.5, "mid_color": "#FFEB84",
        "max_type": "num", "max_value": 1, "max_color": "#63BE7B",
    })


def fit_header_row(ws: Sheet, headers: list[str] | tuple[str, ...]) -> None:
    """A header row tall enough for its wrapped titles (at least two lines). Column widths must be
    set before: the height follows from them."""
    lines = max((styles.display_lines(str(header), ws.width(column))
                 for column, header in enumerate(headers, start=1) if header is not None), default=1)
    ws.set_height(1, styles.row_height_for(max(2, lines)))


def finish_table_sheet(ws: Sheet, *, columns: int, rows: int, freeze: str = "B2",
                       print_columns: int | None = None) -> None:
    """What every list sheet gets besides its header row (`fit_header_row`): frozen header (and id
    column), filters, and pages that print in landscape, one page wide, with the header on each.
    `print_columns`: print only the first columns (a sheet too wide to read on one page)."""
    ws.worksheet.freeze_panes(freeze)
    ws.worksheet.autofilter(0, 0, max(1, rows) - 1, max(1, columns) - 1)
    landscape(ws)
    ws.worksheet.repeat_rows(0)
    if print_columns is not None:
        ws.worksheet.print_area(0, 0, max(1, rows) - 1, max(1, print_columns) - 1)


def landscape(ws: Sheet, *, fit_page: bool = False) -> None:
    """Every sheet prints the same way: A4 landscape, one page wide (with `fit_page`, one page in
    all), the sheet's name and the page number in the footer."""
    ws.worksheet.set_landscape()
    ws.worksheet.set_paper(9)  # A4
    ws.worksheet.fit_to_pages(1, 1 if fit_page else 0)
    ws.worksheet.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.6)
    ws.worksheet.set_footer("&L&A&Rpage &P of &N")
