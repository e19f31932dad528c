"""Native Excel charts over values already in the sheet (never images, never formulas).

Every chart reads cells a table beside it shows, so what the chart draws can be checked number by
number, and a mail preview that cannot draw charts still shows the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.chart.axis import ChartLines
from openpyxl.worksheet.worksheet import Worksheet

MAX_CATEGORIES = 40  # beyond this a bar chart is unreadable; the table holds them all
CM_PER_ROW = 0.53  # a 15-point row
SCORE_AXIS_FORMAT = "0.0"


@dataclass(frozen=True, slots=True)
class TableRange:
    """Where a table's data rows are: categories in one column, series in others (header above)."""

    ws: Worksheet
    header_row: int
    first_row: int
    last_row: int
    category_column: int
    series_columns: tuple[int, ...]

    @property
    def rows(self) -> int:
        return self.last_row - self.first_row + 1


def _clip(table: TableRange) -> tuple[int, bool]:
    """The last row to chart, and whether some rows were left out."""
    if table.rows > MAX_CATEGORIES:
        return table.first_row + MAX_CATEGORIES - 1, True
    return table.last_row, False


def _add_series(chart, table: TableRange, last_row: int) -> None:
    for column in table.series_columns:
        data = Reference(table.ws, min_col=column, min_row=table.header_row, max_row=last_row)
        chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(table.ws, min_col=table.category_column, min_row=table.first_row, max_row=last_row))


def _show_axes(chart) -> None:
    # openpyxl 3.1 leaves `delete` unset, which recent Excel versions read as "axis hidden".
    chart.x_axis.delete = False
    chart.y_axis.delete = False


def _score_axis(axis, title: str | None = None) -> None:
    axis.scaling.min = 0
    axis.scaling.max = 1
    axis.majorUnit = 0.2
    axis.number_format = SCORE_AXIS_FORMAT
    axis.majorGridlines = ChartLines()
    if title:
        axis.title = title


def score_bars(table: TableRange, *, title: str, category_title: str) -> BarChart:
    """Horizontal bars of scores in [0, 1] per category (group, template): long names stay readable."""
    last_row, clipped = _clip(table)
    chart = BarChart()
    chart.type = "bar"
    chart.grouping = "clustered"
    chart.title = f"{title} (first {MAX_CATEGORIES})" if clipped else title
    _add_series(chart, table, last_row)
    _show_axes(chart)
    _score_axis(chart.y_axis, "score")
    chart.x_axis.title = category_title
    chart.x_axis.scaling.orientation = "maxMin"  # first row on top, as in the table
    chart.y_axis.crosses = "max"  # keeps the value axis at the bottom once categories are reversed
    chart.legend.position = "b"
    labels = [table.ws.cell(row=row, column=table.category_column).value for row in range(table.first_row, last_row + 1)]
    label_lines = max(1, -(-max((len(str(label or "")) for label in labels), default=1) // 30))  # long labels wrap
    per_category = 0.45 * max(len(table.series_columns), label_lines) + 0.1
    chart.width = 20 if label_lines == 1 else 26
    chart.height = max(7.5, min(30.0, 3.5 + len(labels) * per_category))
    return chart


def histogram(table: TableRange, *, title: str) -> BarChart:
    """Columns of binned counts (the bins are the categories), touching like a histogram."""
    chart = BarChart()
    chart.type = "col"
    chart.title = title
    _add_series(chart, table, table.last_row)
    _show_axes(chart)
    chart.gapWidth = 10
    chart.x_axis.title = "score"
    chart.y_axis.title = "test cases"
    chart.y_axis.number_format = "0"
    chart.y_axis.scaling.min = 0
    chart.y_axis.majorGridlines = ChartLines()
    chart.legend = None
    chart.width = 18
    chart.height = 7.5
    return chart


def trend_lines(table: TableRange, *, title: str) -> LineChart:
    """One line per headline metric over the runs (dates as categories, oldest left)."""
    chart = LineChart()
    chart.title = title
    _add_series(chart, table, table.last_row)
    _show_axes(chart)
    _score_axis(chart.y_axis, "score")
    chart.x_axis.title = "run"
    chart.x_axis.number_format = "yyyy-mm-dd hh:mm"
    chart.legend.position = "b"
    for series in chart.series:
        series.marker.symbol = "circle"
        series.smooth = False
    chart.width = 20
    chart.height = 9
    return chart


def place_stacked(ws: Worksheet, charts: Sequence, *, first_row: int, column: str = "A", gap_rows: int = 2) -> int:
    """Anchor charts one below the other from `first_row`; returns the first row after them."""
    row = first_row
    for chart in charts:
        ws.add_chart(chart, f"{column}{row}")
        row += int(chart.height / CM_PER_ROW) + 1 + gap_rows
    return row
