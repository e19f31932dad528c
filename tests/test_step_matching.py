"""Steps score: matching actual tool calls to the reference's last group, as graphrag-eval 5.2 does."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from qareport.kinds.steps.matching import annotate_reference_steps, evaluate_steps
from qareport.kinds.steps.outcome import StepMatch, StepsOutcome
from qareport.kinds.steps.step_shapes import FailedCall

DATA = Path(__file__).parent / "data"
SPARQL = "application/sparql-results+json"


@pytest.fixture(scope="module")
def seed_questions():
    templates = yaml.safe_load((DATA / "qa_power_system_reference.yaml").read_text(encoding="utf-8"))
    return {question["id"]: question for template in templates for question in template["questions"]}


@pytest.fixture(scope="module")
def seed_responses():
    return json.loads((DATA / "qa_power_system_responses.json").read_text(encoding="utf-8"))


OSLO = "c10bbc8dce98a4b8832d125134a16153"
STAVANGER_LINES = "f91fc938d606e5f6089912bebfaf114b"


def result(variables, *rows):
    bindings = [{v: {"type": "literal", "value": value} for v, value in zip(variables, row)} for row in rows]
    return json.dumps({"head": {"vars": variables}, "results": {"bindings": bindings}})


REFERENCE_TABLE = result(["s", "n"], ("u1", "a"), ("u2", "b"))
OTHER_TABLE = result(["s", "n"], ("u1", "a"))


def sparql_step(output=REFERENCE_TABLE, **extra):
    return {
        "name": "sparql_query",
        "output": output,
        "output_media_type": SPARQL,
        "required_columns": ["s", "n"],
        **extra,
    }


def call(name, output, call_id, status="success", **extra):
    step = {"name": name, "args": {}, "id": call_id, "status": status, **extra}
    if output is not None:
        step["output"] = output
    return step


def docs(*ids):
    return json.dumps([{"id": doc_id, "text": f"text of {doc_id}"} for doc_id in ids])


# --- the seed's examples -----------------------------------------------------------------------------


def test_oslo_transformers_question_scores_one(seed_questions, seed_responses):
    question, response = seed_questions[OSLO], seed_responses[OSLO]
    outcome = evaluate_steps(question["reference_steps"], response["actual_steps"], question_id=OSLO)
    assert outcome == StepsOutcome(
        score=1.0,
        matches=(
            StepMatch(reference_index=0, actual_index=0, actual_id="call_3", score=1.0),
            StepMatch(reference_index=1, actual_index=2, actual_id="call_3b3zHJnBXwYYSg04BiFGAAgO", score=1.0),
        ),
    )
    annotated = annotate_reference_steps(question["reference_steps"], outcome, response["actual_steps"])
    assert [step["matches"] for step in annotated[-1]] == ["call_3", "call_3b3zHJnBXwYYSg04BiFGAAgO"]


def test_failed_calls_are_listed_and_never_match(seed_questions, seed_responses):
    question, response = seed_questions[STAVANGER_LINES], seed_responses[STAVANGER_LINES]
    outcome = evaluate_steps(question["reference_steps"], response["actual_steps"])
    assert outcome.score == 1.0
    assert [m.actual_id for m in outcome.matches] == ["call_Qm1mzX7g5q9SVPrR2QzEMTp3"]
    assert outcome.failed_calls == (
        FailedCall(
            index=2,
            id="call_DbMkZ8kv3qkf49wNNdREkpRN",
            name="sparql_query",
            error="Error: ValueError('The following prefixes are undefined: urn')\n Please fix your mistakes.",
        ),
    )


def test_inputs_are_not_modified(seed_questions, seed_responses):
    question, response = seed_questions[OSLO], seed_responses[OSLO]
    before = copy.deepcopy((question, response))
    outcome = evaluate_steps(question["reference_steps"], response["actual_steps"])
    annotate_reference_steps(question["reference_steps"], outcome, response["actual_steps"])
    assert (question, response) == before


# --- matching rules ------------------------------------------------------------------------------------


def test_only_the_last_group_is_scored():
    reference = [[{"name": "autocomplete_search", "output": "x"}], [sparql_step()]]
    outcome = evaluate_steps(reference, [call("autocomplete_search", "x", "c1")])
    assert outcome.score == 0.0 and outcome.matches == ()


def test_latest_call_is_tried_first():
    steps = [call("sparql_query", REFERENCE_TABLE, "early"), call("sparql_query", REFERENCE_TABLE, "late")]
    assert [m.actual_id for m in evaluate_steps([[sparql_step()]], steps).matches] == ["late"]


def test_an_earlier_call_matches_when_the_latest_is_wrong():
    steps = [call("sparql_query", REFERENCE_TABLE, "right"), call("sparql_query", OTHER_TABLE, "wrong")]
    outcome = evaluate_steps([[sparql_step()]], steps)
    assert [m.actual_id for m in outcome.matches] == ["right"] and outcome.score == 1.0


def test_each_actual_step_matches_at_most_once():
    outcome = evaluate_steps([[sparql_step(), sparql_step()]], [call("sparql_query", REFERENCE_TABLE, "only")])
    assert outcome.score == 0.5
    assert [(m.reference_index, m.actual_id) for m in outcome.matches] == [(0, "only")]


def test_reference_steps_take_candidates_in_group_order():
    steps = [call("sparql_query", REFERENCE_TABLE, "first"), call("sparql_query", REFERENCE_TABLE, "second")]
    outcome = evaluate_steps([[sparql_step(), sparql_step()]], steps)
    assert [(m.reference_index, m.actual_id) for m in outcome.matches] == [(0, "second"), (1, "first")]
    assert outcome.score == 1.0


@pytest.mark.parametrize(
    ("actual", "exp"),
    [
        pytest.param(call("sparql_query", REFERENCE_TABLE, "c", status="error"), 0.0, id="status error"),
        pytest.param(call("sparql_query", REFERENCE_TABLE, "c", status="pending"), 0.0, id="status other than success"),
        pytest.param(call("sparql", REFERENCE_TABLE, "c"), 0.0, id="another tool name"),
        pytest.param(call("sparql_query", REFERENCE_TABLE, "c"), 1.0, id="success and same name"),
    ],
)
def test_candidates_are_successful_calls_of_the_same_tool(actual, exp):
    assert evaluate_steps([[sparql_step()]], [actual]).score == exp


def test_score_is_matched_scores_over_the_last_group_size():
    reference = [[sparql_step(), {"name": "now", "output": "noon"}, {"name": "echo", "output": "hi"}]]
    steps = [call("sparql_query", REFERENCE_TABLE, "a"), call("now", "noon", "b"), call("echo", "bye", "c")]
    assert evaluate_steps(reference, steps).score == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("reference_output", "actual_output", "exp"),
    [
        pytest.param('{"a": 1, "b": [1, 2]}', '{\n  "b": [1, 2],\n  "a": 1\n}', 1.0, id="key order and spacing"),
        pytest.param('{"a": 1}', '{"a": 1.0}', 1.0, id="1 equals 1.0 once parsed"),
        pytest.param('{"a": 1}', '{"a": 2}', 0.0, id="different value"),
        pytest.param("[1, 2]", "[2, 1]", 0.0, id="list order matters"),
    ],
)
def test_json_outputs_compare_parsed(reference_output, actual_output, exp):
    reference = [[{"name": "get", "output": reference_output, "output_media_type": "application/json"}]]
    assert evaluate_steps(reference, [call("get", actual_output, "c")]).score == exp


@pytest.mark.parametrize(
    ("actual_output", "exp"),
    [("noon", 1.0), ("noon ", 0.0), ("Noon", 0.0)],
)
def test_other_outputs_compare_as_exact_strings(actual_output, exp):
    assert evaluate_steps([[{"name": "now", "output": "noon"}]], [call("now", actual_output, "c")]).score == exp


def test_turtle_output_of_a_sparql_step_is_no_match():
    turtle = "@prefix ex: <http://example.com/> .\nex:a ex:b ex:c ."
    outcome = evaluate_steps([[sparql_step()]], [call("sparql_query", turtle, "describe")])
    assert outcome.score == 0.0 and outcome.error is None


def test_sparql_options_come_from_the_reference_step():
    shuffled = result(["n", "s"], ("b", "u2"), ("a", "u1"))
    assert evaluate_steps([[sparql_step()]], [call("sparql_query", shuffled, "c")]).score == 1.0
    assert evaluate_steps([[sparql_step(ordered=True)]], [call("sparql_query", shuffled, "c")]).score == 0.0
    doubled = result(["s", "n"], ("u1", "a"), ("u2", "b"), ("u2", "b"))
    assert evaluate_steps([[sparql_step()]], [call("sparql_query", doubled, "c")]).score == 1.0
    assert evaluate_steps([[sparql_step(ignore_duplicates=False)]], [call("sparql_query", doubled, "c")]).score == 0.0


@pytest.mark.parametrize(
    ("reference_ids", "actual_ids", "k", "exp"),
    [
        pytest.param(["d1", "d2"], ["d1", "d2"], 2, 1.0, id="all retrieved"),
        pytest.param(["d1", "d2", "d3"], ["d3", "x", "d1"], 3, 2 / 3, id="two of three"),
        pytest.param(["d1", "d2", "d3"], ["d3", "x", "d1"], 1, 0.0, id="k from the actual step cuts both lists"),
        pytest.param(["d1", "d2"], ["x", "y"], 2, 0.0, id="none retrieved: no match"),
        pytest.param(["d1", "d2"], ["d2"], None, 0.5, id="k null keeps the lists whole"),
    ],
)
def test_retrieval_scores_recall_at_k(reference_ids, actual_ids, k, exp):
    reference = [[{"name": "retrieval", "args": {"k": 99}, "output": docs(*reference_ids)}]]
    actual = call("retrieval", docs(*actual_ids), "r1")
    actual["args"] = {"query": "q", "k": k}
    outcome = evaluate_steps(reference, [actual])
    assert outcome.score == pytest.approx(exp)
    assert [m.actual_id for m in outcome.matches] == (["r1"] if exp else [])


def test_a_partial_retrieval_adds_its_recall_to_the_group_score():
    reference = [[{"name": "retrieval", "output": docs("d1", "d2")}, sparql_step()]]
    retrieval = call("retrieval", docs("d1", "x"), "r")
    retrieval["args"] = {"k": 2}
    outcome = evaluate_steps(reference, [retrieval, call("sparql_query", REFERENCE_TABLE, "s")])
    assert outcome.score == pytest.approx((0.5 + 1.0) / 2)


def test_reference_step_without_output_is_fine_when_nothing_could_match_it():
    outcome = evaluate_steps([[sparql_step(), {"name": "never_called"}]], [call("sparql_query", REFERENCE_TABLE, "a")])
    assert outcome.error is None and outcome.score == 0.5


def test_annotation_is_a_deep_copy():
    reference = [[{"name": "lookup", "output": "x"}], [sparql_step()]]
    steps = [call("sparql_query", REFERENCE_TABLE, "c7")]
    annotated = annotate_reference_steps(reference, evaluate_steps(reference, steps), steps)
    assert annotated == [[{"name": "lookup", "output": "x"}], [{**sparql_step(), "matches": "c7"}]]
    assert "matches" not in reference[-1][0]
    annotated[0][0]["output"] = "changed"
    assert reference[0][0]["output"] == "x"


# --- where graphrag-eval crashes: a clear error ------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "actual", "fragments"),
    [
        pytest.param([], [], ["'reference_steps' is empty"], id="empty reference_steps"),
        pytest.param([[sparql_step()], []], [], ["last group of 'reference_steps' is empty"], id="empty last group"),
        pytest.param({"steps": []}, [], ["'reference_steps' must be a list"], id="reference_steps not a list"),
        pytest.param([[{"output": "x"}]], [], ["reference step 1 of the last group has no 'name'"],
                     id="reference step without name"),
        pytest.param([[sparql_step()]], {"sparql_query": "x"}, ["'actual_steps' must be a list"],
                     id="actual_steps not a list"),
        pytest.param([[sparql_step()]], [{"name": "sparql_query", "id": "c1", "output": "x"}],
                     ["actual step 1 ('sparql_query', id 'c1') has no 'status'", "'success' or 'error'"],
                     id="actual step without status"),
        pytest.param([[sparql_step()]], [{"status": "success"}], ["actual step 1 has no 'name'"],
                     id="actual step without name"),
        pytest.param([[{"name": "sparql_query"}]], [call("sparql_query", REFERENCE_TABLE, "c1")],
                     ["reference step 1 of the last group ('sparql_query') has no 'output'"],
                     id="reference step without output"),
        pytest.param([[sparql_step()]], [call("sparql_query", None, "c1")],
                     ["actual step 1 ('sparql_query', id 'c1') has status 'success' but no 'output'"],
                     id="actual step without output"),
        pytest.param([[sparql_step()]], [{"name": "sparql_query", "status": "success", "output": REFERENCE_TABLE}],
                     ["actual step 1 ('sparql_query') matches reference step 1", "has no 'id'"],
                     id="matched actual step without id"),
        pytest.param([[{"name": "sparql_query", "output": REFERENCE_TABLE, "output_media_type": SPARQL}]],
                     [call("sparql_query", REFERENCE_TABLE, "c1")],
                     ["reference step 1 of the last group ('sparql_query') has no 'required_columns'",
                      "add the list of columns the answer must contain"],
                     id="SPARQL reference step without required_columns"),
        pytest.param([[sparql_step(output="<not json>")]], [call("sparql_query", REFERENCE_TABLE, "c1")],
                     ["reference step 1", "'output' that is not JSON"], id="reference SPARQL output not JSON"),
        pytest.param([[sparql_step(output='{"head": {}}')]], [call("sparql_query", REFERENCE_TABLE, "c1")],
                     ["reference step 1", "not a SPARQL JSON result"], id="reference SPARQL output without results"),
        pytest.param([[{"name": "get", "output": "{}", "output_media_type": "application/json"}]],
                     [call("get", "not json", "c1")],
                     ["actual step 1 ('get', id 'c1') has an 'output' that is not JSON", "expects application/json"],
                     id="actual JSON output not JSON"),
        pytest.param([[{"name": "retrieval", "output": docs("d1")}]], [call("retrieval", docs("d1"), "r1")],
                     ["actual step 1 ('retrieval', id 'r1') has no 'k' in its 'args'"], id="retrieval without k"),
        pytest.param([[{"name": "retrieval", "output": docs("d1")}]],
                     [{**call("retrieval", docs("d1"), "r1"), "args": {"k": "2"}}],
                     ["'k' must be an integer"], id="retrieval with k not an integer"),
        pytest.param([[{"name": "retrieval", "output": '[{"text": "no id"}]'}]],
                     [{**call("retrieval", docs("d1"), "r1"), "args": {"k": 2}}],
                     ["reference step 1", "each with an 'id'"], id="retrieval documents without id"),
    ],
)
def test_inputs_graphrag_eval_crashes_on_give_a_clear_error(reference, actual, fragments):
    outcome = evaluate_steps(reference, actual, question_id="abc")
    assert outcome.score is None and outcome.matches == ()
    assert outcome.error.startswith("question 'abc': ")
    for fragment in fragments:
        assert fragment in outcome.error


def test_error_without_question_id_has_no_prefix():
    outcome = evaluate_steps([], [])
    assert outcome.error.startswith("'reference_steps' is empty")


def test_failed_calls_are_reported_even_when_scoring_fails():
    outcome = evaluate_steps([], [call("sparql_query", None, "bad", status="error", error="boom")])
    assert outcome.failed_calls == (FailedCall(index=0, id="bad", name="sparql_query", error="boom"),)
