"""The options a run scores with, which the kinds read from their `TurnInput`."""

from __future__ import annotations

from dataclasses import dataclass, field

from qareport.kinds import PassRules
from qareport.kinds.indicator_selection import DEFAULT_ACCEPTABLE_EXTRAS
from qareport.kinds.steps.step_kind import DEFAULT_SEMANTICS, Semantics
from qareport.records import DEFAULT_TERM_MATCHING, TermMatching

__all__ = ["EvaluationOptions", "Semantics"]


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    match_terms_by: TermMatching = DEFAULT_TERM_MATCHING
    steps_semantics: Semantics = DEFAULT_SEMANTICS  # graphrag-eval's steps rules: 5 or 6
    acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS  # extra terms an `acceptable` grade allows
    pass_rules: PassRules = field(default_factory=PassRules)  # when an attempt of a case answered several times passes
