"""The digest: what a reader is told first about a run, computed once from the report model.

The Summary sheet, the email and the console's closing lines all lay out the same `Digest`: the
verdict in one line, the headline metrics with their intervals and like-for-like changes, the
regressed and improved cases one line each with the reason, and, per family of metrics, the weakest
cases. It is stored with the run (`runs`), so `qareport email REPORT.xlsx` tells a stakeholder
exactly what the workbook's Summary told the analyst, long after the run.

Ranking never averages unlike metrics: the weakest cases are listed per kind of target, each
ranked by its own metrics (`Kind.ranking`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from qareport import kinds
from qareport.case_changes import CaseMovement
from qareport.case_record import CaseRow
from qareport.clustered_statistics import planning_factor
from qareport.comparison import Comparison, HeadlineDelta
from qareport.errors import BUDGET_REACHED
from qareport.headline import DEFAULT_TOLERANCE, DESIGN_EFFECT_SHOWN, Headline, fewest_clusters_to_decide, weakest_cases
from qareport.judged_metrics import JudgedMetric, partly_judged_pairs
from qareport.records import RunInfo

TOP_CASES = 10  # regressed and improved cases listed by name
WEAKEST_PER_FAMILY = 5
SUBJECT_CHARS = 78  # an email subject that a phone shows whole
VERDICT_JOIN = " \u00b7 "  # between the verdict and its alerts


@dataclass(frozen=True, slots=True)
class CaseLine:
    """One case in a list a reader scans: who, what moved (or scored), and why."""

    case_id: str
    name: str
    what: str  # "macro recall 1.00 → 0.50" or "macro recall 0.00, macro precision 0.50"
    reason: str | None
    value: float | None = None  # the drop, rise or score that ranks it


@dataclass(frozen=True, slots=True)
class Weakest:
    """The weakest cases of one kind of target, ranked by its own metrics."""

    family: str  # the kind's label: "indicator selection"
    ranked_by: str  # "macro recall, then macro precision"
    cases: tuple[CaseLine, ...]


@dataclass(frozen=True, slots=True)
class BaselineInfo:
    source: str
    created: str
    version: str
    counts: dict[str, int]  # changed cases per kind of change
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Digest:
    created: str
    qareport_version: str
    status_counts: dict[str, int]
    problems: int
    headline: tuple[Headline, ...]
    deltas: tuple[HeadlineDelta, ...]
    alerts: tuple[str, ...]  # said right after the verdict, once: cases not loaded, an incomplete run
    verdict: str  # the one line: the email's subject (the lead, then the alerts in a few words)
    baseline: BaselineInfo | None = None
    regressed: tuple[CaseLine, ...] = ()  # the first TOP_CASES, most moved first
    improved: tuple[CaseLine, ...] = ()
    regressed_total: int = 0
    improved_total: int = 0
    weakest: tuple[Weakest, ...] = ()
    judged: tuple[JudgedMetric, ...] = ()
    not_evaluated: tuple[tuple[str, str], ...] = ()  # (metrics, why, in a stakeholder's words)
    judge_model: str | None = None
    judge_cost: float | None = None
    lead: str = ""  # the verdict without the alerts: the Summary's row 3, the email's first line
    tests: int = 0  # the changes tested against noise (headline metrics, tags, templates, dimensions)
    beyond_noise: int = 0  # of those, the ones beyond noise (`comparison.decide_noise`)
    every_attempt: int = 0  # regressed cases whose attempts all fell below the last run's (`separate_attempts`)
    by_chance: float | None = None  # how many of those luck alone would list; None: no case had attempts
    beyond_chance: bool | None = None  # more of them than luck explains (`RegressionChance.beyond_chance`)
    reconciled: str | None = None
    """Why the cases and the suite's means seem to disagree, in words (`reconcile`); None when they agree."""

    @property
    def headline_verdict(self) -> str:
        """What a reader sees first, with the alerts in full right below it (a digest stored before
        qareport kept the lead has only its verdict)."""
        return self.lead or self.verdict

    @property
    def alerts_after_verdict(self) -> tuple[str, ...]:
        """The alerts in full, each once, leaving out the one the verdict already is (an incomplete run)."""
        return tuple(alert for alert in dict.fromkeys(self.alerts) if alert != self.headline_verdict)

    @property
    def cases(self) -> int:
        return sum(self.status_counts.values())

    @property
    def evaluated(self) -> int:
        return self.status_counts.get("success", 0)

    def delta(self, metric: str) -> HeadlineDelta | None:
        return next((delta for delta in self.deltas if delta.metric == metric), None)


