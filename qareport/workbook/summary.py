"""The Summary sheet, first in the workbook: the weekly question answered in one screen.

It lays out the run's digest (`qareport.digest`), the same one the email and the console use:

    row 3        the verdict: "2 regressions, macro recall 0.84 (−0.05), steps score 0.73"
    left (A-I)   the headline metrics: mean, 95 % interval, cases, not scored, and against the
                 baseline the like-for-like change and whether it is larger than noise;
                 the regressed and the improved cases, one line each with the reason (linked to
                 Overview); the weakest cases of each kind of target, ranked by its own metrics
    right (K-L)  test cases by status, the review so far (live counts of the Overview's review
                 column), what was run, and what was not evaluated and why

No cell wraps: rows keep one height, so the blocks never push each other apart. A case's line
runs across the columns to its right (its name in A, what moved in B-D, the reason in E-I), each
part shortened to its span; the whole text is one click away in Overview.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.comparison import Headline, HeadlineDelta, parse_created
from qareport.digest import CaseLine, Digest
from qareport.records import RunInfo
from qareport.report import Report
from qareport.workbook import styles
from qareport.workbook.cells import write
from qareport.workbook.sheet import Cell, Sheet
from qareport.workbook.sheet_names import CHANGES, OVERVIEW

COLUMN_WIDTHS = {1: 26.0, 2: 9.0, 3: 12.0, 4: 8.0, 5: 10.0, 6: 9.0, 7: 9.0, 8: 21.0, 9: 12.0}
LEFT_COLUMNS = len(COLUMN_WIDTHS)  # A-I
KEY_COLUMN, VALUE_COLUMN = 11, 12  # K, L
KEY_WIDTH, VALUE_WIDTH = 21.0, 46.0
NAME_CHARS = int(COLUMN_WIDTHS[1]) - 1
WHAT_CHARS = int(COLUMN_WIDTHS[2] + COLUMN_WIDTHS[3] + COLUMN_WIDTHS[4]) - 1  # B-D
REASON_CHARS = int(sum(COLUMN_WIDTHS[c] for c in range(5, LEFT_COLUMNS + 1))) - 1  # E-I
NOTE_CHARS = int(sum(COLUMN_WIDTHS.values()) * 1.1)  # italics run narrower than the column widths


@dataclass(frozen=True, slots=True)
class SummaryLinks:
    """Where the Summary's links lead: rows of cases in Overview, of changes in Changes, and the
    Overview columns the live review counts read."""

    overview_rows: Mapping[str, int]
    first_change_rows: Mapping[str, int]  # change kind -> first row on the Changes sheet
    problems_sheet: str | None = None
    review_column: str | None = None  # the Overview's column letters
    change_column: str | None = None
    last_overview_row: int = 1


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

    def section(self, title: str) -> Cell:
        if self.row > self.first_row:  # a blank line between sections
            self.row += 1
        cell = self.cell(0, title, font=styles.SECTION_FONT)
        self.row += 1
        return cell

    def header(self, *titles: str) -> None:
        for offset, title in enumerate(titles):
            if title:
                self.cell(offset, title)
        styles.style_header_row(self.ws, self.row, self.column, self.column + len(titles) - 1)
        for offset in range(len(titles)):  # one line: a title runs on over the empty header cells beside it
            self.ws.cell(self.row, self.column + offset).alignment = styles.CENTRED_LINE
        self.row += 1

    def note(self, text: str, *, chars: int = NOTE_CHARS) -> Cell:
        """A note in italics, split into lines that fit the block (no cell wraps)."""
        cell = None
        for line in textwrap.wrap(text, width=chars, break_on_hyphens=False) or [""]:
            cell = self.cell(0, line, font=styles.NOTE_FONT)
            self.row += 1
        assert cell is not None
        return cell


def _signed_style(cell: Cell, delta: float | None, *, strong: bool = True) -> None:
    """Red for a drop, green for a rise; no colour when the change rounds to nothing, and only the
    font (no fill) when the change is within noise."""
    if delta is None or round(delta, 2) == 0:
        return
    if delta < 0:
        cell.font = styles.REGRESSION_FONT
        cell.fill = styles.REGRESSION_FILL if strong else None
    else:
        cell.font = styles.IMPROVEMENT_FONT
        cell.fill = styles.IMPROVEMENT_FILL if strong else None


def _noise_words(delta: HeadlineDelta) -> str | None:
    if delta.p_value is None:
        return None
    p = f"p {delta.p_value:.2f}" if delta.p_value >= 0.01 else f"p {delta.p_value:.3f}" if delta.p_value >= 0.001 else "p<0.001"
    return f"{'beyond noise' if delta.significant else 'within noise'}, {p}"


def write_headline(block: Block, digest: Digest) -> None:
    block.section("How good is it")
    compared = bool(digest.deltas)
    block.header("metric", "mean", "95% interval", "cases", "not scored",
                 *(("baseline", "change", "vs noise", "shared cases") if compared else ()))
    if not digest.headline:
        block.note("No metric could be computed: no test case was evaluated (see the status counts).")
    for item in digest.headline:
        block.cell(0, item.label)
        block.cell(1, item.mean, font=styles.BOLD, number_format=styles.SCORE_FORMAT)
        if item.low is not None and item.high is not None:
            block.cell(2, f"{item.low:.2f} – {item.high:.2f}")
        block.cell(3, item.cases, number_format=styles.INTEGER_FORMAT)
        _not_scored(block.cell(4, item.not_scored, number_format=styles.INTEGER_FORMAT), item)
        delta = digest.delta(item.metric)
        if delta is not None and delta.delta is not None:
            block.cell(5, delta.shared_old, number_format=styles.SCORE_FORMAT)
            shown = round(delta.delta, 3) + 0.0  # + 0.0: no "-0.000"
            _signed_style(block.cell(6, shown, number_format=styles.HEADLINE_DELTA_FORMAT), delta.delta,
                          strong=delta.significant)
            block.cell(7, _noise_words(delta))
            block.cell(8, delta.shared_cases, number_format=styles.INTEGER_FORMAT)
        block.row += 1
    block.note("mean: over the evaluated cases, with its 95 % bootstrap interval; not scored: cases with such a "
               "target that failed, had no response or could not be evaluated.")
    if compared:
        block.note("baseline and change: like for like, over the shared cases, those both runs evaluated "
                   "whose test did not change.")
    if digest.judged:
        listed = sorted(digest.judged, key=lambda metric: not metric.mostly_failed)  # the alarming ones first
        text = "LLM judge: " + "; ".join(metric.describe() for metric in listed)
        cell = block.note(styles.shorten(text, 110))
        if any(metric.mostly_failed for metric in digest.judged):
            cell.font = styles.REGRESSION_FONT


def _not_scored(cell: Cell, item: Headline) -> None:
    if item.not_scored:
        cell.fill = styles.STATUS_FILLS["error" if item.errors else "missing" if item.missing else "invalid"]


def write_case_lines(block: Block, title: str, lines: Sequence[CaseLine], total: int, links: SummaryLinks,
                     *, what: str, more_kind: str | None = None, colour: str | None = None) -> None:
    """A titled list of cases, one line each: name (linked to Overview), what, reason."""
    block.section(f"{title} ({total})" if total else title)
    if not lines:
        block.note("None.")
        return
    block.header("case", what, "", "", "reason", "", "", "", "")
    for line in lines:
        name = block.cell(0, styles.shorten(line.name or line.case_id, NAME_CHARS))
        if line.case_id in links.overview_rows:
            styles.link(name, OVERVIEW, f"A{links.overview_rows[line.case_id]}", tooltip=line.case_id)
        moved = block.cell(1, styles.shorten(line.what, WHAT_CHARS))
        if colour == "regression":
            moved.font = styles.REGRESSION_FONT
        elif colour == "improvement":
            moved.font = styles.IMPROVEMENT_FONT
        block.cell(4, styles.shorten(line.reason or "", REASON_CHARS) or None)
        block.row += 1
    if total > len(lines):
        more = block.note(f"+ {total - len(lines)} more in the Changes sheet")
        if more_kind and more_kind in links.first_change_rows:
            styles.link(more, CHANGES, f"A{links.first_change_rows[more_kind]}", tooltip="Changes")


def write_weakest(block: Block, digest: Digest, links: SummaryLinks) -> None:
    for weakest in digest.weakest:
        write_case_lines(block, f"Weakest cases: {weakest.family}", weakest.cases, 0, links,
                         what=weakest.ranked_by)


def _figure(block: Block, offset: int, value: Any, number_format: str) -> Cell:
    """A number in the right-hand block, next to its label rather than at the far edge."""
    cell = block.cell(offset, value, number_format=number_format)
    cell.alignment = styles.LEFT
    return cell


def _key_value(block: Block, key: str, value: Any, *, number_format: str | None = None) -> None:
    """A key and its value, the value split into lines that fit the column (no cell wraps)."""
    lines = (textwrap.wrap(value, width=int(VALUE_WIDTH), break_on_hyphens=False) if isinstance(value, str)
             else [value])
    block.cell(0, key, font=styles.BOLD)
    for line in lines or [""]:
        block.cell(1, line, number_format=number_format)
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
        styles.link(problems, links.problems_sheet, "A1", tooltip="the Problems sheet")
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
        regressed = {movement.case_id for movement in report.comparison.moved("regression")} if report.comparison else set()
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


def write_run_info(block: Block, run: RunInfo, digest: Digest) -> None:
    block.section("What was run")
    _key_value(block, "date", display_time(run.created))
    _key_value(block, "qareport", run.qareport_version)
    for item in run.inputs:
        what = "cases" if item.role == "testcases" else "records"
        _key_value(block, "test cases" if item.role == "testcases" else "responses", _tail(item.path))
        block.cell(1, f"{item.files} file(s), {item.records} {what}, sha256 {item.sha256[:12]}…")
        block.row += 1
    usage = run.judge_usage or {}
    model = digest.judge_model
    if model:
        embeddings = usage.get("embedding_model")
        _key_value(block, "judge", f"{model}" + (f", embeddings {embeddings}" if embeddings else ""))
        settings = run.options.get("judge") or {}
        if settings.get("endpoint"):
            _key_value(block, "judge via", _tail(str(settings["endpoint"])))
        calls = (f"{usage.get('calls', 0)} calls, {usage.get('cached_calls', 0)} cached, "
                 f"{usage.get('failed_calls', 0)} calls failed")
        if digest.judge_cost is not None:
            _key_value(block, "judge cost", f"${digest.judge_cost:,.4f} ({calls})")
        else:
            _key_value(block, "judge cost", f"{usage.get('cost_note') or 'unknown'} ({calls})")
    else:
        _key_value(block, "judge", "not used")
    _key_value(block, "options", _options_text(run.options))
    if digest.baseline is not None:
        about = f"{digest.baseline.source}, run of {display_time(digest.baseline.created)}"
        if digest.baseline.version:
            about += f", qareport {digest.baseline.version}"
        _key_value(block, "baseline", about)
        for warning in digest.baseline.warnings:
            _key_value(block, "warning", warning)
    if run.not_evaluated:
        block.section("Not evaluated")
        for family, why in sorted(run.not_evaluated.items()):
            _key_value(block, "metrics", family)
            _key_value(block, "why", why)


def write_summary(ws: Sheet, report: Report, links: SummaryLinks) -> None:
    digest, run = report.digest, report.run
    write(ws, 1, 1, "QA evaluation report").font = styles.TITLE_FONT
    ws.set_height(1, 22)
    counts = digest.status_counts
    status = ", ".join(f"{counts.get(s, 0)} {word}" for s, word in
                       (("success", "evaluated"), ("error", "error"), ("missing", "missing"), ("invalid", "invalid"))
                       if counts.get(s, 0) or s == "success")
    subtitle = f"Run of {display_time(run.created)} · qareport {run.qareport_version} · {digest.cases} test cases: {status}"
    if digest.baseline is not None:
        subtitle += f" · compared with the run of {display_time(digest.baseline.created)}"
    write(ws, 2, 1, subtitle).font = styles.NOTE_FONT
    verdict = write(ws, 3, 1, digest.verdict)
    alarming = bool(digest.alerts) or digest.regressed_total > 0
    verdict.font = styles.VERDICT_ALARM_FONT if alarming else styles.VERDICT_FONT
    ws.set_height(3, 20)

    left = Block(ws, 5, 1)
    write_headline(left, digest)
    if digest.baseline is not None and digest.deltas:
        write_case_lines(left, "What got worse", digest.regressed, digest.regressed_total, links,
                         what="what moved", more_kind="regression", colour="regression")
        write_case_lines(left, "What got better", digest.improved, digest.improved_total, links,
                         what="what moved", more_kind="improvement", colour="improvement")
    write_weakest(left, digest, links)

    right = Block(ws, 5, KEY_COLUMN)
    write_status(right, digest, links)
    write_review(right, digest, report, links)
    write_run_info(right, run, digest)

    widths = dict(COLUMN_WIDTHS)
    widths.update({LEFT_COLUMNS + 1: 2.0, KEY_COLUMN: KEY_WIDTH, VALUE_COLUMN: VALUE_WIDTH})
    styles.set_widths(ws, widths)
    ws.worksheet.hide_gridlines(2)  # on screen and on paper
    styles.landscape(ws, fit_page=True)
