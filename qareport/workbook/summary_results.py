"""The Summary's left half (A-L): the headline metrics and how sure they are, the pass rates, the
regressed and improved cases and those within noise, and the weakest cases of each kind.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from qareport.case_changes import WITHIN_NOISE
from qareport.comparison import HeadlineDelta
from qareport.consistency import SuiteConsistency
from qareport.digest import (
    TOP_CASES,
    CaseLine,
    Digest,
    detectable_words,
    mattering,
    moved_line,
    partly_judged,
    signed_bound,
)
from qareport.headline import Headline
from qareport.judge_agreement import JudgeAgreement
from qareport.report import Report
from qareport.workbook import styles
from qareport.workbook.case_links import casefold_twins, link_by_id
from qareport.workbook.sheet import Cell
from qareport.workbook.sheet_names import CHANGES, OVERVIEW
from qareport.workbook.summary_grid import (
    CHANGE_KIND_COLUMN,
    LEFT_COLUMNS,
    LINE_CHARS,
    REASON_CHARS,
    REASON_COLUMN,
    WHAT_CHARS,
    WHAT_COLUMN,
    Block,
    SummaryLinks,
)


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


def shown_interval(delta: HeadlineDelta) -> str:
    """The change's 95 % interval to two decimals, never excluding the change shown beside it (the
    difference of two rounded means may lie a rounding step outside a narrow interval)."""
    assert delta.low is not None and delta.high is not None
    low, high = delta.low, delta.high
    if delta.shown_delta is not None:
        low, high = min(low, delta.shown_delta), max(high, delta.shown_delta)
    return f"{signed_bound(low)} – {signed_bound(high)}"


def write_headline(block: Block, digest: Digest) -> None:
    """One row per metric, each figure once. Against a baseline the row reconciles: last run and this
    run over the same shared cases, and the change between them, all to two decimals, with the
    change's clustered interval and its decision; each run's mean over all its own evaluated cases
    (what its report said) stands apart, under its own heading. The p-values and clusters behind
    the decisions are in Statistics."""
    block.section("How good is it")
    compared = bool(digest.deltas)
    if compared:
        shared = max((delta.shared_cases for delta in digest.deltas), default=0)
        for offset, title in ((1, "this run, all its evaluated cases"),
                              (6, f"like for like: the {shared} cases both runs have (an error counts as failing)")):
            block.cell(offset, title, font=styles.BOLD)
        block.row += 1
    block.header("metric", "mean", "95% interval", "cases", "not scored",
                 *(("last report", "cases", "last run", "this run", "change", "95% interval", "vs noise")
                   if compared else ()))
    if not digest.headline:
        block.note("No metric could be computed: no test case was evaluated (see the status counts).")
    partial = partly_judged(digest.judged)
    for item in digest.headline:
        block.cell(0, item.label)
        block.cell(1, item.mean, font=styles.BOLD,
                   number_format=styles.PARTIAL_SCORE_FORMAT if item.metric in partial else styles.SCORE_FORMAT)
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
            if delta.low is not None and delta.high is not None and delta.p_value is not None:
                block.cell(10, shown_interval(delta))
            block.cell(11, _noise_words(delta))
        block.row += 1
    text = ("mean: over the evaluated cases, 95 % interval by cluster bootstrap; not scored: cases with such a "
            "target that failed or had no usable response.")
    if compared:
        tested = sum(1 for delta in digest.deltas if delta.p_value is not None)
        text += (" last report: the last run's mean over all its evaluated cases. like for like: over the cases both "
                 "runs have whose test did not change, an error counting as failing (a removed, new or edited case "
                 "never moves it); "
                 "interval and p flip whole clusters; q: p adjusted (Holm) over the "
                 f"{tested} headline metrics alone; beyond noise when q ≤ 0.05: {digest.beyond_noise} of the run's "
                 f"{digest.tests} changes (tags, templates, dimensions: families of their own; p, clusters: "
                 "see Statistics).")
    block.note(text)
    for words in partial.values():  # a mean over whichever cases the judge got to
        block.note(f"* {words}: a mean over the cases judged, not the whole suite.").font = styles.REGRESSION_FONT


def write_detectable(block: Block, digest: Digest) -> None:
    """What the run can see: the change of each headline metric the run's own decision would catch
    about 8 times in 10 (one line each)."""
    said = False
    for item in digest.headline:
        if item.mean is None:
            continue
        delta = digest.delta(item.metric)
        effect = mattering(delta.design_effect if delta is not None and delta.p_value is not None
                           else item.design_effect)
        text = f"{'' if said else 'What this run can see: '}{item.label}: {detectable_words(item, delta)}"
        block.note(text + (f"; design effect {effect:.1f}" if effect is not None else "") + ".")
        said = True


def write_judge(block: Block, digest: Digest, agreement: JudgeAgreement | None = None, *,
                in_batches: bool = False) -> None:
    """The judge's figures: how its metrics were judged, and its agreement with the analysts' reviews."""
    if not digest.judged and agreement is None:
        return
    block.section("The LLM judge")
    if digest.judged:
        listed = sorted(digest.judged, key=lambda metric: not metric.mostly_failed)  # the alarming ones first
        text = f"LLM judge{' (in batches)' if in_batches else ''}: " + "; ".join(m.describe() for m in listed)
        cell = block.note(styles.shorten(text, 110))  # one line; the Statistics sheet has the whole table
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


def write_consistency(block: Block, rates: Sequence[SuiteConsistency], pass_rules: str) -> None:
    """With cases answered several times: the suite's pass@k and pass^k (`consistency`), one row per
    kind of case when the kinds were run a different number of times, and the rules an attempt passed
    by (`Report.pass_rules`)."""
    if not rates:
        return
    block.section("How consistent is it")
    if len(rates) == 1:
        k = rates[0].rates.k
        block.header("k", f"pass@{k}", f"pass^{k}", "cases", "flaky", "left out")
    else:  # each kind its own k, so the headers cannot name one
        block.header("k", "pass@k", "pass^k", "cases", "flaky", "left out", "cases of")
    for line in rates:
        block.cell(0, line.rates.k, number_format=styles.INTEGER_FORMAT)
        block.cell(1, line.rates.pass_at_k, font=styles.BOLD, number_format=styles.SCORE_FORMAT)
        block.cell(2, line.rates.pass_hat_k, font=styles.BOLD, number_format=styles.SCORE_FORMAT)
        block.cell(3, line.rates.cases, number_format=styles.INTEGER_FORMAT)
        block.cell(4, line.flaky, number_format=styles.INTEGER_FORMAT)
        block.cell(5, line.rates.too_few_attempts, number_format=styles.INTEGER_FORMAT)
        if line.cases_of:
            block.cell(6, line.cases_of)
        block.row += 1
    if len(rates) == 1:
        k = rates[0].rates.k
        block.note(f"pass@{k}: the chance that at least one of {k} attempts of a case passes; pass^{k}: that all "
                   f"{k} pass; means over the cases with {k} or more attempts. flaky: cases whose attempts disagree. "
                   f"An attempt passes by its kinds' rules: {pass_rules}.")
    else:
        block.note("pass@k: the chance that at least one of k attempts of a case passes; pass^k: that all k pass; "
                   "each kind of case with its own k (the number of attempts most of its cases have), means over "
                   "its cases with k or more attempts. flaky: cases whose attempts disagree. An attempt passes by "
                   f"its kinds' rules: {pass_rules}.")


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
    twins = casefold_twins(links.overview_rows)  # the ids MATCH cannot tell apart in Overview
    for line in lines:
        for part in _split(_shown_name(line, links.same_names), LINE_CHARS):
            link_by_id(block.cell(0, part), OVERVIEW, line.case_id, row=links.overview_rows.get(line.case_id),
                       tooltip=line.case_id, twins=twins)
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
