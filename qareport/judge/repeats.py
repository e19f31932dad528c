"""Judgments asked several times (`--judge-repeats`): one outcome per judgment from its repeats.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from qareport.judge.outcomes import Outcome
from qareport.judged_metrics import JUDGED_METRICS, REPEATS_SUFFIX

REPEATED_VALUES = frozenset(spec.key for spec in JUDGED_METRICS)
"""The judged values whose repeats are listed beside them (`<key>_repeats`) when judgments are repeated."""



def combine_repeats(outcomes: list[Outcome]) -> list[Outcome]:
    """One outcome per judgment (a metric of the case, or of one of its steps) from the outcomes
    of its repeats. Without repeats, the outcomes as they are. With them: when no repeat gave a
    value, the first repeat's outcome (its error), as a judgment without repeats; otherwise the
    first repeat with a value, each of its scores (its judged value, and any other float) replaced
    by the mean over the repeats with a value, its counts and reason kept, and beside each judged value the list of the
    repeats' values (`<key>_repeats`, None for a repeat that gave none). The cost is every
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
        updates = dict(first.updates)
        for key, value in first.updates.items():
            if key.endswith("_cost"):
                costs = [o.updates.get(key) for o in group]
                updates[key] = None if any(c is None for c in costs) else sum(costs)
            elif valued and _number(value) and (isinstance(value, float) or key in REPEATED_VALUES):
                values: list[Any] = [o.updates.get(key) for o in valued]
                numbers = [float(v) for v in values if _number(v)]
                if len(numbers) == len(values):
                    updates[key] = fmean(numbers)
                    if key in REPEATED_VALUES:
                        updates[key + REPEATS_SUFFIX] = [o.updates.get(key) if not o.error else None for o in group]
        combined.append(Outcome(first.case, first.metric, first.step, first.ledger, updates=updates,
                                 error=first.error, not_judged=first.not_judged))
    return combined



def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
