"""The Overview sheet: one row per test case, laid out for scanning.

A reader's eye goes left to right, so the columns come in the order of their questions:

    who and how it went    id (links to the case's block in Details), name, status
    how good               the headline score columns of every kind the run has
    why                    one line: what the case lost ("COUNTRY: missed MEX"), or what went wrong
    against last week      vs baseline (with a baseline; links to Changes)
    the analyst's review   review (a drop-down) and review note, carried over from the baseline
    how steady             attempts passed, spread, flaky (with attempts)
    the numbers behind     per-dimension recall and precision, secondary metrics
    the test               comments, tags / template, user message, error
    the long texts         details cells, answers, judge texts; then tokens and time

The rows come regressed cases first (most moved first), then the rest in file order (`review_order`).

The scanning part (id to review note) fits a 1600-pixel window: the name, reason and review note
columns give up width until it does (`column_widths`). Headers wrap only between words.

Rows stay compact: a row is as tall as its name, reason and note need, at least three lines when
it has long text and never more than `MAX_LINES` (120 points). A cell holds exactly its text (the
details cell exactly the template's output): copying, searching, filtering and exporting see what
was written. Every long text after the scanning part has a narrow `more` column beside it (every
week, so the column letters stay) that says how many of its lines are below the row's edge ("+13
lines", a number; empty when none are); the formula bar shows the whole text and the id leads to
Details. Only the scanning columns print; the long texts are for the screen and Details.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.case_table import REASON, REVIEW, REVIEW_NOTE, VS_BASELINE, CaseTable
from qareport.kinds import Column
from qareport.records import REVIEW_CHOICES
from qareport.report import Report
from qareport.workbook import sheet_looks, styles
from qareport.workbook.cells import fit_text
from qareport.workbook.sheet import Sheet, write
from qareport.workbook.sheet_names import CHANGES, DETAILS, FULL_TEXTS

NUMBER_FORMATS = styles.NUMBER_FORMATS
MAX_LINES = 8  # 120 points: a row never hides more than a few of its neighbours
MIN_LINES_WITH_TEXT = 3  # a row with long text shows at least its first three lines
MORE = "more"  # the header of the narrow column beside a text that goes on below its row's edge
MORE_FORMAT = '[=1]"+1 line";"+"0" lines"'  # the lines below the edge: a number, to sort and filter by
MORE_WIDTH = 9
SCREEN_UNITS = 186
"""Column-width units of a 1600-pixel LibreOffice window at 100 % (7.8 pixels each, measured on
its screenshots) less the row numbers, the scroll bar and a margin: the scanning part's budget."""
READING_FLOOR = 16  # the narrowest a name, reason or review note column gets to fit that budget
NUMBER_UNITS = 5  # "0.88", "1,234"
SIZING = frozenset({"name", "question", "name / question", REASON, REVIEW_NOTE, "comments"})
"""The wrapped columns whose text decides a row's height; any other wrapped text may go on below its edge."""


def overview_columns(report: Report) -> list[Column]:
    """The columns for this run, in scanning order (`case_table.overview_columns`), as the report
    computed them."""
    return list(report.overview.columns)


@dataclass(frozen=True, slots=True)
class _Grid:
    """The sheet's plan: the cells' values as written, and where each column and `more` column goes."""

    columns: tuple[Column, ...]
    table: list[Sequence[Any]]  # taken from the end as the rows are written
    widths: list[float]
    heights: list[int]
    hidden: list[dict[int, int]]  # per row: lines below its edge, by column (from 0)
    slots: list[tuple[int, bool]]  # (column, is its `more` column), in sheet order
    headers: list[str]
    order: list[int]  # the report's cases (by index) in the order the rows show them (`review_order`)

    def position(self, header: str) -> int | None:
        return self.headers.index(header) + 1 if header in self.headers else None


def write_overview(
    ws: Sheet,
    report: Report,
    *,
    details_rows: Mapping[str, int] | None = None,
    change_rows: Mapping[str, int] | None = None,
    cut_texts: list[tuple[str, str, str]] | None = None,
) -> OverviewLayout:
    """Fill the sheet row by row with the report's case values (`Report.overview`); returns where
    each case landed (for links from other sheets).

    The column widths, the rows' heights and which texts go on below their row's edge (and get a
    `more` column) follow from the texts and are needed before the first row is written.

    A text longer than a cell holds (32,767 characters) is cut with a marker pointing to the Full
    texts sheet; `cut_texts` receives (case id, column, full text) for that sheet.
    """
    grid = _plan(report, cut_texts)
    _write_headers(ws, grid)
    rows = _write_rows(ws, report, grid, details_rows or {}, change_rows or {})
    last_row = max(1, len(report.results) + 1)
    review_column = grid.position(REVIEW) or 0
    change_column = grid.position(VS_BASELINE)
    _finish(ws, report, grid, last_row)
    return OverviewLayout(rows, ws.cell(1, review_column).column_letter,
                          ws.cell(1, change_column).column_letter if change_column else None, last_row)


