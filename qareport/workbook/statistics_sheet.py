"""The Statistics sheet: Data Query Metrics and the Q&A aggregates, as tables a person reads.

Values, not formulas: mail previews and phone viewers do not recalculate. Every average stands
beside the counts of cases it is over and of the cases that could not be evaluated.

The tables are written by `statistics_tables.TableWriter`; the judge's tables are in
`statistics_judge`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qareport import kinds
from qareport.aggregates import REPORTED_METRICS
from qareport.comparison import noise_words
from qareport.consistency import pass_rules_text
from qareport.digest import signed_bound
from qareport.headline import SCORE_BINS
from qareport.kinds import RunKinds, Table
from qareport.kinds.steps.step_kind import DEFAULT_SEMANTICS
from qareport.report import Report
from qareport.statistics import GroupScores, SuiteStatistics
from qareport.workbook import charts, styles
from qareport.workbook.cells import write
from qareport.workbook.sheet import Sheet
from qareport.workbook.sheet_names import STATISTICS
from qareport.workbook.statistics_judge import (
    write_judge,
    write_judge_agreement,
    write_judge_noise,
    write_judged_metrics,
)
from qareport.workbook.statistics_tables import TableWriter

STEP_COUNTERS = ("total", "once_per_sample", "empty_results", "errors")



def metric_format(key: str) -> str:
    return styles.NUMBER_FORMATS[kinds.metric_format(key)]



GROUP_HEADERS = ("", "test cases", "evaluated", "errors", "missing", "invalid", "macro precision", "macro recall")
GROUP_FORMATS = (None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT,
                 styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, styles.SCORE_FORMAT, styles.SCORE_FORMAT)


def _group_row(scores: GroupScores) -> tuple[Any, ...]:
    return (scores.group, scores.cases, scores.evaluated, scores.errors, scores.missing,
            scores.invalid, scores.macro_precision, scores.macro_recall)


def _template_metric(summary: dict[str, Any], metric: str) -> dict[str, Any] | None:
    value = summary.get(metric)
    if isinstance(value, dict) and "mean" in value:
        return value
    nested = summary.get("steps", {}).get(metric) if isinstance(summary.get("steps"), dict) else None
    return nested if isinstance(nested, dict) and "mean" in nested else None


def write_data_query(tables: TableWriter, stats: SuiteStatistics) -> dict[str, charts.TableRange]:
    """Returns the per-tag table's place (for its chart)."""
    ranges: dict[str, charts.TableRange] = {}
    if stats.data_query is None:
        return ranges
    tables.section(
        "Data Query Metrics",
        "Macro precision and recall of indicator selection: means over the evaluated test cases. "
        "Error, missing and invalid cases are not in the means; they are counted beside them.",
    )
    tables.table(GROUP_HEADERS, [_group_row(stats.data_query)], GROUP_FORMATS)
    if stats.per_group:
        tables.section("Data Query Metrics per tag", "A case counts in every tag it has.")
        first, last = tables.table(
            ("tag", *GROUP_HEADERS[1:]), [_group_row(g) for g in stats.per_group], GROUP_FORMATS
        )
        ranges["per_group"] = charts.TableRange(tables.ws, first - 1, first, last, 1, (7, 8))
    if stats.per_dimension:
        tables.section(
            "Data Query Metrics per dimension",
            "Means over the evaluated cases whose target has the dimension (test cases); TP / FP / FN are term "
            "counts; not scored: the cases whose target has it that failed, had no response or could not be evaluated.",
        )
        tables.table(
            ("dimension", "test cases", "macro precision", "macro recall",
             "true positives", "false positives", "false negatives", "not scored"),
            [(d.dimension, d.cases, d.macro_precision, d.macro_recall, d.true_positives,
              d.false_positives, d.false_negatives, d.not_scored) for d in stats.per_dimension],
            (None, styles.INTEGER_FORMAT, styles.SCORE_FORMAT, styles.SCORE_FORMAT,
             styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT),
        )
    return ranges