def build_digest(
    *,
    run: RunInfo,
    rows: Sequence[CaseRow],
    headline: Sequence[Headline],
    status_counts: Mapping[str, int],
    problems: int,
    comparison: Comparison | None,
    alerts: Sequence[str],
    judged: Sequence[JudgedMetric],
    incomplete: bool,
    kind_set: kinds.RunKinds | None = None,
) -> Digest:
    """The digest of a run, by its kinds (`kind_set`; None: the catalogue's, for a stored run). An
    incomplete run shows no change: deltas over a handful of cases say nothing, so its comparison
    is left out here (the Changes sheet still lists every case)."""
    compared = None if incomplete else comparison
    kind_set = kind_set if kind_set is not None else kinds.catalogue()
    present = [kind for kind in kind_set if any(row.metric(m.key) is not None for row in rows for m in kind.metrics)]
    regressed = compared.moved("regression") if compared else ()
    improved = compared.moved("improvement") if compared else ()
    usage = run.judge_usage
    cost = usage.cost_usd if usage is not None else None
    digest = Digest(
        created=run.created,
        qareport_version=run.qareport_version,
        status_counts=dict(status_counts),
        problems=problems,
        headline=tuple(headline),
        deltas=compared.headline if compared else (),
        alerts=(*alerts, *([left] if compared and (left := left_failing_alert(compared.headline)) else [])),
        verdict="",
        baseline=None if comparison is None else BaselineInfo(
            source=comparison.baseline_source, created=comparison.baseline_created,
            version=comparison.baseline_version, counts={str(k): v for k, v in comparison.counts().items()},
            warnings=comparison.warnings),
        regressed=tuple(moved_line(movement) for movement in regressed[:TOP_CASES]),
        improved=tuple(moved_line(movement) for movement in improved[:TOP_CASES]),
        regressed_total=len(regressed),
        improved_total=len(improved),
        weakest=tuple(weakest for kind in present if (weakest := _weakest(kind, rows, kind_set)) is not None),
        judged=tuple(metric for metric in judged if metric.judged or metric.not_scored),
        not_evaluated=tuple((family, stakeholder_words(why)) for family, why in sorted(run.not_evaluated.items())),
        judge_model=run.judge_model or (usage.model if usage is not None else None),
        judge_cost=float(cost) if isinstance(cost, (int, float)) else None,
        tests=compared.tests if compared else 0,
        beyond_noise=compared.beyond_noise if compared else 0,
        every_attempt=compared.chance.regressed if compared and compared.chance else 0,
        by_chance=compared.chance.expected if compared and compared.chance else None,
        beyond_chance=compared.chance.beyond_chance() if compared and compared.chance else None,
    )
    why = reconcile(digest)
    return _with_verdict(replace(digest, reconciled=why[0] if why else None), short_why=why[1] if why else None)


