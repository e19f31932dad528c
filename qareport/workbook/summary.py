"""The Summary sheet, first in the workbook: what a reader needs in the first screen.

Two blocks side by side, so nothing needs scrolling on a laptop and a phone preview (which shows
the left edge first) starts with the numbers:

    left (A-H)   headline metrics with the cases behind them and the cases not scored; test cases
                 by status; the changes since the baseline; the worst cases, linked to Overview
    right (J-K)  what was run: date, version, inputs with counts and hashes, judge and its cost,
                 options, and the metrics not evaluated with the reason

No cell wraps: rows keep one height, so the two blocks never push each other apart. Long text is
split into lines of its own (the reason a metric was not evaluated) or shortened with an ellipsis
where the full text is one click away (case names, linked to their Overview row).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.comparison import DEFAULT_TOLERANCE, Comparison, Headline, parse_created
from qareport.judged_metrics import JudgedMetric
from qareport.records import RunInfo
from qareport.report import Report
from qareport.workbook import styles
from qareport.workbook.cells import write
from qareport.workbook.sheet_names import CHANGES, OVERVIEW
from qareport.workbook.sheet import Cell, Sheet

NUMBER_WIDTH = 13.0
LEFT_COLUMNS = 8  # A-H
KEY_COLUMN, VALUE_COLUMN = 10, 11  # J, K
KEY_WIDTH, VALUE_WIDTH = 13.0, 46.0
NAME_CHARS = int(NUMBER_WIDTH * (LEFT_COLUMNS - 2)) - 4  # a name shown across C-H


@dataclass(frozen=True, slots=True)
class SummaryLinks:
    """Where the Summary's links lead: rows of cases in Overview, of changes in Changes."""

    overview_rows: Mapping[str, int]
    first_change_rows: Mapping[str, int]  # change kind -> first row on the Changes sheet
    problems_sheet: str | None = None


def display_time(created: str) -> str:
    moment = parse_created(created)
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else str(created)


class Block:
    """Writes rows downwards in a fixed set of columns."""

    def __init__(self, ws: Sheet, row: int, column: int):
        self.ws, self.row, self.column = ws, row, column
        self.first_row = row

    def cell(self, offset: int, value: Any, *, font: styles.Font | None = None,
             number_format: str | None = None) -> Cell:
        cell = write(self.ws, self.row, self.column + offset, value)
        if font is not None:
            cell.font = font
        if number_format and isinstance(value, (int, float)):
            cell.number_format = number_format
        return cell

    def section(self, title: str) -> None:
        if self.row > self.first_row:  # a blank line between sections
            self.row += 1
        self.cell(0, title, font=styles.SECTION_FONT)
        self.row += 1

    def header(self, *titles: str) -> None:
        for offset, title in enumerate(titles):
            if title:
                self.cell(offset, title)
        styles.style_header_row(self.ws, self.row, self.column, self.column + len(titles) - 1)
        self.row += 1

    def note(self, text: str) -> None:
        self.cell(0, text, font=styles.NOTE_FONT)
        self.row += 1


def _signed_style(cell: Cell, delta: float | None) -> None:
    """Red for a drop, green for a rise; no colour when the change rounds to 0.000 on screen."""
    if delta is None or abs(delta) <= DEFAULT_TOLERANCE or round(delta, 3) == 0:
        return
    cell.fill, cell.font = ((styles.REGRESSION_FILL, styles.REGRESSION_FONT) if delta < 0
                            else (styles.IMPROVEMENT_FILL, styles.IMPROVEMENT_FONT))


def _count_style(cell: Cell, count: int, status: str) -> None:
    if count:
        cell.fill = styles.STATUS_FILLS[status]