def write_qa(tables: TableWriter, aggregates: dict[str, Any], *, semantics: Any = 5,
             labels: RunKinds) -> dict[str, charts.TableRange]:
    """Returns the place of the steps-score column of the per-template table (for its chart). The
    metrics are named by `labels`, the run's kinds."""
    ranges: dict[str, charts.TableRange] = {}
    per_template: dict[str, dict[str, Any]] = aggregates.get("per_template", {})
    micro = aggregates.get("micro", {})
    macro = aggregates.get("macro", {})
    metrics = [m for m in REPORTED_METRICS if _template_metric(micro, m) is not None or m in macro]
    counted = ("Means over the questions with a successful response; error samples are counted beside them. "
               if str(semantics) != "6" else
               "Means as graphrag-eval 6.x computes them: an error sample's steps score counts, as 0.0. ")
    tables.section(
        "Q&A: means per template",
        counted + "micro: all questions together; macro: the mean of the template means. The steps score of a "
        "retrieval step is recall@k over document ids; context recall and precision (text similarity) "
        "compare the retrieved texts with the reference contexts.",
    )
    rows = []
    for template_id, summary in per_template.items():  # first appearance, as everywhere
        rows.append((
            template_id, summary.get("number_of_success_samples", 0), summary.get("number_of_error_samples", 0),
            *[(_template_metric(summary, m) or {}).get("mean") for m in metrics],
        ))
    rows.append((
        "all questions (micro)", micro.get("number_of_success_samples", 0), micro.get("number_of_error_samples", 0),
        *[(_template_metric(micro, m) or {}).get("mean") for m in metrics],
    ))
    rows.append(("templates averaged (macro)", None, None, *[macro.get(m, {}).get("mean") for m in metrics]))
    first, last = tables.table(
        ("template", "success samples", "error samples", *[labels.metric_label(m) for m in metrics]),
        rows,
        (None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, *[metric_format(m) for m in metrics]),
    )
    if per_template and "steps_score" in metrics:
        steps_column = 4 + metrics.index("steps_score")
        ranges["steps_per_template"] = charts.TableRange(
            tables.ws, first - 1, first, last - 2, 1, (steps_column,)  # the micro and macro rows are not templates
        )
    tables.section("Q&A: all questions (micro)", "sum / mean / median / min / max over successful responses.")
    stat_rows = []
    for metric in metrics:
        stats = _template_metric(micro, metric)
        if stats is not None:
            figures = [stats.get(k) for k in ("sum", "mean", "median", "min", "max")]
            stat_rows.append((labels.metric_label(metric), *figures))
    first, _ = tables.table(("metric", "sum", "mean", "median", "min", "max"), stat_rows,
                            (None, *[styles.SCORE_FORMAT] * 5))
    _restyle_micro_rows(tables.ws, first, stat_rows, metrics, labels)
    counter_rows = []
    for template_id, summary in per_template.items():  # first appearance, as everywhere
        steps = summary.get("steps") or {}
        names = sorted({name for key in STEP_COUNTERS for name in (steps.get(key) or {})})
        for name in names:
            counter_rows.append((template_id, name, *[(steps.get(key) or {}).get(name, 0) for key in STEP_COUNTERS]))
    if counter_rows:
        tables.section(
            "Q&A: tool calls per template",
            "total: calls made; once per sample: questions that made the call at least once; "
            "empty results: calls that returned no rows; errors: calls that failed.",
        )
        tables.table(("template", "step", "total", "once per sample", "empty results", "errors"),
                     counter_rows, (None, None, *[styles.INTEGER_FORMAT] * 4))
    return ranges


