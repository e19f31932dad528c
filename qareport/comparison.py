"""Comparing a run with its baseline (`compare_runs`): what changed per case (`case_changes.py`),
headline deltas like for like, and the same per tag, template and dimension.

Pure functions over `RunSnapshot`s (one `CaseRow` per case, see `case_rows.case_rows`); no I/O.
Every metric compared here lies in [0, 1] and higher is better, so a drop is a regression. A run's
own headline is in `headline.py`, a history's trend in `trend.py`.

- A headline delta is computed like for like: over the cases both runs have whose test did not
  change, paired case by case, so a removed, new or edited case never moves it; a case that ended in
  an error in either run counts there as failing (0), so errors never make a run look better. Its
  interval and its test of "no change" resample and flip whole clusters (`clustered_statistics`:
  the template of a Q&A question, a conversation case's declared cluster, else the case itself).
- The same change is computed per tag, per template and per dimension (`BreakdownChange`). A change
  is *beyond noise* when its adjusted p-value within its family is at most 0.05 (`decide_noise`): the
  headline metrics are the primary family (Holm), the tags, templates and dimensions three secondary
  ones (Benjamini-Hochberg each), so no breakdown ever dilutes a headline decision. This is the one
  decision the Summary, the Statistics sheet, the email and the console all read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from qareport import kinds
from qareport.case_changes import (
    CHANGE_KINDS,
    JUDGE_CHANGED,
    ONE_RUN_NOTE,
    RULES_CHANGED,
    CaseChange,
    CaseMovement,
    ChangeKind,
    RegressionChance,
    case_movements,
    chance_words,
    changes_of_case,
    display_order,
    regression_chance,
    test_changed,
    why_not_loaded,
)
from qareport.case_record import CaseRow
from qareport.clustered_statistics import (
    FalseDiscoveries,
    benjamini_hochberg,
    clustered_paired_change,
    holm,
)
from qareport.clusters import count_clusters, row_cluster
from qareport.headline import DEFAULT_TOLERANCE, Headline, detectable_change, headline_metrics
from qareport.id_text import natural_key
from qareport.means import score as _number  # a score that can be averaged (`means.score`)
from qareport.records import CarriedCase, RunSnapshot, Unloaded
from qareport.significance import ALPHA

OMITTED_WHEN_DEFAULT = {"omitted_when_default": True}
"""A field a stored digest leaves out at its default, so that runs which never set it store what they did."""


@dataclass(frozen=True, slots=True)
class HeadlineDelta:
    """A headline metric against the baseline.

    `old` and `new` are each run's mean over all its evaluated cases (what each report said);
    the change itself is like for like: over the `shared_cases` both runs have whose test did not
    change, paired, with the p-value of a sign-flip test of "no change"; a case that ended in an
    error in one run counts there as failing (`ERROR_VALUE`)."""

    metric: str
    old: float | None
    new: float | None
    old_cases: int
    new_cases: int
    shared_old: float | None = None
    shared_new: float | None = None
    shared_cases: int = 0
    p_value: float | None = None  # the cluster sign-flip test of "no change"
    low: float | None = None  # the change's 95 % cluster bootstrap interval
    high: float | None = None
    clusters: int = 0  # the clusters the shared cases come in
    design_effect: float | None = None  # of the per-case changes
    detectable: float | None = None  # the drop its decision catches 8 times in 10 (`detectable_change`)
    q_value: float | None = None  # p adjusted by Holm over the headline metrics (`decide_noise`)
    beyond_noise: bool | None = None  # the decision (`decide_noise`); None: no test
    judge_changed: bool = field(default=False, metadata=OMITTED_WHEN_DEFAULT)
    """A judged metric, judged by another judge in the baseline (`judge_change`)."""
    left_failing: tuple[str, ...] = ()
    """Baseline cases out of the like-for-like change that were failing there (`cases_left_failing`):
    what moved the mean over all cases (`new` against `old`) without moving the change."""

    @property
    def delta(self) -> float | None:
        """The like-for-like change (new minus old over the shared cases); None without any."""
        if self.shared_old is None or self.shared_new is None:
            return None
        return self.shared_new - self.shared_old

    @property
    def shown_delta(self) -> float | None:
        """The change as a reader sees it beside the two shared means, each to two decimals: their
        difference as shown (0.84 → 0.82 is −0.02), so the row adds up; None without any."""
        if self.shared_old is None or self.shared_new is None:
            return None
        return round(round(self.shared_new, 2) - round(self.shared_old, 2), 2) + 0.0  # + 0.0: no -0.0

    @property
    def noise(self) -> str | None:
        """"beyond noise" or "within noise", as `decide_noise` decided (a digest stored before qareport
        controlled the false discovery rate: p < 0.05); "judge changed" when the judge did; None without a test."""
        return JUDGE_CHANGED if self.judge_changed else noise_words(self.beyond_noise, self.p_value)

    @property
    def label(self) -> str:
        return kinds.catalogue().metric_label(self.metric)


def noise_words(beyond: bool | None, p_value: float | None) -> str | None:
    if beyond is None:
        if p_value is None:
            return None
        beyond = p_value < ALPHA  # decided before the false discovery rate was controlled
    return "beyond noise" if beyond else "within noise"


BreakdownBy = Literal["tag", "template", "dimension"]


@dataclass(frozen=True, slots=True)
class BreakdownChange:
    """A metric's like-for-like change over the shared cases of one tag, template or dimension.

    Its interval and test flip and resample the clusters among those cases; the cases of a group
    that lies in one cluster (always, for a template) are the units instead: the question is then
    whether that one cluster changed."""

    by: BreakdownBy
    group: str
    metric: str  # a headline metric key; for a dimension "precision" or "recall"
    cases: int
    clusters: int
    shared_old: float
    shared_new: float
    low: float
    high: float
    p_value: float
    design_effect: float | None = None
    q_value: float | None = None
    beyond_noise: bool | None = None
    judge_changed: bool = field(default=False, metadata=OMITTED_WHEN_DEFAULT)
    """A judged metric, judged by another judge in the baseline (`judge_change`)."""

    @property
    def delta(self) -> float:
        return self.shared_new - self.shared_old

    @property
    def label(self) -> str:
        return self.metric if self.by == "dimension" else kinds.catalogue().metric_label(self.metric)


@dataclass(frozen=True, slots=True)
class Comparison:
    """The current run against its baseline."""

    baseline_source: str
    baseline_created: str
    baseline_version: str
    changes: tuple[CaseChange, ...]
    headline: tuple[HeadlineDelta, ...]
    movements: tuple[CaseMovement, ...] = ()  # one per changed case, in the order of `changes`
    warnings: tuple[str, ...] = ()  # what makes the two runs less comparable than they look
    breakdown: tuple[BreakdownChange, ...] = ()  # per tag, template and dimension
    attempts_note: str | None = None
    """What the regressed and improved lists rest on, when a reader must know (`attempts_note`)."""
    chance: RegressionChance | None = None
    """Over the cases compared attempt by attempt, what luck alone would list (`regression_chance`)."""

    @property
    def regressions_beyond_chance(self) -> int:
        """The regressed cases a gate counts: every one moved in a single run or lost its status (one
        run cannot tell a change from a flip, so each counts), and those whose attempts separated when
        there are more of them than luck explains at the 5 % level (`RegressionChance.beyond_chance`)."""
        regressed = self.cases_with("regression")
        if self.chance is None or self.chance.beyond_chance():
            return regressed
        return regressed - self.chance.regressed

    @property
    def tests(self) -> int:
        """The tests of "no change", over every family (`decide_noise`)."""
        return sum(1 for item in self.flags if item.p_value is not None)

    @property
    def beyond_noise(self) -> int:
        """How many of those changes are beyond noise."""
        return sum(1 for item in self.flags if item.beyond_noise)

    @property
    def flags(self) -> tuple[HeadlineDelta | BreakdownChange, ...]:
        return (*self.headline, *self.breakdown)

    def cases_with(self, kind: ChangeKind) -> int:
        """How many distinct cases have at least one change of this kind."""
        return len({change.case_id for change in self.changes if change.kind == kind})

    @property
    def regressions(self) -> tuple[CaseChange, ...]:
        return tuple(change for change in self.changes if change.kind == "regression")

    def moved(self, kind: ChangeKind) -> tuple[CaseMovement, ...]:
        """The changed cases of one kind, one line each, most moved first."""
        return tuple(movement for movement in self.movements if movement.kind == kind)

    def counts(self) -> dict[ChangeKind, int]:
        """Cases per kind of change, in display order ("judge changed", "rules changed" only when those did)."""
        counts = {kind: self.cases_with(kind) for kind in CHANGE_KINDS}
        return {kind: count for kind, count in counts.items() if count or kind not in (JUDGE_CHANGED, RULES_CHANGED)}


def compare_runs(baseline: RunSnapshot, current: RunSnapshot, *, tolerance: float = DEFAULT_TOLERANCE,
                 unloaded: Sequence[Unloaded] = (), warnings: Sequence[str] = (), detailed: bool = True,
                 kind_set: kinds.RunKinds | None = None) -> Comparison:
    """What changed from `baseline` to `current`, per case and metric, and in the headline metrics
    (with `detailed`, also per tag, template and dimension, and every change decided beyond noise or
    not). `unloaded`: the test cases this run could not read (`Suite.unloaded`); `kind_set`: the
    current run's kinds (None: the catalogue's, for two stored runs).

    A case the baseline could not load is compared with the row it carried for it (`RunSnapshot.carried`,
    its result when last seen), said so in its reason, never listed as new. Such a pair counts in the
    per-case lists and the regression gate, but not in the like-for-like headline and breakdown
    changes: those compare the two runs' own results only."""
    kind_set = kind_set if kind_set is not None else kinds.catalogue()
    old_rows = _by_case_id(baseline.cases)
    new_rows = _by_case_id(current.cases)
    carried = {item.row.case_id: item for item in baseline.carried if item.row.case_id not in old_rows}
    returned = {case_id: item for case_id, item in carried.items() if case_id in new_rows}
    paired_old = {**old_rows, **{case_id: item.row for case_id, item in carried.items()}}
    changes: list[CaseChange] = []
    for case_id, new in new_rows.items():
        old = paired_old.get(case_id)
        if old is None:
            changes.append(CaseChange("new case", case_id, new.name or "", new_status=new.status))
        else:
            changes.extend(changes_of_case(old, new, tolerance, kind_set))
    for case_id, old in old_rows.items():
        if case_id not in new_rows:
            lost = why_not_loaded(case_id, old, unloaded)
            if lost is not None:
                changes.append(CaseChange("not loaded", case_id, old.name or "", "status",
                                          old_status=old.status, new_status=lost))
            else:
                changes.append(CaseChange("removed case", case_id, old.name or "", old_status=old.status))
    for case_id, item in carried.items():  # not loaded in the baseline: not loaded again, or gone since
        if case_id in new_rows:
            continue
        if (lost := why_not_loaded(case_id, item.row, unloaded)) is not None:
            changes.append(CaseChange("not loaded", case_id, item.row.name or "", "status",
                                      old_status=item.row.status, new_status=lost))
        else:
            changes.append(CaseChange("removed case", case_id, item.row.name or "", old_status=item.row.status))
    changes.sort(key=display_order)  # stable: ties keep the input order
    movements = [replace(movement, moves=tuple(replace(move, reason=movement.reason) for move in movement.moves))
                 for movement in case_movements(changes, paired_old, new_rows, kind_set)]
    movements = [_said_returned(movement, returned.get(movement.case_id)) for movement in movements]
    reasons = {movement.case_id: movement.reason for movement in movements}
    chance = regression_chance(paired_old, new_rows, kind_set)  # what luck alone would list, said once
    changes = [replace(change, reason=reasons.get(change.case_id)) for change in changes]
    comparison = Comparison(
        baseline_source=baseline.source,
        baseline_created=baseline.created,
        baseline_version=baseline.qareport_version,
        changes=tuple(changes),
        headline=headline_deltas(headline_metrics(baseline.cases, kind_set), headline_metrics(current.cases, kind_set),
                                 old_rows, new_rows, kind_set) if detailed else (),
        movements=tuple(movements),
        warnings=tuple(warnings),
        breakdown=breakdown_changes(old_rows, new_rows, kind_set=kind_set) if detailed else (),
        attempts_note=ONE_RUN_NOTE if chance is None else chance_words(chance),
        chance=chance,
    )
    return decide_noise(comparison) if detailed else comparison


