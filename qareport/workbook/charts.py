"""Native Excel charts over values already in the sheet (never images, never formulas).

Every chart reads cells a table beside it shows, so what the chart draws can be checked number by
number, and a mail preview that cannot draw charts still shows the table.

XlsxWriter names a chart's axes by direction: in a horizontal bar chart the x axis is the value
axis and the y axis holds the categories.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xlsxwriter.chart import Chart
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.workbook import Workbook

from qareport.workbook.sheet import Sheet

MAX_CATEGORIES = 40  # beyond this a bar chart is unreadable; the table holds them all
CM_PER_ROW = 0.53  # a 15-point row
PIXELS_PER_CM = 96 / 2.54
SCORE_AXIS_FORMAT = "0.0"


@dataclass(frozen=True, slots=True)
class TableRange:
    """Where a table's data rows are: categories in one column, series in others (header above)."""

    ws: Sheet
    header_row: int
    first_row: int
    last_row: int
    category_column: int
    series_columns: tuple[int, ...]

    @property
    def rows(self) -> int:
        return self.last_row - self.first_row + 1


@dataclass(frozen=True, slots=True)
class SizedChart:
    """A chart and its size in centimetres (its place follows from its height)."""

    chart: Chart
    width_cm: float
    height_cm: float


def _clip(table: TableRange) -> tuple[int, bool]:
    """The last row to chart, and whether some rows were left out."""
    if table.rows > MAX_CATEGORIES:
        return table.first_row + MAX_CATEGORIES - 1, True
    return table.last_row, False


def _add_series(chart: Chart, table: TableRange, last_row: int, **options: Any) -> None:
    """One series per column: its title is the header cell, its values the column's data rows."""
    sheet = "'" + table.ws.name.replace("'", "''") + "'"

    def column_range(column: int) -> str:
        letter = xl_col_to_name(column - 1)
        return f"={sheet}!${letter}${table.first_row}:${letter}${last_row}"

    for column in table.series_columns:
        chart.add_series({
            "name": f"={sheet}!{xl_col_to_name(column - 1)}{table.header_row}",
            "categories": column_range(table.category_column),
            "values": column_range(column),
            **options,
        })


def _score_axis(title: str | None = None) -> dict[str, Any]:
    axis: dict[str, Any] = {"min": 0, "max": 1, "major_unit": 0.2, "num_format": SCORE_AXIS_FORMAT,
                            "major_gridlines": {"visible": True}}
    if title:
        axis["name"] = title
    return axis


def score_bars(workbook: Workbook, table: TableRange, *, title: str, category_title: str) -> SizedChart:
    """Horizontal bars of scores in [0, 1] per category (group, template): long names stay readable."""
    last_row, clipped = _clip(table)
    chart = workbook.add_chart({"type": "bar", "subtype": "clustered"})
    chart.set_title({"name": f"{title} (first {MAX_CATEGORIES})" if clipped else title})
    _add_series(chart, table, last_row)
    chart.set_x_axis(_score_axis("score"))
    # first row on top, as in the table; "max" keeps the value axis at the bottom once reversed
    chart.set_y_axis({"name": category_title, "reverse": True, "crossing": "max"})
    chart.set_legend({"position": "bottom"})
    labels = [table.ws.cell(row, table.category_column).value for row in range(table.first_row, last_row + 1)]
    label_lines = max(1, -(-max((len(str(label or "")) for label in labels), default=1) // 30))  # long labels wrap
    per_category = 0.45 * max(len(table.series_columns), label_lines) + 0.1
    # at most 17 cm tall: the height of a landscape A4 page, so a chart prints on one page
    return SizedChart(chart, 20 if label_lines == 1 else 26, max(7.5, min(17.0, 3.5 + len(labels) * per_category)))


def histogram(workbook: Workbook, table: TableRange, *, title: str) -> SizedChart:
    """Columns of binned counts (the bins are the categories), touching like a histogram."""
    chart = workbook.add_chart({"type": "column", "subtype": "clustered"})
    chart.set_title({"name": title})
    _add_series(chart, table, table.last_row, gap=10 if len(table.series_columns) == 1 else 60)
    chart.set_x_axis({"name": "score"})
    chart.set_y_axis({"name": "test cases", "num_format": "0", "min": 0, "major_gridlines": {"visible": True}})
    chart.set_legend({"none": True} if len(table.series_columns) == 1 else {"position": "bottom"})
    return SizedChart(chart, 18, 7.5)


def fitted_axis(low: float, high: float) -> tuple[float, float, float]:
    """A value axis that fits the data (min, max, major unit): a drop from 0.88 to 0.84 must be
    seen, not flattened against 0-1. Bounds on a 0.05 grid with a margin, within [0, 1]."""
    span = max(high - low, 0.02)
    margin = max(0.02, span * 0.25)
    bottom = max(0.0, math.floor((low - margin) * 20) / 20)
    top = min(1.0, math.ceil((high + margin) * 20) / 20)
    if top - bottom < 0.1:
        top = min(1.0, bottom + 0.1)
        bottom = max(0.0, top - 0.1)
    unit = 0.05 if top - bottom <= 0.3 else 0.1 if top - bottom <= 0.6 else 0.2
    return round(bottom, 2), round(top, 2), unit


def trend_lines(workbook: Workbook, table: TableRange, *, title: str, low: float = 0.0,
                high: float = 1.0) -> SizedChart:
    """One line per headline metric over the runs (dates as categories, oldest left), each point
    labelled with its value, on an axis that fits the values (`fitted_axis`)."""
    chart = workbook.add_chart({"type": "line"})
    chart.set_title({"name": title})
    _add_series(chart, table, table.last_row, marker={"type": "circle"}, smooth=False,
                data_labels={"value": True, "num_format": "0.00", "position": "above"})
    chart.set_x_axis({"name": "run", "num_format": "yyyy-mm-dd hh:mm"})
    bottom, top, unit = fitted_axis(low, high)
    chart.set_y_axis({**_score_axis("score"), "min": bottom, "max": top, "major_unit": unit,
                      "num_format": "0.00"})
    chart.set_legend({"position": "bottom"})
    return SizedChart(chart, 20, 9)


def place_stacked(ws: Sheet, charts: Sequence[SizedChart], *, first_row: int, column: str = "A",
                  gap_rows: int = 2) -> int:
    """Anchor charts one below the other from `first_row`; returns the first row after them."""
    row = first_row
    breaks = []
    for sized in charts:
        breaks.append(row - 1)  # each chart starts a printed page: never cut in two
        sized.chart.set_size({"width": round(sized.width_cm * PIXELS_PER_CM),
                              "height": round(sized.height_cm * PIXELS_PER_CM)})
        ws.worksheet.insert_chart(f"{column}{row}", sized.chart)
        row += int(sized.height_cm / CM_PER_ROW) + 1 + gap_rows
    ws.worksheet.set_h_pagebreaks(breaks)
    return row
