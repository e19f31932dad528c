"""The Statistics sheet's tables about the judge: the judged metrics with their spread, the judge
against the analysts, the judge's noise beside the system's, and the judge's usage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from qareport.judge_agreement import DISAGREEMENT_THRESHOLD, MIN_REVIEWED, JudgeAgreement
from qareport.judge_audit import PASS_AT, JudgeAudit
from qareport.judge_noise import MAX_REPEATS, JudgeNoise, NoiseShares
from qareport.judged_metrics import JudgedMetric
from qareport.records import RunInfo
from qareport.workbook import styles
from qareport.workbook.statistics_tables import NOTE_UNITS, TableWriter, note_lines


def write_judged_metrics(tables: TableWriter, judged: Sequence[JudgedMetric]) -> None:
    """Each judged metric with the cases it rests on: judged, failed, not applicable."""
    if not judged:
        return
    tables.section("LLM-judged metrics",
                   "Evaluated cases; mean over the judged ones (as in the Summary); failed: the judge's reply "
                   "could not be used; not judged: the API failed or the judge was stopped; not applicable: "
                   "nothing to judge (no answer, no reference, no retrieval step).")
    first, _last = tables.table(
        ("metric", "mean", "judged", "failed", "not judged", "not applicable", "note"),
        [(metric.label, metric.mean, metric.judged, metric.failed, metric.not_judged, metric.not_applicable,
          _judged_note(metric))
         for metric in judged],
        (None, styles.SCORE_FORMAT, *[styles.INTEGER_FORMAT] * 4, None),
        overflow_last=True,
    )
    for offset, metric in enumerate(judged):
        if metric.mostly_failed:
            tables.ws.cell(first + offset, 7).font = styles.REGRESSION_FONT
            tables.ws.cell(first + offset, 4 if metric.failed >= metric.not_judged else 5).fill = styles.REGRESSION_FILL


AGREEMENT_TITLE = "The judge against the analysts"


def write_judge_agreement(tables: TableWriter, agreement: JudgeAgreement | None) -> None:
    """Per judged metric, the share of the judgments the analysts reviewed that they found wrong, with
    its Wilson 95 % interval: this run, and over the history when there is one."""
    if agreement is None:
        return
    tables.section(AGREEMENT_TITLE, (
        "Judgments (a judged metric of a case) the analysts reviewed in the Overview's review column: 'ok' (the "
        "judge was right on every judged metric shown on the case's row), 'judge wrong' (wrong on all of them), "
        "'judge wrong: correctness' (wrong on the metrics named, right on the others shown; retrieval is not on "
        "the row, so only a review naming it counts for it). This run: the reviews carried onto its "
        "cases; history: every run given, each judgment once, with its latest review. Interval: Wilson 95 %. "
        f"Flagged from {MIN_REVIEWED} reviewed when the whole interval lies above "
        f"{DISAGREEMENT_THRESHOLD * 100:.0f} %: do not gate on such a metric."))
    rows: list[tuple[Any, ...]] = []
    flags: list[bool] = []
    scopes = [("this run", agreement.this_run)]
    if agreement.history is not None:
        scopes.append((f"{agreement.history_runs} runs", agreement.history))
    for index in range(len(agreement.this_run)):
        for scope, items in scopes:
            shown = items[index]
            low, high = shown.interval or (None, None)
            rows.append((shown.label, scope, shown.reviewed, shown.wrong, shown.share_wrong, low, high,
                         "THE JUDGE DISAGREES WITH THE ANALYSTS: do not gate on it" if shown.flagged else None))
            flags.append(shown.flagged)
    first, _ = tables.table(
        ("metric", "over", "reviewed", "found wrong", "share wrong", "95% low", "95% high", "note"), rows,
        (None, None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, *[styles.PERCENT_FORMAT] * 3, None),
        overflow_last=True,
    )
    for offset, flagged in enumerate(flags):
        if flagged:
            tables.ws.cell(first + offset, 8).font = styles.REGRESSION_FONT
            tables.ws.cell(first + offset, 5).fill = styles.REGRESSION_FILL


def audit_title(audit: JudgeAudit) -> str:
    """"Audit these 20 judgments": the heading the analysts look for."""
    count = len(audit.sample)
    return f"Audit these {count} judgment{'' if count == 1 else 's'}"


CALIBRATION_TITLE = "The judge's calibration"


def write_judge_audit(tables: TableWriter, audit: JudgeAudit | None) -> None:
    """The judgments drawn for the analysts to audit, with their review so far; then, per judged metric
    (and judge), the judge's error rate, true-positive and true-negative rates and Cohen's kappa on the
    audited sample, and apart on the reviews the analysts chose."""
    if audit is None:
        return
    tables.section(audit_title(audit), (
        f"A random sample of this run's judgments (a judged metric of a case shown on its Overview row), drawn "
        f"with seed {audit.seed}: the same suite and seed give the same sample. Review each case in the "
        "Overview's review column ('ok', 'judge wrong', 'judge wrong: METRIC'); the judge's error rate is measured "
        "on these, because reviews of cases the analysts chose are not a random sample (they are counted apart). "
        f"{audit.reviewed} of {len(audit.sample)} reviewed so far."))
    tables.table(
        ("case", "metric", "judge's value", "review says"),
        [(item.judgment.case_id, item.label, item.judgment.value,
          "not reviewed yet" if item.found_wrong is None else "judge wrong" if item.found_wrong else "judge right")
         for item in audit.sample],
        (None, None, styles.SCORE_FORMAT, None),
    )
    if not audit.calibration:
        return
    with_judge = any(item.judge for item in audit.calibration)
    over = "this run" if audit.runs == 1 else f"{audit.runs} runs"
    tables.section(CALIBRATION_TITLE, (
        f"Over {over}, each judgment once with its latest review. Random audit: the judgments drawn above (and in "
        "earlier runs' samples) that were reviewed: an estimate of the judge. Chosen by the analysts: the other "
        "reviewed judgments, useful to find bugs but not a sample of the judge. A judgment passes at a value of "
        f"{PASS_AT:g} or more; the analysts' verdict is the judge's, turned over where they found it wrong. "
        "True-positive rate: of the judgments the analysts pass, the share the judge passed (low: too harsh); "
        "true-negative rate: of those they fail, the share it failed (low: too lenient). Intervals: Wilson 95 %; "
        "kappa: Cohen's, percentile bootstrap 95 %."))
    rows: list[tuple[Any, ...]] = []
    for item in audit.calibration:
        error, positive, negative = item.error_rate, item.true_positive_rate, item.true_negative_rate
        interval = item.kappa_interval
        rows.append((item.label, *((item.judge,) if with_judge else ()), item.sample, item.confusion.audited,
                     item.confusion.wrong, *(error or (None, None, None)), positive[0] if positive else None,
                     negative[0] if negative else None, item.kappa, *(interval or (None, None))))
    tables.table(
        ("metric", *(("judge",) if with_judge else ()), "sample", "audited", "found wrong", "error rate", "95% low",
         "95% high", "true-positive rate", "true-negative rate", "kappa", "kappa 95% low", "kappa 95% high"),
        rows,
        (None, *((None,) if with_judge else ()), None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT,
         *[styles.PERCENT_FORMAT] * 5, *[styles.SCORE_FORMAT] * 3),
    )


NOISE_TITLE = "The judge's noise and the system's"


def write_judge_noise(tables: TableWriter, noise: Sequence[JudgeNoise]) -> None:
    """With judge repeats: per judged metric, the variance between repeats of a judgment (the
    judge's), between attempts of a case and between cases (the system's); then the judge's share of
    one judgment and of a case's value (the mean of its repeats), each with its interval, and the
    repeats that would halve the latter."""
    if not noise:
        return
    tables.section(NOISE_TITLE, (
        "Each judgment was asked several times (--judge-repeats); a case's value is the mean over its repeats. "
        "Variances of one judgment, split as a nested random-effects ANOVA: judge = mean variance between the "
        "repeats of a judgment; attempts = between the attempts of a case, beyond the repeats (empty with one "
        "attempt per case: then the cases column holds it too); cases = between cases, beyond both. Estimates are "
        "unbiased and may come out below zero by chance (counted as zero in the shares)."))
    rows = [(item.label, item.split.cases, item.split.repeats, item.split.judge, item.split.attempt,
             item.split.case, item.judge_share,
             math.sqrt(item.split.judge) if item.split.judge is not None and item.split.judge > 0 else None)
            for item in noise]
    tables.table(
        ("metric", "cases", "values", "judge variance", "attempts variance", "cases variance",
         "judge's share of one judgment", "judge SD"),
        rows,
        (None, styles.INTEGER_FORMAT, styles.INTEGER_FORMAT, *[VARIANCE_FORMAT] * 3, styles.PERCENT_FORMAT,
         styles.SCORE_FORMAT),
    )
    shares = [(item.label, item.shares) for item in noise if item.shares is not None]
    if not shares:
        return
    tables.section(NOISE_SHARES_TITLE, (
        "Of one judgment: the judge's part of the variance of one answer of the judge (it describes the judge, "
        "whatever the repeats). Of a case's value: its part of the variance of the value the metric's mean is "
        "taken over, the mean of the repeats (judge variance / repeats, and / attempts): the one that matters "
        "for a change of the metric. Intervals: 95 %, bootstrap over cases (BCa, expanded for few cases). "
        "Note: the repeats that would halve the judge's share of a case's value, the other parts as estimated."))
    share_rows: list[tuple[Any, ...]] = []
    for label, figures in shares:
        one, used = figures.one_judgment, figures.case_value
        share_rows.append((label, "one judgment", 1, one.value, one.low, one.high, None))
        share_rows.append((label, "a case's value", round(figures.repeats, 1), used.value, used.low, used.high,
                           _halving_note(figures)))
    tables.table(
        ("metric", "share of", "repeats", "judge's share", "95% low", "95% high", "note"), share_rows,
        (None, None, None, *[styles.PERCENT_FORMAT] * 3, None),
        overflow_last=True,
    )


NOISE_SHARES_TITLE = "The judge's share, with its interval"


def _halving_note(shares: NoiseShares) -> str:
    if shares.case_value.value <= 0:
        return "the judge adds nothing measurable: more repeats would not change the value"
    if shares.repeats_to_halve is None:
        return f"no number of repeats up to {MAX_REPEATS} halves it: a steadier judge would"
    return f"{shares.repeats_to_halve} repeats would halve it"


VARIANCE_FORMAT = "0.00000"


def _judged_note(metric: JudgedMetric) -> str | None:
    notes = []
    if metric.mostly_failed:
        notes.append("FAILED FOR MOST CASES: the mean rests on few cases")
    if metric.budget_reached:
        notes.append(f"{metric.budget_reached} not judged: budget reached")
    return "; ".join(notes) or None


def write_judge(tables: TableWriter, run: RunInfo) -> None:
    if run.not_evaluated:
        tables.section("Metrics not evaluated")
        reasons: list[tuple[str | None, str]] = []  # each reason in lines that end where the tables end
        for metrics, why in sorted(run.not_evaluated.items()):
            lines = note_lines(why, NOTE_UNITS - tables.width(1)) or [why]
            reasons += [(metrics, lines[0]), *[(None, line) for line in lines[1:]]]
        first, last = tables.table(("metrics", "why"), reasons, (None, None), overflow_last=True)
        for row in range(first, last + 1):  # the reason runs on to the right, at the top of its row
            tables.ws.cell(row, 2).alignment = styles.TOP
    usage = run.judge_usage
    if not usage:
        return
    tables.section("LLM judge", f"model {usage.model}, embeddings {usage.embedding_model}. "
                                "Requests, not cases: failed calls failed after the SDK's retries (the judgments "
                                "they were for are not judged, above); cached calls cost nothing.")
    rows: list[tuple[Any, ...]] = [("all metrics", usage.calls, usage.cached_calls, usage.failed_calls,
                                    usage.input_tokens, usage.output_tokens, usage.cost_usd)]
    for metric, figures in sorted(usage.by_metric.items()):  # tokens are counted for all metrics together
        rows.append((metric, figures.calls, figures.cached_calls, figures.failed_calls, None, None, figures.cost_usd))
    tables.table(
        ("metric", "calls", "cached calls", "failed calls", "input tokens", "output tokens", "cost (USD)"),
        rows,
        (None, *[styles.INTEGER_FORMAT] * 5, styles.COST_FORMAT),
    )
