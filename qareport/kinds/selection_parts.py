"""Where indicator selection keeps its parts in the records (under its name in `Target.parts`,
`TurnOutput.parts` and `TurnResult.scores`), read back typed: the one module that knows the keys."""

from __future__ import annotations

from statistics import fmean
from typing import cast

from qareport.records import CaseResult, DatasetSelection, IndicatorScore, Target, TurnOutput, TurnResult

KIND_NAME = "indicator_selection"


def as_selection(part: object) -> tuple[DatasetSelection, ...] | None:
    """The kind's part of a target or an output, as the kind parsed it (`parse_indicator_selection`)."""
    return cast("tuple[DatasetSelection, ...] | None", part)


def target_selection(target: Target) -> tuple[DatasetSelection, ...] | None:
    """The selection a turn's target expects (None: the target has no indicator selection)."""
    return as_selection(target.parts.get(KIND_NAME))


def output_selection(output: TurnOutput) -> tuple[DatasetSelection, ...] | None:
    """The selection a system made in one turn (None: it gave none)."""
    return as_selection(output.parts.get(KIND_NAME))


def indicator_score(turn: TurnResult) -> IndicatorScore | None:
    """A turn's indicator selection scored (None: the turn has no indicator target, or was not scored)."""
    score = turn.scores.get(KIND_NAME)
    return score if isinstance(score, IndicatorScore) else None


def has_indicator_target(result: CaseResult) -> bool:
    """Whether the case expects an indicator selection (or declares one it could not read)."""
    return KIND_NAME in result.case.declared_targets or any(
        target_selection(turn.target) is not None for turn in result.case.turns)


def macro_precision(result: CaseResult) -> float | None:
    """The mean over evaluated turns with indicator targets; of a case answered several times, the
    mean over its attempts that have one."""
    if result.attempts:
        return _mean([p for a in result.attempts if (p := macro_precision(a)) is not None])
    return _mean([score.macro_precision for t in result.turns if (score := indicator_score(t)) is not None])


def macro_recall(result: CaseResult) -> float | None:
    """As `macro_precision`, of recall."""
    if result.attempts:
        return _mean([r for a in result.attempts if (r := macro_recall(a)) is not None])
    return _mean([score.macro_recall for t in result.turns if (score := indicator_score(t)) is not None])


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None