def _said_returned(movement: CaseMovement, carried: CarriedCase | None) -> CaseMovement:
    """A movement of a case compared with its last seen row (not loaded in the baseline), with that
    said before its reason, so no reader takes the change for one since the baseline."""
    if carried is None:
        return movement
    reason = "; ".join(part for part in (carried.describe(), movement.reason) if part)
    return replace(movement, reason=reason, moves=tuple(replace(move, reason=reason) for move in movement.moves))


def decide_noise(comparison: Comparison, *, level: float = ALPHA) -> Comparison:
    """Every tested change of the comparison decided beyond noise or not, family by family.

    The headline metrics are the primary family: Holm's adjustment over those few (`holm`) holds the
    chance of any false alarm among them at `level`, and nothing else is in their family, so however
    many tags, templates and dimensions a suite has, a headline change is decided with the power its
    own data allows. The tags, the templates and the dimensions are three secondary families, each
    with its own Benjamini-Hochberg q-values (`benjamini_hochberg`): the false discovery rate among
    the changes called beyond noise in each is held at `level`; they show where a change sits. A
    change is beyond noise when its adjusted p-value (`q_value`) is at most `level`."""
    decided: list[Any] = list(comparison.flags)
    for family, adjust in _families(comparison):
        tested = [(index, p_value) for index in family if (p_value := decided[index].p_value) is not None]
        found = adjust([p_value for _, p_value in tested], level=level)
        for (index, _), q_value in zip(tested, found.q_values):
            decided[index] = replace(decided[index], q_value=q_value, beyond_noise=q_value <= level)
    headline = len(comparison.headline)
    return replace(comparison, headline=tuple(decided[:headline]), breakdown=tuple(decided[headline:]))


