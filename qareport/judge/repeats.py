"""Judgments asked several times (`--judge-repeats`): one outcome per judgment from its repeats.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from statistics import fmean
from typing import Any

from qareport.judge.outcomes import Outcome
from qareport.judged_values import Cost, CustomOutputs, Figures, MetricJudgment


def combine_repeats(outcomes: list[Outcome]) -> list[Outcome]:
    """One outcome per judgment (a metric of the case, or of one of its steps) from the outcomes
    of its repeats. Without repeats, the outcomes as they are. With them: when no repeat gave a
    value, the first repeat's outcome (its error), as a judgment without repeats; otherwise the
    first repeat with a value, each of its scores (its judged value, and any other float) replaced
    by the mean over the repeats with a value, its counts and reason kept, and beside the judged value the list of the
    repeats' values (`MetricJudgment.repeats`, None for a repeat that gave none). The cost is every
    repeat's."""
    groups: dict[tuple[str, int | None], list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.metric, outcome.step), []).append(outcome)
    combined = []
    for group in groups.values():
        if len(group) == 1:
            combined.append(group[0])
            continue
        group.sort(key=lambda o: o.repeat)
        valued = [o for o in group if not o.error]
        first = valued[0] if valued else group[0]
        judgment = _judgment(first)
        cost = judgment.cost
        if cost is not None:
            costs = [_judgment(o).cost for o in group]
            known = [c.usd for c in costs if c is not None and c.usd is not None]
            cost = Cost(sum(known) if len(known) == len(costs) else None)
        judgment = replace(judgment, cost=cost)
        if valued:
            found = [_judgment(o) for o in valued]
            figures = _mean_figures(judgment.figures, [j.figures for j in found])
            repeats = None
            judged = [j.judged_value for j in found]
            if judged and all(_number(value) for value in judged):
                repeats = tuple(_judgment(o).judged_value if not o.error else None for o in group)
            judgment = replace(judgment, figures=figures, repeats=repeats)
        combined.append(Outcome(first.case, first.metric, first.step, first.ledger, judgment=judgment,
                                error=first.error, not_judged=first.not_judged))
    return combined


def _judgment(outcome: Outcome) -> MetricJudgment:
    assert outcome.judgment is not None, "a settled outcome has its judgment"
    return outcome.judgment


def _mean_figures(figures: Figures | None, repeated: list[Figures | None]) -> Figures | None:
    """`figures` with each float (a score) the mean over the repeats when every repeat has a number
    there; counts, reasons and text kept as the first repeat gave them."""
    if figures is None:
        return None
    if isinstance(figures, CustomOutputs):
        values = {key: _mean(value, [o.values.get(key) for o in repeated if isinstance(o, CustomOutputs)],
                             len(repeated))
                  for key, value in figures.values.items()}
        return CustomOutputs(values)
    assert is_dataclass(figures)
    means = {spec.name: _mean(getattr(figures, spec.name), [getattr(o, spec.name, None) for o in repeated],
                              len(repeated))
             for spec in fields(figures)}
    return replace(figures, **means)


def _mean(value: Any, values: list[Any], count: int) -> Any:
    """The mean of `values` when `value` is a float and each of the `count` repeats gave a number, else `value`."""
    if not (_number(value) and isinstance(value, float)) or len(values) != count:
        return value
    if not all(_number(v) for v in values):
        return value
    return fmean(float(v) for v in values)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
