"""Links that find their case by id, so they still lead to it after the analyst sorts or filters
the sheet they point into.

A plain link names a fixed cell ("Overview!A17"); once Overview is sorted by macro recall, row 17
holds another case. A link made here is a formula that looks the id up in the target sheet's id
column each time it is followed:

    =HYPERLINK("#'Overview'!A"&MATCH("c48d7624",'Overview'!$A:$A,0),"List all substations …")

written with its result (the text shown) as the cell's cached value, so mail previews, openpyxl and
any reader that does not calculate still show the text. MATCH reads `*`, `?` and `~` as wildcards
(Excel, and LibreOffice in .xlsx files), so those are escaped with `~`. Excel holds at most 255
characters in a text constant of a formula and MATCH looks up at most 255: an id longer than that
gets a plain link to its row instead (its tool tip cut to Excel's 255 characters, `sheet.fit_tooltip`).
MATCH also ignores case, so `q1` and `Q1`, two cases, would both find the first: an id that another
id equals but for case (`casefold_twins`) gets a plain link to its own row too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from qareport.workbook import sheet_looks, styles
from qareport.workbook.cells import clean_text
from qareport.workbook.sheet import Cell

MAX_LOOKUP = 255  # characters MATCH looks up, and a text constant of a formula holds
MAX_SHOWN = 255  # characters of the shown text kept in a formula (longer: a plain link)
CHUNK = 100  # characters per text constant: doubled quotes keep each within MAX_LOOKUP


def text_constant(text: str) -> str:
    """Text as formula constants: quoted, quotes doubled, long text joined from pieces with `&`."""
    pieces = [text[start:start + CHUNK] for start in range(0, len(text), CHUNK)] or [""]
    return "&".join('"' + piece.replace('"', '""') + '"' for piece in pieces)


def lookup_text(value: str) -> str:
    """A value MATCH finds exactly, its wildcards escaped."""
    return value.replace("~", "~~").replace("*", "~*").replace("?", "~?")


def link_formula(sheet: str, column: str, value: str, shown: str) -> str | None:
    """The formula of a link to the first row of `sheet` whose `column` holds `value`, showing
    `shown`; None when either is too long for a formula (then a plain link must do)."""
    wanted = lookup_text(clean_text(value))
    if len(wanted) > MAX_LOOKUP or len(shown) > MAX_SHOWN:
        return None
    quoted = sheet.replace("'", "''")
    target = f"\"#'{quoted}'!{column}\"&MATCH({text_constant(wanted)},'{quoted}'!${column}:${column},0)"
    return f"=HYPERLINK({target},{text_constant(shown)})"


def casefold_twins(ids: Iterable[str]) -> frozenset[str]:
    """The ids another id equals but for case ("q1" and "Q1"): MATCH cannot tell them apart."""
    seen: dict[str, str] = {}
    twins: set[str] = set()
    for case_id in ids:
        other = seen.setdefault(case_id.casefold(), case_id)
        if other != case_id:
            twins.update((other, case_id))
    return frozenset(twins)


def link_by_id(cell: Cell, sheet: str, value: str, *, column: str = "A", row: int | None = None,
               tooltip: str | None = None, twins: Collection[str] = frozenset()) -> Cell:
    """Make `cell` (its value already set, as text) a link to the row of `sheet` whose `column`
    holds `value`, found when the link is followed; when the id is too long for that, or is one of
    `twins` (`casefold_twins`), a plain link to `row` (if known), with `tooltip`."""
    shown = cell.value if isinstance(cell.value, str) else str(cell.value or "")
    cell.value = shown
    formula = None if value in twins and row is not None else link_formula(sheet, column, value, shown)
    if formula is not None:
        cell.formula = formula
        cell.font = styles.LINK_FONT
    elif row is not None:
        sheet_looks.link(cell, sheet, f"{column}{row}", tooltip=tooltip)
    return cell
