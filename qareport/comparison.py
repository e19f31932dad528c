"""Comparing runs: headline metrics of a run, what changed per case since a baseline, a trend.

Pure functions over `RunSnapshot`s (one flat row per case, see `runs.case_rows`); no I/O.
Every metric compared here lies in [0, 1] and higher is better, so a drop is a regression.

Rules, in the words an analyst would use:

- A *headline* metric is the mean over the evaluated cases that have it (per case, the mean over
  its turns), with the number of cases behind it and the error / missing / invalid cases of the
  same kind beside it: those could have had the metric but were not scored.
- Per case present in both runs:
  - its test definition changed (`definition_hash` differs): *test changed*, never a regression;
  - success → error / missing / invalid: a *regression* of its status; the way back an *improvement*;
  - both evaluated: every metric whose value moved by more than `tolerance` is a regression (down)
    or an improvement (up); a metric present in only one run (e.g. the LLM judge was off) is not
    compared.
- Cases only in the current run are *new*, cases only in the baseline *removed*, unless they
  could not be loaded this time (their file, or their item of it, could not be read): then they
  are *not loaded*, listed first, and never counted as removed or regressed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from qareport import kinds
from qareport.records import RunSnapshot, Unloaded

NOT_SCORED_STATUSES = ("error", "missing", "invalid")
STATUSES = ("success", *NOT_SCORED_STATUSES)
DEFAULT_TOLERANCE = 1e-9  # float noise, not a change

ChangeKind = Literal["regression", "improvement", "test changed", "new case", "removed case", "not loaded"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("regression", "improvement", "test changed", "new case", "removed case",
                                        "not loaded")


def metric_label(metric: str | None) -> str:
    return kinds.metric_label(metric)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# --- headline metrics ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Headline:
    """One headline metric of a run: its mean, the cases behind it, and the cases not scored."""

    metric: str
    mean: float | None
    cases: int  # evaluated cases that have the metric
    errors: int = 0  # cases of the kinds that carry the metric, not scored because of their status
    missing: int = 0
    invalid: int = 0

    @property
    def label(self) -> str:
        return metric_label(self.metric)


def status_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = Counter(str(row.get("status")) for row in rows)
    return {status: counts.get(status, 0) for status in STATUSES}


def headline_metrics(rows: Sequence[Mapping[str, Any]]) -> tuple[Headline, ...]:
    """The headline metrics the run has (those with at least one value), in a fixed order."""
    headlines = []
    for metric in kinds.headline_metric_keys():
        scored = [
            (row, value) for row in rows
            if row.get("status") == "success" and (value := _number(row.get(metric))) is not None
        ]
        if not scored:
            continue
        case_kinds = {row.get("kind") for row, _ in scored}
        not_scored = Counter(row.get("status") for row in rows
                             if row.get("kind") in case_kinds and row.get("status") != "success")
        headlines.append(Headline(
            metric=metric,
            mean=sum(value for _, value in scored) / len(scored),
            cases=len(scored),
            errors=not_scored.get("error", 0),
            missing=not_scored.get("missing", 0),
            invalid=not_scored.get("invalid", 0),
        ))
    return tuple(headlines)


def case_score(row: Mapping[str, Any]) -> float | None:
    """A case's score at a glance: the mean of its headline metrics (None when it has none)."""
    values = [v for metric in kinds.headline_metric_keys() if (v := _number(row.get(metric))) is not None]
    return sum(values) / len(values) if values else None


def worst_cases(rows: Sequence[Mapping[str, Any]], *, limit: int = 10) -> list[Mapping[str, Any]]:
    """The evaluated cases with the lowest case score, lowest first (ties in input order)."""
    scored = [(score, index, row) for index, row in enumerate(rows)
              if row.get("status") == "success" and (score := case_score(row)) is not None]
    scored.sort(key=lambda item: (item[0], item[1]))
    return [row for _, _, row in scored[:limit]]


SCORE_BINS = tuple((round(i / 10, 1), round((i + 1) / 10, 1)) for i in range(10))


def score_bin(value: float) -> int:
    """The index of the 0.1-wide bin of a score in [0, 1]; 1.0 falls in the last bin."""
    return min(len(SCORE_BINS) - 1, max(0, int(round(value * 10, 9))))


