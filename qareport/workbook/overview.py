"""The Overview sheet: one row per test case, with the columns of the kinds of target present."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from qareport.comparison import Comparison
from qareport.kinds import CellFormat, Column
from qareport.records import USAGE_FIELDS, CaseResult
from qareport.report import Report
from qareport.workbook import styles
from qareport.workbook.sheet_names import FULL_TEXTS
from qareport.workbook.cells import fit_text, write
from qareport.workbook.sheet import Sheet

NUMBER_FORMATS = {"score": styles.SCORE_FORMAT, "integer": styles.INTEGER_FORMAT, "seconds": styles.SECONDS_FORMAT}
USAGE_COLUMNS: dict[str, tuple[str, float, CellFormat]] = {  # header, width, format of each usage field
    "input_tokens": ("input tokens", 12, "integer"),
    "output_tokens": ("output tokens", 12, "integer"),
    "total_tokens": ("total tokens", 12, "integer"),
    "elapsed_sec": ("elapsed sec", 10, "seconds"),
}


def _response_number(field: str) -> Callable[[CaseResult], float | None]:
    def value(result: CaseResult) -> float | None:
        return getattr(result.response, field) if result.response is not None else None

    return value


def _user_messages(result: CaseResult) -> str:
    if len(result.case.turns) == 1:
        return result.case.turns[0].user_message
    return "\n".join(f"Turn {t.number}: {t.user_message}" for t in result.case.turns)


def overview_columns(report: Report, *, templates_dir: str | None) -> list[Column]:
    """The columns for this run: who the case is, then those of every kind the run has, then usage."""
    results = report.results
    case_kinds = {r.case.kind for r in results}
    has_tokens = any(r.response and r.response.total_tokens is not None for r in results)

    only = next(iter(case_kinds)) if len(case_kinds) == 1 else None
    name_header = {"conversation": "name", "qa": "question"}.get(only, "name") if only else "name / question"
    group_header = {"conversation": "tags", "qa": "template"}.get(only, "group") if only else "tags / template"
    columns = [
        Column("id", lambda r: r.case.id, 24),
        Column(name_header, lambda r: r.case.name, 40, wrap=True),
        Column(group_header, lambda r: ", ".join(r.case.groups), 18, wrap=True),
    ]
    if "conversation" in case_kinds:
        columns.append(Column("user message", _user_messages, 40, wrap=True))
    columns += [
        Column("status", lambda r: r.status, 10),
        Column("error", lambda r: r.error, 30, wrap=True),
    ]
    for kind in report.kinds:
        columns += kind.overview_columns(results, templates_dir=templates_dir)
    if has_tokens:
        columns += [Column(USAGE_COLUMNS[field][0], _response_number(field), USAGE_COLUMNS[field][1],
                           USAGE_COLUMNS[field][2]) for field in USAGE_FIELDS]
    return columns


def write_overview(
    ws: Sheet,
    report: Report,
    *,
    templates_dir: str | None = None,
    details_rows: Mapping[str, int] | None = None,
    change_rows: Mapping[str, int] | None = None,
    cut_texts: list[tuple[str, str, str]] | None = None,
) -> dict[str, int]:
    """Fill the sheet row by row; returns the row of each case id (for links from other sheets).

    With a comparison, a `vs baseline` column says how each case changed and links to its first
    line in the Changes sheet; the id links to the case's rows in Details.

    The column widths follow from the longest texts and are needed before the first row is
    written, so the values of every row are computed first (values only: the rendered details
    are the costly part, and are computed once).

    A text too long for a cell is cut with a marker pointing to the Full texts sheet; `cut_texts`
    receives (case id, column, full text) for that sheet.
    """
    results, comparison = report.results, report.comparison
    columns = overview_columns(report, templates_dir=templates_dir)
    if comparison is not None:
        verdicts = _change_verdicts(comparison)
        columns.insert(_index_of(columns, "status"), Column("vs baseline", lambda r: verdicts.get(r.case.id), 16))
    for index, column in enumerate(columns, start=1):
        write(ws, 1, index, column.header)
    styles.style_header_row(ws, 1, 1, len(columns))
    status_column = _index_of(columns, "status")
    change_column = _index_of(columns, "vs baseline") if comparison is not None else None
    longest = [max(len(word) for word in c.header.split()) + 3 for c in columns]
    table: list[list[Any]] = []
    for result in results:
        values = []
        for index, column in enumerate(columns):
            value = column.value(result)
            if isinstance(value, float) and not math.isfinite(value):
                value = str(value)  # as `write` would store it: text, measured as text
            if isinstance(value, str):
                fitted = fit_text(value, where_full=f"the {FULL_TEXTS} sheet") or None
                if fitted != value and fitted is not None and cut_texts is not None:
                    cut_texts.append((result.case.id, column.header, value))
                value = fitted
                if value is not None:
                    longest[index] = max(longest[index], _longest_line(value) + 2)
            elif isinstance(value, (int, float)):
                longest[index] = max(longest[index], 8)
            values.append(value)
        table.append(values)
    # widths that fit: as wide as the content, but never wider than the column's reading width
    styles.set_widths(ws, {i: min(c.width, max(longest[i - 1], 8)) if c.wrap else min(max(c.width, 40), longest[i - 1])
                           for i, c in enumerate(columns, start=1)})
    styles.fit_header_row(ws, [c.header for c in columns])
    ws.flush()

    rows: dict[str, int] = {}
    table.reverse()  # taken from the end as the rows are written: a written row's values can go
    for row, result in enumerate(results, start=2):
        values = table.pop()
        rows.setdefault(result.case.id, row)
        tallest = 1
        for index, (column, value) in enumerate(zip(columns, values), start=1):
            if value is None:
                continue  # an empty cell stays out of the file, styles and all: 10,000 rows add up
            cell = write(ws, row, index, value)
            if column.format:
                cell.number_format = NUMBER_FORMATS[column.format]
            cell.alignment = styles.WRAP_TOP if column.wrap else styles.TOP
            if column.wrap and isinstance(cell.value, str):
                tallest = max(tallest, styles.display_lines(cell.value, column.width))
        ws.cell(row, status_column).fill = styles.STATUS_FILLS.get(result.status, styles.STATUS_FILLS["invalid"])
        if details_rows and result.case.id in details_rows:
            styles.link(ws.cell(row, 1), "Details", f"A{details_rows[result.case.id]}",
                        tooltip="this case in Details")
        if change_column and change_rows and result.case.id in change_rows:
            change = ws.cell(row, change_column)
            styles.link(change, "Changes", f"A{change_rows[result.case.id]}", tooltip="this case in Changes")
            kind = str(change.value or "").split(",")[0]
            if kind in CHANGE_STYLES:
                change.fill, change.font = CHANGE_STYLES[kind]
        ws.set_height(row, styles.row_height_for(tallest))
        ws.flush()
    last_row = max(1, len(results) + 1)
    for index, column in enumerate(columns, start=1):
        if column.score and len(results):
            letter = ws.cell(1, index).column_letter
            styles.score_colour_scale(ws, f"{letter}2:{letter}{last_row}")
    styles.finish_table_sheet(ws, columns=len(columns), rows=last_row, fit_width=False)  # too wide to shrink
    return rows


CHANGE_STYLES = {
    "regression": (styles.REGRESSION_FILL, styles.REGRESSION_FONT),
    "improvement": (styles.IMPROVEMENT_FILL, styles.IMPROVEMENT_FONT),
    "test changed": (styles.NEUTRAL_FILL, styles.NEUTRAL_FONT),
}


def _change_verdicts(comparison: Comparison) -> dict[str, str]:
    """Per case: its kinds of change in display order ("regression, improvement")."""
    kinds: dict[str, list[str]] = {}
    for change in comparison.changes:
        seen = kinds.setdefault(change.case_id, [])
        if change.kind not in seen:
            seen.append(change.kind)
    return {case_id: ", ".join(found) for case_id, found in kinds.items()}


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _index_of(columns: Sequence[Column], header: str) -> int:
    return next(i for i, c in enumerate(columns, start=1) if c.header == header)
