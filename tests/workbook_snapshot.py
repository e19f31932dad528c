"""A workbook as plain, comparable data: what an analyst or a later run can see in it.

Used by the golden tests to pin the workbook cell by cell across a redesign of the writer. It keeps
what matters and drops what a writer library decides by itself (style ids, theme colours, the
order of zip parts): per sheet its name, visibility, freeze panes, filter, merged cells, column
widths, data validations, conditional formats; per cell its value, number format, bold / italic,
font and fill colour, wrapping and hyperlink; per chart its type, title and the ranges it plots.
"""

from __future__ import annotations

import json
import re
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

from openpyxl import load_workbook
from openpyxl.utils import column_index_from_string, get_column_letter


def _colour(colour: Any) -> str | None:
    rgb = getattr(colour, "rgb", None)
    if not isinstance(rgb, str) or rgb in ("00000000",):
        return None
    return rgb[-6:].upper()


def _cell(cell: Any) -> dict[str, Any] | None:
    value = cell.value
    if isinstance(value, datetime):
        value = value.isoformat()
    entry: dict[str, Any] = {}
    if value is not None:
        entry["v"] = value
    if cell.number_format and cell.number_format != "General":
        entry["fmt"] = cell.number_format
    font = cell.font
    if font is not None:
        if font.b:
            entry["bold"] = True
        if font.i:
            entry["italic"] = True
        colour = _colour(font.color)
        if colour and colour != "000000":
            entry["color"] = colour
    fill = cell.fill
    if fill is not None and fill.fill_type == "solid":
        colour = _colour(fill.fgColor)
        if colour:
            entry["fill"] = colour
    if cell.alignment is not None and cell.alignment.wrap_text:
        entry["wrap"] = True
    if cell.hyperlink is not None:
        link = cell.hyperlink
        entry["link"] = (link.location and f"#{link.location}") or link.target
    if not entry:
        return None
    return entry


def _charts(path: Path) -> list[dict[str, Any]]:
    charts = []
    with zipfile.ZipFile(path) as package:
        for name in sorted(n for n in package.namelist() if re.match(r"xl/charts/chart\d+\.xml$", n)):
            xml = package.read(name).decode("utf-8")
            kinds = sorted(set(re.findall(r"<(?:c:)?(\w+Chart)>", xml)))
            # writers differ in quoting sheet names and in absolute references; the range is the fact
            refs = [ref.replace("$", "").replace("'", "") for ref in re.findall(r"<(?:c:)?f>([^<]+)</(?:c:)?f>", xml)]
            titles = re.findall(r"<a:t>([^<]*)</a:t>", xml)
            charts.append({"types": kinds, "refs": refs, "texts": titles})
    return sorted(charts, key=lambda c: (c["refs"], c["types"]))


def snapshot_workbook(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    workbook = load_workbook(path)
    sheets = []
    for sheet in workbook.worksheets:
        cells = {}
        for row in sheet.iter_rows():
            for cell in row:
                entry = _cell(cell)
                if entry is not None:
                    cells[cell.coordinate] = entry
        # one <col> element may cover a run of columns of the same width (XlsxWriter writes them so):
        # each column of the run has that width
        widths = dict(sorted(
            (get_column_letter(index), round(dim.width, 0))
            for dim in sheet.column_dimensions.values() if dim.width and dim.customWidth
            for index in range(dim.min or column_index_from_string(dim.index),
                               (dim.max or column_index_from_string(dim.index)) + 1)
        ))
        sheets.append({
            "title": sheet.title,
            "state": sheet.sheet_state,
            "freeze": sheet.freeze_panes,
            "filter": sheet.auto_filter.ref,
            "merged": sorted(str(r) for r in sheet.merged_cells.ranges),
            "widths": widths,
            "validations": sorted(
                [str(v.sqref), v.type, v.formula1] for v in sheet.data_validations.dataValidation
            ),
            "conditional": sorted(
                [str(rng.sqref), rule.type] for rng in sheet.conditional_formatting for rule in rng.rules
            ),
            "cells": cells,
        })
    return {"active": workbook.active.title, "sheets": sheets, "charts": _charts(path)}


def first_difference(expected: Any, actual: Any, where: str = "") -> str | None:
    """Where two snapshots first differ, in words; None when they are equal."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in actual:
                return f"{where}/{key}: expected {expected[key]!r}, missing"
            if key not in expected:
                return f"{where}/{key}: unexpected {actual[key]!r}"
            found = first_difference(expected[key], actual[key], f"{where}/{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (e, a) in enumerate(zip(expected, actual)):
            found = first_difference(e, a, f"{where}[{index}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{where}: expected {len(expected)} items, got {len(actual)}"
        return None
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return None if abs(expected - actual) <= 1e-12 * max(1.0, abs(expected)) else f"{where}: {expected!r} != {actual!r}"
    if expected != actual and isinstance(expected, str) and isinstance(actual, str):
        # a cell holding JSON (the stored run's hidden sheets) holds figures too: compare them as figures,
        # with the same tolerance, since the last bits of a sum differ between Python versions
        parsed = _json_container(expected), _json_container(actual)
        if parsed[0] is not None and parsed[1] is not None:
            return first_difference(parsed[0], parsed[1], f"{where}(json)")
    return None if expected == actual else f"{where}: expected {expected!r}, got {actual!r}"


def _json_container(text: str) -> dict[str, Any] | list[Any] | None:
    """The object or array a text holds as JSON, or None when it holds anything else."""
    if not text.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None
