"""The Summary sheet, first in the workbook: the weekly question answered in one screen.

It lays out the run's digest (`qareport.digest`), the same one the email and the console use. What a
reader acts on comes first and fits the first 40 rows (a 1600×1000 window):

    row 3        the verdict: "2 regressions, macro recall 0.84 (−0.05), steps score 0.73"
    row 4        then, once, what a reader must know before trusting it (cases not loaded)
    left (A-L)   the headline metrics, each figure once: this run's mean over its evaluated cases, 95 %
                 interval, cases, not scored, and the last run's mean over its own; then, like for like
                 over the cases both runs evaluated, last run, this run, the change between them (so the
                 three reconcile on the row), its interval and whether it is larger than noise; what
                 this run can see (the change its decision would catch); the regressed and the
                 improved cases, one line each with the reason (linked to Overview by id)
                 below them: the cases that moved within noise, the pass rates, the judge's figures,
                 and the weakest cases of each kind of target, ranked by its own metrics
    right (N-O)  test cases by status, their grades (indicator selection: statgpt's ideal /
                 acceptable / problematic / failure), the review so far (live counts of the
                 Overview's review column), what was run, and what was not evaluated and why

No cell wraps: rows keep one height, so the blocks never push each other apart. A case keeps every
word: its name on a row of its own (linked to Overview), then what moved (B-E) and the reason (F-L)
side by side, each split into as many rows as it needs. Two cases never look alike and no moved
metric is hidden. The links find the case by its id (`case_links`), so they still lead to it after
Overview is sorted or filtered. On paper the sheet is one page wide, in as many pages as it needs
(two for a usual run), at a scale that can be read.

The grid and `Block` are in `summary_grid`, the left half in `summary_results`, the right half in
`summary_run`.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace

from qareport.report import Report
from qareport.workbook import sheet_looks, styles
from qareport.workbook.sheet import Sheet, write
from qareport.workbook.summary_grid import (
    COLUMN_WIDTHS,
    KEY_COLUMN,
    KEY_WIDTH,
    LEFT_COLUMNS,
    NOTE_CHARS,
    VALUE_COLUMN,
    VALUE_WIDTH,
    Block,
    SummaryLinks,
    display_time,
)
from qareport.workbook.summary_results import (
    names_shared_by_cases,
    write_case_lines,
    write_consistency,
    write_detectable,
    write_headline,
    write_judge,
    write_weakest,
    write_within_noise,
)
from qareport.workbook.summary_run import write_grades, write_review, write_run_info, write_status


def write_summary(ws: Sheet, report: Report, links: SummaryLinks) -> None:
    digest, run = report.digest, report.run
    write(ws, 1, 1, "QA evaluation report").font = styles.TITLE_FONT
    ws.set_height(1, 22)
    counts = digest.status_counts
    status = ", ".join(f"{counts.get(s, 0)} {word}" for s, word in
                       (("success", "evaluated"), ("error", "error"), ("missing", "missing"), ("invalid", "invalid"))
                       if counts.get(s, 0) or s == "success")
    subtitle = (f"Run of {display_time(run.created)} · qareport {run.qareport_version} · "
                f"{digest.cases} test cases: {status}")
    if digest.baseline is not None:
        subtitle += f" · compared with the run of {display_time(digest.baseline.created)}"
    write(ws, 2, 1, subtitle).font = styles.NOTE_FONT
    verdict = write(ws, 3, 1, digest.headline_verdict)
    alarming = bool(digest.alerts) or digest.regressed_total > 0
    verdict.font = styles.VERDICT_ALARM_FONT if alarming else styles.VERDICT_FONT
    ws.set_height(3, 20)
    row = 4
    for alert in digest.alerts_after_verdict:  # once each, right after the verdict
        for line in textwrap.wrap(alert, width=NOTE_CHARS, break_on_hyphens=False):
            write(ws, row, 1, line).font = styles.REGRESSION_FONT
            row += 1

    first = max(5, row + 1)
    links = replace(links, same_names=names_shared_by_cases(digest))
    left = Block(ws, first, 1)
    write_headline(left, digest)
    write_detectable(left, digest)
    if digest.baseline is not None and digest.deltas:
        write_case_lines(left, "What got worse", digest.regressed, digest.regressed_total, links,
                         what="what moved", more_kind="regression", colour="regression")
        write_case_lines(left, "What got better", digest.improved, digest.improved_total, links,
                         what="what moved", more_kind="improvement", colour="improvement")
    # below the first screen: the detail a reader looks up rather than acts on
    if digest.baseline is not None and digest.deltas:
        write_within_noise(left, report, links)
    write_consistency(left, report.pass_rates, report.pass_rules)
    write_judge(left, digest, report.agreement, in_batches=run.judge_usage is not None and run.judge_usage.batch)
    write_weakest(left, digest, links)

    right = Block(ws, first, KEY_COLUMN)
    write_status(right, digest, links)
    write_grades(right, report.grades)
    write_review(right, digest, report, links)
    write_run_info(right, run, digest, reference=report.pinned_reference)

    widths = dict(COLUMN_WIDTHS)
    widths.update({LEFT_COLUMNS + 1: 2.0, KEY_COLUMN: KEY_WIDTH, VALUE_COLUMN: VALUE_WIDTH})
    sheet_looks.set_widths(ws, widths)
    ws.worksheet.hide_gridlines(2)  # on screen and on paper
    sheet_looks.landscape(ws)  # one page wide, legible: never a whole long sheet shrunk onto one page
