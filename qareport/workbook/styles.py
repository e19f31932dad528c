"""The few styles every sheet shares, so the workbook looks like one document.

A cell's look is four independent parts, as in a spreadsheet's own style dialog: its font, its
fill, its alignment and its number format. Each part is a frozen record; setting one part of a
cell leaves the others as they were. `Formats` turns each combination in use into one XlsxWriter
format, once per workbook.

These are values, and measures of text (widths, wrapped lines, row heights): this module knows no
sheet. Applying a look to a sheet (its header row, widths, links, print setup) is `sheet_looks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xlsxwriter.format import Format
    from xlsxwriter.workbook import Workbook


@dataclass(frozen=True, slots=True)
class Font:
    bold: bool = False
    italic: bool = False
    size: float | None = None  # None: the workbook's default (11 points)
    color: str | None = None  # "RRGGBB"
    underline: bool = False


@dataclass(frozen=True, slots=True)
class Fill:
    """A solid background."""

    color: str  # "RRGGBB"


@dataclass(frozen=True, slots=True)
class Alignment:
    wrap: bool = False
    vertical: str | None = None  # "top", "center"
    horizontal: str | None = None  # "right"


@dataclass(frozen=True, slots=True)
class Style:
    """A cell's whole look: what one XlsxWriter format holds."""

    font: Font | None = None
    fill: Fill | None = None
    alignment: Alignment | None = None
    number_format: str | None = None

    def format_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.font is not None:
            font = self.font
            options.update({key: value for key, value in (
                ("bold", font.bold), ("italic", font.italic), ("font_size", font.size),
                ("font_color", font.color and f"#{font.color}"), ("underline", 1 if font.underline else None),
            ) if value})
        if self.fill is not None:
            options.update(pattern=1, bg_color=f"#{self.fill.color}")
        if self.alignment is not None:
            if self.alignment.wrap:
                options["text_wrap"] = True
            if self.alignment.vertical:
                options["valign"] = {"center": "vcenter"}.get(self.alignment.vertical, self.alignment.vertical)
            if self.alignment.horizontal:
                options["align"] = self.alignment.horizontal
        if self.number_format:
            options["num_format"] = self.number_format
        return options


class Formats:
    """One XlsxWriter format per style in use (a workbook holds at most 64,000).

    A cell's parts are nearly always the shared constants below, so they are looked up first by
    identity (cheap for a million cells), then by value; the identity table keeps the parts it
    has seen alive, so an id is never reused for another part."""

    def __init__(self, workbook: Workbook):
        self._workbook = workbook
        self._by_value: dict[Style, Format | None] = {Style(): None}
        self._by_identity: dict[tuple[int, int, int, str | None], tuple[Format | None, tuple[Any, ...]]] = {}

    def get(self, font: Font | None, fill: Fill | None, alignment: Alignment | None,
            number_format: str | None) -> Format | None:
        if font is None and fill is None and alignment is None and number_format is None:
            return None
        key = (id(font), id(fill), id(alignment), number_format)
        found = self._by_identity.get(key)
        if found is None:
            style = Style(font, fill, alignment, number_format)
            made = self._by_value.get(style, False)
            if made is False:
                made = self._by_value[style] = self._workbook.add_format(style.format_options())
            found = self._by_identity[key] = (made, (font, fill, alignment))
        return found[0]


HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = Fill("305496")
HEADER_ALIGNMENT = Alignment(wrap=True, vertical="center")
TITLE_FONT = Font(bold=True, size=14, color="1F3864")
SECTION_FONT = Font(bold=True, size=12, color="1F3864")
NOTE_FONT = Font(italic=True, color="595959")
LINK_FONT = Font(color="0563C1", underline=True)
WRAP_TOP = Alignment(wrap=True, vertical="top")
TOP = Alignment(vertical="top")
LEFT = Alignment(horizontal="left")
CENTRED_LINE = Alignment(vertical="center")

SCORE_FORMAT = "0.00"
PARTIAL_SCORE_FORMAT = '0.00"*"'  # a judged mean over only some of its cases (a note says so); still a number
PERCENT_FORMAT = "0.0%"
INTEGER_FORMAT = "#,##0"
SECONDS_FORMAT = "0.0"
COST_FORMAT = "$#,##0.0000"
NUMBER_FORMATS = {"score": SCORE_FORMAT, "integer": INTEGER_FORMAT, "seconds": SECONDS_FORMAT, "cost": COST_FORMAT}
"""The number format of each `kinds.CellFormat`."""
DELTA_FORMAT = "+0.00;-0.00;0.00"