def _restyle_micro_rows(ws: Sheet, first: int, stat_rows: list[Any], metrics: list[str], kinds: RunKinds) -> None:
    """Give each metric row of the micro table its own number format (tokens, seconds, dollars)."""
    labels = {kinds.metric_label(m): m for m in metrics}
    for offset, values in enumerate(stat_rows):
        fmt = metric_format(labels[values[0]])
        for column in range(2, 7):
            ws.cell(first + offset, column).number_format = fmt



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
        "Like for like: over the cases both runs evaluated whose test did not change (at least 2 per group). "
        "Intervals and tests resample and flip whole clusters (a Q&A question's template, a conversation case's "
        "declared cluster, else the case); in a group whose cases lie in one cluster (a template) the cases are "
        "the units, so the question is whether that cluster changed. q: p adjusted (Benjamini-Hochberg) over "
        f"all {comparison.tests} tests in this table; a change is beyond noise only when q ≤ 0.05, so that "
        "among the changes called beyond noise at most 5 % are expected to be false alarms, however long the "
        f"table. {comparison.beyond_noise} of {comparison.tests} are beyond noise.",
    )
    rows: list[tuple[Any, ...]] = []
    for delta in comparison.headline:
        if delta.p_value is None or delta.shared_old is None or delta.shared_new is None:
            continue
        rows.append(("all test cases", delta.label, delta.shared_cases, delta.clusters, delta.shared_old,
                     delta.shared_new, delta.shared_new - delta.shared_old, _interval(delta.low, delta.high),
                     delta.p_value, delta.q_value, delta.noise))
    for item in comparison.breakdown:
        rows.append((f"{item.by} {item.group}", item.label, item.cases, item.clusters, item.shared_old,
                     item.shared_new, item.delta, _interval(item.low, item.high), item.p_value, item.q_value,
                     noise_words(item.beyond_noise, item.p_value)))
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
    """With cases answered several times: the suite's pass@k and pass^k, and how consistent its
    cases are (`consistency`)."""
    rates = report.pass_rates
    if rates is None:
        return
    tables.section("Attempts per case",
                   f"pass@k: the chance that at least one of k attempts of a case passes; pass^k: that all k pass "
                   f"(unbiased estimators from each case's attempts, averaged over the cases with k or more). "
                   f"k: the number of attempts most cases have. {rates.describe()}. An attempt passes by its "
                   f"kinds' rules: {pass_rules_text(report.kind_set)}.")
    tables.table(("k", "pass@k", "pass^k", "cases", "cases with attempts", "flaky", "left out"),
                 [(rates.rates.k, rates.rates.pass_at_k, rates.rates.pass_hat_k, rates.rates.cases,
                   rates.cases_with_attempts, rates.flaky, rates.rates.too_few_attempts)],
                 (styles.INTEGER_FORMAT, styles.SCORE_FORMAT, styles.SCORE_FORMAT, *[styles.INTEGER_FORMAT] * 4))


def write_kind_tables(tables: TableWriter, kind_tables: Sequence[Table]) -> None:
    """The tables that kinds of target other than the built-in ones add (`Kind.statistics_tables`)."""
    for table in kind_tables:
        tables.section(table.title)
        formats = [styles.NUMBER_FORMATS.get(fmt) if fmt else None for fmt in table.formats]
        tables.table(table.headers, table.rows, formats or [None] * len(table.headers))


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
    ranges = write_data_query(tables, stats)
    if stats.qa_aggregates:
        ranges.update(write_qa(tables, stats.qa_aggregates, semantics=report.run.steps_semantics or DEFAULT_SEMANTICS,
                               labels=report.kind_set))
    write_kind_tables(tables, report.kind_tables)
    write_attempts(tables, report)
    write_changes(tables, report)
    distribution = write_distribution(tables, report.score_distributions, labels=report.kind_set)
    write_judged_metrics(tables, report.judged)
    write_judge_agreement(tables, report.agreement)
    write_judge_noise(tables, report.judge_noise)
    write_judge(tables, report.run)
    widths = tables.fitted_widths(maximum=MAX_TEXT_WIDTH)
    styles.set_widths(ws, widths)
    tables.size_header_rows(widths)
    tables.wrap_long_texts(widths)

    drawn = []
    if "per_group" in ranges:
        drawn.append(charts.score_bars(ws.workbook, ranges["per_group"], title="Macro precision and recall per tag",
                                       category_title="tag"))
    if "steps_per_template" in ranges:
        drawn.append(charts.score_bars(ws.workbook, ranges["steps_per_template"], title="Mean steps score per template",
                                       category_title="template"))
    if distribution is not None:
        drawn.append(charts.histogram(ws.workbook, distribution, title="Distribution of scores"))
    if drawn:
        charts_row = tables.row
        tables.section("Charts", "Drawn from the tables above.")
        charts.place_stacked(ws, drawn, first_row=tables.row)
        styles.link(write(ws, charts_link_row, 1, "Charts: below the tables ↓"), ws.name, f"A{charts_row}")
    styles.landscape(ws)
    ws.worksheet.repeat_rows(0)
