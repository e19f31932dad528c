"""Exact output: the fallback when no other step kind applies; the outputs are equal strings.

Applies under both semantics to any pair no earlier kind took. Under 6.x that includes steps of
different names (6.x compares every successful call with every reference step), so a call of
another tool matches when it printed exactly the reference output.
"""

from __future__ import annotations

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.step_kind import MATCH, NO_MATCH, Comparison, Step, StepPair, actual_output, short


class ExactOutput:
    name = "exact output"

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        return True

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        expected = pair.reference.get("output")
        got = actual_output(pair)
        if expected == got:
            return MATCH
        if not explain:
            return NO_MATCH
        return Comparison(0.0, f"output {short(repr(got), 40)}, expected {short(repr(expected), 40)}")


EXACT_OUTPUT = ExactOutput()
