"""The Statistics sheet: the cases by status, the kinds' tables (Data Query Metrics, graphrag-eval's
aggregates, ...: `Report.kind_tables`, laid out as the kinds give them, with their notes and
charts), attempts, changes, the distribution of scores and the judge's tables, as a person reads them.

Values, not formulas: mail previews and phone viewers do not recalculate. Every average stands
beside the counts of cases it is over and of the cases that could not be evaluated.

The tables are written by `statistics_tables.TableWriter`; the judge's tables are in
`statistics_judge`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qareport.comparison import noise_words
from qareport.digest import signed_bound
from qareport.headline import SCORE_BINS
from qareport.kinds import Chart, RunKinds, Table
from qareport.report import Report
from qareport.workbook import charts, sheet_looks, styles
from qareport.workbook.sheet import Sheet, write
from qareport.workbook.sheet_names import STATISTICS
from qareport.workbook.statistics_judge import (
    write_judge,
    write_judge_agreement,
    write_judge_audit,
    write_judge_noise,
    write_judged_metrics,
)
from qareport.workbook.statistics_tables import TableWriter


def write_distribution(tables: TableWriter, distributions: Mapping[str, Sequence[int]], *,
                       labels: RunKinds) -> charts.TableRange | None:
    """Binned counts of each headline metric over the evaluated cases, for the histogram. Each metric
    has its own column: unlike metrics are never averaged into one score."""
    if not distributions:
        return None
    tables.section(
        "Distribution of scores",
        "Evaluated test cases per score bin, per headline metric. Bins include their lower bound; "
        "the last one includes 1.0.",
    )
    metrics = list(distributions)
    table_rows = [
        (f"{low:.1f}–{high:.1f}", *[distributions[m][index] for m in metrics])
        for index, (low, high) in enumerate(SCORE_BINS)
    ]
    first, last = tables.table(
        ("score", *[labels.metric_label(m) for m in metrics]),
        table_rows,
        (None, *[styles.INTEGER_FORMAT] * len(metrics)),
    )
    return charts.TableRange(tables.ws, first - 1, first, last, 1, tuple(range(2, 2 + len(metrics))))


P_FORMAT = "0.000"  # a p- or q-value


def write_changes(tables: TableWriter, report: Report) -> None:
    """Changes since the baseline: each headline metric, and per tag, template and dimension, the
    like-for-like change with its clustered interval, p, q and whether it is beyond noise."""
    comparison = report.comparison
    if comparison is None or report.incomplete or not comparison.tests:
        return
    tables.section(
        "Changes since the baseline",
        "Like for like: over the cases both runs have whose test did not change, a case in error in either run "
        "counting there as failing (0) (at least 2 per group). "
        "Intervals and tests resample and flip whole clusters (a Q&A question's template, a conversation case's "
        "declared cluster, else the case); in a group whose cases lie in one cluster (a template) the cases are "
        "the units, so the question is whether that cluster changed. q: p adjusted within its family: the "
        "headline metrics (all test cases) by Holm, so that the chance of any false alarm among them is at most "
        "5 % and no breakdown dilutes them; the tags, the templates and the dimensions each by "
        "Benjamini-Hochberg, so that among the changes of a family called beyond noise at most 5 % are expected "
        "to be false alarms, however long the table. A change is beyond noise only when q ≤ 0.05: "
        f"{comparison.beyond_noise} of {comparison.tests} are.",
    )
    rows: list[tuple[Any, ...]] = []
    for delta in comparison.headline:
        if delta.p_value is None or delta.shared_old is None or delta.shared_new is None:
            continue
        rows.append(("all test cases", delta.label, delta.shared_cases, delta.clusters, delta.shared_old,
                     delta.shared_new, styles.as_shown(delta.shared_new - delta.shared_old),
                     _interval(delta.low, delta.high), delta.p_value, delta.q_value, delta.noise))
    for item in comparison.breakdown:
        rows.append((f"{item.by} {item.group}", item.label, item.cases, item.clusters, item.shared_old,
                     item.shared_new, styles.as_shown(item.delta), _interval(item.low, item.high), item.p_value,
                     item.q_value,
                     "judge changed" if item.judge_changed else noise_words(item.beyond_noise, item.p_value)))
    first, _ = tables.table(
        ("change of", "metric", "cases", "clusters", "last run", "this run", "change", "95% interval", "p", "q",
         "verdict"),
        rows,
        (None, None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, styles.SCORE_FORMAT, styles.SCORE_FORMAT,
         styles.DELTA_FORMAT, None, P_FORMAT, P_FORMAT, None),
    )
    for offset, row in enumerate(rows):
        if row[-1] == "beyond noise":
            cell = tables.ws.cell(first + offset, len(row))
            cell.font = styles.REGRESSION_FONT if row[6] < 0 else styles.IMPROVEMENT_FONT


def _interval(low: float | None, high: float | None) -> str | None:
    """"−0.11 – +0.01": a change's interval, each bound with its sign."""
    if low is None or high is None:
        return None
    return f"{signed_bound(low)} – {signed_bound(high)}"