def write_headline(block: Block, headline: Sequence[Headline], comparison: Comparison | None,
                   judged: Sequence[JudgedMetric] = ()) -> None:
    block.section("Headline metrics")
    deltas = {d.metric: d for d in comparison.headline} if comparison else {}
    block.header("metric", "mean", "cases", "errors", "missing", "invalid",
                 *(("baseline", "change") if comparison else ()))
    if not headline:
        block.note("No metric could be computed: no test case was evaluated (see the status counts).")
    for item in headline:
        block.cell(0, item.label)
        block.cell(1, item.mean, font=styles.BOLD, number_format=styles.SCORE_FORMAT)
        block.cell(2, item.cases, number_format=styles.INTEGER_FORMAT)
        for offset, (count, status) in enumerate(
                ((item.errors, "error"), (item.missing, "missing"), (item.invalid, "invalid")), start=3):
            _count_style(block.cell(offset, count, number_format=styles.INTEGER_FORMAT), count, status)
        delta = deltas.get(item.metric)
        if delta is not None:
            block.cell(6, delta.old, number_format=styles.SCORE_FORMAT)
            shown = None if delta.delta is None else round(delta.delta, 3) + 0.0  # + 0.0: no "-0.000"
            _signed_style(block.cell(7, shown, number_format=styles.HEADLINE_DELTA_FORMAT), delta.delta)
        block.row += 1
    block.note("Means over the evaluated cases; error, missing and invalid cases are counted beside them.")
    if judged:
        listed = sorted((metric for metric in judged if metric.judged or metric.failed),
                       key=lambda metric: not metric.mostly_failed)  # the alarming ones first: the line is cut
        text = "LLM judge: " + "; ".join(metric.describe() for metric in listed)
        cell = block.cell(0, styles.shorten(text, 110), font=styles.NOTE_FONT)
        if any(metric.mostly_failed for metric in judged):
            cell.font = styles.REGRESSION_FONT
        block.row += 1


def write_status(block: Block, counts: Mapping[str, int], problems: int, links: SummaryLinks) -> None:
    block.section("Test cases")
    total = sum(counts.values())
    block.header("", "total", "evaluated", "errors", "missing", "invalid", "problems")
    block.cell(0, "test cases")
    figures = (total, counts["success"], counts["error"], counts["missing"], counts["invalid"])
    for offset, count in enumerate(figures, start=1):
        cell = block.cell(offset, count, number_format=styles.INTEGER_FORMAT)
        status = ("success", "success", "error", "missing", "invalid")[offset - 1]
        if offset > 2:
            _count_style(cell, count, status)
    problems_cell = block.cell(6, problems, number_format=styles.INTEGER_FORMAT)
    if problems and links.problems_sheet:
        styles.link(problems_cell, links.problems_sheet, "A1", tooltip="the Problems sheet")
    block.row += 1
    block.cell(0, "share of test cases")
    for offset, count in enumerate(figures, start=1):
        block.cell(offset, count / total if total else None, number_format=styles.PERCENT_FORMAT)
    block.row += 1


def write_comparison(block: Block, comparison: Comparison, links: SummaryLinks) -> None:
    block.section("Compared with the baseline")
    about = f"{comparison.baseline_source}, run of {display_time(comparison.baseline_created)}"
    if comparison.baseline_version:
        about += f", qareport {comparison.baseline_version}"
    block.note(styles.shorten(f"Baseline: {about}", 110))
    labels = {"regression": "regressed", "improvement": "improved", "test changed": "test changed",
              "new case": "new", "removed case": "removed"}
    counts = comparison.counts()
    block.header("", *labels.values())
    block.cell(0, "test cases")
    for offset, kind in enumerate(labels, start=1):
        count = counts[kind]  # type: ignore[index]
        cell = block.cell(offset, count, number_format=styles.INTEGER_FORMAT)
        if count and kind in links.first_change_rows:
            styles.link(cell, CHANGES, f"A{links.first_change_rows[kind]}", tooltip=f"{kind}s in Changes")
        if count and kind in ("regression", "improvement"):
            cell.fill, cell.font = ((styles.REGRESSION_FILL, styles.REGRESSION_FONT) if kind == "regression"
                                    else (styles.IMPROVEMENT_FILL, styles.IMPROVEMENT_FONT))
    block.row += 1
    block.note("A changed test (its definition differs) is not counted as a regression; "
               "success to error or missing is.")


def write_worst_cases(block: Block, worst: Sequence[tuple[Mapping[str, Any], float]], not_scored: int,
                      links: SummaryLinks) -> int:
    """Returns the width the id column needs."""
    block.section("Worst cases")
    if not worst:
        block.note("No evaluated case has a score.")
        return 0
    block.header("case id", "score", "name")
    first = block.row
    for row, score in worst:
        case_id = str(row.get("case_id"))
        id_cell = block.cell(0, case_id)
        if case_id in links.overview_rows:
            styles.link(id_cell, OVERVIEW, f"A{links.overview_rows[case_id]}", tooltip="this case in Overview")
        block.cell(1, score, number_format=styles.SCORE_FORMAT)
        block.cell(2, styles.shorten(str(row.get("name") or ""), NAME_CHARS))
        block.row += 1
    styles.score_colour_scale(block.ws, f"B{first}:B{block.row - 1}")
    block.note("Score: the mean of the case's headline metrics. Click an id to open its row in Overview.")
    if not_scored:
        styles.link(
            block.cell(0, f"{not_scored} more test case(s) were not evaluated (error, missing, invalid): "
                          "see the status column in Overview."),
            OVERVIEW, "A1", tooltip="Overview",
        )
        block.row += 1
    return max(len(str(row.get("case_id"))) for row, _ in worst)


