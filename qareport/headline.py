"""A run's headline metrics (`headline_metrics`), its weakest cases and its score bins.

Pure functions over a run's case rows (`case_rows.case_rows`); no I/O. Every metric here lies in
[0, 1] and higher is better.

- A *headline* metric is the mean over the evaluated cases that have it (per case, the mean over
  its turns), with the number of cases behind it and the error / missing / invalid cases of the
  same kind beside it: those could have had the metric but were not scored.
- Its interval resamples whole clusters (`clustered_statistics`; near 0 or 1 at least Wilson's), and
  the drop the next comparison would catch 8 times in 10 is said beside it (`detectable_change`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from qareport import kinds
from qareport.case_record import CaseRow
from qareport.clustered_statistics import ClusteredInterval, clustered_interval, minimum_detectable_change
from qareport.clusters import count_clusters, row_cluster
from qareport.means import evaluated, mean, score
from qareport.significance import ALPHA

NOT_SCORED_STATUSES = ("error", "missing", "invalid")
STATUSES = ("success", *NOT_SCORED_STATUSES)
DEFAULT_TOLERANCE = 1e-9  # float noise, not a change
_number = score  # a score that can be averaged and binned (`means.score`)


@dataclass(frozen=True, slots=True)
class Headline:
    """One headline metric of a run: its mean, the cases behind it, and the cases not scored."""

    metric: str
    mean: float | None
    cases: int  # evaluated cases that have the metric
    errors: int = 0  # cases with a target of the metric's kind, not scored because of their status
    missing: int = 0
    invalid: int = 0
    low: float | None = None  # the 95 % cluster bootstrap interval of the mean over cases
    high: float | None = None
    clusters: int = 0  # the clusters the cases come in (a case without one is its own)
    design_effect: float | None = None  # clustered variance over naive variance (1: clustering did not matter)
    detectable: float | None = None
    """The drop the next comparison's decision would catch 8 times in 10 (`detectable_change`: from the
    cases' attempts when they have them, else from their values); None when it cannot be estimated."""

    @property
    def label(self) -> str:
        return kinds.catalogue().metric_label(self.metric)

    @property
    def not_scored(self) -> int:
        return self.errors + self.missing + self.invalid


def status_counts(rows: Iterable[CaseRow]) -> dict[str, int]:
    counts = Counter(str(row.status) for row in rows)
    return {status: counts.get(status, 0) for status in STATUSES}


def headline_metrics(rows: Sequence[CaseRow], kind_set: kinds.RunKinds | None = None) -> tuple[Headline, ...]:
    """The headline metrics the run has (those with at least one value) among those of `kind_set`
    (None: the catalogue's, for a stored run), in a fixed order, each with its 95 % interval and the
    cases that could have had it but were not scored."""
    kind_set = kind_set if kind_set is not None else kinds.catalogue()
    headlines = []
    present = [(metric, scored) for metric in kind_set.headline_metric_keys() if (scored := evaluated(rows, metric))]
    for metric, scored in present:
        values = [value for value, _ in scored]
        average = mean(values)
        if average is None:
            continue
        not_scored = Counter(row.status for row in _could_have(rows, metric, kind_set) if row.status != "success")
        labels = [row_cluster(row) for _, row in scored]
        interval = clustered_interval(values, clusters=labels)
        headlines.append(Headline(
            metric=metric,
            mean=average,
            cases=len(values),
            errors=not_scored.get("error", 0),
            missing=not_scored.get("missing", 0),
            invalid=not_scored.get("invalid", 0),
            low=interval.low if interval else None,
            high=interval.high if interval else None,
            clusters=count_clusters(labels),
            design_effect=interval.design_effect if interval else None,
            detectable=(_paired_detectable(scored, metric, interval, family=len(present))
                        or detectable_change(interval, of="values", family=len(present))),
        ))
    return tuple(headlines)