def _families(comparison: Comparison) -> list[tuple[list[int], Callable[..., FalseDiscoveries]]]:
    """The indices into `comparison.flags` of each family, with its adjustment: the headline metrics
    (Holm), then the tags, the templates and the dimensions (Benjamini-Hochberg each)."""
    headline = len(comparison.headline)
    families: list[tuple[list[int], Callable[..., FalseDiscoveries]]] = [(list(range(headline)), holm)]
    for by in ("tag", "template", "dimension"):
        members = [headline + index for index, item in enumerate(comparison.breakdown) if item.by == by]
        families.append((members, benjamini_hochberg))
    return families


def _shared(old_rows: Mapping[str, CaseRow], new_rows: Mapping[str, CaseRow],
            value: Callable[[CaseRow], float | None]) -> tuple[list[float], list[float], list[str | None]]:
    """Paired values (and each case's cluster) over the cases both runs have whose test did not change."""
    return _values(_shared_pairs(old_rows, new_rows), value)


def _shared_pairs(old_rows: Mapping[str, CaseRow],
                  new_rows: Mapping[str, CaseRow]) -> list[tuple[CaseRow, CaseRow]]:
    """(old, new) rows of the cases both runs have whose test did not change, in this run's order:
    those both runs evaluated, and those that became an error or recovered from one (an error counts
    as failing, `_values`, so a run whose hardest cases fail can never look better for it)."""
    pairs = []
    for case_id, new in new_rows.items():
        old = old_rows.get(case_id)
        if old is None or test_changed(old, new) or {old.status, new.status} not in _PAIRED_STATUSES:
            continue
        pairs.append((old, new))
    return pairs