def reconcile(digest: Digest) -> tuple[str, str] | None:
    """When the regressed cases and the suite's headline changes seem to tell two stories, why, in
    words, in full and in a few words for a subject line: "4 cases regressed on every attempt; the
    suite's means moved by less than this run can resolve (0.11 for macro recall)". None without a
    comparison, or when the two agree (no case regressed and no mean fell beyond noise; or both)."""
    if digest.baseline is None or not digest.deltas:
        return None
    fell = [delta for delta in digest.deltas if delta.beyond_noise and (delta.delta or 0.0) < 0]
    cases = digest.regressed_total
    if cases and not fell:
        resolve = _resolvable(_most_moved(digest))
        if digest.every_attempt and digest.by_chance is not None and not digest.beyond_chance:
            return (f"{_cases(digest.every_attempt)} regressed on every attempt, no more than luck explains (about "
                    f"{digest.by_chance:.2g} expected); {resolve}", "no more than luck gives")
        how = (" on every attempt" if digest.every_attempt == cases
               else " in a single run, which cannot tell a change from a flip" if digest.by_chance is None else "")
        return f"{_cases(cases)} regressed{how}; {resolve}", "too few for the means to show"
    if fell and not cases:
        labels = " and ".join(delta.label for delta in fell)
        return (f"{labels} fell beyond noise though no single case regressed beyond its own noise: a small drop "
                "spread over many cases", "a drop spread over many cases")
    return None


def _resolvable(moved: HeadlineDelta | None) -> str:
    """What the suite's means can resolve, for a reader told that cases regressed while they held."""
    if moved is None:
        return "the suite's means were not tested"
    units = moved.clusters if moved.clusters > 1 else moved.shared_cases  # one cluster: its cases
    if units < fewest_clusters_to_decide() or moved.detectable is None or moved.detectable >= 1:
        return (f"the suite's means cannot resolve a change at this size ({_cases(moved.shared_cases)} in "
                f"{moved.clusters} cluster{'s' if moved.clusters != 1 else ''})")
    return f"the suite's means moved by less than this run can resolve ({moved.detectable:.2f} for {moved.label})"


def _cases(count: int) -> str:
    return f"{count} case{'s' if count != 1 else ''}"


def _most_moved(digest: Digest) -> HeadlineDelta | None:
    """The tested headline change that moved most (a drop before a rise of the same size)."""
    tested = [delta for delta in digest.deltas if delta.delta is not None and delta.p_value is not None]
    return min(tested, key=lambda delta: (-abs(delta.delta or 0.0), (delta.delta or 0.0) > 0), default=None)


def noise_count(digest: Digest) -> str | None:
    """"2 changes beyond noise": of every change tested (headline metrics, tags, templates,
    dimensions), those beyond noise as their family decides (`comparison.decide_noise`); None without a test."""
    if not digest.tests:
        return None
    count = digest.beyond_noise
    return f"{count or 'no'} change{'s' if count != 1 else ''} beyond noise"


def detectable_words(item: Headline, delta: HeadlineDelta | None) -> str:
    """What a run of this size can see, for one headline metric, as the power of the decision the
    workbook makes: "with 29 cases in 12 clusters, a drop of 0.09 would be flagged about 8 times in 10;
    4 times the clusters would halve it" (smaller drops less often). Against a baseline, from
    the spread of the per-case changes over the shared cases; else for the next comparison (from the
    cases' attempts when they have them, else from their spread)."""
    change: float | None
    if delta is not None and delta.detectable is not None and delta.shared_cases:
        cases, clusters, change = delta.shared_cases, delta.clusters, delta.detectable
    else:
        cases, clusters, change = item.cases, item.clusters, item.detectable
    size = f"with {cases} case{'s' if cases != 1 else ''} in {clusters} cluster{'s' if clusters != 1 else ''}"
    units = clusters if clusters > 1 else cases  # all in one cluster: its cases are the units
    if units < fewest_clusters_to_decide():
        return (f"{size}, no change can be told from noise (a sign-flip test over fewer than "
                f"{fewest_clusters_to_decide()} clusters never reaches p 0.05)")
    if change is None:
        return f"{size}, the smallest change that could be told from noise cannot be estimated (no spread)"
    if change == 0:  # every case moved alike (or none moved): there is no noise to tell a change from
        return f"{size}, the cases do not vary: any change can be told from noise"
    plan = f"{planning_factor():.0f} times the {'clusters' if clusters > 1 else 'cases'} would halve it"
    if change >= 1:
        return f"{size}, even a drop from 1 to 0 would not be flagged 8 times in 10; {plan}"
    shown = f"{change:.2f}" if change >= 0.005 else f"{change:.1g}"  # never "a drop of 0.00"
    return f"{size}, a drop of {shown} would be flagged about 8 times in 10; {plan}"  # smaller ones less often


