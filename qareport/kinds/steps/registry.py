"""The step kinds, in the order they are asked: the first whose `applies` says yes compares.

The order is graphrag-eval 6.x's; each kind's `applies` says when it takes a pair under 5.x too
(under 5.x the new kinds never apply, and JSON outputs come before retrieval, which that kind's
5.x rule leaves to them). Adding a step kind is one module and one line here.
"""

from __future__ import annotations

from typing import Any

from qareport.kinds.steps.data_points import RETRIEVE_DATA_POINTS_KIND
from qareport.kinds.steps.exact import EXACT_OUTPUT
from qareport.kinds.steps.iri_discovery import IRI_DISCOVERY_KIND
from qareport.kinds.steps.json_output import JSON_OUTPUT
from qareport.kinds.steps.retrieval import RETRIEVAL_KIND
from qareport.kinds.steps.sparql import SPARQL_RESULTS
from qareport.kinds.steps.step_kind import Semantics, Step, StepKind
from qareport.kinds.steps.time_series import RETRIEVE_TIME_SERIES_KIND

STEP_KINDS: tuple[StepKind, ...] = (
    SPARQL_RESULTS,
    RETRIEVAL_KIND,
    RETRIEVE_TIME_SERIES_KIND,
    RETRIEVE_DATA_POINTS_KIND,
    IRI_DISCOVERY_KIND,
    JSON_OUTPUT,
    EXACT_OUTPUT,  # the fallback: applies to every pair
)


def step_kind_for(reference: Step, actual: Step, *, semantics: Semantics) -> StepKind:
    """The kind that compares this pair.

    Every kind's `applies` reads no more than the rules, both names, the reference's
    `output_media_type` and whether it has an output (`tests/test_step_kinds.py` checks the
    answers kept by them on generated suites); so the answer is kept by those (`_CHOSEN`) and each
    pair costs one look-up instead of asking the kinds in turn (under 6.x every call is compared
    with every reference step, and most pairs fall through to the last kind)."""
    try:
        key = (semantics, reference["name"], actual["name"], reference.get("output_media_type"),
               not reference.get("output"))
        kind = _CHOSEN.get(key)
    except (KeyError, TypeError):  # a part missing, or one that cannot be a key: ask the kinds
        return ask_step_kinds(reference, actual, semantics=semantics)
    if kind is None:
        kind = ask_step_kinds(reference, actual, semantics=semantics)
        if len(_CHOSEN) >= CHOSEN_KEPT:
            _CHOSEN.clear()
        _CHOSEN[key] = kind
    return kind


def ask_step_kinds(reference: Step, actual: Step, *, semantics: Semantics) -> StepKind:
    """The kind that compares this pair, asking each kind in turn."""
    for kind in STEP_KINDS:
        if kind.applies(reference, actual, semantics=semantics):
            return kind
    return EXACT_OUTPUT


_CHOSEN: dict[tuple[Any, ...], StepKind] = {}
CHOSEN_KEPT = 4096  # answers kept at most (all are dropped when that many are)


def tool_names(reference: Step, *, semantics: Semantics) -> tuple[Any, ...]:
    """The names of the calls that could reproduce `reference` (its own name, unless a kind says
    otherwise): the calls a missed reference step is explained against."""
    for kind in STEP_KINDS:
        called_as = getattr(kind, "called_as", None)
        if called_as is not None:
            names = called_as(reference, semantics=semantics)
            if names:
                return tuple(names)
    return (reference.get("name"),)