def _plan(report: Report, cut_texts: list[tuple[str, str, str]] | None) -> _Grid:
    """The values as cells hold them, and the layout that follows from them."""
    table = _cell_values(report.overview, [result.case.id for result in report.results], cut_texts)
    order = review_order(report)
    table = [table[index] for index in order]
    columns = report.overview.columns
    widths, heights, hidden = _layout(columns, table)
    beside = more_columns(columns)
    slots = [(index, more) for index in range(len(columns)) for more in (False, True)
             if not more or index in beside]
    headers = [MORE if more else columns[index].header for index, more in slots]
    return _Grid(columns, table, widths, heights, hidden, slots, headers, order)


def review_order(report: Report) -> list[int]:
    """The rows' order for the review: the regressed cases first (most moved first), then the rest
    in the order of their files, so what the analyst must look at is on the first screen. The ids
    and the links find a case wherever it is (`case_links`), and a re-sorted sheet reads back the same."""
    regressed = ([movement.case_id for movement in report.comparison.moved("regression")]
                 if report.comparison is not None else [])
    index_of: dict[str, int] = {}
    for index, result in enumerate(report.results):
        index_of.setdefault(result.case.id, index)
    first = list(dict.fromkeys(index_of[case_id] for case_id in regressed if case_id in index_of))
    chosen = set(first)
    return first + [index for index in range(len(report.results)) if index not in chosen]


def _cell_values(overview: CaseTable, case_ids: Sequence[str],
                 cut_texts: list[tuple[str, str, str]] | None) -> list[Sequence[Any]]:
    """The report's values as a cell holds them: a non-finite number as text, a text within a cell's
    limit (the cut ones go to `cut_texts`), an empty text as no value. A row none of whose values
    changes is the report's own (not a copy: the sheet holds every row until it is written)."""
    table: list[Sequence[Any]] = []
    for case_id, row in zip(case_ids, overview.values):
        values = []
        for column, value in zip(overview.columns, row):
            if isinstance(value, float) and not math.isfinite(value):
                value = str(value)  # as `write` would store it: text, measured as text
            if isinstance(value, str):
                fitted = fit_text(value, where_full=f"the {FULL_TEXTS} sheet") or None
                if fitted != value and fitted is not None and cut_texts is not None:
                    cut_texts.append((case_id, column.header, value))
                value = fitted
            values.append(value)
        table.append(row if all(held is value for held, value in zip(row, values)) else values)
    return table


def _write_headers(ws: Sheet, grid: _Grid) -> None:
    for position, header in enumerate(grid.headers, start=1):
        write(ws, 1, position, header)
    sheet_looks.style_header_row(ws, 1, 1, len(grid.headers))
    sheet_looks.set_widths(ws, {position: MORE_WIDTH if more else grid.widths[index]
                                for position, (index, more) in enumerate(grid.slots, start=1)})
    sheet_looks.fit_header_row(ws, grid.headers)
    ws.flush()


def _write_rows(ws: Sheet, report: Report, grid: _Grid, details_rows: Mapping[str, int],
                change_rows: Mapping[str, int]) -> dict[str, int]:
    """Every case's row; returns each case's first row."""
    status_column = grid.position("status") or 0
    change_column = grid.position(VS_BASELINE)
    typed = {grid.position(REVIEW), grid.position(REVIEW_NOTE)}  # what the analyst types sits at the top
    # the look of each column's ordinary cells; the cells with a look of their own (the linked id, the
    # status fill, the vs-baseline fill and link) are held and written at the row's flush
    looks = [ws.format_of(styles.WRAP_TOP if c.wrap else styles.TOP, NUMBER_FORMATS[c.format] if c.format else None)
             for c in grid.columns]
    more_look = ws.format_of(styles.TOP, MORE_FORMAT)
    held = {1, status_column, change_column}
    rows: dict[str, int] = {}
    grid.table.reverse()  # taken from the end as the rows are written: a written row's values can go
    for row, result in enumerate((report.results[index] for index in grid.order), start=2):
        values, below = grid.table.pop(), grid.hidden[row - 2]
        rows.setdefault(result.case.id, row)
        for position, (index, more) in enumerate(grid.slots, start=1):
            if more:
                if index in below:
                    ws.write_now(row, position, below[index], more_look)
            elif values[index] is None:
                if position in typed:
                    ws.write_blank(row, position, looks[index])
                # else an empty cell stays out of the file, styles and all: 10,000 rows add up
            elif position not in held:  # made writable above (texts fitted, numbers finite), as `write` would
                ws.write_now(row, position, values[index], looks[index])
            else:
                _hold(ws, row, position, grid.columns[index], values[index])
        ws.cell(row, status_column).fill = styles.STATUS_FILLS.get(result.status, styles.STATUS_FILLS["invalid"])
        _link_row(ws, row, result.case.id, change_column, details_rows, change_rows)
        ws.set_height(row, grid.heights[row - 2] * styles.LINE_HEIGHT_POINTS)
        ws.flush()
    return rows