_PAIRED_STATUSES = ({"success"}, {"success", "error"})
ERROR_VALUE = 0.0
"""What a case that ended in an error scores in a like-for-like change, in each metric the case has
in the other run: failing. (Missing and invalid cases stay out: nothing was asked of the system.)"""


def _values(pairs: Sequence[tuple[CaseRow, CaseRow]],
            value: Callable[[CaseRow], float | None]) -> tuple[list[float], list[float], list[str | None]]:
    """The pairs' values where both runs have one, and each case's cluster (this run's, else the
    baseline's). A case in error in one run has `ERROR_VALUE` there for each metric it has in the other."""
    before: list[float] = []
    after: list[float] = []
    clusters: list[str | None] = []
    for old, new in pairs:
        old_value, new_value = _number(value(old)), _number(value(new))
        if old.status == "error":
            old_value = ERROR_VALUE if new_value is not None else None
        if new.status == "error":
            new_value = ERROR_VALUE if old_value is not None else None
        if old_value is not None and new_value is not None:
            before.append(old_value)
            after.append(new_value)
            clusters.append(row_cluster(new) or row_cluster(old))
    return before, after, clusters


def _value_of(metric: str) -> Callable[[CaseRow], float | None]:
    return lambda row: row.metric(metric)


def breakdown_changes(old_rows: Mapping[str, CaseRow], new_rows: Mapping[str, CaseRow], *,
                      minimum_cases: int = 2, kind_set: kinds.RunKinds | None = None) -> tuple[BreakdownChange, ...]:
    """The like-for-like change of each headline metric per tag (conversation cases) and per template
    (Q&A questions), and of precision and recall per dimension, each over at least `minimum_cases`
    shared cases; sorted by tag, template (in natural order: db25-2 before db25-10) and dimension name."""
    Pair = tuple[CaseRow, CaseRow]
    groups: dict[tuple[BreakdownBy, str], list[Pair]] = {}
    dimensions: dict[str, list[Pair]] = {}
    for old, new in _shared_pairs(old_rows, new_rows):
        by: BreakdownBy = "template" if new.kind == "qa" else "tag"
        for group in dict.fromkeys(new.groups):
            groups.setdefault((by, group), []).append((old, new))
        for name in new.dimensions:
            dimensions.setdefault(name, []).append((old, new))
    found: list[BreakdownChange] = []
    for (by, group), pairs in sorted(groups.items(), key=lambda item: (item[0][0] != "tag", natural_key(item[0][1]))):
        for metric in (kind_set if kind_set is not None else kinds.catalogue()).headline_metric_keys():
            found += _breakdown(by, group, metric, *_values(pairs, _value_of(metric)), minimum_cases)
    for dimension, pairs in sorted(dimensions.items()):
        for which in ("precision", "recall"):
            found += _breakdown("dimension", dimension, which, *_values(pairs, _dimension_value(dimension, which)),
                                minimum_cases)
    return tuple(found)


