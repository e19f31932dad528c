"""The Trend sheet: one row per run, oldest first and this run last, and a line chart of the
headline metrics over time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from pathlib import Path

from qareport.kinds import RunKinds
from qareport.trend import TrendPoint, parse_created
from qareport.workbook import charts, sheet_looks, styles
from qareport.workbook.sheet import Sheet, write

COUNT_HEADERS = ("test cases", "evaluated", "errors", "missing", "invalid", "regressed", "improved")
FIRST_METRIC = 4 + len(COUNT_HEADERS)  # the column of the first headline metric
PARTIAL_HEADER = "partly judged"  # the last column: why a run's judged means (marked "*") are partial


def write_trend(ws: Sheet, points: Sequence[TrendPoint], kinds: RunKinds) -> None:
    """Fill the sheet (a few rows, one per run: kept until the sheet is finished), with the
    headline metrics of the run's `kinds`."""
    metrics = [m for m in kinds.headline_metric_keys() if any(p.mean(m) is not None for p in points)]
    partial = any(point.partly_judged for point in points)  # the column only when a run was judged part-way
    headers = ("date (UTC)", "run", "qareport", *COUNT_HEADERS,
               *[kinds.metric_label(m) for m in metrics], *[f"{kinds.metric_label(m)}: cases" for m in metrics],
               *((PARTIAL_HEADER,) if partial else ()))
    for column, header in enumerate(headers, start=1):
        write(ws, 1, column, header)
    sheet_looks.style_header_row(ws, 1, 1, len(headers))
    for row, point in enumerate(points, start=2):
        moment = parse_created(point.created)
        if moment is not None:  # a real date (not text) so it sorts and filters as one
            date = ws.cell(row, 1)
            date.value = moment.astimezone(UTC).replace(tzinfo=None)
            date.number_format = styles.DATETIME_FORMAT
        else:
            write(ws, row, 1, point.created)
        write(ws, row, 2, "this run" if point.current else Path(point.source).name)
        write(ws, row, 3, point.qareport_version)
        counts = point.status_counts
        for offset, value in enumerate(
            (sum(counts.values()), counts.get("success", 0), counts.get("error", 0),
             counts.get("missing", 0), counts.get("invalid", 0), point.regressions, point.improvements), start=4):
            write(ws, row, offset, value).number_format = styles.INTEGER_FORMAT
        if point.regressions:
            ws.cell(row, 9).font = styles.REGRESSION_FONT
        for index, metric in enumerate(metrics):
            write(ws, row, FIRST_METRIC + index, point.mean(metric)).number_format = (
                styles.PARTIAL_SCORE_FORMAT if point.partial(metric) else styles.SCORE_FORMAT)  # "0.71*"
            write(ws, row, FIRST_METRIC + len(metrics) + index,
                  point.cases_behind(metric)).number_format = styles.INTEGER_FORMAT
        if point.partly_judged:
            write(ws, row, len(headers), "* " + "; ".join(words for _, words in point.partly_judged))
        if point.current:
            for column in range(1, len(headers) + 1):
                ws.cell(row, column).font = styles.BOLD
    last_row = len(points) + 1
    widths = {1: 18, 2: max(12, min(40, max(len(Path(p.source).name) for p in points) + 2)), 3: 10}
    widths.update({column: 11 for column in range(4, len(headers) + 1)})
    if partial:
        widths[len(headers)] = 60  # the words, read in place
    sheet_looks.set_widths(ws, widths)
    if metrics:
        letters = [ws.cell(1, FIRST_METRIC + i).column_letter for i in range(len(metrics))]
        sheet_looks.score_colour_scale(ws, f"{letters[0]}2:{letters[-1]}{last_row}")
        values = [mean for point in points for metric in metrics if (mean := point.mean(metric)) is not None]
        chart = charts.trend_lines(
            ws.workbook,
            charts.TableRange(ws, 1, 2, last_row, 1, tuple(range(FIRST_METRIC, FIRST_METRIC + len(metrics)))),
            title="Headline metrics per run", low=min(values), high=max(values),
        )
        charts.place_stacked(ws, [chart], first_row=last_row + 3)
    sheet_looks.fit_header_row(ws, headers)
    sheet_looks.finish_table_sheet(ws, columns=len(headers), rows=last_row, freeze="C2")
