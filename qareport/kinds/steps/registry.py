"""The step kinds, in the order they are asked: the first whose `applies` says yes compares.

The order is graphrag-eval 6.x's; each kind's `applies` says when it takes a pair under 5.x too
(under 5.x the new kinds never apply, and JSON outputs come before retrieval, which that kind's
5.x rule leaves to them). Adding a step kind is one module and one line here.
"""

from __future__ import annotations

from typing import Any

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.data_points import RETRIEVE_DATA_POINTS_KIND
from qareport.kinds.steps.exact import EXACT_OUTPUT
from qareport.kinds.steps.iri_discovery import IRI_DISCOVERY_KIND
from qareport.kinds.steps.json_output import JSON_OUTPUT
from qareport.kinds.steps.retrieval import RETRIEVAL_KIND
from qareport.kinds.steps.sparql import SPARQL_RESULTS
from qareport.kinds.steps.step_kind import Step, StepKind
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
        chosen = chosen_kinds(reference, semantics=semantics)
        kind = chosen.get(actual["name"])
    except (KeyError, TypeError):  # a part missing, or one that cannot be a key: ask the kinds
        return ask_step_kinds(reference, actual, semantics=semantics)
    if kind is None:
        kind = ask_step_kinds(reference, actual, semantics=semantics)
        if len(chosen) >= CHOSEN_KEPT:
            chosen.clear()
        chosen[actual["name"]] = kind
    return kind


def chosen_kinds(reference: Step, *, semantics: Semantics) -> dict[Any, StepKind]:
    """The kinds kept for `reference`'s pairs, by the actual step's name: a matching that compares
    one reference step with many calls looks this up once, then each call's name (`step_kind_for`
    adds the kinds not kept yet). KeyError or TypeError when the reference has no name, or parts
    that cannot be a key."""
    key = (semantics, reference["name"], reference.get("output_media_type"), not reference.get("output"))
    chosen = _CHOSEN.get(key)
    if chosen is None:
        if len(_CHOSEN) >= CHOSEN_KEPT:
            _CHOSEN.clear()
        chosen = _CHOSEN[key] = {}
    return chosen


def ask_step_kinds(reference: Step, actual: Step, *, semantics: Semantics) -> StepKind:
    """The kind that compares this pair, asking each kind in turn."""
    for kind in STEP_KINDS:
        if kind.applies(reference, actual, semantics=semantics):
            return kind
    return EXACT_OUTPUT


_CHOSEN: dict[tuple[Any, ...], dict[Any, StepKind]] = {}  # by the reference's parts, then the actual name
CHOSEN_KEPT = 4096  # references (and names for each) kept at most (all are dropped when that many are)


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
