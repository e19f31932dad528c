"""The options a run scores with, which the kinds read from their `TurnInput`."""

from __future__ import annotations

from dataclasses import dataclass

from qareport.kinds.indicator_selection import DEFAULT_ACCEPTABLE_EXTRAS, MatchBy
from qareport.kinds.steps.step_kind import DEFAULT_SEMANTICS, Semantics

__all__ = ["EvaluationOptions", "MatchBy", "Semantics"]


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    match_by: MatchBy = "id_and_name"
    steps_semantics: Semantics = DEFAULT_SEMANTICS  # graphrag-eval's steps rules: 5 or 6
    acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS  # extra terms an `acceptable` grade allows
