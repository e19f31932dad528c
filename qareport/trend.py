"""A trend: one point per run of a history and the current run, oldest first (`trend_points`), each
with its headline and the cases that regressed and improved since the run before it; the same run
read twice counts once (`same_run`); and the drift since a pinned reference run (`drift_since`),
which catches a slow decline that no week-to-week comparison can resolve.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from qareport.comparison import HeadlineDelta, compare_runs
from qareport.grading_rules import baseline_extras, mark_rules_changed
from qareport.headline import Headline, headline_metrics, status_counts
from qareport.judge_change import judge_changes, mark_judge_changed
from qareport.records import RunSnapshot


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run in the Trend sheet."""

    source: str
    created: str
    qareport_version: str
    status_counts: dict[str, int]
    headline: tuple[Headline, ...]
    current: bool = False
    regressions: int | None = None  # cases that regressed since the run before it (None: the first run)
    improvements: int | None = None
    partly_judged: tuple[tuple[str, str], ...] = ()  # (metric, why its mean is partial): `RunSnapshot.partly_judged`

    def partial(self, metric: str) -> bool:
        """Whether the run's mean of `metric` rests on only some of its cases (a judge that stopped part-way)."""
        return any(key == metric for key, _ in self.partly_judged)

    def mean(self, metric: str) -> float | None:
        return next((h.mean for h in self.headline if h.metric == metric), None)

    def cases_behind(self, metric: str) -> int | None:
        return next((h.cases for h in self.headline if h.metric == metric), None)


def parse_created(text: str) -> datetime | None:
    """A run's creation time as an aware datetime (naive times are taken as UTC)."""
    try:
        moment = datetime.fromisoformat(str(text).strip())
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _point(snapshot: RunSnapshot, *, current: bool) -> TrendPoint:
    return TrendPoint(
        source=snapshot.source,
        created=snapshot.created,
        qareport_version=snapshot.qareport_version,
        status_counts=status_counts(snapshot.cases),
        headline=headline_metrics(snapshot.cases),
        current=current,
        partly_judged=snapshot.partly_judged,
    )


SAME_MEAN = 1e-9  # a mean read back from a re-saved copy (LibreOffice keeps 15 digits) is the same mean


def same_run(a: TrendPoint, b: TrendPoint) -> bool:
    """Whether two points are one run read twice (its workbook and its results file, or a copy
    re-saved by LibreOffice, which rounds numbers to 15 significant digits): the same date, version,
    counts and cases behind each metric, and means equal within `SAME_MEAN`."""
    if (a.created, a.qareport_version, a.status_counts) != (b.created, b.qareport_version, b.status_counts):
        return False
    if [(h.metric, h.cases) for h in a.headline] != [(h.metric, h.cases) for h in b.headline]:
        return False
    return all(_same_mean(x.mean, y.mean) for x, y in zip(a.headline, b.headline))


def _same_mean(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is y
    return math.isclose(x, y, rel_tol=SAME_MEAN, abs_tol=SAME_MEAN)


def trend_points(history: Sequence[RunSnapshot], current: RunSnapshot) -> tuple[TrendPoint, ...]:
    """One point per earlier run, oldest first, and the current run last, each with the cases that
    regressed and improved since the run before it.

    The same run read twice (say its workbook and its results file, or a re-saved copy: `same_run`)
    appears once; runs whose date cannot be read sort first, in the order given.
    """
    earliest = datetime.min.replace(tzinfo=UTC)
    runs: list[tuple[TrendPoint, RunSnapshot]] = []
    for snapshot in history:
        point = _point(snapshot, current=False)
        if any(same_run(point, earlier) for earlier, _ in runs):
            continue
        runs.append((point, snapshot))
    runs.sort(key=lambda pair: parse_created(pair[0].created) or earliest)
    runs.append((_point(current, current=True), current))
    points = [runs[0][0]]
    for (_, before), (point, after) in itertools.pairwise(runs):
        compared = compare_runs(before, after, detailed=False)  # a judge change is not a regression (`judge_change`)
        compared = mark_judge_changed(compared, judge_changes(before.judge_identity, after.judge_identity))
        counts = mark_rules_changed(compared, before, baseline_extras(after)).counts()  # nor a grading change
        points.append(replace(point, regressions=counts["regression"], improvements=counts["improvement"]))
    return tuple(points)


def reference_run(history: Sequence[RunSnapshot], reference: RunSnapshot | None = None) -> RunSnapshot | None:
    """The run a slow drift is measured from: the one pinned (`--reference`), else the oldest of the
    history (runs whose date cannot be read sort first, as in `trend_points`); None without either."""
    if reference is not None:
        return reference
    earliest = datetime.min.replace(tzinfo=UTC)
    dated = sorted(history, key=lambda run: parse_created(run.created) or earliest)
    return dated[0] if dated else None


def drift_since(reference: RunSnapshot, current: RunSnapshot) -> tuple[HeadlineDelta, ...]:
    """The like-for-like change of each headline metric from the reference run to this one, decided
    beyond noise or not as a baseline's change is (`compare_runs`): a decline of 0.02 a week, within
    noise each week, adds up to a change the reference comparison resolves."""
    return compare_runs(reference, current).headline


def drifted(deltas: Sequence[HeadlineDelta]) -> tuple[HeadlineDelta, ...]:
    """The drops since the reference that are beyond noise."""
    return tuple(delta for delta in deltas if delta.beyond_noise and delta.delta is not None and delta.delta < 0)
