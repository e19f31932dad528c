"""The options a run scores with, which the kinds read from their `TurnInput`: the pass rules among
them, and every option's default, written once here. It imports no kind: the kinds' protocol
records name these options, and the kinds that apply a default take it from here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from qareport.records import DEFAULT_TERM_MATCHING, TermMatching

__all__ = ["EvaluationOptions", "PassRules", "Semantics"]

Semantics = Literal[5, 6]
"""Which graphrag-eval's steps rules apply: 5 (5.2: the last group, candidates by name) or 6
(6.6: every group, every successful call a candidate, the new step kinds)."""
DEFAULT_SEMANTICS: Semantics = 5
DEFAULT_ACCEPTABLE_EXTRAS = 2  # extra terms an indicator selection's `acceptable` grade allows
DEFAULT_ANSWER_PASS_F1 = 0.8


@dataclass(frozen=True, slots=True)
class PassRules:
    """The thresholds of the kinds' pass rules (`Kind.passes`) that a user may set."""

    answer_f1: float = DEFAULT_ANSWER_PASS_F1  # an answer passes at this answer F1 or above (--answer-pass-f1)


def given_pass_rules(answer_f1: float | None) -> PassRules:
    """The pass rules of a run given its `--answer-pass-f1` (None: not given, the default)."""
    return PassRules() if answer_f1 is None else PassRules(answer_f1=answer_f1)


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    match_terms_by: TermMatching = DEFAULT_TERM_MATCHING
    steps_semantics: Semantics = DEFAULT_SEMANTICS  # graphrag-eval's steps rules: 5 or 6
    acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS  # extra terms an `acceptable` grade allows
    pass_rules: PassRules = field(default_factory=PassRules)  # when an attempt of a case answered several times passes
