"""`qareport.graphrag_eval_6` against the real graphrag-eval 6.6.1, on datasets made to differ.

Two ways, so the comparison runs everywhere:

* recorded: `data/graphrag_eval_6_6_1.json` holds what 6.6.1 gave (results and aggregates) on the
  traps and two generated suites of `benchmarks/ge6_suite.py`, and on custom metric outputs
  (`scripts/record_graphrag_eval_6.py` wrote it); qareport must give the same;
* live: with 6.6.1's wheel in ~/.cache/qareport/wheels (`.ci/run` downloads it), fresh suites
  from other seeds go through both, compared result by result; without the wheel these skip.

The generated suites cover multi-group questions, error responses with and without steps,
responses without steps, the name rules (SPARQL under another name, JSON under another name, an
empty retrieval reference, calls of any name under 6.x) and each new step kind with its traps.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import inspect
import json
import logging
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from ge6_suite import (  # noqa: E402
    CUSTOM_CONFIG,
    compact_result,
    ge6_inputs,
    generate_ge6_suite,
    inputs_digest,
    trap_suite,
    with_custom_outputs,
)
from graphrag_eval_wheels import import_graphrag_eval, wheel_path  # noqa: E402

import qareport  # noqa: E402
from qareport import graphrag_eval_6  # noqa: E402

RECORDED = json.loads((Path(__file__).parent / "data" / "graphrag_eval_6_6_1.json").read_text(encoding="utf-8"))
GENERATED = {"generated seed 101": (101, 150), "generated seed 202": (202, 150)}


def dataset(name):
    if name == "traps":
        return trap_suite()
    return generate_ge6_suite(*reversed(GENERATED[name]))


def evaluate(qa_dataset, responses, config=None, **options):
    return asyncio.run(graphrag_eval_6.run_evaluation(qa_dataset, responses, config, **options))


# --- recorded -------------------------------------------------------------------------------------


@pytest.mark.parametrize("recorded", RECORDED["datasets"], ids=lambda d: d["name"])
def test_results_and_aggregates_equal_what_graphrag_eval_6_6_1_gave(recorded):
    qa_dataset, responses = dataset(recorded["name"])
    assert inputs_digest(qa_dataset, responses) == recorded["inputs_sha256"], (
        "the generator changed since the recording: run scripts/record_graphrag_eval_6.py")
    results = evaluate(qa_dataset, responses)
    got = [compact_result(result) for result in results]
    for exp, mine in zip(recorded["results"], got):
        assert mine == exp, exp["question_id"]
        assert list(mine) == list(exp), exp["question_id"]  # the same keys, in 6.6.1's order
    assert len(got) == len(recorded["results"])
    assert graphrag_eval_6.compute_aggregates(results) == recorded["aggregates"]


def test_custom_metric_outputs_aggregate_as_graphrag_eval_6_6_1_aggregates_them(tmp_path):
    recorded = RECORDED["custom_metrics"]
    config = tmp_path / "config.yaml"
    config.write_text(CUSTOM_CONFIG, encoding="utf-8")
    samples = with_custom_outputs(evaluate(*dataset(recorded["from"])), recorded["seed"])
    got = graphrag_eval_6.compute_aggregates(samples, config)
    assert got == recorded["aggregates"]
    assert "sparql_recall" in got["micro"] and "tone_score" in got["macro"]
    assert "sparql_reason" not in got["micro"]  # text outputs are not aggregated


def test_the_recording_covers_every_kind_of_input():
    """What the differential datasets must hold, for the comparison to mean something."""
    qa_dataset, responses = dataset("generated seed 101")
    questions = [q for template in qa_dataset for q in template["questions"]]
    names = {step["name"] for q in questions for group in q["reference_steps"] for step in group}
    assert {"sparql_query", "sparql", "retrieval", "retrieve_time_series", "retrieve_data_points",
            "iri_discovery", "get_settings"} <= names
    assert sum(len(q["reference_steps"]) > 1 for q in questions) > 50
    errors = [r for r in responses.values() if "error" in r]
    assert any("actual_steps" in r for r in errors) and any("actual_steps" not in r for r in errors)
    results = {r["question_id"]: r for r in RECORDED["datasets"][1]["results"]}
    assert any(r["status"] == "error" and r["steps_score"] > 0 for r in results.values())
    assert {0.0, 1.0} < {r["steps_score"] for r in results.values()}


# --- the API ---------------------------------------------------------------------------------------


def test_the_entry_points_have_graphrag_eval_6s_call_shapes():
    assert inspect.iscoroutinefunction(graphrag_eval_6.run_evaluation)
    assert list(inspect.signature(graphrag_eval_6.run_evaluation).parameters)[:3] == [
        "qa_dataset", "responses_dict", "config_file_path"]
    assert list(inspect.signature(graphrag_eval_6.compute_aggregates).parameters) == [
        "samples", "config_file_path"]


def test_run_evaluation_is_awaited_inside_a_running_loop():
    qa_dataset, responses = trap_suite()

    async def main():
        return await graphrag_eval_6.run_evaluation(qa_dataset, responses, None)

    results = asyncio.run(main())
    assert len(results) == len(qa_dataset[0]["questions"])


def test_the_5x_entry_point_keeps_5x_rules():
    qa_dataset, responses = trap_suite()
    five = {r["question_id"]: r for r in qareport.run_evaluation(qa_dataset, responses, judge=None)}
    six = {r["question_id"]: r for r in evaluate(qa_dataset, responses)}
    assert six["multi_group_stop"]["steps_score"] == pytest.approx(1 / 3)
    assert five["multi_group_stop"]["steps_score"] == 1.0  # 5.x: the last group only
    assert "steps_score" not in five["error_with_steps"] and six["error_with_steps"]["steps_score"] == 1.0
    assert five["dp_granularity_spelling"]["steps_score"] == 0.0  # 5.x: outputs compared as text


def test_the_input_is_left_alone_unless_matches_are_asked_for():
    qa_dataset, responses = trap_suite()
    before = copy.deepcopy((qa_dataset, responses))
    evaluate(qa_dataset, responses)
    assert (qa_dataset, responses) == before
    evaluate(qa_dataset, responses, write_matches=True)
    steps = {q["id"]: q["reference_steps"] for q in qa_dataset[0]["questions"]}
    assert steps["cross_name_exact"][0][0]["matches"] == "c1"
    assert "matches" not in steps["iri_other_tool"][0][0]


# --- live ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graphrag_eval_661():
    module = import_graphrag_eval("6.6.1")
    if module is None:
        pytest.skip(f"graphrag-eval 6.6.1's wheel is not at {wheel_path('6.6.1')}: .ci/run downloads it "
                    "(pip download graphrag-eval==6.6.1 --no-deps --python-version 3.12 --only-binary=:all:); "
                    "the recorded comparison above still ran")
    logging.getLogger(module.__name__).disabled = True
    for name in ("evaluation", "steps.evaluation", "aggregation"):
        logging.getLogger(f"{module.__name__}.{name}").disabled = True
    return module


def _without_timestamps(value):
    if isinstance(value, dict):
        return {k: None if k == "execution_timestamp" else _without_timestamps(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    assert not isinstance(value, datetime.datetime)
    return value


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_fresh_suites_score_as_graphrag_eval_6_6_1_scores_them(graphrag_eval_661, seed):
    qa_dataset, responses = generate_ge6_suite(120, seed)
    theirs = asyncio.run(graphrag_eval_661.run_evaluation(*ge6_inputs(qa_dataset, responses)))
    ours = evaluate(qa_dataset, responses)
    for mine, other in zip(ours, theirs):
        assert list(mine) == list(other)
        assert _without_timestamps(mine) == _without_timestamps(other), mine["question_id"]
    assert graphrag_eval_6.compute_aggregates(ours) == graphrag_eval_661.compute_aggregates(theirs)


def test_the_traps_score_as_graphrag_eval_6_6_1_scores_them(graphrag_eval_661):
    qa_dataset, responses = trap_suite()
    theirs = asyncio.run(graphrag_eval_661.run_evaluation(*ge6_inputs(qa_dataset, responses)))
    ours = evaluate(qa_dataset, responses)
    assert [(r["question_id"], r["steps_score"]) for r in ours] == [
        (r["question_id"], r["steps_score"]) for r in theirs]


def test_matches_written_into_the_input_as_graphrag_eval_6_6_1_writes_them(graphrag_eval_661):
    qa_dataset, responses = generate_ge6_suite(60, 3)
    theirs_input, their_responses = ge6_inputs(qa_dataset, responses)
    asyncio.run(graphrag_eval_661.run_evaluation(theirs_input, their_responses))
    evaluate(qa_dataset, responses, write_matches=True)
    assert qa_dataset == theirs_input
