"""statgpt's grades of an indicator selection (a turn's grade, a case's the worst of its turns, and
why a turn is not ideal) and the dataset choice scored in its own right (dataset precision and
recall), beside and never inside the macro averages."""

from __future__ import annotations

from collections.abc import Iterable

from qareport.evaluation_options import DEFAULT_ACCEPTABLE_EXTRAS
from qareport.id_text import visible
from qareport.kinds.selection_parts import indicator_score
from qareport.records import CaseResult, IndicatorScore
from qareport.set_metrics import SetScore, ratio

GRADES = ("ideal", "acceptable", "problematic", "failure")
"""statgpt's grades of a turn, best first (a case gets the worst grade of its turns):

- failure: the target names datasets and the system selected none of them (a wrong dataset);
- problematic: a target term missed, or more extra terms than `acceptable_extras`;
- acceptable: every target term found, with at most `acceptable_extras` extra terms (false positives
  and terms of dimensions not in the target), or the datasets not exactly the target's;
- ideal: every target term found, nothing extra, and exactly the target's datasets.
"""



def extra_terms(indicator: IndicatorScore) -> int:
    """The terms a turn selected beyond its target: false positives, and the terms of dimensions
    not in the target."""
    return sum(len(d.false_positives) for d in (*indicator.dimensions, *indicator.not_in_target))


def missed_terms(indicator: IndicatorScore) -> int:
    return sum(len(d.false_negatives) for d in indicator.dimensions)


def grade_turn(indicator: IndicatorScore, *, acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS) -> str:
    """statgpt's grade of one turn (see `GRADES`). A target that names no dataset cannot be failed on
    the dataset, and does not hold a selection that names one back from `ideal`."""
    target, selected = set(indicator.target_datasets), set(indicator.selected_datasets)
    if target and not target & selected:
        return "failure"
    extras = extra_terms(indicator)
    if missed_terms(indicator) or extras > acceptable_extras:
        return "problematic"
    if extras or (target and selected != target):
        return "acceptable"
    return "ideal"


def worst_grade(grades: Iterable[str | None]) -> str | None:
    """The worst of some grades (None among them ignored); None without any."""
    known = [grade for grade in grades if grade in GRADES]
    return max(known, key=GRADES.index) if known else None


def case_grade(result: CaseResult) -> str | None:
    """A case's grade: the worst of its scored turns' grades; None when it was not evaluated or has
    no indicator-selection target."""
    if result.status != "success":
        return None
    return worst_grade(score.grade for turn in result.turns if (score := indicator_score(turn)) is not None)


def grade_why(indicator: IndicatorScore) -> str | None:
    """Why a turn is not ideal, in a few words ("wrong dataset: IFS, expected WEO", "2 target terms
    missed", "3 extra terms"); None when it is."""
    parts = []
    target, selected = set(indicator.target_datasets), set(indicator.selected_datasets)
    chosen = ", ".join(visible(d) for d in indicator.selected_datasets) or "none"
    expected = ", ".join(visible(d) for d in indicator.target_datasets)
    if target and not target & selected:
        parts.append(f"wrong dataset: {chosen}, expected {expected}")
    elif target and selected != target:
        parts.append(f"datasets {chosen}, expected {expected}")
    if (missed := missed_terms(indicator)):
        parts.append(f"{missed} target term{'s' if missed > 1 else ''} missed")
    if (extras := extra_terms(indicator)):
        parts.append(f"{extras} extra term{'s' if extras > 1 else ''}")
    return "; ".join(parts) or None


def dataset_counts(result: CaseResult) -> SetScore | None:
    """The case's dataset choice as counts pooled over its turns: each scored turn's selected
    dataset ids against its own target's (turns whose target names no dataset left out); None when
    no scored turn's target names a dataset."""
    true_positives: list[tuple[int, str]] = []
    false_positives: list[tuple[int, str]] = []
    false_negatives: list[tuple[int, str]] = []
    scored = False
    for turn in result.turns:
        score = indicator_score(turn)
        if score is None or not score.target_datasets:
            continue
        scored = True
        target, selected = score.target_datasets, score.selected_datasets
        true_positives += [(turn.number, d) for d in selected if d in target]
        false_positives += [(turn.number, d) for d in selected if d not in target]
        false_negatives += [(turn.number, d) for d in target if d not in selected]
    if not scored:
        return None
    return SetScore(tuple(true_positives), tuple(false_positives), tuple(false_negatives))


def dataset_scores(result: CaseResult) -> tuple[float | None, float | None]:
    """(dataset precision, dataset recall) of a case: from `dataset_counts`; precision 0.0 when no
    dataset was selected (as for a dimension, SPEC section 2); (None, None) when the case was not
    evaluated or no target of it names a dataset."""
    counts = dataset_counts(result) if result.status == "success" else None
    if counts is None:
        return None, None
    found = len(counts.true_positives)
    return (ratio(found, found + len(counts.false_positives), zero_division=0.0),
            ratio(found, found + len(counts.false_negatives), zero_division=0.0))
