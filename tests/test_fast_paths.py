"""Work done once, or skipped, for speed gives what the plain way gives.

Each shortcut of the evaluation and the report is checked here against the plain computation it
replaces, on generated suites (`benchmarks/synthetic_suite.py`, `benchmarks/ge6_suite.py`) and on
values drawn by hypothesis.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import replace

import pytest

from conftest import REPO
from qareport.collector import run_scope
from qareport.evaluation import EvaluationOptions, evaluate_suite
from qareport.kinds.steps import KIND_NAME, turn_verdicts
from qareport.kinds.steps.matching import StepsOutcome
from qareport.loading import load_suite

sys.path.insert(0, str(REPO / "benchmarks"))
import ge6_suite  # noqa: E402
import synthetic_suite  # noqa: E402


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Two generated Q&A suites on disk: graphrag-eval 5.x's shapes and 6.x's step kinds."""
    folder = tmp_path_factory.mktemp("generated")
    synthetic_suite.write_suite(folder / "qa5", 150, 4)
    ge6_suite.write_suite(folder / "qa6", 150, 12)
    return folder


@pytest.mark.parametrize(("suite", "semantics"), [("qa5", 5), ("qa5", 6), ("qa6", 5), ("qa6", 6)])
def test_the_verdicts_kept_with_an_evaluation_are_those_worked_out_on_demand(generated, suite, semantics):
    loaded = load_suite([generated / suite / "testcases"], [generated / suite / "responses"])
    results = evaluate_suite(loaded, options=EvaluationOptions(steps_semantics=semantics)).results
    kept = 0
    for result in results:
        for turn in result.turns:
            outcome = turn.scores.get(KIND_NAME)
            if not isinstance(outcome, StepsOutcome):
                continue
            on_demand = turn_verdicts(replace(turn, scores={KIND_NAME: replace(outcome, verdicts=None)}))
            assert outcome.verdicts == on_demand
            kept += outcome.verdicts is not None
    assert kept > 100


@pytest.mark.parametrize(("suite", "semantics"), [("qa5", 5), ("qa6", 6)])
def test_scoring_makes_no_reference_cycles_so_the_collector_can_rest(generated, suite, semantics):
    loaded = load_suite([generated / suite / "testcases"], [generated / suite / "responses"])
    gc.collect()
    gc.disable()
    try:
        evaluation = evaluate_suite(loaded, options=EvaluationOptions(steps_semantics=semantics))
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert any(turn.qa.get("steps_score") is not None for r in evaluation.results for turn in r.turns if turn.qa)


def test_a_run_sets_its_loaded_data_aside_from_the_collector_until_it_ends(generated):
    paths = ([generated / "qa5" / "testcases"], [generated / "qa5" / "responses"])
    load_suite(*paths)
    assert gc.get_freeze_count() == 0  # outside a run, nothing is set aside
    with run_scope():
        suite = load_suite(*paths)
        assert gc.get_freeze_count() > len(suite.cases)
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0