def mattering(design_effect: float | None) -> float | None:
    """The design effect when clustering mattered (above `DESIGN_EFFECT_SHOWN`), else None."""
    return design_effect if design_effect is not None and design_effect > DESIGN_EFFECT_SHOWN else None


def moved_line(movement: CaseMovement) -> CaseLine:
    """A changed case in one line: what moved, why, and by how much."""
    return CaseLine(movement.case_id, movement.name, movement.describe_moves(), movement.reason,
                    movement.worst_delta if movement.kind == "regression" else _best_delta(movement))


def _best_delta(movement: CaseMovement) -> float | None:
    deltas = [move.delta for move in movement.moves if move.delta is not None]
    return max(deltas) if deltas else None


def _weakest(kind: kinds.Kind, rows: Sequence[CaseRow], kind_set: kinds.RunKinds) -> Weakest | None:
    ranking = kind.rank_metrics
    found = weakest_cases(rows, ranking, limit=WEAKEST_PER_FAMILY)
    if not found:
        return None
    lines = []
    for row in found:
        values = [row.metric(metric) for metric in ranking]
        what = " / ".join(f"{value:.2f}" if isinstance(value, (int, float)) else "-" for value in values)
        first = values[0]
        lines.append(CaseLine(row.case_id, row.name or "", what, row.reason,
                              float(first) if isinstance(first, (int, float)) else None))
    return Weakest(kind.label, " / ".join(kind_set.metric_label(metric) for metric in ranking), tuple(lines))


def partly_judged(judged: Sequence[JudgedMetric]) -> dict[str, str]:
    """The judged metrics whose means rest on only some of their cases (the budget stopped the judging,
    or judgments failed), by key: "answer F1: partial, 40 of 60 cases judged (budget reached)"."""
    return dict(partly_judged_pairs(judged))


def stakeholder_words(why: str) -> str:
    """Why metrics were not evaluated, for a reader who does not run the tool: no settings to
    change, no variables to set."""
    lowered = why.lower()
    if lowered.startswith("the judge failed"):
        return "the LLM judge failed during this run (the API refused or could not be reached)"
    if lowered.startswith(BUDGET_REACHED):
        return ("the LLM judge's budget was reached: its metrics are partial, over the first cases in the "
                "test cases' order")
    if "--no-llm" in lowered or "turned off" in lowered:
        return "the LLM judge was turned off for this run"
    if "judge" in lowered or "api key" in lowered or "openai" in lowered:
        return "no LLM judge was available for this run"
    return why


def signed(delta: float) -> str:
    """A change to two decimals with a real minus sign; one that rounds to nothing is "±0.00"."""
    rounded = round(delta, 2)
    if abs(delta) <= DEFAULT_TOLERANCE or rounded == 0:
        return "\u00b10.00"
    return f"+{rounded:.2f}" if rounded > 0 else f"\u2212{-rounded:.2f}"


def signed_bound(value: float) -> str:
    """A bound of a change's interval to two decimals, with its sign (a real minus): "−0.11", "+0.01"."""
    rounded = round(value, 2) + 0.0
    return f"+{rounded:.2f}" if rounded > 0 else f"\u2212{-rounded:.2f}" if rounded < 0 else "0.00"


LEFT_FAILING = "left the like-for-like comparison while failing"