def _dimension_value(name: str, which: str) -> Callable[[CaseRow], float | None]:
    def value(row: CaseRow) -> float | None:
        entry = row.dimensions.get(name)
        return entry.get(which) if entry is not None else None
    return value


def _breakdown(by: BreakdownBy, group: str, metric: str, before: list[float], after: list[float],
               clusters: list[str | None], minimum_cases: int) -> list[BreakdownChange]:
    if len(before) < minimum_cases:
        return []
    change = clustered_paired_change(before, after, clusters=clusters)  # one cluster: its cases are the units
    if change is None:
        return []
    return [BreakdownChange(by, group, metric, change.cases, count_clusters(clusters), sum(before) / len(before),
                            sum(after) / len(after), change.low, change.high, change.p_value,
                            change.interval.design_effect)]


def headline_deltas(old: Sequence[Headline], new: Sequence[Headline],
                    old_rows: Mapping[str, CaseRow] | None = None,
                    new_rows: Mapping[str, CaseRow] | None = None,
                    kind_set: kinds.RunKinds | None = None) -> tuple[HeadlineDelta, ...]:
    """Each headline metric either run has: both runs' means and the like-for-like change (given
    the case rows of both runs)."""
    before = {h.metric: h for h in old}
    after = {h.metric: h for h in new}
    deltas = []
    metrics = [metric for metric in (kind_set if kind_set is not None else kinds.catalogue()).headline_metric_keys()
               if metric in before or metric in after]
    for metric in metrics:
        shared: dict[str, Any] = {}
        if old_rows is not None and new_rows is not None:
            old_values, new_values, clusters = _shared(old_rows, new_rows, _value_of(metric))
            change = clustered_paired_change(old_values, new_values, clusters=clusters)
            if change is not None:
                shared = {"shared_old": sum(old_values) / len(old_values),
                          "shared_new": sum(new_values) / len(new_values),
                          "shared_cases": change.cases, "p_value": change.p_value,
                          "low": change.low, "high": change.high, "clusters": count_clusters(clusters),
                          "design_effect": change.interval.design_effect,
                          "detectable": detectable_change(change.interval, of="differences",
                                                          family=len(metrics))}
        if old_rows is not None and new_rows is not None and metric in before:
            shared["left_failing"] = cases_left_failing(old_rows, new_rows, metric, before[metric].mean, kind_set)
        deltas.append(HeadlineDelta(
            metric=metric,
            old=before[metric].mean if metric in before else None,
            new=after[metric].mean if metric in after else None,
            old_cases=before[metric].cases if metric in before else 0,
            new_cases=after[metric].cases if metric in after else 0,
            **shared,
        ))
    return tuple(deltas)