def _paired_detectable(scored: Sequence[tuple[float, CaseRow]], metric: str, interval: ClusteredInterval | None, *,
                       family: int) -> float | None:
    """Before there is a baseline, the paired figure the next comparison will state, from the cases'
    own attempts: an unchanged system moves a case's mean between two runs only by its attempts'
    noise, 2 s_w^2 / k (s_w^2 the pooled variance between a case's attempts, k their number), the same
    in every case independently. None when fewer than half the cases have two or more attempts (then
    the planned figure from the cases' spread, sqrt(2) times theirs, stands: an overstatement)."""
    variances: list[float] = []
    counts: list[int] = []
    for _, row in scored:
        values = [number for value in (row.attempts or {}).get(metric) or () if (number := score(value)) is not None]
        if len(values) >= 2:
            centre = sum(values) / len(values)
            variances.append(sum((v - centre) ** 2 for v in values) / (len(values) - 1))
            counts.append(len(values))
    if interval is None or len(variances) * 2 < len(scored) or interval.clusters < 2:
        return None
    spread = math.sqrt(2 * (sum(variances) / len(variances)) / (sum(counts) / len(counts)))
    if spread <= 0:
        return None
    return minimum_detectable_change(spread, cases=interval.cases, clusters=interval.clusters,
                                     family=family).change


DESIGN_EFFECT_SHOWN = 1.2  # above it, clustering mattered: the Summary shows the design effect


def detectable_change(interval: ClusteredInterval | None, *, of: str, family: int = 1) -> float | None:
    """The change the run's own decision catches 8 times in 10 (`minimum_detectable_change`: t
    quantiles over the clusters, the 5 % level shared by Holm over the `family` of headline metrics)
    from an interval's spread and design effect; None with fewer than two clusters or no spread
    (nothing to estimate it from)."""
    if (interval is None or interval.clusters < 2 or interval.design_effect is None
            or interval.design_effect <= 0 or interval.standard_deviation <= 0):
        return None  # a design effect of 0: every cluster has the same mean, no spread between clusters
    return minimum_detectable_change(interval.standard_deviation, cases=interval.cases, clusters=interval.clusters,
                                     design_effect=interval.design_effect, of=of, family=family).change


def fewest_clusters_to_decide(alpha: float = ALPHA) -> int:
    """The fewest clusters whose sign-flip test can reach `alpha` at all (its smallest p is 2 / 2^G)."""
    clusters = 1
    while 2 / 2 ** clusters > alpha:
        clusters += 1
    return clusters


def _could_have(rows: Sequence[CaseRow], metric: str, kind_set: kinds.RunKinds) -> list[CaseRow]:
    """The cases that could have had the metric: those with a target of its kind. Rows stored before
    runs kept their targets fall back to the cases of the same shape (conversation or Q&A)."""
    kind = kind_set.kind_of_metric(metric)
    if kind is not None and all(row.targets is not None for row in rows):
        return [row for row in rows if kind.name in (row.targets or ())]
    case_kinds = {row.kind for row in rows if row.status == "success" and _number(row.metric(metric)) is not None}
    return [row for row in rows if row.kind in case_kinds]


def weakest_cases(
        rows: Sequence[CaseRow], ranking: Sequence[str], *, limit: int = 5) -> list[CaseRow]:
    """The evaluated cases that lost points on `ranking` (metric keys, compared in turn), lowest
    first; ties keep the input order. Cases without the first metric are not ranked, and a case
    with full marks is never among the weakest."""
    if not ranking:
        return []
    scored = []
    for index, row in enumerate(rows):
        values = [_number(row.metric(metric)) for metric in ranking]
        perfect = all(value is None or value >= 1.0 - DEFAULT_TOLERANCE for value in values)
        if row.status == "success" and values[0] is not None and not perfect:
            scored.append((tuple(v if v is not None else 2.0 for v in values), index, row))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [row for _, _, row in scored[:limit]]


SCORE_BINS = tuple((round(i / 10, 1), round((i + 1) / 10, 1)) for i in range(10))


def score_bin(value: float) -> int:
    """The index of the 0.1-wide bin of a score in [0, 1]; 1.0 falls in the last bin."""
    return min(len(SCORE_BINS) - 1, max(0, int(round(value * 10, 9))))


def score_distribution(rows: Sequence[CaseRow], metric: str) -> list[int]:
    """How many evaluated cases fall in each bin of SCORE_BINS, for one metric."""
    counts = [0] * len(SCORE_BINS)
    for row in rows:
        if row.status != "success":
            continue
        value = _number(row.metric(metric))
        if value is not None:
            counts[score_bin(value)] += 1
    return counts
