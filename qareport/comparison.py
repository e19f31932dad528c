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
    compared. A case answered several times in both runs is regressed or improved only when
    `decide_case_change` on its main metric's attempts says so (`case_verdict`); its other moves are
    *moved within noise*, listed apart and never counted as regressions. What the lists rest on (one
    run per case, or attempts too few to ever decide) is said once (`attempts_note`).
- Cases only in the current run are *new*, cases only in the baseline *removed*, unless they
  could not be loaded this time (their file, or their item of it, could not be read): then they
  are *not loaded*, listed first, and never counted as removed or regressed.
- A headline delta is computed like for like: over the cases both runs evaluated whose test did
  not change, paired case by case, so a removed, new, failed or edited case never moves it. Its
  interval and its test of "no change" resample and flip whole clusters (`clustered_statistics`:
  the template of a Q&A question, a conversation case's declared cluster, else the case itself).
- The same change is computed per tag, per template and per dimension (`BreakdownChange`). A change
  is *beyond noise* when its Benjamini-Hochberg q-value over every test of the run (headline metrics,
  tags, templates, dimensions) is at most 0.05 (`decide_noise`): the one decision the Summary, the
  Statistics sheet, the email and the console all read.
- A case's grade (`Kind.grades`, kept with its facts) that moved between two evaluated runs of an
  unchanged test is a change line of its own ("grade ideal → problematic"): a regression when it
  got worse, an improvement when it got better.
- Every changed case also gets one line (`CaseMovement`): how it moved and why, in the words of
  its kinds (`kinds.explain_change`: "lost COUNTRY MEX", "target edited: COUNTRY +KEN").
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from qareport import kinds
from qareport.clustered_statistics import (
    MINIMUM_ATTEMPTS,
    CaseVerdict,
    ClusteredInterval,
    benjamini_hochberg,
    clustered_interval,
    clustered_paired_change,
    decide_case_change,
    minimum_detectable_change,
)
from qareport.clustered_statistics import CaseChange as AttemptsChange
from qareport.clusters import row_cluster
from qareport.means import evaluated, mean, score
from qareport.records import RunSnapshot, Unloaded
from qareport.significance import ALPHA

NOT_SCORED_STATUSES = ("error", "missing", "invalid")
STATUSES = ("success", *NOT_SCORED_STATUSES)
DEFAULT_TOLERANCE = 1e-9  # float noise, not a change

ChangeKind = Literal["regression", "improvement", "moved within noise", "test changed", "new case", "removed case",
                     "not loaded"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("regression", "improvement", "moved within noise", "test changed", "new case",
                                        "removed case", "not loaded")
WITHIN_NOISE: ChangeKind = "moved within noise"
ONE_RUN_NOTE = ("One run per case cannot tell a change from a flip: each case listed as regressed or improved moved "
                "in a single attempt. Give several attempts per case ('attempt': 1, 2, ...; 4 or more in both runs) "
                "so that only changes beyond a case's own noise are listed.")
ATTEMPTS_KEY = "attempts"  # a stored case row's values per attempt (`runs.attempt_values`)


_number = score  # a score that can be averaged and binned (`means.score`)


# --- headline metrics ----------------------------------------------------------------------------


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
    """The smallest change a comparison with a run of this size could tell from noise (80 % power,
    5 % level; `minimum_detectable_change` of the values); None when it cannot be estimated."""

    @property
    def label(self) -> str:
        return kinds.metric_label(self.metric)

    @property
    def not_scored(self) -> int:
        return self.errors + self.missing + self.invalid


def status_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = Counter(str(row.get("status")) for row in rows)
    return {status: counts.get(status, 0) for status in STATUSES}


def headline_metrics(rows: Sequence[Mapping[str, Any]]) -> tuple[Headline, ...]:
    """The headline metrics the run has (those with at least one value), in a fixed order, each with
    its 95 % interval and the cases that could have had it but were not scored."""
    headlines = []
    for metric in kinds.headline_metric_keys():
        scored = evaluated(rows, metric)
        values = [value for value, _ in scored]
        average = mean(values)
        if average is None:
            continue
        not_scored = Counter(row.get("status") for row in _could_have(rows, metric) if row.get("status") != "success")
        interval = clustered_interval(values, clusters=[row_cluster(row) for _, row in scored])
        headlines.append(Headline(
            metric=metric,
            mean=average,
            cases=len(values),
            errors=not_scored.get("error", 0),
            missing=not_scored.get("missing", 0),
            invalid=not_scored.get("invalid", 0),
            low=interval.low if interval else None,
            high=interval.high if interval else None,
            clusters=interval.clusters if interval else 0,
            design_effect=interval.design_effect if interval else None,
            detectable=detectable_change(interval, of="values"),
        ))
    return tuple(headlines)


DESIGN_EFFECT_SHOWN = 1.2  # above it, clustering mattered: the Summary shows the design effect


def detectable_change(interval: ClusteredInterval | None, *, of: str) -> float | None:
    """The minimum detectable change (80 % power, 5 % level) from an interval's spread and design
    effect; None with fewer than two clusters or no spread (nothing to estimate it from)."""
    if (interval is None or interval.clusters < 2 or interval.design_effect is None
            or interval.design_effect <= 0 or interval.standard_deviation <= 0):
        return None  # a design effect of 0: every cluster has the same mean, no spread between clusters
    return minimum_detectable_change(interval.standard_deviation, cases=interval.cases, clusters=interval.clusters,
                                     design_effect=interval.design_effect, of=of).change


def fewest_clusters_to_decide(alpha: float = ALPHA) -> int:
    """The fewest clusters whose sign-flip test can reach `alpha` at all (its smallest p is 2 / 2^G)."""
    clusters = 1
    while 2 / 2 ** clusters > alpha:
        clusters += 1
    return clusters


def _could_have(rows: Sequence[Mapping[str, Any]], metric: str) -> list[Mapping[str, Any]]:
    """The cases that could have had the metric: those with a target of its kind. Rows stored before
    runs kept their targets fall back to the cases of the same shape (conversation or Q&A)."""
    kind = kinds.kind_of_metric(metric)
    if kind is not None and all("targets" in row and row.get("targets") is not None for row in rows):
        return [row for row in rows if kind.name in (row.get("targets") or ())]
    case_kinds = {row.get("kind") for row in rows
                  if row.get("status") == "success" and _number(row.get(metric)) is not None}
    return [row for row in rows if row.get("kind") in case_kinds]


def weakest_cases(
        rows: Sequence[Mapping[str, Any]], ranking: Sequence[str], *, limit: int = 5) -> list[Mapping[str, Any]]:
    """The evaluated cases that lost points on `ranking` (metric keys, compared in turn), lowest
    first; ties keep the input order. Cases without the first metric are not ranked, and a case
    with full marks is never among the weakest."""
    if not ranking:
        return []
    scored = []
    for index, row in enumerate(rows):
        values = [_number(row.get(metric)) for metric in ranking]
        perfect = all(value is None or value >= 1.0 - DEFAULT_TOLERANCE for value in values)
        if row.get("status") == "success" and values[0] is not None and not perfect:
            scored.append((tuple(v if v is not None else 2.0 for v in values), index, row))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [row for _, _, row in scored[:limit]]


SCORE_BINS = tuple((round(i / 10, 1), round((i + 1) / 10, 1)) for i in range(10))


def score_bin(value: float) -> int:
    """The index of the 0.1-wide bin of a score in [0, 1]; 1.0 falls in the last bin."""
    return min(len(SCORE_BINS) - 1, max(0, int(round(value * 10, 9))))


def score_distribution(rows: Sequence[Mapping[str, Any]], metric: str) -> list[int]:
    """How many evaluated cases fall in each bin of SCORE_BINS, for one metric."""
    counts = [0] * len(SCORE_BINS)
    for row in rows:
        if row.get("status") != "success":
            continue
        value = _number(row.get(metric))
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
    reason: str | None = None  # why the case moved, the same on each of its lines (`CaseMovement.reason`)


@dataclass(frozen=True, slots=True)
class CaseMovement:
    """One changed case in one line: how it moved (its metrics, its status) and why."""

    kind: ChangeKind  # a case with any regression is a regression, even if something else improved
    case_id: str
    name: str
    moves: tuple[CaseChange, ...]  # its lines in the Changes sheet
    reason: str | None

    @property
    def worst_delta(self) -> float | None:
        deltas = [change.delta for change in self.moves if change.delta is not None]
        return min(deltas) if deltas else None

    def describe_moves(self) -> str:
        """"macro recall 1.00 → 0.50, macro precision 1.00 → 0.67" or "success → error"."""
        parts = []
        for change in self.moves:
            if change.metric == "status" or change.metric is None:
                if change.old_status != change.new_status and change.new_status is not None:
                    parts.append(f"{change.old_status or 'new'} \u2192 {change.new_status}")
                continue
            parts.append(f"{kinds.metric_label(change.metric)} {_two(change.old)} \u2192 {_two(change.new)}")
        return ", ".join(dict.fromkeys(parts))


def _two(value: Any) -> str:
    number = _number(value)
    return f"{number:.2f}" if number is not None else str(value)


@dataclass(frozen=True, slots=True)
class HeadlineDelta:
    """A headline metric against the baseline.

    `old` and `new` are each run's mean over all its evaluated cases (what each report said);
    the change itself is like for like: over the `shared_cases` both runs evaluated whose test did
    not change, paired, with the p-value of a sign-flip test of "no change"."""

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
    detectable: float | None = None  # the minimum detectable change of the per-case changes (`detectable_change`)
    q_value: float | None = None  # p adjusted by Benjamini-Hochberg over every test of the run
    beyond_noise: bool | None = None  # the decision (`decide_noise`); None: no test

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
        controlled the false discovery rate: p < 0.05); None without a test."""
        return noise_words(self.beyond_noise, self.p_value)

    @property
    def label(self) -> str:
        return kinds.metric_label(self.metric)


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

    @property
    def delta(self) -> float:
        return self.shared_new - self.shared_old

    @property
    def label(self) -> str:
        return self.metric if self.by == "dimension" else kinds.metric_label(self.metric)


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

    @property
    def tests(self) -> int:
        """The tests of "no change" the false discovery rate is controlled over."""
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
        """Cases per kind of change, in display order."""
        return {kind: self.cases_with(kind) for kind in CHANGE_KINDS}


def _case_changes(old: Mapping[str, Any], new: Mapping[str, Any], tolerance: float) -> list[CaseChange]:
    case_id, name = str(new.get("case_id")), str(new.get("name") or old.get("name") or "")
    old_status, new_status = old.get("status"), new.get("status")
    statuses = {"old_status": old_status, "new_status": new_status}

    def metric_changes(kind_of: Any, *, grades: bool = True) -> list[CaseChange]:
        changes = []
        for metric in kinds.case_metric_keys():
            before, after = _number(old.get(metric)), _number(new.get(metric))
            if before is None or after is None or abs(after - before) <= tolerance:
                continue
            changes.append(CaseChange(kind_of(after - before), case_id, name, metric, before, after,
                                      after - before, **statuses))
        for move in kinds.grade_moves(_facts(old), _facts(new)) if grades else ():  # "grade ideal → acceptable"
            changes.append(CaseChange(kind_of(-1.0 if move.worse else 1.0), case_id, name, move.metric,
                                      move.old, move.new, None, **statuses))
        return changes

    if test_changed(old, new):
        changes = metric_changes(lambda delta: "test changed", grades=False)  # an edited target regrades
        if old_status != new_status:
            changes.insert(0, CaseChange("test changed", case_id, name, "status", old_status, new_status, None,
                                         **statuses))
        return changes or [CaseChange("test changed", case_id, name, None, None, None, None, **statuses)]
    if old_status == "success" and new_status != "success":
        return [CaseChange("regression", case_id, name, "status", old_status, new_status, None, **statuses)]
    if old_status != "success" and new_status == "success":
        return [CaseChange("improvement", case_id, name, "status", old_status, new_status, None, **statuses)]
    if old_status != "success":
        return []  # neither run scored it: nothing to compare
    decided = case_verdict(old, new)
    if decided is not None and decided.verdict not in (CaseVerdict.REGRESSED, CaseVerdict.IMPROVED):
        return metric_changes(lambda delta: WITHIN_NOISE)  # a flip, as far as its attempts can tell
    return metric_changes(lambda delta: "regression" if delta < 0 else "improvement")


def case_verdict(old: Mapping[str, Any], new: Mapping[str, Any]) -> AttemptsChange | None:
    """Whether a case answered several times in both runs changed beyond what its own attempts vary
    by (`decide_case_change` on its main metric's attempts: the first kind's `main_metric_key` that
    both runs have); None when a run has no attempts of it (one run per case: today's rule)."""
    before, after = old.get(ATTEMPTS_KEY), new.get(ATTEMPTS_KEY)
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return None
    for kind in kinds.REGISTRY:
        key = kind.main_metric_key()
        old_values = [v for v in before.get(key) or () if _number(v) is not None]
        new_values = [v for v in after.get(key) or () if _number(v) is not None]
        if key is not None and old_values and new_values:
            return _decided(tuple(old_values), tuple(new_values))
    return None


@functools.lru_cache(maxsize=4096)
def _decided(old_values: tuple[float, ...], new_values: tuple[float, ...]) -> AttemptsChange:
    """`decide_case_change`, once per pair of attempt values (the changes and the note both ask)."""
    return decide_case_change(old_values, new_values)


def attempts_note(old_rows: Mapping[str, Mapping[str, Any]], new_rows: Mapping[str, Mapping[str, Any]],
                  *, level: float = ALPHA) -> str | None:
    """What the lists of regressed and improved cases rest on, said once: one run per case (no case
    has attempts in both runs), or attempts too few to ever decide at `level` (3 against 3)."""
    sizes: Counter[tuple[int, int]] = Counter()
    for case_id, new in new_rows.items():
        old = old_rows.get(case_id)
        if old is None or test_changed(old, new) or old.get("status") != "success" or new.get("status") != "success":
            continue
        decided = case_verdict(old, new)
        if decided is not None:
            sizes[(decided.old_attempts, decided.new_attempts)] += 1
    if not sizes:
        return ONE_RUN_NOTE
    hopeless = sorted(pair for pair in sizes if smallest_p(*pair) > level)
    if not hopeless:
        return None
    cases = sum(sizes[pair] for pair in hopeless)
    pairs = ", ".join(f"{a} against {b}" for a, b in hopeless)
    return (f"{cases} case(s) have too few attempts to ever tell a change from a flip ({pairs}: no split of so few "
            f"attempts reaches p {level:g}); what moved in them is listed as moved within noise. Give 4 or more "
            "attempts per case in both runs.")


def smallest_p(old_attempts: int, new_attempts: int) -> float:
    """The smallest p-value `decide_case_change` can reach with attempts of these numbers."""
    if min(old_attempts, new_attempts) < MINIMUM_ATTEMPTS:
        return 1.0
    return (2 if old_attempts == new_attempts else 1) / math.comb(old_attempts + new_attempts, new_attempts)


def case_moved(old: Mapping[str, Any], new: Mapping[str, Any], *, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """Whether a case changed between two of its rows (its test, its status or a metric)."""
    return bool(_case_changes(old, new, tolerance))


def test_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether the case's test definition differs between the two runs."""
    old_hash, new_hash = old.get("definition_hash") or "", new.get("definition_hash") or ""
    return bool(old_hash and new_hash and old_hash != new_hash)


def _display_order(change: CaseChange) -> tuple[Any, ...]:
    """Regressions first (status losses, then the biggest drops), then improvements (status gains,
    then the biggest rises), then changed tests, new and removed cases in input order."""
    if change.kind == "not loaded":
        return (-1,)
    rank = CHANGE_KINDS.index(change.kind)
    # status changes first, then metrics by how far they moved, then grades (which have no delta)
    place = 1 if change.delta is not None else 0 if change.metric in ("status", None) else 2
    if change.kind == "regression":
        return (rank, place, change.delta or 0.0)
    if change.kind == "improvement":
        return (rank, place, -(change.delta or 0.0))
    return (rank,)


def _facts(row: Mapping[str, Any] | None) -> Mapping[str, Any]:
    facts = (row or {}).get("facts")
    return facts if isinstance(facts, Mapping) else {}


def _status_words(status: Any, error: Any) -> str:
    text = {"error": "the system answered with an error", "missing": "no response",
            "invalid": "the response could not be evaluated"}.get(str(status), str(status))
    return f"{text}: {error}" if error and status in ("error", "invalid") else text


def movement_reason(kind: ChangeKind, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """Why a case moved, in one line: a lost status says what happened; otherwise the kinds say
    what changed in their facts, and failing that the case's reason now (or, improved, before)."""
    if kind in ("new case", "removed case", "not loaded"):
        return None
    old_status, new_status = (old or {}).get("status"), (new or {}).get("status")
    if kind == "regression" and new_status != "success":
        return _status_words(new_status, (new or {}).get("error"))
    if kind == "improvement" and old_status != "success":
        return "evaluated again (was: " + _status_words(old_status, None) + ")"
    said = kinds.explain_change(_facts(old), _facts(new))
    if said:
        return said
    if kind == "test changed":
        return "test edited"
    if kind == "regression":
        return (new or {}).get("reason") or None
    before = (old or {}).get("reason")
    return f"was: {before}" if before else None


def _movements(changes: Sequence[CaseChange], old_rows: Mapping[str, Mapping[str, Any]],
               new_rows: Mapping[str, Mapping[str, Any]]) -> list[CaseMovement]:
    return group_movements(changes, lambda kind, case_id: movement_reason(kind, old_rows.get(case_id),
                                                                          new_rows.get(case_id)))


def group_movements(changes: Sequence[CaseChange],
                    reason: Callable[[ChangeKind, str], str | None] | None = None) -> list[CaseMovement]:
    """One movement per changed case, in the order of `changes`; its reason from `reason`, else the
    reason its changes carry (a stored comparison read back)."""
    by_case: dict[str, list[CaseChange]] = {}
    for change in changes:
        by_case.setdefault(change.case_id, []).append(change)
    movements = []
    for case_id, moves in by_case.items():
        kinds_found = [move.kind for move in moves]
        kind = "regression" if "regression" in kinds_found else kinds_found[0]
        why = reason(kind, case_id) if reason is not None else moves[0].reason
        movements.append(CaseMovement(kind, case_id, moves[0].name, tuple(moves), why))
    return movements


def compare_runs(baseline: RunSnapshot, current: RunSnapshot, *, tolerance: float = DEFAULT_TOLERANCE,
                 unloaded: Sequence[Unloaded] = (), warnings: Sequence[str] = (), detailed: bool = True) -> Comparison:
    """What changed from `baseline` to `current`, per case and metric, and in the headline metrics
    (with `detailed`, also per tag, template and dimension, and every change decided beyond noise or
    not). `unloaded`: the test cases this run could not read (`Suite.unloaded`)."""
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
    movements = [replace(movement, moves=tuple(replace(move, reason=movement.reason) for move in movement.moves))
                 for movement in _movements(changes, old_rows, new_rows)]
    reasons = {movement.case_id: movement.reason for movement in movements}
    changes = [replace(change, reason=reasons.get(change.case_id)) for change in changes]
    comparison = Comparison(
        baseline_source=baseline.source,
        baseline_created=baseline.created,
        baseline_version=baseline.qareport_version,
        changes=tuple(changes),
        headline=headline_deltas(headline_metrics(baseline.cases), headline_metrics(current.cases),
                                 old_rows, new_rows) if detailed else (),
        movements=tuple(movements),
        warnings=tuple(warnings),
        breakdown=breakdown_changes(old_rows, new_rows) if detailed else (),
        attempts_note=attempts_note(old_rows, new_rows),
    )
    return decide_noise(comparison) if detailed else comparison


def decide_noise(comparison: Comparison, *, level: float = ALPHA) -> Comparison:
    """Every tested change of the comparison (headline metrics, tags, templates, dimensions) with its
    Benjamini-Hochberg q-value over all of them, and beyond noise when q <= `level`: the false
    discovery rate among the changes called beyond noise is held at `level`."""
    items = comparison.flags
    tested = [(index, p_value) for index, item in enumerate(items) if (p_value := item.p_value) is not None]
    found = benjamini_hochberg([p_value for _, p_value in tested], level=level)
    decided: list[Any] = list(items)
    for (index, _), q_value in zip(tested, found.q_values):
        decided[index] = replace(items[index], q_value=q_value, beyond_noise=q_value <= level)
    headline = len(comparison.headline)
    return replace(comparison, headline=tuple(decided[:headline]), breakdown=tuple(decided[headline:]))


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


def shared_values(old_rows: Mapping[str, Mapping[str, Any]], new_rows: Mapping[str, Mapping[str, Any]],
                  metric: str) -> tuple[list[float], list[float]]:
    """A metric's values over the cases both runs evaluated whose test did not change, paired."""
    before, after, _ = _shared(old_rows, new_rows, lambda row: row.get(metric))
    return before, after


def _shared(old_rows: Mapping[str, Mapping[str, Any]], new_rows: Mapping[str, Mapping[str, Any]],
            value: Callable[[Mapping[str, Any]], Any]) -> tuple[list[float], list[float], list[str | None]]:
    """Paired values (and each case's cluster) over the cases both runs evaluated whose test did not change."""
    return _values(_shared_pairs(old_rows, new_rows), value)


def _shared_pairs(old_rows: Mapping[str, Mapping[str, Any]],
                  new_rows: Mapping[str, Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(old, new) rows of the cases both runs evaluated whose test did not change, in this run's order."""
    pairs = []
    for case_id, new in new_rows.items():
        old = old_rows.get(case_id)
        if old is None or test_changed(old, new) or old.get("status") != "success" or new.get("status") != "success":
            continue
        pairs.append((old, new))
    return pairs


def _values(pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
            value: Callable[[Mapping[str, Any]], Any]) -> tuple[list[float], list[float], list[str | None]]:
    """The pairs' values where both runs have one, and each case's cluster (this run's, else the baseline's)."""
    before: list[float] = []
    after: list[float] = []
    clusters: list[str | None] = []
    for old, new in pairs:
        old_value, new_value = _number(value(old)), _number(value(new))
        if old_value is not None and new_value is not None:
            before.append(old_value)
            after.append(new_value)
            clusters.append(row_cluster(new) or row_cluster(old))
    return before, after, clusters


def _value_of(metric: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda row: row.get(metric)


def _paired(before: Sequence[float], after: Sequence[float], clusters: Sequence[str | None], *,
            within_one: bool = False) -> Any:
    """`clustered_paired_change`; with `within_one`, cases that all lie in one cluster are the units
    (the question is whether that cluster changed)."""
    if within_one and len(set(clusters)) == 1 and None not in clusters:
        return clustered_paired_change(before, after)
    return clustered_paired_change(before, after, clusters=clusters)


def breakdown_changes(old_rows: Mapping[str, Mapping[str, Any]], new_rows: Mapping[str, Mapping[str, Any]], *,
                      minimum_cases: int = 2) -> tuple[BreakdownChange, ...]:
    """The like-for-like change of each headline metric per tag (conversation cases) and per template
    (Q&A questions), and of precision and recall per dimension, each over at least `minimum_cases`
    shared cases; sorted by tag, template and dimension name."""
    Pair = tuple[Mapping[str, Any], Mapping[str, Any]]
    groups: dict[tuple[BreakdownBy, str], list[Pair]] = {}
    dimensions: dict[str, list[Pair]] = {}
    for old, new in _shared_pairs(old_rows, new_rows):
        by: BreakdownBy = "template" if new.get("kind") == "qa" else "tag"
        for group in dict.fromkeys(str(item) for item in new.get("groups") or ()):
            groups.setdefault((by, group), []).append((old, new))
        scores = new.get("dimensions")
        for name in scores if isinstance(scores, Mapping) else ():
            dimensions.setdefault(str(name), []).append((old, new))
    found: list[BreakdownChange] = []
    for (by, group), pairs in sorted(groups.items(), key=lambda item: (item[0][0] != "tag", item[0][1])):
        for metric in kinds.headline_metric_keys():
            found += _breakdown(by, group, metric, *_values(pairs, _value_of(metric)), minimum_cases)
    for dimension, pairs in sorted(dimensions.items()):
        for which in ("precision", "recall"):
            found += _breakdown("dimension", dimension, which, *_values(pairs, _dimension_value(dimension, which)),
                                minimum_cases)
    return tuple(found)


def _dimension_value(name: str, which: str) -> Callable[[Mapping[str, Any]], Any]:
    def value(row: Mapping[str, Any]) -> Any:
        scores = row.get("dimensions")
        entry = scores.get(name) if isinstance(scores, Mapping) else None
        return entry.get(which) if isinstance(entry, Mapping) else None
    return value


def _breakdown(by: BreakdownBy, group: str, metric: str, before: list[float], after: list[float],
               clusters: list[str | None], minimum_cases: int) -> list[BreakdownChange]:
    if len(before) < minimum_cases:
        return []
    change = _paired(before, after, clusters, within_one=True)
    distinct = len({label for label in clusters if label is not None}) + sum(label is None for label in clusters)
    return [BreakdownChange(by, group, metric, change.cases, distinct, sum(before) / len(before),
                            sum(after) / len(after), change.low, change.high, change.p_value,
                            change.interval.design_effect)]


def headline_deltas(old: Sequence[Headline], new: Sequence[Headline],
                    old_rows: Mapping[str, Mapping[str, Any]] | None = None,
                    new_rows: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[HeadlineDelta, ...]:
    """Each headline metric either run has: both runs' means and the like-for-like change (given
    the case rows of both runs)."""
    before = {h.metric: h for h in old}
    after = {h.metric: h for h in new}
    deltas = []
    for metric in kinds.headline_metric_keys():
        if metric not in before and metric not in after:
            continue
        shared: dict[str, Any] = {}
        if old_rows is not None and new_rows is not None:
            old_values, new_values, clusters = _shared(old_rows, new_rows, _value_of(metric))
            change = _paired(old_values, new_values, clusters)
            if change is not None:
                shared = {"shared_old": sum(old_values) / len(old_values),
                          "shared_new": sum(new_values) / len(new_values),
                          "shared_cases": change.cases, "p_value": change.p_value,
                          "low": change.low, "high": change.high, "clusters": change.clusters,
                          "design_effect": change.interval.design_effect,
                          "detectable": detectable_change(change.interval, of="differences")}
        deltas.append(HeadlineDelta(
            metric=metric,
            old=before[metric].mean if metric in before else None,
            new=after[metric].mean if metric in after else None,
            old_cases=before[metric].cases if metric in before else 0,
            new_cases=after[metric].cases if metric in after else 0,
            **shared,
        ))
    return tuple(deltas)


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
    regressions: int | None = None  # cases that regressed since the run before it (None: the first run)
    improvements: int | None = None

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
        counts = compare_runs(before, after, detailed=False).counts()
        points.append(replace(point, regressions=counts["regression"], improvements=counts["improvement"]))
    return tuple(points)