def _hold(ws: Sheet, row: int, position: int, column: Column, value: Any) -> None:
    """A cell with a look of its own, written at the row's flush."""
    cell = ws.cell(row, position)
    cell.value = value
    if column.format:
        cell.number_format = NUMBER_FORMATS[column.format]
    cell.alignment = styles.WRAP_TOP if column.wrap else styles.TOP


def _link_row(ws: Sheet, row: int, case_id: str, change_column: int | None, details_rows: Mapping[str, int],
              change_rows: Mapping[str, int]) -> None:
    """The id leads to the case in Details; the vs-baseline verdict to it in Changes, coloured by its first kind."""
    if case_id in details_rows:
        sheet_looks.link(ws.cell(row, 1), DETAILS, f"A{details_rows[case_id]}", tooltip="this case in Details")
    if change_column and case_id in change_rows:
        change = ws.cell(row, change_column)
        sheet_looks.link(change, CHANGES, f"A{change_rows[case_id]}", tooltip="this case in Changes")
        kind = str(change.value or "").split(",")[0]
        if kind in CHANGE_STYLES:
            change.fill, change.font = CHANGE_STYLES[kind]


def _finish(ws: Sheet, report: Report, grid: _Grid, last_row: int) -> None:
    """The score columns' colour scales, the review's drop-down, and what prints (who, how good,
    why, the review)."""
    if report.results:
        for position, (index, more) in enumerate(grid.slots, start=1):
            if grid.columns[index].score and not more:
                letter = ws.cell(1, position).column_letter
                sheet_looks.score_colour_scale(ws, f"{letter}2:{letter}{last_row}")
        letter = ws.cell(1, grid.position(REVIEW) or 0).column_letter
        ws.worksheet.data_validation(f"{letter}2:{letter}{last_row}", {
            "validate": "list", "source": review_choices(report), "ignore_blank": True,
            "error_type": "warning", "error_title": "review",  # a warning: what is typed is kept
            "error_message": styles.shorten("Choose one of: " + ", ".join(REVIEW_CHOICES) + ", or 'judge wrong: "
                                            "METRIC[, METRIC]' (keep what you typed with OK).", 255),
        })
    sheet_looks.finish_table_sheet(ws, columns=len(grid.headers), rows=last_row, freeze="C2",
                                   print_columns=grid.position(REVIEW_NOTE))


LIST_LIMIT = 255  # characters a drop-down's inline list holds (Excel refuses the file beyond it)


def review_choices(report: Report) -> list[str]:
    """The drop-down's choices: `REVIEW_CHOICES`, and with a judge `judge wrong: <metric>` for each judged
    metric of the run (after `judge wrong`), as many as the list holds. Any other form (several
    metrics) is typed, and kept: the validation only warns."""
    choices = list(REVIEW_CHOICES)
    at = choices.index("judge wrong") + 1
    named = [f"judge wrong: {item.metric}" for item in (report.agreement.this_run if report.agreement else ())]
    for choice in named:
        if len(",".join([*choices, choice])) + 2 > LIST_LIMIT:
            break
        choices.insert(at, choice)
        at += 1
    return choices


@dataclass(frozen=True, slots=True)
class OverviewLayout:
    """Where things landed: each case's row, and the columns other sheets count over."""

    rows: dict[str, int]
    review_column: str
    change_column: str | None
    last_row: int


def _layout(columns: Sequence[Column],
            table: Sequence[Sequence[Any]]) -> tuple[list[float], list[int], list[dict[int, int]]]:
    """The columns' widths, each row's lines and each row's lines below its edge by column (from 0)."""
    widths = column_widths(columns, table)
    heights: list[int] = []
    hidden: list[dict[int, int]] = []
    for values in table:
        text_lines = _text_lines(columns, values, widths)
        lines = _row_lines(columns, text_lines)
        heights.append(lines)
        hidden.append({index: need - lines for index, need in text_lines.items() if need > lines})
    return widths, heights, hidden


