"""The few styles every sheet shares, so the workbook looks like one document."""

from __future__ import annotations

from openpyxl.cell.cell import Cell
from openpyxl.formatting.rule import ColorScaleRule
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.hyperlink import Hyperlink
from openpyxl.worksheet.worksheet import Worksheet

HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="305496")
TITLE_FONT = Font(bold=True, size=14, color="1F3864")
SECTION_FONT = Font(bold=True, size=12, color="1F3864")
NOTE_FONT = Font(italic=True, color="595959")
LINK_FONT = Font(color="0563C1", underline="single")
WRAP_TOP = Alignment(wrap_text=True, vertical="top")
TOP = Alignment(vertical="top")
THIN_BOTTOM = Border(bottom=Side(style="thin", color="BFBFBF"))

SCORE_FORMAT = "0.00"
PERCENT_FORMAT = "0.0%"
INTEGER_FORMAT = "#,##0"
SECONDS_FORMAT = "0.0"
COST_FORMAT = "$#,##0.0000"
DELTA_FORMAT = "+0.00;-0.00;0.00"
HEADLINE_DELTA_FORMAT = "+0.000;-0.000;0.000"  # a headline moves by less than 0.01 and still matters
DATETIME_FORMAT = "yyyy-mm-dd hh:mm"

# Excel's own "bad" and "good" cell styles, so the colours read the way analysts already know.
REGRESSION_FILL = PatternFill("solid", fgColor="FFC7CE")
REGRESSION_FONT = Font(color="9C0006")
IMPROVEMENT_FILL = PatternFill("solid", fgColor="C6EFCE")
IMPROVEMENT_FONT = Font(color="006100")
NEUTRAL_FILL = PatternFill("solid", fgColor="FFEB9C")
NEUTRAL_FONT = Font(color="9C5700")
BOLD = Font(bold=True)

STATUS_FILLS = {
    "success": PatternFill("solid", fgColor="E2EFDA"),
    "error": PatternFill("solid", fgColor="F8CBAD"),
    "missing": PatternFill("solid", fgColor="FFE699"),
    "invalid": PatternFill("solid", fgColor="D9D9D9"),
}

LINE_HEIGHT_POINTS = 15.0
MAX_ROW_HEIGHT = 409.0  # Excel's limit


def style_header_row(ws: Worksheet, row: int, first_column: int, last_column: int) -> None:
    for column in range(first_column, last_column + 1):
        cell = ws.cell(row=row, column=column)
        cell.font = HEADER_FONT
        cell.fill = HEADER_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="center")


def set_widths(ws: Worksheet, widths: dict[int, float]) -> None:
    for column, width in widths.items():
        ws.column_dimensions[get_column_letter(column)].width = width


def row_height_for(lines: int) -> float:
    return min(MAX_ROW_HEIGHT, max(1, lines) * LINE_HEIGHT_POINTS)


def link(cell: Cell, sheet: str, coordinate: str, *, tooltip: str | None = None) -> Cell:
    """Make a cell jump to a place in this workbook (a `location` link: no external target)."""
    cell.hyperlink = Hyperlink(ref=cell.coordinate, location=f"'{sheet}'!{coordinate}", tooltip=tooltip)
    cell.font = LINK_FONT
    return cell


def score_colour_scale(ws: Worksheet, cell_range: str) -> None:
    """Red at 0, yellow at 0.5, green at 1: the same scale for every score in the workbook."""
    ws.conditional_formatting.add(
        cell_range,
        ColorScaleRule(start_type="num", start_value=0, start_color="F8696B",
                       mid_type="num", mid_value=0.5, mid_color="FFEB84",
                       end_type="num", end_value=1, end_color="63BE7B"),
    )


def finish_table_sheet(ws: Worksheet, *, columns: int, rows: int, freeze: str = "B2", fit_width: bool = True) -> None:
    """What every list sheet gets: frozen header (and id column), filters, a header row tall
    enough for its wrapped titles, and pages that print in landscape with the header on each.
    Column widths must be set before: the header height follows from them."""
    last = get_column_letter(max(1, columns))
    ws.freeze_panes = freeze
    ws.auto_filter.ref = f"A1:{last}{max(1, rows)}"
    lines = max(
        (display_lines(str(cell.value), ws.column_dimensions[cell.column_letter].width or 8.43)
         for cell in ws[1][:columns] if cell.value is not None),
        default=1,
    )
    ws.row_dimensions[1].height = row_height_for(max(2, lines))
    landscape(ws, fit_width=fit_width)
    ws.print_title_rows = "1:1"


def landscape(ws: Worksheet, *, fit_width: bool = False, fit_page: bool = False) -> None:
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    if fit_width or fit_page:
        ws.sheet_properties.pageSetUpPr.fitToPage = True
        ws.page_setup.fitToWidth = 1
        ws.page_setup.fitToHeight = 1 if fit_page else 0


def display_lines(text: str, width: float) -> int:
    """How many lines a wrapped cell needs at this column width, erring on the tall side: words
    wrap whole, and a clipped line is worse than a little white space."""
    per_line = max(1, int(width * 1.05) - 1)
    total = 0
    for line in str(text).split("\n"):
        used, lines = 0, 1
        for word in line.split(" "):
            if used and used + 1 + len(word) > per_line:
                lines, used = lines + 1, 0
            used += len(word) + (1 if used else 0)
            while used > per_line:  # a word longer than the line breaks anywhere
                lines, used = lines + 1, used - per_line
        total += lines
    return total


def shorten(text: str, limit: int) -> str:
    """One line of at most `limit` characters, ending in an ellipsis when cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: max(1, limit - 1)].rstrip() + "…"
