"""The Summary's right half (N-O): test cases by status, their grades, the review so far, what was
run, and what was not evaluated and why.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from qareport.digest import Digest
from qareport.records import RunInfo, RunSnapshot
from qareport.report import Report
from qareport.run_sheets import stored_options
from qareport.workbook import sheet_looks, styles
from qareport.workbook.sheet import Cell
from qareport.workbook.sheet_names import OVERVIEW
from qareport.workbook.summary_grid import VALUE_WIDTH, Block, SummaryLinks, display_time


def _figure(block: Block, offset: int, value: Any, number_format: str) -> Cell:
    """A number in the right-hand block, next to its label rather than at the far edge."""
    cell = block.cell(offset, value, number_format=number_format)
    cell.alignment = styles.LEFT
    return cell


def _key_value(block: Block, key: str, value: Any, *, number_format: str | None = None) -> None:
    """A key and its value, the value split into lines that fit the column (no cell wraps); a value
    made of "; "-separated items keeps each item on one line where it fits."""
    lines = _pack(value.split("; "), int(VALUE_WIDTH)) if isinstance(value, str) else [value]
    block.cell(0, key, font=styles.BOLD)
    for line in lines or [""]:
        block.cell(1, line, number_format=number_format)
        block.row += 1


def _tail(path: str) -> str:
    """A path that fits one line: its end is what tells inputs apart (the full path is in the
    hidden qareport_run sheet)."""
    limit = int(VALUE_WIDTH)
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def _pack(items: Sequence[str], width: int) -> list[str]:
    """Items joined with "; " into lines of at most `width` characters, an item split only when it
    is longer than a line."""
    lines: list[str] = []
    for index, item in enumerate(items):
        text = item + (";" if index < len(items) - 1 else "")
        if lines and len(lines[-1]) + 1 + len(text) <= width:
            lines[-1] += " " + text
        else:
            lines.extend(textwrap.wrap(text, width=width, break_on_hyphens=False) or [""])
    return lines


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


def write_status(block: Block, digest: Digest, links: SummaryLinks) -> None:
    block.section("Test cases")
    counts = digest.status_counts
    block.cell(0, "total", font=styles.BOLD)
    _figure(block, 1, digest.cases, styles.INTEGER_FORMAT).font = styles.BOLD
    block.row += 1
    for status, label in (("success", "evaluated"), ("error", "errors"), ("missing", "missing"),
                          ("invalid", "invalid")):
        count = counts.get(status, 0)
        block.cell(0, label)
        cell = _figure(block, 1, count, styles.INTEGER_FORMAT)
        if count and status != "success":
            cell.font = styles.REGRESSION_FONT
        block.row += 1
    block.cell(0, "problems")
    problems = _figure(block, 1, digest.problems, styles.INTEGER_FORMAT)
    if digest.problems and links.problems_sheet:
        sheet_looks.link(problems, links.problems_sheet, "A1", tooltip="the Problems sheet")
    block.row += 1


def write_grades(block: Block, grades: Mapping[str, Mapping[str, int]]) -> None:
    """Cases per grade, best first, for each kind that grades (`Report.grades`)."""
    for label, counts in grades.items():
        block.section(f"Grades: {label}")
        for grade, count in counts.items():
            block.cell(0, grade)
            _figure(block, 1, count, styles.INTEGER_FORMAT)
            block.row += 1


def write_review(block: Block, digest: Digest, report: Report, links: SummaryLinks) -> None:
    """Live counts of the Overview's review column: they follow the analyst's typing."""
    if links.review_column is None or links.last_overview_row < 2:
        return
    block.section("Review")
    reviews = links.review_column
    span = f"{OVERVIEW}!${reviews}$2:${reviews}${links.last_overview_row}"
    reviewed_now = sum(1 for review in report.reviews.values() if review.verdict)
    block.cell(0, "cases reviewed")
    cell = _figure(block, 1, reviewed_now, styles.INTEGER_FORMAT)
    cell.formula = f"=COUNTA({span})"
    block.row += 1
    if links.change_column is not None and digest.baseline is not None:
        changes = f"{OVERVIEW}!${links.change_column}$2:${links.change_column}${links.last_overview_row}"
        regressed = ({movement.case_id for movement in report.comparison.moved("regression")}
                     if report.comparison else set())
        reviewed = sum(1 for case_id in regressed if (review := report.reviews.get(case_id)) and review.verdict)
        block.cell(0, "regressions reviewed")
        cell = _figure(block, 1, reviewed, styles.INTEGER_FORMAT)
        cell.formula = f'=SUMPRODUCT((LEFT({changes},10)="regression")*({span}<>""))'
        block.row += 1
        block.cell(0, "regressions to review")
        cell = _figure(block, 1, digest.regressed_total - reviewed, styles.INTEGER_FORMAT)
        cell.formula = f'=SUMPRODUCT((LEFT({changes},10)="regression")*({span}=""))'
        cell.font = styles.REGRESSION_FONT
        block.row += 1


def write_run_info(block: Block, run: RunInfo, digest: Digest, *, reference: RunSnapshot | None = None) -> None:
    block.section("What was run")
    _key_value(block, "date", display_time(run.created))
    _key_value(block, "qareport", run.qareport_version)
    for item in run.inputs:
        what = "cases" if item.role == "testcases" else "records"
        _key_value(block, "test cases" if item.role == "testcases" else "responses", _tail(item.path))
        block.cell(1, f"{item.files} file(s), {item.records} {what}, sha256 {item.sha256[:12]}…")
        block.row += 1
    usage = run.judge_usage
    model = digest.judge_model
    if model:
        embeddings = usage.embedding_model if usage is not None else None
        _key_value(block, "judge", f"{model}" + (f", embeddings {embeddings}" if embeddings else ""))
        judge = run.options.judge if run.options is not None else None
        if judge is not None:
            _key_value(block, "judge via", _tail(judge.endpoint))
        if run.judge_identity is not None:  # which instrument: snapshot, endpoint kind, parameters, prompts
            _key_value(block, "judge identity", run.judge_identity.describe())
        calls = (f"{usage.calls} calls, {usage.cached_calls} cached, {usage.failed_calls} calls failed"
                 if usage is not None else "0 calls, 0 cached, 0 calls failed")
        if usage is not None and usage.batch:  # judged through the Batch API (--judge-batch)
            calls += f"; judged in batches ({usage.batches} batch(es)), at batch prices"
        if digest.judge_cost is not None:
            _key_value(block, "judge cost", f"${digest.judge_cost:,.4f} ({calls})")
        else:
            _key_value(block, "judge cost", f"{(usage.cost_note if usage else None) or 'unknown'} ({calls})")
    else:
        _key_value(block, "judge", "not used")
    _key_value(block, "options", _options_text(stored_options(run.options)))
    if digest.baseline is not None:
        about = f"{digest.baseline.source}, run of {display_time(digest.baseline.created)}"
        if digest.baseline.version:
            about += f", qareport {digest.baseline.version}"
        _key_value(block, "baseline", about)
        for warning in digest.baseline.warnings:
            _key_value(block, "warning", warning)
    if reference is not None:  # pinned with --reference: the drift line under the verdict is measured from it
        _key_value(block, "reference run", f"{_tail(reference.source)}, run of {display_time(reference.created)}")
    if run.not_evaluated:
        block.section("Not evaluated")
        for family, why in sorted(run.not_evaluated.items()):
            _key_value(block, "metrics", family)
            _key_value(block, "why", why)
