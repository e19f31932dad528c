"""The Summary sheet, first in the workbook: the weekly question answered in one screen.

It lays out the run's digest (`qareport.digest`), the same one the email and the console use:

    row 3        the verdict: "2 regressions, macro recall 0.84 (−0.05), steps score 0.73"
    row 4        then, once, what a reader must know before trusting it (cases not loaded)
    left (A-K)   the headline metrics: this run's mean over its evaluated cases, 95 % interval,
                 cases, not scored, and the last run's mean over its own; then, like for like over
                 the cases both runs evaluated, last run, this run and the change between them (so
                 the three reconcile on the row) and whether it is larger than noise;
                 the regressed and the improved cases, one line each with the reason (linked to
                 Overview by id); the weakest cases of each kind of target, ranked by its own metrics
    right (M-N)  test cases by status, their grades (indicator selection: statgpt's ideal /
                 acceptable / problematic / failure), the review so far (live counts of the
                 Overview's review column), what was run, and what was not evaluated and why

No cell wraps: rows keep one height, so the blocks never push each other apart. A case keeps every
word: its name on a row of its own (linked to Overview), then what moved (B-E) and the reason (F-K)
side by side, each split into as many rows as it needs. Two cases never look alike and no moved
metric is hidden. The links find the case by its id (`case_links`), so they still lead to it after
Overview is sorted or filtered.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from qareport.case_changes import WITHIN_NOISE
from qareport.comparison import HeadlineDelta
from qareport.consistency import SuiteConsistency, pass_rules_text
from qareport.digest import TOP_CASES, CaseLine, Digest, detectable_words, mattering, moved_line, signed_bound
from qareport.headline import Headline
from qareport.judge_agreement import JudgeAgreement
from qareport.records import RunInfo
from qareport.report import Report
from qareport.run_sheets import stored_options
from qareport.trend import parse_created
from qareport.workbook import styles
from qareport.workbook.case_links import link_by_id
from qareport.workbook.cells import write
from qareport.workbook.sheet import Cell, Sheet
from qareport.workbook.sheet_names import CHANGES, OVERVIEW

CHANGE_KIND_COLUMN = "C"  # the Changes sheet's column of the kind of change

COLUMN_WIDTHS = {1: 26.0, 2: 9.0, 3: 12.0, 4: 8.0, 5: 10.0, 6: 11.0, 7: 8.0, 8: 9.0, 9: 9.0, 10: 9.0,
                 11: 21.0}
LEFT_COLUMNS = len(COLUMN_WIDTHS)  # A-K
KEY_COLUMN, VALUE_COLUMN = 13, 14  # M, N
KEY_WIDTH, VALUE_WIDTH = 21.0, 46.0
WHAT_COLUMN, REASON_COLUMN = 2, 6  # B (to E) what moved or scored, F (to K) the reason
LINE_CHARS = int(sum(COLUMN_WIDTHS.values())) - 6  # a case's name, on a row of its own
WHAT_CHARS = int(sum(COLUMN_WIDTHS[c] for c in range(WHAT_COLUMN, REASON_COLUMN))) - 2
REASON_CHARS = int(sum(COLUMN_WIDTHS[c] for c in range(REASON_COLUMN, LEFT_COLUMNS + 1))) - 2
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
    same_names: frozenset[str] = frozenset()  # names more than one listed case has (`names_shared_by_cases`)


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


def _probability(value: float) -> str:
    return f"{value:.2f}" if value >= 0.01 else f"{value:.3f}" if value >= 0.001 else "<0.001"


def _noise_words(delta: HeadlineDelta) -> str | None:
    """"beyond noise, q 0.01": the decision and the figure it rests on (the q-value; a digest stored
    before qareport controlled the false discovery rate has only p)."""
    if delta.p_value is None:
        return None
    which, value = ("q", delta.q_value) if delta.q_value is not None else ("p", delta.p_value)
    shown = _probability(value)
    return f"{delta.noise}, {which}{' ' if not shown.startswith('<') else ''}{shown}"


def write_how_sure(block: Block, digest: Digest) -> None:
    """Against a baseline, the change of each headline metric with its clustered interval, p and q,
    and the cases and clusters it rests on; then, always, what the run can see: the minimum
    detectable change per metric (one line each, so the Summary keeps to one screen)."""
    tested = [(item, delta) for item in digest.headline
              if (delta := digest.delta(item.metric)) is not None and delta.p_value is not None]
    if tested:
        block.section("How sure is it")
        block.header("metric", "change", "95% interval", "p", "q", "cases", "clusters")
        for item, delta in tested:
            block.cell(0, item.label)
            shown = delta.shown_delta
            _signed_style(block.cell(1, shown, number_format=styles.DELTA_FORMAT), shown,
                          strong=bool(delta.beyond_noise))
            if delta.low is not None and delta.high is not None:
                block.cell(2, f"{signed_bound(delta.low)} – {signed_bound(delta.high)}")
            assert delta.p_value is not None
            block.cell(3, _probability(delta.p_value))
            if delta.q_value is not None:
                block.cell(4, _probability(delta.q_value))
            block.cell(5, delta.shared_cases, number_format=styles.INTEGER_FORMAT)
            block.cell(6, delta.clusters, number_format=styles.INTEGER_FORMAT)
            block.row += 1
        block.note(f"change: like for like, its 95 % interval and p resampling and flipping whole clusters; q: p "
                   f"adjusted (Benjamini-Hochberg) over the run's {digest.tests} tests of a change (headline metrics, "
                   f"tags, templates, dimensions: see Statistics); beyond noise when q ≤ 0.05: "
                   f"{digest.beyond_noise} of them.")
    for item in digest.headline:
        if item.mean is None:
            continue
        delta = digest.delta(item.metric)
        effect = mattering(delta.design_effect if delta is not None and delta.p_value is not None
                           else item.design_effect)
        text = f"{item.label}: {detectable_words(item, delta)}"
        block.note(text + (f"; design effect {effect:.1f}" if effect is not None else "") + ".")


def write_headline(block: Block, digest: Digest, agreement: JudgeAgreement | None = None, *,
                   in_batches: bool = False) -> None:
    """One row per metric. Against a baseline the row reconciles: last run and this run over the same
    shared cases, and the change between them, all to two decimals; each run's mean over all its
    own evaluated cases (what its report said) stands apart, under its own heading."""
    block.section("How good is it")
    compared = bool(digest.deltas)
    if compared:
        shared = max((delta.shared_cases for delta in digest.deltas), default=0)
        for offset, title in ((1, "this run, all its evaluated cases"),
                              (6, f"like for like: the {shared} cases both runs evaluated")):
            block.cell(offset, title, font=styles.BOLD)
        block.row += 1
    block.header("metric", "mean", "95% interval", "cases", "not scored",
                 *(("last report", "cases", "last run", "this run", "change", "vs noise") if compared else ()))
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
        if delta is not None:
            block.cell(5, delta.old, number_format=styles.SCORE_FORMAT)
        if delta is not None and delta.shown_delta is not None:
            block.cell(6, delta.shared_cases, number_format=styles.INTEGER_FORMAT)
            block.cell(7, delta.shared_old, number_format=styles.SCORE_FORMAT)
            block.cell(8, delta.shared_new, number_format=styles.SCORE_FORMAT)
            shown = delta.shown_delta  # the difference of the two figures beside it, as shown
            _signed_style(block.cell(9, shown, number_format=styles.DELTA_FORMAT), shown,
                          strong=bool(delta.beyond_noise))
            block.cell(10, _noise_words(delta))
        block.row += 1
    block.note("mean: over the evaluated cases, 95 % interval by cluster bootstrap; not scored: cases with such a "
               "target that failed or had no usable response.")
    if compared:
        block.note("last report: the last run's mean over all its evaluated cases, as its report gave it. like for "
                   "like: both runs' means over the cases both evaluated whose test did not change, and the change "
                   "between them; a removed, new, failed or edited case never moves it.")
    if digest.judged:
        listed = sorted(digest.judged, key=lambda metric: not metric.mostly_failed)  # the alarming ones first
        text = f"LLM judge{' (in batches)' if in_batches else ''}: " + "; ".join(m.describe() for m in listed)
        cell = block.note(styles.shorten(text, 110))
        if any(metric.mostly_failed for metric in digest.judged):
            cell.font = styles.REGRESSION_FONT
    if agreement is not None:  # the judge against the analysts' reviews (`judge_agreement`)
        flagged = agreement.warnings()
        for text in agreement.lines():
            first = block.row
            block.note(text)
            if any(text.casefold() == warning.casefold() for warning in flagged):
                for row in range(first, block.row):  # every line of it, in red
                    block.ws.cell(row, block.column).font = styles.REGRESSION_FONT
    write_how_sure(block, digest)


def write_consistency(block: Block, rates: SuiteConsistency | None) -> None:
    """With cases answered several times: the suite's pass@k and pass^k (`consistency`)."""
    if rates is None:
        return
    k = rates.rates.k
    block.section("How consistent is it")
    block.header("k", f"pass@{k}", f"pass^{k}", "cases", "flaky", "left out")
    block.cell(0, k, number_format=styles.INTEGER_FORMAT)
    block.cell(1, rates.rates.pass_at_k, font=styles.BOLD, number_format=styles.SCORE_FORMAT)
    block.cell(2, rates.rates.pass_hat_k, font=styles.BOLD, number_format=styles.SCORE_FORMAT)
    block.cell(3, rates.rates.cases, number_format=styles.INTEGER_FORMAT)
    block.cell(4, rates.flaky, number_format=styles.INTEGER_FORMAT)
    block.cell(5, rates.rates.too_few_attempts, number_format=styles.INTEGER_FORMAT)
    block.row += 1
    block.note(f"pass@{k}: the chance that at least one of {k} attempts of a case passes; pass^{k}: that all "
               f"{k} pass; means over the cases with {k} or more attempts. flaky: cases whose attempts disagree. "
               f"An attempt passes by its kinds' rules: {pass_rules_text()}.")


