"""A judge change is never read as a system change.

When the baseline's judged values came from another judge than this run's (`judge.identity`: another
model snapshot, other prompts, another temperature...), a judged metric that moved may have moved
because the instrument did. `mark_judge_changed` relabels those moves "judge changed": a case whose
only moves are in judged metrics is neither a regression nor an improvement (so neither the verdict
nor `--fail-on-regression` counts it), the judged headline and breakdown changes are labelled and not
counted beyond noise, and the comparison carries a warning that says which judge changed how. The
gates on this run's own values (`--fail-under`) are untouched: they do not compare runs.

A baseline that records no judge (judged before qareport recorded judges, or not judged) is not
called changed: nothing is known either way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from qareport import kinds
from qareport.case_changes import JUDGE_CHANGED, CaseChange, display_order, group_movements
from qareport.case_record import CaseRow
from qareport.comparison import BreakdownChange, Comparison, HeadlineDelta
from qareport.judge.identity import JudgeIdentity, differences
from qareport.judged_metrics import JUDGED_METRICS
from qareport.means import score

JUDGED_KEYS = frozenset({spec.key for spec in JUDGED_METRICS} | {"answer_recall", "answer_precision"})
"""The case metrics a judge gives: the judged metrics and answer F1's recall and precision."""
Flagged = TypeVar("Flagged", HeadlineDelta, BreakdownChange)
RELABELLED = frozenset({"regression", "improvement", "moved within noise"})
"""The moves a judge change explains; a lost status, an edited test, a new case stay what they are."""


@dataclass(frozen=True, slots=True)
class JudgeShift:
    """How differently the new judge scores the very answers the old one scored: the mean of
    (new value − old value) over the cases whose outputs are the same in both runs."""

    metric: str
    cases: int
    mean_shift: float

    def describe(self) -> str:
        """"the new judge scores the same answers −0.04 on answer F1 (12 cases)"."""
        shift = f"{self.mean_shift:+.2f}".replace("-", "\u2212")
        label = kinds.catalogue().metric_label(self.metric)
        return f"the new judge scores the same answers {shift} on {label} ({self.cases} case{'s' * (self.cases != 1)})"


def judge_shifts(old_rows: Iterable[CaseRow], new_rows: Iterable[CaseRow], *,
                 judged_keys: Collection[str] = JUDGED_KEYS) -> tuple[JudgeShift, ...]:
    """Each judged metric's shift on identical answers (`JudgeShift`), in `judged_keys`' order among
    the metrics that have such cases. A case counts when its test did not change (both runs store
    the same definition hash), both runs evaluated it and its stored outputs are equal and not
    empty: then only the judge can have moved its value."""
    old_by_id = {row.case_id: row for row in old_rows}
    pairs = []
    for new in new_rows:
        old = old_by_id.get(new.case_id)
        if (old is not None and old.definition_hash and old.definition_hash == new.definition_hash
                and old.status == new.status == "success" and new.outputs and old.outputs == new.outputs):
            pairs.append((old, new))
    shifts = []
    for key in sorted(judged_keys, key=_metric_order):
        moves = [after - before for old, new in pairs
                 if (before := score(old.metric(key))) is not None and (after := score(new.metric(key))) is not None]
        if moves:
            shifts.append(JudgeShift(key, len(moves), sum(moves) / len(moves)))
    return tuple(shifts)


def _metric_order(key: str) -> tuple[int, str]:
    order = [spec.key for spec in JUDGED_METRICS]
    return (order.index(key), key) if key in order else (len(order), key)


def judge_changes(baseline: JudgeIdentity | None, current: JudgeIdentity | None) -> tuple[str, ...]:
    """How the judge changed since the baseline, one phrase per difference; empty when it did not,
    or when either run records no judge."""
    if baseline is None or current is None:
        return ()
    return differences(baseline, current)


def judge_change_warning(changed: Sequence[str], shifts: Sequence[JudgeShift] = ()) -> str:
    """The sentence the Summary, the email and the stored run say beside the comparison."""
    said = [shift.describe() for shift in shifts]
    return (f"the judge changed since the baseline ({', '.join(changed)}): changes in the judged metrics are "
            f"labelled '{JUDGE_CHANGED}' and are neither regressions nor improvements"
            + "".join(f"; {line}" for line in said)
            + "; compare like with like by judging both runs with the same judge")


def mark_judge_changed(comparison: Comparison, changed: Sequence[str], *, shifts: Sequence[JudgeShift] = (),
                       judged_keys: Collection[str] = JUDGED_KEYS) -> Comparison:
    """`comparison` with the moves of `judged_keys` labelled "judge changed" (see the module's
    docstring), and the warning added (with the judge's `shifts` on identical answers); `comparison`
    itself when `changed` is empty."""
    if not changed:
        return comparison
    reasons = {movement.case_id: movement.reason for movement in comparison.movements}
    changes = sorted((_relabelled(change, judged_keys) for change in comparison.changes), key=display_order)
    return replace(
        comparison,
        changes=tuple(changes),
        movements=tuple(group_movements(changes, lambda kind, case_id: reasons.get(case_id))),
        headline=tuple(_set_aside(delta, judged_keys) for delta in comparison.headline),
        breakdown=tuple(_set_aside(item, judged_keys) for item in comparison.breakdown),
        warnings=(*comparison.warnings, judge_change_warning(changed, shifts)),
    )


def _relabelled(change: CaseChange, judged_keys: Collection[str]) -> CaseChange:
    if change.kind in RELABELLED and change.metric in judged_keys:
        return replace(change, kind=JUDGE_CHANGED)
    return change


def _set_aside(item: Flagged, judged_keys: Collection[str]) -> Flagged:
    """A judged metric's change, labelled and not counted beyond noise (its test stays shown)."""
    if item.metric not in judged_keys:
        return item
    return replace(item, beyond_noise=None, judge_changed=True)
