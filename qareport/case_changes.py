"""What changed per case since a baseline (`CaseChange`), and one line per changed case on how it
moved and why (`CaseMovement`).

Pure functions over two runs' case rows (`case_rows.case_rows`); no I/O. Every metric compared here
lies in [0, 1] and higher is better, so a drop is a regression. Per case present in both runs:

- its test definition changed (`definition_hash` differs): *test changed*, never a regression;
- success → error / missing / invalid: a *regression* of its status; the way back an *improvement*;
- both evaluated: every metric whose value moved by more than `tolerance` is a regression (down)
  or an improvement (up); a metric present in only one run (e.g. the LLM judge was off) is not
  compared. A case answered several times in both runs is regressed (improved) in the metrics in
  which every attempt of this run lies below (above) every attempt of the last (`separate_attempts`,
  `case_verdict`), in any metric of its kinds and whatever the number of attempts; its other moves
  are *moved within noise*, listed apart and never counted as regressions. What the lists rest on is
  said once (`attempts_note`): one run per case cannot tell a change from a flip; with attempts, how
  many of the listed regressions luck alone would give (`regression_chance`).
- A case's grade (`Kind.grades`, kept with its facts) that moved between two evaluated runs of an
  unchanged test is a change line of its own ("grade ideal → problematic"): a regression when it
  got worse, an improvement when it got better.

Cases only in the current run are *new*, cases only in the baseline *removed*, unless they could
not be loaded this time (their file, or their item of it, could not be read): then they are *not
loaded* (`why_not_loaded`), listed first, and never counted as removed or regressed. Every changed
case also gets one line (`group_movements`), in the words of its kinds (`RunKinds.explain_change`:
"lost COUNTRY MEX", "target edited: COUNTRY +KEN").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from qareport import kinds
from qareport.attempt_statistics import Separation, chance_of_at_least, separate_attempts
from qareport.case_record import CaseRow
from qareport.clustered_statistics import CaseVerdict
from qareport.headline import DEFAULT_TOLERANCE
from qareport.means import score as _number  # a score that can be averaged (`means.score`)
from qareport.records import Unloaded
from qareport.significance import ALPHA

ChangeKind = Literal["regression", "improvement", "moved within noise", "judge changed", "rules changed",
                     "test changed", "new case", "removed case", "not loaded"]


CHANGE_KINDS: tuple[ChangeKind, ...] = ("regression", "improvement", "moved within noise", "judge changed",
                                        "rules changed", "test changed", "new case", "removed case", "not loaded")


WITHIN_NOISE: ChangeKind = "moved within noise"
JUDGE_CHANGED: ChangeKind = "judge changed"
"""A judged metric that moved against a baseline judged by another judge (`judge_change`)."""
RULES_CHANGED: ChangeKind = "rules changed"
"""A grade that moved against a baseline graded by other rules (`grading_rules`)."""
ONE_RUN_NOTE = ("One run per case cannot tell a change from a flip: each case listed as regressed or improved moved "
                "in a single attempt. Give several attempts per case ('attempt': 1, 2, ...; 3 or more in both runs) "
                "so that only changes beyond a case's own noise are listed.")


@dataclass(frozen=True, slots=True)
class RegressionChance:
    """What luck alone would put in the list of regressed cases, over the cases compared attempt by
    attempt (answered several times in both runs, evaluated in both, test unchanged)."""

    cases: int
    regressed: int  # of those, listed as regressed (their attempts separated downwards)
    expected: float  # regressions expected if none of them had changed (the sum of their chances)
    p_value: float  # the chance of `regressed` or more from luck alone (`chance_of_at_least`)

    def beyond_chance(self, level: float = ALPHA) -> bool:
        """More separated cases than luck alone gives at `level`: the list is not all flips."""
        return self.regressed > 0 and self.p_value <= level + 1e-12  # 3 of 3 to 0 of 3 alone: exactly 1 / 20




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
            label = kinds.catalogue().metric_label(change.metric)  # a record of two stored runs: no run at hand
            parts.append(f"{label} {_two(change.old)} \u2192 {_two(change.new)}")
        return ", ".join(dict.fromkeys(parts))


def _two(value: Any) -> str:
    number = _number(value)
    return f"{number:.2f}" if number is not None else str(value)


def changes_of_case(old: CaseRow, new: CaseRow, tolerance: float,
                    kind_set: kinds.RunKinds | None = None) -> list[CaseChange]:
    """How a case changed between two of its rows, by the metrics of `kind_set` (None: the catalogue's)."""
    kind_set = kind_set if kind_set is not None else kinds.catalogue()
    case_id, name = new.case_id, new.name or old.name or ""
    old_status, new_status = old.status, new.status
    statuses = {"old_status": old_status, "new_status": new_status}

    def metric_changes(kind_of: Any, *, grades: bool = True) -> list[CaseChange]:
        changes = []
        for metric in kind_set.case_metric_keys():
            before, after = _number(old.metric(metric)), _number(new.metric(metric))
            if before is None or after is None or abs(after - before) <= tolerance:
                continue
            changes.append(CaseChange(kind_of(after - before), case_id, name, metric, before, after,
                                      after - before, **statuses))
        for move in kind_set.grade_moves(old.facts, new.facts) if grades else ():  # "grade ideal → acceptable"
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
    decided = case_verdict(old, new, kind_set)
    if decided is None:
        return metric_changes(lambda delta: "regression" if delta < 0 else "improvement")
    return _attempt_changes(metric_changes(lambda delta: WITHIN_NOISE), decided)


def _attempt_changes(changes: list[CaseChange], decided: Separation) -> list[CaseChange]:
    """A case with attempts: the metrics whose attempts separated are regressions (improvements); its
    other moves, and its grade moves, are within noise unless the case as a whole separated."""
    found = []
    for change in changes:
        kind: ChangeKind = WITHIN_NOISE
        if change.metric in decided.down:
            kind = "regression"
        elif change.metric in decided.up and decided.verdict == CaseVerdict.IMPROVED:
            kind = "improvement"
        elif change.delta is None and decided.verdict in (CaseVerdict.REGRESSED, CaseVerdict.IMPROVED):
            kind = "regression" if decided.verdict == CaseVerdict.REGRESSED else "improvement"  # a grade
        found.append(replace(change, kind=kind))
    return found


def case_verdict(old: CaseRow, new: CaseRow, kind_set: kinds.RunKinds | None = None) -> Separation | None:
    """Whether a case answered several times in both runs changed beyond what its own attempts vary
    by, in any metric of the kinds (`separate_attempts`); None when a run has no attempts of it (one
    run per case: every move is listed, and `ONE_RUN_NOTE` says what that rests on)."""
    before, after = old.attempts, new.attempts
    if before is None or after is None:
        return None
    keys = tuple((kind_set if kind_set is not None else kinds.catalogue()).case_metric_keys())
    return _decided(_attempt_values(before, keys), _attempt_values(after, keys))


def _attempt_values(attempts: Mapping[str, Sequence[float | None]],
                    keys: Sequence[str]) -> tuple[tuple[str, tuple[float, ...]], ...]:
    return tuple((key, tuple(number for value in attempts.get(key) or () if (number := _number(value)) is not None))
                 for key in keys)


@functools.lru_cache(maxsize=4096)
def _decided(old: tuple[tuple[str, tuple[float, ...]], ...],
             new: tuple[tuple[str, tuple[float, ...]], ...]) -> Separation:
    """`separate_attempts`, once per pair of attempt values (the changes and the note both ask)."""
    return separate_attempts(dict(old), dict(new))


def regression_chance(old_rows: Mapping[str, CaseRow], new_rows: Mapping[str, CaseRow],
                      kind_set: kinds.RunKinds | None = None) -> RegressionChance | None:
    """Over the cases compared attempt by attempt: how many regressed, how many luck alone would give,
    and the chance of as many or more; None when no case has attempts in both runs."""
    chances: list[float] = []
    regressed = 0
    for decided in _attempt_verdicts(old_rows, new_rows, kind_set):
        chances.append(decided.chance_down)
        regressed += decided.verdict == CaseVerdict.REGRESSED
    if not chances:
        return None
    return RegressionChance(len(chances), regressed, sum(chances), chance_of_at_least(regressed, chances))


def _attempt_verdicts(old_rows: Mapping[str, CaseRow], new_rows: Mapping[str, CaseRow],
                      kind_set: kinds.RunKinds | None) -> list[Separation]:
    found = []
    for case_id, new in new_rows.items():
        old = old_rows.get(case_id)
        if old is None or test_changed(old, new) or old.status != "success" or new.status != "success":
            continue
        decided = case_verdict(old, new, kind_set)
        if decided is not None and decided.verdict != CaseVerdict.CANNOT_TELL:
            found.append(decided)
    return found


def attempts_note(old_rows: Mapping[str, CaseRow], new_rows: Mapping[str, CaseRow],
                  *, level: float = ALPHA, kind_set: kinds.RunKinds | None = None) -> str | None:
    """What the lists of regressed and improved cases rest on, said once: one run per case (no case
    has attempts in both runs), or, with attempts, how many listed regressions luck alone would give."""
    chance = regression_chance(old_rows, new_rows, kind_set)
    if chance is None:
        return ONE_RUN_NOTE
    return chance_words(chance, level=level)


def chance_words(chance: RegressionChance, *, level: float = ALPHA) -> str:
    """"About 0.6 of these are expected by chance at this size": the error rate of the regressed list."""
    rule = ("A case with attempts is listed as regressed when, in some metric, every attempt of this run lies "
            "below every attempt of the last.")
    said = (f"{rule} Among the {chance.cases} case(s) compared so, about {chance.expected:.2g} would be listed by "
            f"luck alone (if none had changed)")
    if not chance.regressed:
        return said + "."
    verdict = "more than luck explains" if chance.beyond_chance(level) else "no more than luck explains"
    return (f"{said}; {chance.regressed} were: {verdict} (chance of {chance.regressed} or more: "
            f"{chance.p_value:.2g}).")


def case_moved(old: CaseRow, new: CaseRow, *, tolerance: float = DEFAULT_TOLERANCE,
               kind_set: kinds.RunKinds | None = None) -> bool:
    """Whether a case changed between two of its rows (its test, its status or a metric)."""
    return bool(changes_of_case(old, new, tolerance, kind_set))


def test_changed(old: CaseRow, new: CaseRow) -> bool:
    """Whether the case's test definition differs between the two runs."""
    old_hash, new_hash = old.definition_hash, new.definition_hash
    return bool(old_hash and new_hash and old_hash != new_hash)


def display_order(change: CaseChange) -> tuple[Any, ...]:
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


def _status_words(status: Any, error: Any) -> str:
    text = {"error": "the system answered with an error", "missing": "no response",
            "invalid": "the response could not be evaluated"}.get(str(status), str(status))
    return f"{text}: {error}" if error and status in ("error", "invalid") else text


def movement_reason(kind: ChangeKind, old: CaseRow | None, new: CaseRow | None,
                    kind_set: kinds.RunKinds | None = None) -> str | None:
    """Why a case moved, in one line: a lost status says what happened; otherwise the kinds say
    what changed in their facts, and failing that the case's reason now (or, improved, before)."""
    if kind in ("new case", "removed case", "not loaded"):
        return None
    old_status = old.status if old is not None else None
    new_status = new.status if new is not None else None
    if kind == "regression" and new_status != "success":
        return _status_words(new_status, new.error if new is not None else None)
    if kind == "improvement" and old_status != "success":
        return "evaluated again (was: " + _status_words(old_status, None) + ")"
    said = (kind_set if kind_set is not None else kinds.catalogue()).explain_change(
        old.facts if old is not None else {}, new.facts if new is not None else {},
        test_changed=kind == "test changed")  # only an edited test's target can differ
    if said:
        return said
    if kind == "test changed":
        return "test edited"
    if kind == "regression":
        return new.reason or None if new is not None else None
    before = old.reason if old is not None else None
    return f"was: {before}" if before else None


def case_movements(changes: Sequence[CaseChange], old_rows: Mapping[str, CaseRow],
                   new_rows: Mapping[str, CaseRow], kind_set: kinds.RunKinds | None = None) -> list[CaseMovement]:
    return group_movements(changes, lambda kind, case_id: movement_reason(kind, old_rows.get(case_id),
                                                                          new_rows.get(case_id), kind_set))


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


def why_not_loaded(case_id: str, row: CaseRow, unloaded: Sequence[Unloaded]) -> str | None:
    """Why a baseline case is missing from this run when it may only not have been read ("not
    loaded (file X could not be read)"), or None when it was removed."""
    for part in unloaded:
        if part.case_id == case_id:
            return f"not loaded ({part.describe()})"
    stored_file = row.file
    for part in unloaded:
        if part.case_id is None and (not stored_file or _same_file(str(stored_file), part.path)):
            return f"not loaded ({part.describe()})"
    return None


def _same_file(stored: str, path: str) -> bool:
    return stored == path or stored.replace("\\", "/").rsplit("/", 1)[-1] == path.replace("\\", "/").rsplit("/", 1)[-1]
