"""The Compare sheet: for every regressed or improved case, last run's and this run's outputs side
by side (the indicator selection, the steps called, the answer), one click from the case's line in
Changes.

One block per case, in the order of the Changes sheet:

    c540d28c-…  (link to Overview)   show_me_gdp_and_gdp_per_capita…   regression
    what moved                        macro precision 1.00 → 0.83        extra INDICATOR NGDP_R
    turn 1                            show me GDP and GDP per capita in US dollars for Brazil
    indicator selection               dataset IMF.WEO …                  dataset IMF.WEO …
    steps called                      …                                  …
    answer                            …                                  …

Column B is the baseline, column C this run. A part that did not change is grey, so the eye goes
to what did. The text is whole as the runs kept it (`side_by_side`); a row is as tall as its
longer side, up to Excel's limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qareport.kinds.steps.called import readable_steps
from qareport.side_by_side import SideBySide
from qareport.workbook import sheet_looks, styles
from qareport.workbook.case_links import casefold_twins, link_by_id
from qareport.workbook.sheet import Sheet, write
from qareport.workbook.sheet_names import OVERVIEW

LABEL_WIDTH, SIDE_WIDTH = 20, 70
MAX_LINES = 26  # a row this tall (about 400 points) is Excel's limit; the cell holds the rest
NOT_KEPT = "(not kept: the baseline was written by a qareport version that did not keep outputs)"
UNCHANGED_FONT = styles.Font(color="808080")
KIND_FONTS = {"regression": styles.REGRESSION_FONT, "improvement": styles.IMPROVEMENT_FONT}


def write_compare(ws: Sheet, pairs: Sequence[SideBySide], *, old_label: str, new_label: str,
                  overview_rows: Mapping[str, int]) -> dict[str, int]:
    """Fill the sheet; returns the first row of each case's block (for links from Changes)."""
    for column, header in enumerate(("case", old_label, new_label), start=1):
        write(ws, 1, column, header)
    sheet_looks.style_header_row(ws, 1, 1, 3)
    sheet_looks.set_widths(ws, {1: LABEL_WIDTH, 2: SIDE_WIDTH, 3: SIDE_WIDTH})
    ws.worksheet.freeze_panes(1, 1)
    ws.flush()
    first_rows: dict[str, int] = {}
    row = 2
    twins = casefold_twins(overview_rows)
    for pair in pairs:
        first_rows.setdefault(pair.case_id, row)
        row = _write_block(ws, row, pair, overview_rows, twins) + 1  # a blank row between cases
    if not pairs:
        write(ws, 2, 1, "No case regressed or improved since the baseline.").font = styles.NOTE_FONT
    sheet_looks.landscape(ws)
    ws.worksheet.repeat_rows(0)
    return first_rows


def _write_block(ws: Sheet, row: int, pair: SideBySide, overview_rows: Mapping[str, int],
                 twins: frozenset[str]) -> int:
    """One case's block from `row`; returns the row after it."""
    head = write(ws, row, 1, pair.case_id)
    head.alignment = styles.WRAP_TOP  # the whole id, over as many lines as it needs
    link_by_id(head, OVERVIEW, pair.case_id, row=overview_rows.get(pair.case_id), tooltip="this case in Overview",
               twins=twins)
    name = write(ws, row, 2, pair.name or pair.case_id)
    name.font, name.alignment = styles.BOLD, styles.WRAP_TOP
    kind = write(ws, row, 3, pair.kind)
    kind.font, kind.fill = styles.BOLD, styles.REGRESSION_FILL if pair.kind == "regression" else styles.IMPROVEMENT_FILL
    lines = max(styles.display_lines(pair.case_id, LABEL_WIDTH), styles.display_lines(pair.name, SIDE_WIDTH))
    if lines > 1:
        ws.set_height(row, styles.row_height_for(min(lines, MAX_LINES)))
    row += 1
    row = _line(ws, row, "what moved", pair.what, pair.reason or "", font=KIND_FONTS.get(pair.kind))
    if pair.old_status != pair.new_status:
        row = _line(ws, row, "status", pair.old_status or "", pair.new_status or "")
    if "error" in pair.old or "error" in pair.new:
        row = _line(ws, row, "error", str(pair.old.get("error") or ""), str(pair.new.get("error") or ""))
    if not pair.old and pair.old_status == "success":
        row = _line(ws, row, "outputs", NOT_KEPT, "", font=styles.NOTE_FONT)
    turns = pair.turns()
    for number, message, old, new in turns:
        if len(turns) > 1 or message:
            cell = write(ws, row, 1, f"turn {number}")
            cell.font, cell.alignment = styles.BOLD, styles.TOP
            text = write(ws, row, 2, message)
            text.font, text.alignment = styles.NOTE_FONT, styles.WRAP_TOP
            text.merge_to = 3
            _fit_row(ws, row, message, "", width=2 * SIDE_WIDTH)
            row += 1
        for part, label in pair.parts:
            before, after = _part(old, part), _part(new, part)
            if before is None and after is None:
                continue
            same = before == after
            row = _line(ws, row, label, before or "", after or "", font=UNCHANGED_FONT if same else None)
    ws.flush()
    return row


def _part(turn: Mapping[str, Any], part: str) -> str | None:
    value = turn.get(part)
    if value is None:
        return None
    return readable_steps(str(value)) if part == "steps" else str(value)  # a baseline's may be in the older form


def _line(ws: Sheet, row: int, label: str, old: str, new: str, *, font: styles.Font | None = None) -> int:
    cell = write(ws, row, 1, label)
    cell.font, cell.alignment = styles.BOLD, styles.TOP
    for column, text in ((2, old), (3, new)):
        side = write(ws, row, column, text or None)
        side.alignment = styles.WRAP_TOP
        if font is not None:
            side.font = font
    _fit_row(ws, row, old, new)
    return row + 1


def _fit_row(ws: Sheet, row: int, old: str, new: str, *, width: float = SIDE_WIDTH) -> None:
    lines = max(styles.display_lines(old or "", width), styles.display_lines(new or "", width))
    if lines > 1:
        ws.set_height(row, styles.row_height_for(min(lines, MAX_LINES)))