def _not_scored(cell: Cell, item: Headline) -> None:
    if item.not_scored:
        cell.fill = styles.STATUS_FILLS["error" if item.errors else "missing" if item.missing else "invalid"]


def write_case_lines(block: Block, title: str, lines: Sequence[CaseLine], total: int, links: SummaryLinks,
                     *, what: str, more_kind: str | None = None, colour: str | None = None) -> None:
    """A titled list of cases, every word kept: the name on a row of its own (linked to Overview by
    id), then what moved and the reason side by side, each over as many rows as it needs."""
    block.section(f"{title} ({total})" if total else title)
    if not lines:
        block.note("None.")
        return
    header = [""] * LEFT_COLUMNS
    header[0], header[WHAT_COLUMN - 1], header[REASON_COLUMN - 1] = "case", what, "reason"
    block.header(*header)
    font = {"regression": styles.REGRESSION_FONT, "improvement": styles.IMPROVEMENT_FONT}.get(colour or "")
    for line in lines:
        for part in _split(_shown_name(line, links.same_names), LINE_CHARS):
            link_by_id(block.cell(0, part), OVERVIEW, line.case_id, row=links.overview_rows.get(line.case_id),
                       tooltip=line.case_id)
            block.row += 1
        whats, reasons = _split(line.what, WHAT_CHARS), _split(line.reason or "", REASON_CHARS)
        for index in range(max(len(whats), len(reasons))):
            if index < len(whats):
                block.cell(WHAT_COLUMN - 1, whats[index], font=font)
            if index < len(reasons):
                block.cell(REASON_COLUMN - 1, reasons[index] or None)
            block.row += 1
    if total > len(lines):
        more = block.note(f"+ {total - len(lines)} more in the Changes sheet")
        if more_kind and more_kind in links.first_change_rows:
            link_by_id(more, CHANGES, more_kind, column=CHANGE_KIND_COLUMN,
                       row=links.first_change_rows[more_kind], tooltip="Changes")


