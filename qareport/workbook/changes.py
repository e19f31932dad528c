"""The Changes sheet: per case and metric, what moved since the baseline.

Regressions first (red), then improvements (green), then changed tests (amber: their definition
changed, so a different score is not a regression), then new and removed cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qareport.case_changes import CaseChange
from qareport.comparison import Comparison
from qareport.kinds import RunKinds
from qareport.workbook import sheet_looks, styles
from qareport.workbook.case_links import casefold_twins, link_by_id
from qareport.workbook.sheet import Sheet, write
from qareport.workbook.sheet_names import COMPARE, OVERVIEW

HEADERS = ("case id", "name", "change", "metric", "old value", "new value", "delta", "old status", "new status",
           "reason", "side by side")
COMPARE_TEXT = "compare"  # links to the case's block in the Compare sheet
NAME_WIDTH = 40
REASON_WIDTH = 60
NUMBER_COLUMNS = (5, 6, 7)

KIND_STYLES: dict[str, tuple[styles.Fill, styles.Font]] = {
    "regression": (styles.REGRESSION_FILL, styles.REGRESSION_FONT),
    "improvement": (styles.IMPROVEMENT_FILL, styles.IMPROVEMENT_FONT),
    "test changed": (styles.NEUTRAL_FILL, styles.NEUTRAL_FONT),
}


def _values(change: CaseChange, labels: RunKinds) -> tuple[Any, ...]:
    """One line: numbers only in the value columns (so they filter and pivot as numbers), the
    statuses in their own columns."""
    numeric = change.metric not in (None, "status")
    return (change.case_id, change.name, change.kind, labels.metric_label(change.metric) if change.metric else None,
            change.old if numeric else None, change.new if numeric else None,
            styles.as_shown(change.delta) if numeric else None,
            change.old_status, change.new_status, change.reason)


def write_changes(ws: Sheet, comparison: Comparison, overview_rows: Mapping[str, int],
                  compare_rows: Mapping[str, int] | None = None, *, labels: RunKinds) -> dict[str, int]:
    """Fill the sheet row by row; returns the first row of each case (for links from Overview and
    Summary). `compare_rows`: where each regressed or improved case's block starts in Compare;
    `labels`: the run's kinds, which name the metrics."""
    compare_rows = compare_rows or {}
    for column, header in enumerate(HEADERS, start=1):
        write(ws, 1, column, header)
    sheet_looks.style_header_row(ws, 1, 1, len(HEADERS))
    id_width = max([len(h) for h in HEADERS[:1]] + [len(c.case_id) for c in comparison.changes]) + 2
    sheet_looks.set_widths(ws, {1: min(40, max(12, id_width)), 2: NAME_WIDTH, 3: 14, 4: 18, 5: 9, 6: 9, 7: 9, 8: 11,
                                9: 11, 10: REASON_WIDTH, 11: 12})
    sheet_looks.fit_header_row(ws, HEADERS)
    ws.flush()
    first_rows: dict[str, int] = {}
    twins = casefold_twins(overview_rows)
    for row, change in enumerate(comparison.changes, start=2):
        first_rows.setdefault(change.case_id, row)
        fill_font = KIND_STYLES.get(change.kind)
        for column, value in enumerate(_values(change, labels), start=1):
            cell = write(ws, row, column, value)
            cell.alignment = styles.WRAP_TOP if column in (2, 10) else styles.TOP
            if column in NUMBER_COLUMNS and isinstance(value, (int, float)):
                cell.number_format = styles.DELTA_FORMAT if column == 7 else styles.SCORE_FORMAT
            if fill_font and 3 <= column <= 9:
                cell.fill, cell.font = fill_font
        if change.case_id in overview_rows:  # found by id: still right after Overview is sorted
            link_by_id(ws.cell(row, 1), OVERVIEW, change.case_id, row=overview_rows[change.case_id],
                       tooltip="this case in Overview", twins=twins)
        if change.kind in ("regression", "improvement") and change.case_id in compare_rows:
            # the Compare sheet is laid out, not sorted: its blocks stay where they were written
            sheet_looks.link(write(ws, row, 11, COMPARE_TEXT), COMPARE, f"A{compare_rows[change.case_id]}",
                             tooltip="last run's and this run's outputs side by side").alignment = styles.TOP
        lines = max(styles.display_lines(change.name, NAME_WIDTH),
                    styles.display_lines(change.reason or "", REASON_WIDTH))
        ws.set_height(row, styles.row_height_for(min(lines, 8)))
        ws.flush()
    last_row = len(comparison.changes) + 1
    if not comparison.changes:
        write(ws, 2, 1, f"No changes since the baseline ({comparison.baseline_source}).").font = styles.NOTE_FONT
        last_row = 2
    sheet_looks.finish_table_sheet(ws, columns=len(HEADERS), rows=last_row)
    return first_rows
