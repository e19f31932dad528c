"""The few styles every sheet shares, so the workbook looks like one document."""

from __future__ import annotations

from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
from openpyxl.utils import get_column_letter
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


def width_for(texts: list[str], *, minimum: float = 8, maximum: float = 60) -> float:
    """A column width that fits the longest line of the given texts, within bounds."""
    longest = max((len(line) for text in texts for line in str(text).split("\n")), default=0)
    return max(minimum, min(maximum, longest + 2))