def write_within_noise(block: Block, report: Report, links: SummaryLinks) -> None:
    """The cases that moved no more than their own attempts vary by (listed apart, never counted as
    regressions), and, once, what the lists above rest on (`Comparison.attempts_note`)."""
    comparison = report.comparison
    if comparison is None:
        return
    moved = comparison.moved(WITHIN_NOISE)
    if moved:
        write_case_lines(block, "Moved within noise", [moved_line(m) for m in moved[:TOP_CASES]], len(moved), links,
                         what="what moved", more_kind=WITHIN_NOISE)
    if comparison.attempts_note:
        block.note(comparison.attempts_note)


def _shown_name(line: CaseLine, same_names: frozenset[str]) -> str:
    """The case's name, with its id after it when another case shown has the same name."""
    name = line.name or line.case_id
    shared = " ".join(name.split()) in same_names and name != line.case_id
    return f"{name} (id {line.case_id})" if shared else name


def names_shared_by_cases(digest: Digest) -> frozenset[str]:
    """Names that more than one of the cases the Summary lists carry."""
    ids_by_name: dict[str, set[str]] = {}
    for line in (*digest.regressed, *digest.improved, *(case for w in digest.weakest for case in w.cases)):
        ids_by_name.setdefault(" ".join((line.name or line.case_id).split()), set()).add(line.case_id)
    return frozenset(name for name, ids in ids_by_name.items() if len(ids) > 1)


def _split(text: str, width: int) -> list[str]:
    """Text in lines that fit `width`, every character kept (a word longer than a line is cut
    across lines, never shortened)."""
    lines = textwrap.wrap(" ".join(str(text).split()), width=width, break_on_hyphens=False,
                          break_long_words=True)
    return lines or [""]


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
        styles.link(problems, links.problems_sheet, "A1", tooltip="the Problems sheet")
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


def write_run_info(block: Block, run: RunInfo, digest: Digest) -> None:
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
    write_headline(left, digest, report.agreement, in_batches=run.judge_usage is not None and run.judge_usage.batch)
    write_consistency(left, report.pass_rates)
    if digest.baseline is not None and digest.deltas:
        write_case_lines(left, "What got worse", digest.regressed, digest.regressed_total, links,
                         what="what moved", more_kind="regression", colour="regression")
        write_case_lines(left, "What got better", digest.improved, digest.improved_total, links,
                         what="what moved", more_kind="improvement", colour="improvement")
        write_within_noise(left, report, links)
    write_weakest(left, digest, links)

    right = Block(ws, first, KEY_COLUMN)
    write_status(right, digest, links)
    write_grades(right, report.grades)
    write_review(right, digest, report, links)
    write_run_info(right, run, digest)

    widths = dict(COLUMN_WIDTHS)
    widths.update({LEFT_COLUMNS + 1: 2.0, KEY_COLUMN: KEY_WIDTH, VALUE_COLUMN: VALUE_WIDTH})
    styles.set_widths(ws, widths)
    ws.worksheet.hide_gridlines(2)  # on screen and on paper
    styles.landscape(ws, fit_page=True)