def score_distribution(rows: Sequence[Mapping[str, Any]], metric: str | None = None) -> list[int]:
    """How many evaluated cases fall in each bin of SCORE_BINS, for one metric or the case score."""
    counts = [0] * len(SCORE_BINS)
    for row in rows:
        if row.get("status") != "success":
            continue
        value = case_score(row) if metric is None else _number(row.get(metric))
        if value is not None:
            counts[score_bin(value)] += 1
    return counts


# --- changes against a baseline ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One line of the Changes sheet: a case, a metric (or `status`), its old and new value."""

    kind: ChangeKind
    case_id: str
    name: str
    metric: str | None = None  # None: the case as a whole (new, removed, test changed)
    old: float | str | None = None
    new: float | str | None = None
    delta: float | None = None
    old_status: str | None = None
    new_status: str | None = None


@dataclass(frozen=True, slots=True)
class HeadlineDelta:
    metric: str
    old: float | None
    new: float | None
    old_cases: int
    new_cases: int

    @property
    def delta(self) -> float | None:
        return self.new - self.old if self.new is not None and self.old is not None else None

    @property
    def label(self) -> str:
        return metric_label(self.metric)


@dataclass(frozen=True, slots=True)
class Comparison:
    """The current run against its baseline."""

    baseline_source: str
    baseline_created: str
    baseline_version: str
    changes: tuple[CaseChange, ...]
    headline: tuple[HeadlineDelta, ...]

    def cases_with(self, kind: ChangeKind) -> int:
        """How many distinct cases have at least one change of this kind."""
        return len({change.case_id for change in self.changes if change.kind == kind})

    @property
    def regressions(self) -> tuple[CaseChange, ...]:
        return tuple(change for change in self.changes if change.kind == "regression")

    def counts(self) -> dict[ChangeKind, int]:
        """Cases per kind of change, in display order."""
        return {kind: self.cases_with(kind) for kind in CHANGE_KINDS}


def _case_changes(old: Mapping[str, Any], new: Mapping[str, Any], tolerance: float) -> list[CaseChange]:
    case_id, name = str(new.get("case_id")), str(new.get("name") or old.get("name") or "")
    old_status, new_status = old.get("status"), new.get("status")
    statuses = {"old_status": old_status, "new_status": new_status}

    def metric_changes(kind_of: Any) -> list[CaseChange]:
        changes = []
        for metric in kinds.case_metric_keys():
            before, after = _number(old.get(metric)), _number(new.get(metric))
            if before is None or after is None or abs(after - before) <= tolerance:
                continue
            changes.append(CaseChange(kind_of(after - before), case_id, name, metric, before, after,
                                      after - before, **statuses))
        return changes

    old_hash, new_hash = old.get("definition_hash") or "", new.get("definition_hash") or ""
    if old_hash and new_hash and old_hash != new_hash:
        changes = metric_changes(lambda delta: "test changed")
        if old_status != new_status:
            changes.insert(0, CaseChange("test changed", case_id, name, "status", old_status, new_status, None, **statuses))
        return changes or [CaseChange("test changed", case_id, name, None, None, None, None, **statuses)]
    if old_status == "success" and new_status != "success":
        return [CaseChange("regression", case_id, name, "status", old_status, new_status, None, **statuses)]
    if old_status != "success" and new_status == "success":
        return [CaseChange("improvement", case_id, name, "status", old_status, new_status, None, **statuses)]
    if old_status != "success":
        return []  # neither run scored it: nothing to compare
    return metric_changes(lambda delta: "regression" if delta < 0 else "improvement")


def _display_order(change: CaseChange) -> tuple[Any, ...]:
    """Regressions first (status losses, then the biggest drops), then improvements (status gains,
    then the biggest rises), then changed tests, new and removed cases in input order."""
    if change.kind == "not loaded":
        return (-1,)
    rank = CHANGE_KINDS.index(change.kind)
    if change.kind == "regression":
        return (rank, change.delta is not None, change.delta or 0.0)
    if change.kind == "improvement":
        return (rank, change.delta is not None, -(change.delta or 0.0))
    return (rank,)


