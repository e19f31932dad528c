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

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import TypeVar

from qareport.case_changes import JUDGE_CHANGED, CaseChange, display_order, group_movements
from qareport.comparison import BreakdownChange, Comparison, HeadlineDelta
from qareport.judge.identity import JudgeIdentity, differences
from qareport.judged_metrics import JUDGED_METRICS

JUDGED_KEYS = frozenset({spec.key for spec in JUDGED_METRICS} | {"answer_recall", "answer_precision"})
"""The case metrics a judge gives: the judged metrics and answer F1's recall and precision."""
Flagged = TypeVar("Flagged", HeadlineDelta, BreakdownChange)
RELABELLED = frozenset({"regression", "improvement", "moved within noise"})
"""The moves a judge change explains; a lost status, an edited test, a new case stay what they are."""


def judge_changes(baseline: JudgeIdentity | None, current: JudgeIdentity | None) -> tuple[str, ...]:
    """How the judge changed since the baseline, one phrase per difference; empty when it did not,
    or when either run records no judge."""
    if baseline is None or current is None:
        return ()
    return differences(baseline, current)


def judge_change_warning(changed: Sequence[str]) -> str:
    """The sentence the Summary, the email and the stored run say beside the comparison."""
    return (f"the judge changed since the baseline ({'; '.join(changed)}): changes in the judged metrics are "
            f"labelled '{JUDGE_CHANGED}' and are neither regressions nor improvements; compare like with like "
            "by judging both runs with the same judge")


def mark_judge_changed(comparison: Comparison, changed: Sequence[str], *,
                       judged_keys: Collection[str] = JUDGED_KEYS) -> Comparison:
    """`comparison` with the moves of `judged_keys` labelled "judge changed" (see the module's
    docstring), and the warning added; `comparison` itself when `changed` is empty."""
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
        warnings=(*comparison.warnings, judge_change_warning(changed)),
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