def as_shown(value: float | None, digits: int = 2) -> float | None:
    """A change that shows as zero at `digits` decimals is zero: never "−0.00" in a cell, never a
    rounding residue such as 8e-17 in its value. Other values are kept whole (they filter and sum)."""
    if value is None:
        return None
    return 0.0 if round(value, digits) == 0 else value
DATETIME_FORMAT = "yyyy-mm-dd hh:mm"

# Excel's own "bad" and "good" cell styles, so the colours read the way analysts already know.
REGRESSION_FILL = Fill("FFC7CE")
REGRESSION_FONT = Font(color="9C0006")
IMPROVEMENT_FILL = Fill("C6EFCE")
IMPROVEMENT_FONT = Font(color="006100")
NEUTRAL_FILL = Fill("FFEB9C")
NEUTRAL_FONT = Font(color="9C5700")
BOLD = Font(bold=True)
VERDICT_FONT = Font(bold=True, size=12, color="1F3864")
VERDICT_ALARM_FONT = Font(bold=True, size=12, color="9C0006")

STATUS_FILLS = {
    "success": Fill("E2EFDA"),
    "error": Fill("F8CBAD"),
    "missing": Fill("FFE699"),
    "invalid": Fill("D9D9D9"),
}

LINE_HEIGHT_POINTS = 15.0
MAX_ROW_HEIGHT = 409.0  # Excel's limit
DEFAULT_WIDTH = 8.43  # a column's width when none is set, in characters


def row_height_for(lines: int) -> float:
    return min(MAX_ROW_HEIGHT, max(1, lines) * LINE_HEIGHT_POINTS)


def display_lines(text: str, width: float) -> int:
    """How many lines a wrapped cell needs at this column width, erring on the tall side: words
    wrap whole, and a clipped line is worse than a little white space."""
    per_line = _per_line(width)
    # most lines are shorter than the cell is wide: no word can reach the edge, one line each
    return sum(1 if len(line) <= per_line else wrapped_lines(line, per_line) for line in str(text).split("\n"))


def wrapped_lines(line: str, per_line: int) -> int:
    """The lines one line of text (without breaks) takes when its words wrap at `per_line`."""
    lines, used = 1, 0
    for word in line.split(" "):
        lines, used = _after_word(lines, used, len(word), per_line)
    return lines


def _per_line(width: float) -> int:
    """The characters a line of a wrapped cell of this width holds."""
    return max(1, int(width * 1.05) - 1)


def _after_word(lines: int, used: int, length: int, per_line: int) -> tuple[int, int]:
    """The count of wrapped lines (lines, characters on the last line) after one more word."""
    if used and used + 1 + length > per_line:
        lines, used = lines + 1, 0
    used += length + (1 if used else 0)
    if used > per_line:  # a word longer than the line breaks anywhere
        wraps = (used - 1) // per_line
        lines, used = lines + wraps, used - wraps * per_line
    return lines, used


# Advance widths of Calibri 11 (and Carlito, its metric twin) in digit widths: the unit of a column's
# width. Letters not listed count as wide as a digit; bold adds about 4 %.
_NARROW = dict.fromkeys("ijl|!.,:;'", 0.47) | dict.fromkeys("frtI()[]/ -\"", 0.62) | dict.fromkeys("sczJ", 0.8)
_WIDE = dict.fromkeys("mw", 1.5) | dict.fromkeys("MW", 1.73) | dict.fromkeys("DGHNOQUC", 1.26) | {"_": 1.0}
CHARACTER_WIDTHS = {**_NARROW, **_WIDE}
WIDEST_CHARACTER_UNITS = max(CHARACTER_WIDTHS.values())
BUTTON_UNITS = 3.0  # the filter button of a header cell, and the cell's padding: room a header's text never gets
PADDING_UNITS = 1.5  # a cell's padding alone


def text_units(text: str, *, bold: bool = False) -> float:
    """The width of a line of text in Calibri 11, in column-width units (a digit's width)."""
    width = sum(CHARACTER_WIDTHS.get(character, 1.0) for character in text)
    return width * 1.04 if bold else width


def header_units(header: str, *, filter_button: bool = True) -> float:
    """The narrowest column in which a header wraps only between words, beside its filter button
    (LibreOffice keeps the button's room free on every line of the header) when it has one."""
    longest = max((text_units(word, bold=True) for word in header.split()), default=0.0)
    return longest + (BUTTON_UNITS if filter_button else PADDING_UNITS)


def shorten(text: str, limit: int) -> str:
    """One line of at most `limit` characters, ending in an ellipsis when cut."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: max(1, limit - 1)].rstrip() + "…"