def left_failing_alert(deltas: Sequence[HeadlineDelta], *, shown: int = 3) -> str | None:
    """Which cases moved the means over all cases without moving the change: those edited, removed or
    not answered while failing in the baseline (`HeadlineDelta.left_failing`), named, so that a mean
    that rose because failing cases left is never taken for progress."""
    left = list(dict.fromkeys(case_id for delta in deltas for case_id in delta.left_failing))
    if not left:
        return None
    named = ", ".join(left[:shown]) + (f" and {len(left) - shown} more" if len(left) > shown else "")
    return (f"{_cases(len(left))} {LEFT_FAILING} (edited, removed or unanswered): {named}; "
            "this lifts the means over all cases, not the change")


DRIFT = "since the reference run"


def drift_alert(deltas: Sequence[HeadlineDelta], source: str) -> str | None:
    """The headline drops beyond noise since the reference run (`trend.drift_since`), in one line:
    a slow drift that week-to-week comparisons each call noise."""
    drops = [delta for delta in deltas if delta.beyond_noise and delta.delta is not None and delta.delta < 0]
    if not drops:
        return None
    moved = ", ".join(f"{delta.label} {signed(delta.delta)}" for delta in drops if delta.delta is not None)
    return f"drift {DRIFT} ({source}), beyond noise: {moved}, like for like"


def alert_words(digest: Digest) -> str | None:
    """The alerts other than an incomplete run, in a few words for the end of the subject line:
    "1 test case not loaded"."""
    others = [alert for alert in digest.alerts
              if not alert.startswith("INCOMPLETE RUN") and LEFT_FAILING not in alert
              and DRIFT not in alert]  # the latter two: in full below the verdict
    if not others:
        return None
    count = (digest.baseline.counts.get("not loaded", 0) if digest.baseline is not None else 0)
    if count:
        return f"{count} test case{'s' if count != 1 else ''} not loaded"
    return "test cases not loaded"


def _with_verdict(digest: Digest, *, short_why: str | None = None) -> Digest:
    """"2 regressions, macro recall 0.84 (−0.05), steps score 0.73 · 1 test case not loaded": what a
    subject line can hold. The verdict leads (regressions, then the headline metrics); the alerts
    follow it in a few words, with room kept for them (the Summary and the email say them in full
    right below the verdict). An incomplete run's verdict is that alert itself."""
    incomplete = next((alert for alert in digest.alerts if alert.startswith("INCOMPLETE RUN")), None)
    tail = alert_words(digest)
    room = SUBJECT_CHARS - (len(tail) + len(VERDICT_JOIN) if tail else 0)
    parts: list[str] = []
    if incomplete:
        lead = incomplete
    else:
        if digest.baseline is not None and digest.deltas:
            count = digest.regressed_total
            parts.append(f"{count} regression{'s' if count != 1 else ''}" if count else "no regression")
        for item in moved_first(digest):
            part = f"{item.label} {item.mean:.2f}"
            delta = digest.delta(item.metric)
            if delta is not None and delta.judge_changed:  # the judge's move, not the system's (`judge_change`)
                part += f" ({delta.noise})"
            elif delta is not None and delta.shown_delta is not None:
                part += f" ({signed(delta.shown_delta)})"  # as the Summary's row shows it
            parts.append(part)
        if digest.evaluated < digest.cases:
            parts.append(f"{digest.evaluated} of {digest.cases} cases evaluated")
        counted = noise_count(digest)
        if counted is not None:
            parts.append(counted)
        fitted = _fit(parts, SUBJECT_CHARS) or f"{digest.cases} test cases"
        lead = f"{fitted}; {digest.reconciled}" if digest.reconciled else fitted  # row 3: the reason in full
    if incomplete:
        return replace(digest, verdict=f"{lead}{VERDICT_JOIN}{tail}" if tail else lead, lead=lead)
    short = _fit(parts, room) or f"{digest.cases} test cases"
    if short_why and len(short) + len(short_why) + 2 <= room:  # the subject: the reason in a few words, if room
        short = f"{short}; {short_why}"
    return replace(digest, verdict=f"{short}{VERDICT_JOIN}{tail}" if tail else short, lead=lead)