def compare_runs(baseline: RunSnapshot, current: RunSnapshot, *, tolerance: float = DEFAULT_TOLERANCE,
                 unloaded: Sequence[Unloaded] = ()) -> Comparison:
    """What changed from `baseline` to `current`, per case and metric, and in the headline metrics.
    `unloaded`: the test cases this run could not read (`Suite.unloaded`)."""
    old_rows = _by_case_id(baseline.cases)
    new_rows = _by_case_id(current.cases)
    changes: list[CaseChange] = []
    for case_id, new in new_rows.items():
        old = old_rows.get(case_id)
        if old is None:
            changes.append(CaseChange("new case", case_id, str(new.get("name") or ""),
                                      new_status=new.get("status")))
        else:
            changes.extend(_case_changes(old, new, tolerance))
    for case_id, old in old_rows.items():
        if case_id not in new_rows:
            lost = why_not_loaded(case_id, old, unloaded)
            if lost is not None:
                changes.append(CaseChange("not loaded", case_id, str(old.get("name") or ""), "status",
                                          old_status=old.get("status"), new_status=lost))
            else:
                changes.append(CaseChange("removed case", case_id, str(old.get("name") or ""),
                                          old_status=old.get("status")))
    changes.sort(key=_display_order)  # stable: ties keep the input order
    return Comparison(
        baseline_source=baseline.source,
        baseline_created=baseline.created,
        baseline_version=baseline.qareport_version,
        changes=tuple(changes),
        headline=headline_deltas(headline_metrics(baseline.cases), headline_metrics(current.cases)),
    )


def why_not_loaded(case_id: str, row: Mapping[str, Any], unloaded: Sequence[Unloaded]) -> str | None:
    """Why a baseline case is missing from this run when it may only not have been read ("not
    loaded (file X could not be read)"), or None when it was removed."""
    for part in unloaded:
        if part.case_id == case_id:
            return f"not loaded ({part.describe()})"
    stored_file = row.get("file")
    for part in unloaded:
        if part.case_id is None and (not stored_file or _same_file(str(stored_file), part.path)):
            return f"not loaded ({part.describe()})"
    return None


def _same_file(stored: str, path: str) -> bool:
    return stored == path or stored.replace("\\", "/").rsplit("/", 1)[-1] == path.replace("\\", "/").rsplit("/", 1)[-1]


def headline_deltas(old: Sequence[Headline], new: Sequence[Headline]) -> tuple[HeadlineDelta, ...]:
    before = {h.metric: h for h in old}
    after = {h.metric: h for h in new}
    return tuple(
        HeadlineDelta(
            metric=metric,
            old=before[metric].mean if metric in before else None,
            new=after[metric].mean if metric in after else None,
            old_cases=before[metric].cases if metric in before else 0,
            new_cases=after[metric].cases if metric in after else 0,
        )
        for metric in kinds.headline_metric_keys()
        if metric in before or metric in after
    )


def _by_case_id(rows: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    by_id: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        by_id.setdefault(str(row.get("case_id")), row)  # the first wins, as loading does
    return by_id


# --- trend ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run in the Trend sheet."""

    source: str
    created: str
    qareport_version: str
    status_counts: dict[str, int]
    headline: tuple[Headline, ...]
    current: bool = False

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
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _point(snapshot: RunSnapshot, *, current: bool) -> TrendPoint:
    return TrendPoint(
        source=snapshot.source,
        created=snapshot.created,
        qareport_version=snapshot.qareport_version,
        status_counts=status_counts(snapshot.cases),
        headline=headline_metrics(snapshot.cases),
        current=current,
    )


def trend_points(history: Sequence[RunSnapshot], current: RunSnapshot) -> tuple[TrendPoint, ...]:
    """One point per earlier run, oldest first, and the current run last.

    The same run read twice (say its workbook and its results file) appears once; runs whose date
    cannot be read sort first, in the order given.
    """
    earliest = datetime.min.replace(tzinfo=timezone.utc)
    seen: set[tuple[Any, ...]] = set()
    points = []
    for snapshot in history:
        point = _point(snapshot, current=False)
        identity = (snapshot.created, snapshot.qareport_version, tuple(point.status_counts.items()),
                    tuple((h.metric, h.mean, h.cases) for h in point.headline))
        if identity in seen:
            continue
        seen.add(identity)
        points.append(point)
    points.sort(key=lambda point: parse_created(point.created) or earliest)
    return (*points, _point(current, current=True))