def more_columns(columns: Sequence[Column]) -> set[int]:
    """The columns (from 0) that have a `more` column beside them: every wrapped text after the
    scanning part, whether or not a text of this run goes on below its row's edge, so the column
    letters are the same every week. The scanning part's texts (name, reason, review note) set their
    row's height and go on below it only past `MAX_LINES`; a `more` column there would take its width
    from the reading columns on every row for the sake of a rare row."""
    scanning = [column.header for column in columns].index(REVIEW_NOTE) + 1
    return {index for index, column in enumerate(columns) if column.wrap and index >= scanning}


def column_widths(columns: Sequence[Column], table: Sequence[Sequence[Any]]) -> list[float]:
    """Each column's width, in characters: as wide as its content and its header's longest word
    (a header never breaks inside a word), a wrapped text within its reading width; then the
    reading columns of the scanning part (name, reason, review note) give up width, down to a
    floor, until that part fits one screen (`SCREEN_UNITS`)."""
    need = [styles.header_units(column.header) for column in columns]
    # a column whose need reached the most it gets is measured no further, and a line too short to
    # be wider than the need so far is not measured: the same widths, without weighing every letter
    most = [_most_width(column) for column in columns]
    for values in table:
        for index, value in enumerate(values):
            if isinstance(value, str):
                if need[index] < most[index]:
                    need[index] = max(need[index], _longest_line_units(value, beyond=need[index] - 1) + 1)
            elif isinstance(value, (int, float)):
                need[index] = max(need[index], NUMBER_UNITS)
    headers = [column.header for column in columns]
    review, note = headers.index(REVIEW), headers.index(REVIEW_NOTE)
    need[review] = max(need[review], max(styles.text_units(c) for c in REVIEW_CHOICES) + styles.BUTTON_UNITS)
    need[note] = max(need[note], columns[note].width)  # room to type a note
    widths = [_width(column, units) for column, units in zip(columns, need)]
    reading = [index for index in range(note + 1) if columns[index].wrap]
    fixed = sum(widths[index] for index in range(note + 1) if index not in reading)
    wanted = sum(widths[index] for index in reading)
    room = SCREEN_UNITS - fixed
    if wanted > room:
        share = max(0.0, room) / wanted
        for index in reading:
            widths[index] = max(READING_FLOOR, math.floor(widths[index] * share))
    return widths


def _width(column: Column, need: float) -> float:
    """A column's width for what it needs to show, within the most it gets (`_most_width`):
    numbers and words whole."""
    return min(_most_width(column), max(math.ceil(need), 8 if column.wrap else 7))


def _most_width(column: Column) -> float:
    """The widest a column gets, whatever it needs: a wrapped text its reading width, a number
    column no limit."""
    if column.wrap:
        return column.width
    return math.inf if column.format is not None else max(column.width, 40)


def _longest_line_units(text: str, *, beyond: float = 0.0) -> float:
    """The width of the text's widest line, when it is wider than `beyond` (else at most `beyond`)."""
    shortest = beyond / styles.WIDEST_CHARACTER_UNITS  # a line of at most this many letters is not wider
    return max((styles.text_units(line) for line in text.split("\n") if len(line) > shortest), default=0.0)


def _text_lines(columns: Sequence[Column], values: Sequence[Any], widths: Sequence[float]) -> dict[int, int]:
    """The display lines each wrapped text of a row needs, by column (from 0)."""
    return {index: styles.display_lines(value, widths[index])
            for index, (column, value) in enumerate(zip(columns, values))
            if column.wrap and isinstance(value, str)}


def _row_lines(columns: Sequence[Column], text_lines: Mapping[int, int]) -> int:
    """How many lines a row gets: what its name, reason and note need, at least enough to show the
    start of a long text, never more than MAX_LINES."""
    need, has_long = 1, False
    for index, lines in text_lines.items():
        column = columns[index]
        if column.header in SIZING:
            need = max(need, lines)
        elif lines > 1:
            has_long = True
    if has_long:
        need = max(need, MIN_LINES_WITH_TEXT)
    return min(MAX_LINES, need)


CHANGE_STYLES = {
    "regression": (styles.REGRESSION_FILL, styles.REGRESSION_FONT),
    "improvement": (styles.IMPROVEMENT_FILL, styles.IMPROVEMENT_FONT),
    "test changed": (styles.NEUTRAL_FILL, styles.NEUTRAL_FONT),
}