def cases_left_failing(old_rows: Mapping[str, CaseRow], new_rows: Mapping[str, CaseRow], metric: str,
                       old_mean: float | None, kind_set: kinds.RunKinds | None = None) -> tuple[str, ...]:
    """The baseline's cases that had `metric` (or ended in an error) and are out of the like-for-like
    pairing now (removed, edited, or answered last run and not now), while failing there: in error,
    or below the baseline's mean, so that their leaving raised this run's mean over all cases. A case
    failing in both runs alike (an error, then an error or no answer) left nothing."""
    paired = {old.case_id for old, _ in _shared_pairs(old_rows, new_rows)}
    left = []
    for case_id, old in old_rows.items():
        new = new_rows.get(case_id)
        if case_id in paired or (new is not None and not test_changed(old, new) and old.status != "success"):
            continue
        value = _number(old.metric(metric))
        failing = (old.status == "error" and _could_have(old, metric, old_rows, kind_set)) or (
            value is not None and old_mean is not None and value < old_mean - DEFAULT_TOLERANCE)
        if failing:
            left.append(case_id)
    return tuple(left)


def _could_have(row: CaseRow, metric: str, rows: Mapping[str, CaseRow], kind_set: kinds.RunKinds | None) -> bool:
    """Whether an error case could have had `metric`: its kind has it (by its targets when stored,
    else by its shape, as another case of that shape has the metric)."""
    kind = (kind_set if kind_set is not None else kinds.catalogue()).kind_of_metric(metric)
    if row.targets is not None and kind is not None:
        return kind.name in row.targets
    return any(other.kind == row.kind and _number(other.metric(metric)) is not None for other in rows.values())


def _by_case_id(rows: Iterable[CaseRow]) -> dict[str, CaseRow]:
    by_id: dict[str, CaseRow] = {}
    for row in rows:
        by_id.setdefault(row.case_id, row)  # the first wins, as loading does
    return by_id
