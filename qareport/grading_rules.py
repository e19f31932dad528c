"""A change of grading rules is never read as a system change.

An indicator selection's grade depends on how many extra terms `acceptable` allows (`--grade-extras`,
`acceptable_extras`). When the baseline was graded with another allowance, a grade that moved may have
moved because the rule did: `mark_rules_changed` relabels those grade moves "rules changed", so a case
whose only move is its grade is neither a regression nor an improvement (the verdict and
`--fail-on-regression` do not count it), and `rules_warning` says what differs, as the steps rules'
difference is said. A baseline that does not state its allowance was graded by the default.
"""

from __future__ import annotations

from dataclasses import replace

from qareport.case_changes import RULES_CHANGED, CaseChange, display_order, group_movements
from qareport.comparison import Comparison
from qareport.evaluation_options import DEFAULT_ACCEPTABLE_EXTRAS
from qareport.kinds.indicator_selection import INDICATOR_SELECTION
from qareport.records import RunSnapshot

RELABELLED = frozenset({"regression", "improvement", "moved within noise"})
"""The moves a rules change explains; a lost status, an edited test, a new case stay what they are."""


def baseline_extras(run: RunSnapshot) -> int:
    """The extra terms a stored run's `acceptable` grade allowed (runs that do not say: the default)."""
    return DEFAULT_ACCEPTABLE_EXTRAS if run.acceptable_extras is None else run.acceptable_extras


def rules_warning(baseline: RunSnapshot, acceptable_extras: int) -> str | None:
    """What the Summary, the email and the Problems sheet say when the baseline graded by another
    allowance of extra terms; None when both runs graded alike."""
    before = baseline_extras(baseline)
    if before == acceptable_extras:
        return None
    return (f"the baseline's indicator selection grades allowed at most {before} extra terms as acceptable and this "
            f"run's at most {acceptable_extras} (--grade-extras): grade changes are labelled '{RULES_CHANGED}' and "
            "are neither regressions nor improvements; run both with the same --grade-extras to compare like "
            "with like")


def mark_rules_changed(comparison: Comparison, baseline: RunSnapshot, acceptable_extras: int) -> Comparison:
    """`comparison` with the indicator selection's grade moves labelled "rules changed" when the
    baseline graded by another allowance; `comparison` itself when both graded alike."""
    if baseline_extras(baseline) == acceptable_extras:
        return comparison
    reasons = {movement.case_id: movement.reason for movement in comparison.movements}
    changes = sorted((_relabelled(change) for change in comparison.changes), key=display_order)
    return replace(comparison, changes=tuple(changes),
                   movements=tuple(group_movements(changes, lambda kind, case_id: reasons.get(case_id))))


def _relabelled(change: CaseChange) -> CaseChange:
    if change.kind in RELABELLED and change.delta is None and change.metric == INDICATOR_SELECTION.grade_key:
        return replace(change, kind=RULES_CHANGED)
    return change