def _key_value(block: Block, key: str, value: Any) -> None:
    """A key and its value, the value split into lines that fit the column (no cell wraps)."""
    lines = (textwrap.wrap(value, width=int(VALUE_WIDTH), break_on_hyphens=False) if isinstance(value, str)
             else [value])
    block.cell(0, key, font=styles.BOLD)
    for line in lines or [""]:
        block.cell(1, line)
        block.row += 1


def _tail(path: str) -> str:
    """A path that fits one line: its end is what tells inputs apart (the full path is in the
    hidden qareport_run sheet)."""
    limit = int(VALUE_WIDTH)
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def _options_text(options: Mapping[str, Any]) -> str:
    shown = []
    for key, value in options.items():
        if value is None or value == {} or key == "judge":  # the judge has lines of its own
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, Mapping):
            value = ", ".join(f"{k} {v}" for k, v in value.items() if v is not None)
        shown.append(f"{key.replace('_', ' ')}: {value}")
    return "; ".join(shown) or "defaults"


def write_run_info(block: Block, run: RunInfo) -> None:
    block.section("What was run")
    _key_value(block, "date", display_time(run.created))
    _key_value(block, "qareport", run.qareport_version)
    for item in run.inputs:
        what = "cases" if item.role == "testcases" else "records"
        _key_value(block, "test cases" if item.role == "testcases" else "responses", _tail(item.path))
        block.cell(1, f"{item.files} file(s), {item.records} {what}, sha256 {item.sha256[:12]}…")
        block.row += 1
    usage = run.judge_usage or {}
    model = run.judge_model or usage.get("model")
    if model:
        embeddings = usage.get("embedding_model")
        _key_value(block, "judge", f"{model}" + (f", embeddings {embeddings}" if embeddings else ""))
        settings = run.options.get("judge") or {}
        if settings.get("endpoint"):
            _key_value(block, "judge via", _tail(str(settings["endpoint"])))
        cost = usage.get("cost_usd")
        calls = f"{usage.get('calls', 0)} calls, {usage.get('cached_calls', 0)} cached, {usage.get('failed_calls', 0)} failed"
        if isinstance(cost, (int, float)):
            _key_value(block, "judge cost", f"${cost:,.4f} ({calls})")
        else:
            _key_value(block, "judge cost", f"{usage.get('cost_note') or 'unknown'} ({calls})")
    else:
        _key_value(block, "judge", "not used")
    _key_value(block, "options", _options_text(run.options))
    if run.not_evaluated:
        block.section("Not evaluated")
        for family, why in sorted(run.not_evaluated.items()):
            _key_value(block, "metrics", family)
            _key_value(block, "why", why)


def write_summary(ws: Sheet, report: Report, links: SummaryLinks) -> None:
    run, comparison, counts = report.run, report.comparison, report.status_counts
    write(ws, 1, 1, "QA evaluation report").font = styles.TITLE_FONT
    ws.set_height(1, 22)
    subtitle = f"Run of {display_time(run.created)} · qareport {run.qareport_version} · {sum(counts.values())} test cases"
    if comparison:
        subtitle += f" · compared with {display_time(comparison.baseline_created)}"
    write(ws, 2, 1, subtitle).font = styles.NOTE_FONT
    alerts = [text for text in (report.not_loaded, report.incomplete) if text]
    if alerts:  # before any number: what makes the numbers below less than they seem
        write(ws, 3, 1, " · ".join(alerts)).font = styles.REGRESSION_FONT

    left = Block(ws, 4, 1)
    write_headline(left, report.headline, comparison, report.judged)
    write_status(left, counts, len(report.problems), links)
    if comparison is not None:
        write_comparison(left, comparison, links)
    not_scored = sum(count for status, count in counts.items() if status != "success")
    id_chars = write_worst_cases(left, report.worst_cases, not_scored, links)

    write_run_info(Block(ws, 4, KEY_COLUMN), run)

    widths = {1: min(40.0, max(22.0, id_chars + 3.0))}
    widths.update({column: NUMBER_WIDTH for column in range(2, LEFT_COLUMNS + 1)})
    widths.update({LEFT_COLUMNS + 1: 2.0, KEY_COLUMN: KEY_WIDTH, VALUE_COLUMN: VALUE_WIDTH})
    styles.set_widths(ws, widths)
    ws.worksheet.hide_gridlines(2)  # on screen and on paper
    styles.landscape(ws, fit_page=True)
