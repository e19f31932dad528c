"""The report model: a run, computed once, that every writer only lays out.

Load → evaluate → aggregate produce the case results; `build_report` adds everything computed over
them (statistics, headline metrics with their intervals, case rows with each case's reason, the
comparison with a baseline, the trend, the reviews carried over from the baseline, the digest) into
one immutable `Report`. The workbook, the results file, the email and the console summary read it;
none of them computes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from qareport.case_changes import case_moved, why_not_loaded
from qareport.case_record import CaseRow
from qareport.case_rows import case_rows
from qareport.case_table import CaseDetails, CaseTable, details_table, overview_kinds, overview_table
from qareport.collector import collector_paused
from qareport.comparison import Comparison, compare_runs
from qareport.consistency import (
    CaseConsistency,
    SuiteConsistency,
    case_consistency,
    pass_rules_text,
    suite_consistency,
)
from qareport.digest import Digest, build_digest, drift_alert
from qareport.evaluation_options import given_pass_rules
from qareport.grading_rules import mark_rules_changed
from qareport.headline import Headline, headline_metrics, score_distribution, status_counts
from qareport.judge_agreement import JudgeAgreement, ReviewedRun, custom_metric_names, judge_agreement
from qareport.judge_audit import AUDIT_SIZE, AuditedRun, JudgeAudit, audit_judge
from qareport.judge_change import judge_changes, judge_shifts, mark_judge_changed
from qareport.judge_noise import JudgeNoise, judge_noise
from qareport.judged_metrics import JudgedMetric, count_judged_metrics, partly_judged_pairs
from qareport.kinds import RunKinds, Table, catalogue
from qareport.records import CarriedCase, CaseResult, Problem, Review, RunInfo, RunSnapshot, Unloaded
from qareport.side_by_side import SideBySide, side_by_side
from qareport.statistics import SuiteStatistics, summarize
from qareport.trend import TrendPoint, drift_since, reference_run, trend_points

if TYPE_CHECKING:  # imported by `Report.to_pandas`, when a notebook asks for a frame
    import pandas as pd

MIN_EVALUATED_SHARE = 0.5  # below this share of cases evaluated, a run is reported as incomplete


@dataclass(frozen=True, slots=True)
class Report:
    """One run of qareport, everything a reader of the report may see, computed once."""

    run: RunInfo
    results: tuple[CaseResult, ...]  # in test-case order
    problems: tuple[Problem, ...]
    statistics: SuiteStatistics
    rows: tuple[CaseRow, ...]  # one row per case (`case_rows.case_rows`), what a later run compares
    headline: tuple[Headline, ...]
    status_counts: dict[str, int]
    kinds: RunKinds  # the kinds this run has (of `kind_set`, those present in its results), in column order
    digest: Digest
    kind_set: RunKinds = field(default_factory=catalogue)
    """The run's set of kinds (`kinds.for_run`: the catalogue's and the run's own), which the model
    was computed by; the writers ask it for labels and rules."""
    reasons: dict[str, str] = field(default_factory=dict)  # case id -> why it lost points, one line
    pass_rules: str = ""  # when an attempt passes, by the kinds present and the thresholds the run used
    score_distributions: dict[str, list[int]] = field(default_factory=dict)
    """Evaluated cases per 0.1-wide score bin, for each headline metric that has a value."""
    kind_tables: tuple[Table, ...] = ()  # the kinds' Statistics tables (`SuiteStatistics.tables`), in order
    comparison: Comparison | None = None  # with a baseline
    trend: tuple[TrendPoint, ...] = ()  # with a history: earlier runs, oldest first, then this one
    reviews: dict[str, Review] = field(default_factory=dict)  # case id -> the analyst's review, carried over
    kept_reviews: dict[str, Review] = field(default_factory=dict)
    """Reviews of baseline cases absent from this run (not loaded, or missing for a while), each with
    the case's row when last seen: stored with the run, so they come back with the case."""
    unloaded: tuple[Unloaded, ...] = ()  # test cases that could not be read (`Suite.unloaded`)
    carried: tuple[CarriedCase, ...] = ()
    """Cases this run could not load, with their rows when last seen (`carry_unloaded`): stored with
    the run for the next comparison only, in none of this run's figures."""
    not_loaded: str | None = None
    """"3 test cases could not be loaded (file x.yaml could not be read)", said before any delta."""
    judged: tuple[JudgedMetric, ...] = ()  # when the judge ran: each judged metric's counts
    pinned_reference: RunSnapshot | None = None  # --reference: the run slow drift was measured from
    incomplete: str | None = None
    """"INCOMPLETE RUN: 3 of 29 cases evaluated" when too few cases were evaluated to trust a delta."""
    side_by_side: tuple[SideBySide, ...] = ()  # regressed and improved cases, both runs' outputs
    agreement: JudgeAgreement | None = None  # the judge against the analysts' reviews, when a run was judged
    judge_noise: tuple[JudgeNoise, ...] = ()  # with judge repeats: each judged metric's variance split
    audit: JudgeAudit | None = None  # the judgments drawn for the analysts to audit, and the judge's calibration
    grades: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per kind that grades (by label): cases per grade, best first, then "not graded" (`RunKinds.grade_counts`)."""
    overview: CaseTable = field(default_factory=lambda: CaseTable((), ()))
    """The Overview's columns and each case's values in them (`case_table`)."""
    details: tuple[CaseDetails, ...] = ()  # each case's Details rows, in the cases' order
    consistency: dict[str, CaseConsistency] = field(default_factory=dict)
    """Case id -> its attempts at a glance, for the cases answered several times (`consistency`)."""
    pass_rates: tuple[SuiteConsistency, ...] = ()
    """The suite's pass@k and pass^k, when cases have attempts: one line, or one per kind of case when
    the kinds were run a different number of times (`consistency.suite_consistency`)."""

    def to_pandas(self, level: Literal["case", "turn"] = "case") -> pd.DataFrame:
        """The run's results as a pandas frame, for a notebook (pandas is imported here, not before).

        `level="case"`: one row per case, in test-case order: `case_id`, `name`, `groups` (a tuple:
        the tags; a Q&A question's template), `cluster`, `status`, `reason` (why it lost points, or
        None), then each metric of the run's kinds as floats (NaN where a case has no value: the
        figures are the Overview's). `level="turn"`: one row per turn of each case: `case_id`, `turn`,
        `user_message`, `status` (the case's), `error` (the turn's), then each metric of the run's
        kinds as that turn alone scores it (NaN where the turn has no value).
        """
        import pandas as pd

        if level == "case":
            metric_keys = list(self.kinds.case_metric_keys())
            rows = [{"case_id": row.case_id, "name": row.name, "groups": row.groups, "cluster": row.cluster,
                     "status": row.status, "reason": row.reason, **{key: row.metric(key) for key in metric_keys}}
                    for row in self.rows]  # the case rows, computed once (`case_rows`)
            return _frame(pd, rows, ["case_id", "name", "groups", "cluster", "status", "reason"], metric_keys)
        if level == "turn":
            metric_keys = list(self.kinds.case_metric_keys())
            turn_rows = [
                {"case_id": result.case.id, "turn": turn.number, "user_message": turn.user_message,
                 "status": result.status, "error": turn.error,
                 **self.kinds.case_metrics(replace(result, turns=(turn,), attempts=()))}  # the turn alone
                for result in self.results for turn in result.turns
            ]
            return _frame(pd, turn_rows, ["case_id", "turn", "user_message", "status", "error"], metric_keys)
        raise ValueError(f"level must be 'case' or 'turn' (got {level!r}).")

    @property
    def snapshot(self) -> RunSnapshot:
        return RunSnapshot(source="this run", created=self.run.created,
                           qareport_version=self.run.qareport_version, cases=self.rows,
                           partly_judged=partly_judged_pairs(self.judged))


@collector_paused()  # the report model lives on and makes no reference cycles: see `collector`
def build_report(
    results: Sequence[CaseResult],
    problems: Sequence[Problem],
    run: RunInfo,
    *,
    statistics: SuiteStatistics | None = None,
    baseline: RunSnapshot | None = None,
    history: Sequence[RunSnapshot] = (),
    source: str = "this run",
    min_evaluated_share: float = MIN_EVALUATED_SHARE,
    unloaded: Sequence[Unloaded] = (),
    baseline_reviews: Mapping[str, Review] | None = None,
    baseline_warnings: Sequence[str] = (),
    history_reviews: Sequence[Mapping[str, Review]] = (),
    reference: RunSnapshot | None = None,
    templates_dir: str | None = None,
    kinds: RunKinds | None = None,
    audit_size: int = AUDIT_SIZE,
) -> Report:
    """Everything the writers need from one run. `baseline` adds the comparison (and, with
    `baseline_reviews`, the reviews carried over); `history` the trend (the baseline is a point of
    the trend too); `history_reviews`, the reviews typed into each run of `history` (in its order), the
    judge against the analysts over the history. `templates_dir` overrides the templates of the
    details cells. `kinds`: the run's set of kinds (`kinds.for_run`; None: the catalogue's)."""
    kinds = kinds if kinds is not None else catalogue()
    results = tuple(results)
    rows = tuple(case_rows(results, kinds))
    judged = count_judged_metrics(results) if run.judge_usage is not None else ()
    current = RunSnapshot(source=source, created=run.created, qareport_version=run.qareport_version, cases=rows,
                          acceptable_extras=run.options.acceptable_extras if run.options is not None else None,
                          judge_identity=run.judge_identity, partly_judged=partly_judged_pairs(judged))
    reasons = {row.case_id: row.reason for row in rows if row.reason}
    comparison = (compare_runs(baseline, current, unloaded=unloaded, warnings=baseline_warnings, kind_set=kinds)
                  if baseline is not None else None)
    if comparison is not None and baseline is not None:  # a judge change is never a system change
        changed = judge_changes(baseline.judge_identity, run.judge_identity)
        comparison = mark_judge_changed(comparison, changed,
                                        shifts=judge_shifts(baseline.cases, rows) if changed else ())
        if run.options is not None:  # nor is a change of grading rules
            comparison = mark_rules_changed(comparison, baseline, run.options.acceptable_extras)
    counts = status_counts(rows)
    headline = with_judge_failures(headline_metrics(rows, kinds), judged, kinds)
    incomplete = incomplete_run(counts, min_evaluated_share)
    not_loaded = not_loaded_note(unloaded, comparison)
    pinned = reference
    reference = reference_run(history, pinned)  # pinned, else the history's first: a slow drift shows against it
    drift = (drift_alert(drift_since(reference, current), reference.source)
             if reference is not None and (baseline is None or reference.created != baseline.created) else None)
    reviews = carry_reviews(baseline_reviews or {}, comparison, rows, kinds)
    earlier = [(run_, dict(history_reviews[index]) if index < len(history_reviews) else {})
               for index, run_ in enumerate(history)]
    if baseline is not None:
        earlier.append((baseline, dict(baseline_reviews or {})))
    agreement = judge_agreement((rows, reviews), history=reviewed_history(earlier) if history else None,
                                custom=custom_metric_names(kinds))
    present = kinds.present_in(results)
    kept = baseline.overview_headers if baseline is not None else ()  # its columns stay (`overview_columns`)
    if statistics is None:  # by the rules the run was scored by, as the results file orders its records
        statistics = summarize(results, steps_semantics=run.steps_semantics, kind_set=kinds)
    consistency = {r.case.id: c for r in results if (c := case_consistency(r, kinds)) is not None}
    digest = build_digest(
        run=run, rows=rows, headline=headline, status_counts=counts, problems=len(problems),
        comparison=comparison, alerts=[text for text in (not_loaded, incomplete, drift) if text], judged=judged,
        incomplete=incomplete is not None, kind_set=kinds,
    )
    return Report(
        run=run,
        results=results,
        problems=tuple(problems),
        statistics=statistics,
        rows=rows,
        headline=headline,
        judged=judged,
        pinned_reference=pinned,
        status_counts=counts,
        kinds=present,
        digest=digest,
        kind_set=kinds,
        reasons=reasons,
        pass_rules=pass_rules_text(present, given_pass_rules(run.options.answer_pass_f1 if run.options else None)),
        score_distributions=_score_distributions(rows, kinds),
        kind_tables=statistics.tables(),
        comparison=comparison,
        trend=trend_points([*history, *([baseline] if baseline else [])], current) if history else (),
        reviews=reviews,
        kept_reviews=keep_reviews(baseline_reviews or {}, baseline, rows) if comparison is not None else {},
        incomplete=incomplete,
        unloaded=tuple(unloaded),
        carried=carry_unloaded(baseline, rows, unloaded, run.created) if baseline is not None else (),
        not_loaded=not_loaded,
        side_by_side=(side_by_side(comparison, (*(item.row for item in baseline.carried), *baseline.cases), rows, kinds)
                      if comparison is not None and baseline is not None else ()),
        agreement=agreement,
        judge_noise=judge_noise(results) if run.judge_usage is not None else (),
        audit=audit_judge(AuditedRun(rows, reviews), size=audit_size, custom=custom_metric_names(kinds),
                          history=[AuditedRun(*run_) for run_ in reviewed_history(earlier)] if history else ()),
        grades=kinds.grade_counts(results),
        overview=overview_table(results, rows, overview_kinds(kinds, results, kept=kept, templates_dir=templates_dir),
                                reasons=reasons, comparison=comparison, reviews=reviews,
                                judge=run.judge_usage is not None, kept=kept,
                                consistency=consistency, templates_dir=templates_dir),
        details=details_table(present, results, reasons, kind_set=kinds),
        consistency=consistency,
        pass_rates=suite_consistency(results, kinds),
    )


def reviewed_history(runs: Sequence[tuple[RunSnapshot, Mapping[str, Review]]]) -> list[ReviewedRun]:
    """Earlier runs with their reviews, oldest first, each run once: a run is known by when it was
    created, not by its file (the baseline is often in the history too, and a workbook re-saved under
    another name is the same run); a run read twice keeps the reviews of both readings."""
    merged: dict[tuple[str, str], tuple[RunSnapshot, dict[str, Review]]] = {}
    for snapshot, reviews in runs:
        key = (snapshot.created, "") if snapshot.created else ("", str(Path(snapshot.source).resolve()))
        _, kept = merged.setdefault(key, (snapshot, {}))
        kept.update({case_id: review for case_id, review in reviews.items() if review})
    ordered = sorted(merged.values(), key=lambda item: item[0].created or "")
    return [(snapshot.cases, reviews) for snapshot, reviews in ordered]


def carry_reviews(previous: Mapping[str, Review], comparison: Comparison | None,
                  rows: Sequence[CaseRow], kinds: RunKinds | None = None) -> dict[str, Review]:
    """Last week's reviews, for this week's cases: kept as they were where neither the test nor the
    result changed; for a case that changed, only as "was: ..." in the note, so the analyst decides
    again. A case that comes back after an absence (not loaded, or missing) is compared with the run
    it was last seen in (`Review.last_seen`), not with the baseline that lacked it."""
    if comparison is None or not previous:
        return {}
    changed = {change.case_id for change in comparison.changes}
    carried = {}
    for row in rows:
        case_id = row.case_id
        review = previous.get(case_id)
        if not review:
            continue
        moved = (case_moved(review.last_seen, row, kind_set=kinds) if review.last_seen is not None
                 else case_id in changed)
        if not moved:
            carried[case_id] = Review(review.verdict, review.note)
            continue
        if not review.verdict and (review.note or "").startswith("was: "):
            carried[case_id] = Review(review.verdict, review.note)  # an earlier review nobody has decided again
            continue
        was = "; ".join(part for part in (review.verdict, review.note) if part)
        carried[case_id] = Review(verdict=None, note=f"was: {was}")
    return carried


def carry_unloaded(baseline: RunSnapshot, rows: Sequence[CaseRow], unloaded: Sequence[Unloaded],
                   created: str) -> tuple[CarriedCase, ...]:
    """The baseline's cases this run could not load (`why_not_loaded`), each with its row when last
    seen: the baseline's own, or the one the baseline carried when the case was not loaded there
    either (then it keeps the date it was first not loaded)."""
    present = {row.case_id for row in rows}
    carried: dict[str, CarriedCase] = {}
    for row in baseline.cases:
        if row.case_id not in present and row.case_id not in carried and why_not_loaded(row.case_id, row, unloaded):
            carried[row.case_id] = CarriedCase(row, last_seen=baseline.created, not_loaded=created)
    for item in baseline.carried:
        case_id = item.row.case_id
        if case_id not in present and case_id not in carried and why_not_loaded(case_id, item.row, unloaded):
            carried[case_id] = item
    return tuple(carried.values())


def keep_reviews(previous: Mapping[str, Review], baseline: RunSnapshot | None,
                 rows: Sequence[CaseRow]) -> dict[str, Review]:
    """The reviews of cases this run does not have, each with the case's row when it was last seen
    (in the baseline, or earlier), so that a case back after a week away gets its review back."""
    present = {row.case_id for row in rows}
    last_rows: dict[str, CaseRow] = {}
    for row in baseline.cases if baseline is not None else ():
        last_rows.setdefault(row.case_id, row)
    return {case_id: Review(review.verdict, review.note,
                            last_seen=review.last_seen if review.last_seen is not None else last_rows.get(case_id))
            for case_id, review in previous.items() if review and case_id not in present}


def with_judge_failures(headline: Sequence[Headline], judged: Sequence[JudgedMetric],
                        kinds: RunKinds) -> tuple[Headline, ...]:
    """The headline metrics with the judge's failed and not judged cases counted among their errors
    (not scored); a judged metric that failed for every case keeps its row (no mean, its failures
    beside it) instead of vanishing."""
    failures = {metric.key: metric.not_scored for metric in judged if metric.not_scored}
    if not failures:
        return tuple(headline)
    by_metric = {item.metric: item for item in headline}
    rows = []
    for key in kinds.headline_metric_keys():
        item = by_metric.get(key)
        if item is not None:
            rows.append(replace(item, errors=item.errors + failures.get(key, 0)))
        elif key in failures:
            rows.append(Headline(metric=key, mean=None, cases=0, errors=failures[key]))
    return tuple(rows)


def not_loaded_note(unloaded: Sequence[Unloaded], comparison: Comparison | None) -> str | None:
    """The sentence that comes before any delta when test cases could not be read."""
    if not unloaded:
        return None
    places = "; ".join(dict.fromkeys(part.describe() for part in unloaded))
    if comparison is not None and comparison.cases_with("not loaded"):
        count = comparison.cases_with("not loaded")
        return f"{count} test case(s) of the baseline could not be loaded ({places})"
    items = [part for part in unloaded if not part.whole_file]
    files = [part for part in unloaded if part.whole_file]
    parts = [f"{len(items)} test case(s)"] if items else []
    parts += ["the test cases of " + ", ".join(dict.fromkeys(part.path for part in files))] if files else []
    return f"{' and '.join(parts)} could not be loaded ({places})"


def incomplete_run(counts: Mapping[str, int], min_evaluated_share: float) -> str | None:
    """The warning for a run that evaluated fewer than `min_evaluated_share` of its cases."""
    total, evaluated = sum(counts.values()), counts.get("success", 0)
    if total and evaluated / total >= min_evaluated_share:
        return None
    return f"INCOMPLETE RUN: {evaluated} of {total} cases evaluated"


def _score_distributions(rows: Sequence[CaseRow], kinds: RunKinds) -> dict[str, list[int]]:
    distributions = {}
    for metric in kinds.headline_metric_keys():
        counts = score_distribution(rows, metric)
        if sum(counts):
            distributions[metric] = counts
    return distributions


def _frame(pd: Any, rows: list[dict[str, Any]], columns: Sequence[str], numbers: Sequence[str]) -> pd.DataFrame:
    """A frame of `rows`: `columns` as they are (None stays None), `numbers` as floats (None is NaN)."""
    data = {column: pd.Series([row[column] for row in rows], dtype=object) for column in columns}
    data.update((key, pd.Series([row[key] for row in rows], dtype="float64")) for key in numbers)
    return pd.DataFrame(data, columns=[*columns, *numbers])
