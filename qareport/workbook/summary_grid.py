"""The Summary sheet's grid: its columns and widths, where its links lead, and `Block`, which writes
rows downwards in a fixed set of columns (the left half, A-L, and the right, N-O).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qareport.trend import parse_created
from qareport.workbook import sheet_looks, styles
from qareport.workbook.sheet import Cell, Sheet, write

CHANGE_KIND_COLUMN = "C"  # the Changes sheet's column of the kind of change

# the headline table's columns: metric, mean, interval, cases, not scored, last report, shared cases,
# last run, this run, change, its interval, vs noise
COLUMN_WIDTHS = {1: 22.0, 2: 8.0, 3: 11.0, 4: 7.0, 5: 9.0, 6: 10.0, 7: 7.0, 8: 8.0, 9: 8.0, 10: 8.0,
                 11: 13.0, 12: 19.0}
LEFT_COLUMNS = len(COLUMN_WIDTHS)  # A-L
KEY_COLUMN, VALUE_COLUMN = LEFT_COLUMNS + 2, LEFT_COLUMNS + 3  # N, O (M a narrow gap)
KEY_WIDTH, VALUE_WIDTH = 21.0, 46.0
WHAT_COLUMN, REASON_COLUMN = 2, 6  # B (to E) what moved or scored, F (to K) the reason
LINE_CHARS = int(sum(COLUMN_WIDTHS.values())) - 6  # a case's name, on a row of its own
WHAT_CHARS = int(sum(COLUMN_WIDTHS[c] for c in range(WHAT_COLUMN, REASON_COLUMN))) - 2
REASON_CHARS = int(sum(COLUMN_WIDTHS[c] for c in range(REASON_COLUMN, LEFT_COLUMNS + 1))) - 2
NOTE_CHARS = int(sum(COLUMN_WIDTHS.values()) * 1.2)  # italics run narrower than the column widths



@dataclass(frozen=True, slots=True)
class SummaryLinks:
    """Where the Summary's links lead: rows of cases in Overview, of changes in Changes, and the
    Overview columns the live review counts read."""

    overview_rows: Mapping[str, int]
    first_change_rows: Mapping[str, int]  # change kind -> first row on the Changes sheet
    problems_sheet: str | None = None
    review_column: str | None = None  # the Overview's column letters
    change_column: str | None = None
    last_overview_row: int = 1
    same_names: frozenset[str] = frozenset()  # names more than one listed case has (`names_shared_by_cases`)


def display_time(created: str) -> str:
    moment = parse_created(created)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else str(created)


class Block:
    """Writes rows downwards in a fixed set of columns."""

    def __init__(self, ws: Sheet, row: int, column: int):
        self.ws, self.row, self.column = ws, row, column
        self.first_row = row

    def cell(self, offset: int, value: Any, *, font: styles.Font | None = None,
             number_format: str | None = None) -> Cell:
        cell = write(self.ws, self.row, self.column + offset, value)
        if font is not None:
            cell.font = font
        if number_format and isinstance(value, (int, float)):
            cell.number_format = number_format
        return cell

    def section(self, title: str) -> Cell:
        if self.row > self.first_row:  # a blank line between sections
            self.row += 1
        cell = self.cell(0, title, font=styles.SECTION_FONT)
        self.row += 1
        return cell

    def header(self, *titles: str) -> None:
        for offset, title in enumerate(titles):
            if title:
                self.cell(offset, title)
        sheet_looks.style_header_row(self.ws, self.row, self.column, self.column + len(titles) - 1)
        for offset in range(len(titles)):  # one line: a title runs on over the empty header cells beside it
            self.ws.cell(self.row, self.column + offset).alignment = styles.CENTRED_LINE
        self.row += 1

    def note(self, text: str, *, chars: int = NOTE_CHARS) -> Cell:
        """A note in italics, split into lines that fit the block (no cell wraps)."""
        cell = None
        for line in textwrap.wrap(text, width=chars, break_on_hyphens=False) or [""]:
            cell = self.cell(0, line, font=styles.NOTE_FONT)
            self.row += 1
        assert cell is not None
        return cell