def write_attempts(tables: TableWriter, report: Report) -> None:
    """With cases answered several times: the suite's pass@k and pass^k (one row per kind of case
    when the kinds were run a different number of times), and how consistent its cases are
    (`consistency`)."""
    rates = report.pass_rates
    if not rates:
        return
    by_kind = len(rates) > 1
    tables.section("Attempts per case",
                   f"pass@k: the chance that at least one of k attempts of a case passes; pass^k: that all k pass "
                   f"(unbiased estimators from each case's attempts, averaged over the cases with k or more). "
                   f"k: the number of attempts most cases {'of each kind ' if by_kind else ''}have. "
                   f"{'; '.join(line.describe() for line in rates)}. An attempt passes by its "
                   f"kinds' rules: {report.pass_rules}.")
    headers: tuple[str, ...] = ("k", "pass@k", "pass^k", "cases", "cases with attempts", "flaky", "left out")
    formats: tuple[str | None, ...] = (styles.INTEGER_FORMAT, styles.SCORE_FORMAT, styles.SCORE_FORMAT,
                                       *[styles.INTEGER_FORMAT] * 4)
    rows: list[tuple[object, ...]] = [(line.rates.k, line.rates.pass_at_k, line.rates.pass_hat_k, line.rates.cases,
             line.cases_with_attempts, line.flaky, line.rates.too_few_attempts) for line in rates]
    if by_kind:
        headers, formats = (*headers, "cases of"), (*formats, None)
        rows = [(*row, line.cases_of) for row, line in zip(rows, rates)]
    tables.table(headers, rows, formats)


def write_kind_tables(tables: TableWriter, kind_tables: Sequence[Table]) -> list[tuple[Chart, charts.TableRange]]:
    """The kinds' tables (`Kind.suite_figures`), each under its title and note; returns the charts
    to draw from them, with where their tables are."""
    drawn = []
    for table in kind_tables:
        tables.section(table.title, table.note)
        formats = [styles.NUMBER_FORMATS.get(fmt) if fmt else None for fmt in table.formats]
        first, last = tables.table(table.headers, table.rows, formats or [None] * len(table.headers))
        for offset, row_format in enumerate(table.row_formats):
            if row_format is None:
                continue
            for column, fmt in enumerate(formats, start=1):
                if fmt is not None:  # the row's unit (tokens, seconds, dollars) in place of the column's
                    tables.ws.cell(first + offset, column).number_format = styles.NUMBER_FORMATS[row_format]
        if table.chart is not None:
            drawn.append((table.chart, charts.TableRange(tables.ws, first - 1, first, last - table.chart.totals, 1,
                                                         table.chart.series)))
    return drawn


WIDTHS = {1: 34}  # the other columns as wide as their headers' words and their numbers need
MAX_TEXT_WIDTH = 60


def write_statistics(ws: Sheet, report: Report) -> None:
    """Fill the sheet: the tables, then their charts below them (a link at the top leads there)."""
    stats = report.statistics
    tables = TableWriter(ws, WIDTHS)
    tables.title(STATISTICS)
    charts_link_row = tables.row - 1
    tables.row += 1  # the link goes under the title, then a blank line
    counts = stats.status_counts
    tables.section("Test cases by status")
    tables.table(("", *counts.keys(), "total"), [("test cases", *counts.values(), sum(counts.values()))],
                 (None, *[styles.INTEGER_FORMAT] * (len(counts) + 1)))
    kind_charts = write_kind_tables(tables, report.kind_tables)
    write_attempts(tables, report)
    write_changes(tables, report)
    distribution = write_distribution(tables, report.score_distributions, labels=report.kind_set)
    write_judged_metrics(tables, report.judged)
    write_judge_agreement(tables, report.agreement)
    write_judge_audit(tables, report.audit)
    write_judge_noise(tables, report.judge_noise)
    write_judge(tables, report.run)
    widths = tables.fitted_widths(maximum=MAX_TEXT_WIDTH)
    sheet_looks.set_widths(ws, widths)
    tables.size_header_rows(widths)
    tables.wrap_long_texts(widths)

    drawn = [charts.score_bars(ws.workbook, where, title=chart.title, category_title=chart.category_title)
             for chart, where in kind_charts]
    if distribution is not None:
        drawn.append(charts.histogram(ws.workbook, distribution, title="Distribution of scores"))
    if drawn:
        charts_row = tables.row
        tables.section("Charts", "Drawn from the tables above.")
        charts.place_stacked(ws, drawn, first_row=tables.row)
        sheet_looks.link(write(ws, charts_link_row, 1, "Charts: below the tables ↓"), ws.name, f"A{charts_row}")
    sheet_looks.landscape(ws)
    ws.worksheet.repeat_rows(0)