def moved_first(digest: Digest) -> tuple[Headline, ...]:
    """The headline metrics that have a mean, what moved first: the drops, largest first, then the
    rises, largest first (a change that rounds to nothing has not moved), then the others in the
    registry's order. A line that runs out of room then leaves out a metric that held, never the
    one that regressed."""

    def order(indexed: tuple[int, Headline]) -> tuple[int, int, float, int]:
        index, item = indexed
        delta = digest.delta(item.metric)
        change = delta.shown_delta if delta is not None and not delta.judge_changed else None
        if change is None or signed(change) == "\u00b10.00":
            return (1, 0, 0.0, index)
        return (0, 0 if change < 0 else 1, -abs(change), index)

    shown = [(index, item) for index, item in enumerate(digest.headline) if item.mean is not None]
    return tuple(item for _, item in sorted(shown, key=order))


def summary_line(digest: Digest, *, output: str, notes: Sequence[str] = (), listed: int | None = None) -> str:
    """The console's closing line: "report.xlsx: 29 cases: 26 evaluated, 2 error, 1 missing; mean
    keyword recall 0.50; mean macro precision 0.84; ...": every headline metric of the run (over its
    evaluated cases, as the Summary gives it; "(partial)" after a judged mean over only some of them), what
    moved first; then `notes` and the problems
    (`listed`: how many the Problems sheet holds, when not all)."""
    counts = digest.status_counts
    parts = [f"{digest.cases} cases: {digest.evaluated} evaluated"]
    parts += [f"{counts[status]} {status}" for status in ("error", "missing", "invalid") if counts.get(status)]
    line = f"{output}: " + ", ".join(parts)
    partial = partly_judged(digest.judged)
    for item in moved_first(digest):
        line += f"; mean {item.label} {item.mean:.2f}" + (" (partial)" if item.metric in partial else "")
    for note in notes:
        line += f"; {note}"
    if digest.problems and listed is not None and listed < digest.problems:
        line += (f"; {digest.problems} problem(s), {listed} of them listed in the Problems sheet "
                 f"(a worksheet holds no more; all are listed above)")
    elif digest.problems:
        line += f"; {digest.problems} problem(s) listed in the Problems sheet"
    return line


def comparison_line(digest: Digest) -> str | None:
    """What moved since the baseline, in one line, what moved first; an incomplete run says so instead."""
    incomplete = next((alert for alert in digest.alerts if alert.startswith("INCOMPLETE RUN")), None)
    if incomplete:
        return f"{incomplete}: no deltas are shown; see the Problems sheet and the status column"
    if digest.baseline is None:
        return None
    deltas = []
    for item in moved_first(digest):
        delta = digest.delta(item.metric)
        if delta is not None and delta.new is not None and delta.judge_changed:
            deltas.append(f"{delta.label} {delta.new:.2f} ({delta.noise})")
        elif delta is not None and delta.new is not None and delta.shown_delta is not None:
            deltas.append(f"{delta.label} {delta.new:.2f} ({delta.shown_delta:+.2f})")  # as the Summary shows it
    counts = digest.baseline.counts
    line = f"since the baseline: {counts.get('regression', 0)} regressed, {counts.get('improvement', 0)} improved"
    if counts.get("moved within noise"):  # cases with attempts whose change their attempts explain
        line += f", {counts['moved within noise']} moved within noise"
    line += f"; {', '.join(deltas)}" if deltas else ""
    if digest.tests:  # the same decision the Summary, Statistics and the email show (`decide_noise`)
        line += (f"; {digest.beyond_noise} of {digest.tests} changes beyond noise (headline metrics: Holm; tags, "
                 "templates, dimensions: false discovery rate 5% per family)")
    return line


def _fit(parts: Sequence[str], room: int) -> str:
    """The parts, in order, joined with commas, leaving out those that would make it longer than room."""
    line = ""
    for part in parts:
        candidate = f"{line}, {part}" if line else part
        if line and len(candidate) > room:
            continue  # a later, shorter part may still fit
        line = candidate
    return line
