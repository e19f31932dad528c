"""The Statistics sheet: Data Query Metrics and the Q&A aggregates, as tables a person reads.

Values, not formulas: mail previews and phone viewers do not recalculate. Every average stands
beside the counts of cases it is over and of the cases that could not be evaluated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from qareport.records import RunInfo
from qareport.statistics import GroupScores, SuiteStatistics
from qareport.workbook import styles
from qareport.workbook.cells import write

SHEET_NAME = "Statistics"

QA_METRICS = (
    "steps_score", "answer_recall", "answer_precision", "answer_f1", "answer_relevance",
    "answer_relevance_cost", "retrieval_answer_recall", "retrieval_answer_precision",
    "retrieval_answer_f1", "retrieval_context_recall", "retrieval_context_precision",
    "retrieval_context_f1", "input_tokens", "output_tokens", "total_tokens", "elapsed_sec",
)
STEP_COUNTERS = ("total", "once_per_sample", "empty_results", "errors")


def metric_label(key: str) -> str:
    return key.replace("_", " ").replace(" f1", " F1").replace("sec", "seconds")


def metric_format(key: str) -> str:
    if key.endswith("_cost"):
        return styles.COST_FORMAT
    if key.endswith("tokens"):
        return styles.INTEGER_FORMAT
    if key == "elapsed_sec":
        return styles.SECONDS_FORMAT
    return styles.SCORE_FORMAT


class TableWriter:
    """Writes titled tables one below the other and remembers where the next one starts."""

    def __init__(self, ws: Worksheet):
        self.ws = ws
        self.row = 1

    def title(self, text: str) -> None:
        write(self.ws, self.row, 1, text).font = styles.TITLE_FONT
        self.row += 2

    def section(self, text: str, note: str | None = None) -> None:
        write(self.ws, self.row, 1, text).font = styles.SECTION_FONT
        self.row += 1
        if note:
            write(self.ws, self.row, 1, note).font = styles.NOTE_FONT
            self.row += 1

    def table(
        self, headers: Sequence[str], rows: Sequence[Sequence[Any]], formats: Sequence[str | None]
    ) -> tuple[int, int]:
        """Returns the first and last data row (for charts)."""
        for column, header in enumerate(headers, start=1):
            write(self.ws, self.row, column, header)
        styles.style_header_row(self.ws, self.row, 1, len(headers))
        first = self.row + 1
        for offset, values in enumerate(rows, start=1):
            for column, value in enumerate(values, start=1):
                cell = write(self.ws, self.row + offset, column, value)
                fmt = formats[column - 1] if column - 1 < len(formats) else None
                if fmt and isinstance(value, (int, float)):
                    cell.number_format = fmt
        last = self.row + len(rows)
        self.row = last + 2
        return first, last


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


def write_data_query(tables: TableWriter, stats: SuiteStatistics) -> dict[str, tuple[int, int]]:
    ranges: dict[str, tuple[int, int]] = {}
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
        ranges["per_group"] = tables.table(
            ("tag", *GROUP_HEADERS[1:]), [_group_row(g) for g in stats.per_group], GROUP_FORMATS
        )
    if stats.per_dimension:
        tables.section(
            "Data Query Metrics per dimension",
            "Means over the evaluated cases whose target has the dimension; TP / FP / FN are term counts.",
        )
        ranges["per_dimension"] = tables.table(
            ("dimension", "test cases", "macro precision", "macro recall",
             "true positives", "false positives", "false negatives"),
            [(d.dimension, d.cases, d.macro_precision, d.macro_recall, d.true_positives,
              d.false_positives, d.false_negatives) for d in stats.per_dimension],
            (None, styles.INTEGER_FORMAT, styles.SCORE_FORMAT, styles.SCORE_FORMAT,
             styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT),
        )
    return ranges


def write_qa(tables: TableWriter, aggregates: dict[str, Any]) -> dict[str, tuple[int, int]]:
    ranges: dict[str, tuple[int, int]] = {}
    per_template: dict[str, dict[str, Any]] = aggregates.get("per_template", {})
    micro = aggregates.get("micro", {})
    macro = aggregates.get("macro", {})
    metrics = [m for m in QA_METRICS if _template_metric(micro, m) is not None or m in macro]
    tables.section(
        "Q&A: means per template",
        "Means over the questions with a successful response; error samples are counted beside them. "
        "micro: all questions together; macro: the mean of the template means.",
    )
    rows = []
    for template_id, summary in sorted(per_template.items()):
        rows.append((
            template_id, summary.get("number_of_success_samples", 0), summary.get("number_of_error_samples", 0),
            *[(_template_metric(summary, m) or {}).get("mean") for m in metrics],
        ))
    rows.append((
        "all questions (micro)", micro.get("number_of_success_samples", 0), micro.get("number_of_error_samples", 0),
        *[(_template_metric(micro, m) or {}).get("mean") for m in metrics],
    ))
    rows.append(("templates averaged (macro)", None, None, *[macro.get(m, {}).get("mean") for m in metrics]))
    ranges["per_template"] = tables.table(
        ("template", "success samples", "error samples", *[metric_label(m) for m in metrics]),
        rows,
        (None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, *[metric_format(m) for m in metrics]),
    )
    tables.section("Q&A: all questions (micro)", "sum / mean / median / min / max over successful responses.")
    stat_rows = []
    for metric in metrics:
        stats = _template_metric(micro, metric)
        if stats is not None:
            stat_rows.append((metric_label(metric), *[stats.get(k) for k in ("sum", "mean", "median", "min", "max")]))
    first, _ = tables.table(("metric", "sum", "mean", "median", "min", "max"), stat_rows,
                            (None, *[styles.SCORE_FORMAT] * 5))
    _restyle_micro_rows(tables.ws, first, stat_rows, metrics)
    counter_rows = []
    for template_id, summary in sorted(per_template.items()):
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


def _restyle_micro_rows(ws: Worksheet, first: int, stat_rows: list, metrics: list[str]) -> None:
    """Give each metric row of the micro table its own number format (tokens, seconds, dollars)."""
    labels = {metric_label(m): m for m in metrics}
    for offset, values in enumerate(stat_rows):
        fmt = metric_format(labels[values[0]])
        for column in range(2, 7):
            ws.cell(row=first + offset, column=column).number_format = fmt


def write_judge(tables: TableWriter, run: RunInfo) -> None:
    if run.not_evaluated:
        tables.section("Metrics not evaluated")
        tables.table(("metrics", "why"), sorted(run.not_evaluated.items()), (None, None))
    usage = run.judge_usage
    if not usage:
        return
    tables.section("LLM judge", f"model {usage.get('model')}, embeddings {usage.get('embedding_model')}")
    rows = [("all metrics", usage.get("calls"), usage.get("cached_calls"), usage.get("failed_calls"),
             usage.get("input_tokens"), usage.get("output_tokens"), usage.get("cost_usd"))]
    for metric, figures in sorted((usage.get("by_metric") or {}).items()):
        rows.append((metric, figures.get("calls"), figures.get("cached_calls"), figures.get("errors"),
                     figures.get("input_tokens"), figures.get("output_tokens"), figures.get("cost_usd")))
    tables.table(
        ("metric", "calls", "cached calls", "errors", "input tokens", "output tokens", "cost (USD)"),
        rows,
        (None, *[styles.INTEGER_FORMAT] * 5, styles.COST_FORMAT),
    )


def write_statistics(ws: Worksheet, stats: SuiteStatistics, run: RunInfo) -> dict[str, tuple[int, int]]:
    """Fill the sheet; returns the data-row ranges of the main tables (for charts)."""
    tables = TableWriter(ws)
    tables.title("Statistics")
    counts = stats.status_counts
    tables.section("Test cases by status")
    tables.table(("", *counts.keys(), "total"), [("test cases", *counts.values(), sum(counts.values()))],
                 (None, *[styles.INTEGER_FORMAT] * (len(counts) + 1)))
    ranges = write_data_query(tables, stats)
    if stats.qa_aggregates:
        ranges.update({f"qa_{k}": v for k, v in write_qa(tables, stats.qa_aggregates).items()})
    write_judge(tables, run)
    styles.set_widths(ws, {1: 34, **{c: 14 for c in range(2, 20)}})
    return ranges
