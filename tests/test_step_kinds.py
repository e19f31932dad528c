"""The kinds of step and graphrag-eval 6.x's rules, one rule per test, and why a step lost points.

The scores written here are 6.6.1's (the same questions, as `benchmarks/ge6_suite.trap_suite`, are
compared with 6.6.1 itself in test_graphrag_eval_6.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml

from qareport.kinds.steps import STEPS, explain_turn, render_steps_details
from qareport.kinds.steps.data_points import normalized_granularity
from qareport.kinds.steps.matching import annotate_reference_steps, evaluate_steps
from qareport.kinds.steps.outcome import StepMatch
from qareport.kinds.steps.registry import STEP_KINDS, step_kind_for
from qareport.kinds.steps.step_kind import StepPair
from qareport.kinds.steps.verdicts import step_verdicts
from qareport.qa import evaluate_question, run_evaluation
from qareport.records import CaseResult, Location, Target, TestCase, Turn, TurnResult

SPARQL = "application/sparql-results+json"
STAMP = "2025-03-01T12:00:00Z"


def call(name, output, call_id, status="success", **extra):
    step = {"name": name, "args": extra.pop("args", {}), "id": call_id, "status": status, **extra}
    if output is not None:
        step["output"] = output
    return step


def table(variables, *rows, types=None):
    bindings = [{v: {"type": (types or {}).get(v, "literal"), "value": value} for v, value in zip(variables, row)}
                for row in rows]
    return json.dumps({"head": {"vars": variables}, "results": {"bindings": bindings}})


def points(**args):
    return {"external_id": "ts-1", "granularity": "1h", "start": "3d-ago", **args}


def points_call(call_id="c1", stamp=STAMP, **args):
    return call("retrieve_data_points", "data", call_id, args=points(**args), execution_timestamp=stamp)


def score6(reference_groups, actual_steps):
    outcome = evaluate_steps(reference_groups, actual_steps, semantics=6)
    assert outcome.error is None, outcome.error
    return outcome.score


POINTS = [[{"name": "retrieve_data_points", "args": points(), "output": "points"}]]


# --- one registry, one module per kind --------------------------------------------------------------


def test_every_kind_of_step_is_registered_once_with_the_exact_fallback_last():
    names = [kind.name for kind in STEP_KINDS]
    assert names == ["SPARQL results", "retrieval", "retrieve_time_series", "retrieve_data_points",
                     "iri_discovery", "JSON output", "exact output"]
    assert len({type(kind) for kind in STEP_KINDS}) == len(STEP_KINDS)


@pytest.mark.parametrize(("reference", "actual", "exp5", "exp6"), [
    ({"name": "sparql_query", "output_media_type": SPARQL}, {"name": "sparql_query"}, "SPARQL results", "SPARQL results"),
    ({"name": "sparql", "output_media_type": SPARQL}, {"name": "sparql"}, "SPARQL results", "exact output"),
    ({"name": "get", "output_media_type": "application/json"}, {"name": "read"}, "JSON output", "exact output"),
    ({"name": "retrieval", "output": "[]", "output_media_type": "application/json"}, {"name": "retrieval"},
     "JSON output", "retrieval"),
    ({"name": "retrieval", "output": ""}, {"name": "retrieval"}, "retrieval", "exact output"),
    ({"name": "retrieve_data_points"}, {"name": "retrieve_data_points"}, "exact output", "retrieve_data_points"),
    ({"name": "retrieve_time_series"}, {"name": "retrieve_time_series"}, "exact output", "retrieve_time_series"),
    ({"name": "iri_discovery"}, {"name": "autocomplete_search"}, "exact output", "iri_discovery"),
])
def test_which_kind_compares_a_pair_follows_each_versions_name_rules(reference, actual, exp5, exp6):
    assert step_kind_for(reference, actual, semantics=5).name == exp5
    assert step_kind_for(reference, actual, semantics=6).name == exp6


# --- 6.x matching: every group --------------------------------------------------------------------


A, B, C = ({"name": name, "output": name.upper()} for name in ("lookup", "search", "answer"))


def test_every_group_is_scored_and_the_score_is_the_mean_over_groups():
    steps = [call("lookup", "LOOKUP", "c1"), call("search", "SEARCH", "c2"), call("answer", "ANSWER", "c3")]
    assert score6([[A], [B], [C]], steps) == 1.0
    assert score6([[A], [B, C]], steps[1:]) == pytest.approx((0 + 1) / 2)


def test_matching_stops_at_the_first_group_not_matched_in_full():
    steps = [call("lookup", "LOOKUP", "c1"), call("search", "wrong", "c2"), call("answer", "ANSWER", "c3")]
    outcome = evaluate_steps([[A], [B], [C]], steps, semantics=6)
    assert outcome.score == pytest.approx(1 / 3)
    assert [(m.group_index, m.actual_id) for m in outcome.matches] == [(2, "c3")]  # lookup is never tried


def test_an_earlier_group_is_matched_only_by_calls_before_the_later_groups_match():
    steps = [call("search", "SEARCH", "c1"), call("lookup", "LOOKUP", "c2")]
    assert score6([[A], [B]], steps) == pytest.approx(0.5)


def test_calls_of_any_name_are_candidates_under_6x():
    assert score6([[{"name": "now", "output": "noon"}]], [call("clock", "noon", "c1")]) == 1.0
    assert evaluate_steps([[{"name": "now", "output": "noon"}]], [call("clock", "noon", "c1")]).score == 0.0


def test_a_step_shared_between_groups_by_a_yaml_anchor_shows_its_last_match_in_both_places():
    reference = yaml.safe_load("""
- - &step {name: now, output: noon}
- - *step
""")
    steps = [call("now", "noon", "early"), call("now", "noon", "late")]
    annotated = annotate_reference_steps(reference, evaluate_steps(reference, steps, semantics=6), steps)
    assert annotated[0][0] is annotated[1][0]
    assert annotated[1][0]["matches"] == "early"  # group 1 is written last, as graphrag-eval writes it
    assert "matches" not in reference[0][0]


@pytest.mark.parametrize(("response", "exp"), [
    ({"error": "stopped", "actual_steps": [call("now", "noon", "c1")]}, 1.0),
    ({"error": "stopped"}, 0.0),
    ({"actual_answer": "hi"}, 0.0),
])
def test_error_responses_and_responses_without_steps_are_scored_under_6x(response, exp):
    question = {"id": "q", "question_text": "?", "reference_steps": [[{"name": "now", "output": "noon"}]]}
    result = evaluate_question(template_id="t", question=question, response={"question_id": "q", **response},
                               semantics=6)
    assert result["steps_score"] == exp
    five = evaluate_question(template_id="t", question=question, response={"question_id": "q", **response})
    assert "steps_score" not in five


# --- the new kinds ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("start", "exp"), [
    ("2025-02-26T12:00:00Z", 1.0),
    ("2025-02-26T12:01:00+00:00", 1.0),  # 60 s: within the tolerance
    ("2025-02-26T12:01:01Z", 0.0),  # 61 s: a near miss outside it
    ("2025-02-26T11:59:00Z", 1.0),
    ("2025-02-26T13:00:30+01:00", 1.0),  # the same instant in another zone
    ("2025-02-26T12:00:00", 1.0),  # no zone: UTC
    ("72h-ago", 1.0),  # relative against relative: the same instant
    ("3d-ahead", 0.0),
])
def test_a_relative_reference_time_is_resolved_against_the_execution_timestamp(start, exp):
    assert score6(POINTS, [points_call(start=start)]) == exp


def test_relative_times_follow_the_calls_execution_timestamp_not_the_clock():
    late = points_call(stamp="2030-01-01T00:00:00Z", start="2029-12-29T00:00:00Z")
    assert score6(POINTS, [late]) == 1.0


def test_a_yaml_timestamp_is_read_like_its_iso_text():
    stamp = datetime(2025, 3, 1, 12, tzinfo=UTC)
    assert score6(POINTS, [points_call(stamp=stamp, start="2025-02-26T12:00:30Z")]) == 1.0


def test_an_absolute_reference_time_needs_the_same_absolute_time():
    reference = [[{"name": "retrieve_data_points", "args": points(start="2025-02-26T12:00:00Z"), "output": "p"}]]
    assert score6(reference, [points_call(start="3d-ago")]) == 0.0
    assert score6(reference, [points_call(start="2025-02-26T12:00:30Z")]) == 0.0
    assert score6(reference, [points_call(start="2025-02-26T12:00:00Z")]) == 1.0


@pytest.mark.parametrize(("spelling", "exp"), [
    ("1h", "1hours"), ("1hour", "1hours"), ("1hours", "1hours"), ("1H", "1hours"), ("60m", "60minutes"),
    ("1mo", "1months"), ("15min", "15min"), ("01h", "01hours"), ("hourly", "hourly"), (None, None), ("", ""),
])
def test_granularity_spellings(spelling, exp):
    assert normalized_granularity(spelling, pair=None) == exp


@pytest.mark.parametrize(("granularity", "exp"), [("1hours", 1.0), ("1hour", 1.0), ("60m", 0.0), ("2h", 0.0)])
def test_an_equivalent_granularity_spelling_matches(granularity, exp):
    assert score6(POINTS, [points_call(start="2025-02-26T12:00:00Z", granularity=granularity)]) == exp


@pytest.mark.parametrize(("reference", "actual", "exp"), [
    ({"mrid": "m1"}, {"mrid": ["m1"]}, 1.0),
    ({"mrid": ["m1", "m2"]}, {"mrid": ["m2", "m1"]}, 1.0),
    ({"mrid": "m1", "limit": 10}, {"mrid": "m1", "limit": 20}, 0.0),
    ({"mrid": "m1"}, {"mrid": "m1", "limit": 20}, 1.0),  # no reference limit: any limit
    ({"limit": 10}, {"limit": 10}, 1.0),
    ({"limit": 10}, {"mrid": "m1", "limit": 10}, 0.0),  # no reference mrid: none asked for
])
def test_time_series_lookups_compare_their_arguments(reference, actual, exp):
    reference_groups = [[{"name": "retrieve_time_series", "args": reference, "output": "s"}]]
    assert score6(reference_groups, [call("retrieve_time_series", "data", "c1", args=actual)]) == exp


IRI = "urn:x:1"
IRI_STEP = [[{"name": "iri_discovery", "output": IRI}]]


@pytest.mark.parametrize(("actual", "exp"), [
    (call("autocomplete_search", table(["s"], (IRI,), types={"s": "uri"}), "c1"), 1.0),
    (call("autocomplete_search", table(["s"], (IRI,)), "c1"), 0.0),  # in a literal binding: the wrong one
    (call("autocomplete_search", table(["s"], ("urn:x:2",), types={"s": "uri"}), "c1"), 0.0),
    (call("sparql_query", f"SELECT * WHERE {{ BIND(<{IRI}> AS ?s) }}", "c1"), 1.0),  # anywhere in its output
    (call("sparql_query", "urn:x:10", "c1"), 1.0),  # as 6.6 looks: a substring
    (call("lookup", IRI, "c1"), 0.0),  # another tool cannot discover it
])
def test_where_an_iri_may_be_found(actual, exp):
    assert score6(IRI_STEP, [actual]) == exp


@pytest.mark.parametrize(("actual", "fragment"), [
    (call("retrieve_data_points", "data", "c1", args=points()), "has no 'execution_timestamp'"),
    (points_call(stamp="yesterday"), "give an ISO 8601 time"),
    (call("retrieve_data_points", "data", "c1", args={"granularity": "1h"}, execution_timestamp=STAMP),
     "has no 'external_id'"),
    (call("autocomplete_search", "not json", "c1"), "not a SPARQL JSON result"),
])
def test_new_kinds_name_what_a_step_lacks_where_graphrag_eval_6_stops(actual, fragment):
    reference = IRI_STEP if actual["name"] == "autocomplete_search" else POINTS
    outcome = evaluate_steps(reference, [actual], question_id="q", semantics=6)
    assert outcome.score is None and fragment in outcome.error


# --- 5.x: inputs graphrag-eval 5.2 reads otherwise, or stops on ---------------------------------------


def test_required_columns_as_a_string_is_one_column():
    reference = [[{"name": "sparql_query", "output": table(["a"], ("1",)), "output_media_type": SPARQL,
                   "required_columns": "a"}]]
    outcome = evaluate_steps(reference, [call("sparql_query", table(["a"], ("1",)), "c1")])
    assert outcome.score == 1.0 and outcome.notes == ()  # as graphrag-eval: one letter reads the same
    long = [[{**reference[0][0], "output": table(["name"], ("1",)), "required_columns": "name"}]]
    outcome = evaluate_steps(long, [call("sparql_query", table(["name"], ("1",)), "c1")])
    assert outcome.score == 1.0
    assert "'required_columns' is the string 'name', read as that one name" in outcome.notes[0]


def test_head_vars_as_a_string_is_one_variable():
    reference = [[{"name": "sparql_query", "output": table(["ab"], ("1",)), "output_media_type": SPARQL,
                   "required_columns": ["ab"]}]]
    actual = json.dumps({"head": {"vars": "ab"}, "results": {"bindings": [{"ab": {"type": "literal", "value": "1"}}]}})
    outcome = evaluate_steps(reference, [call("sparql_query", actual, "c1")])
    assert outcome.score == 1.0 and "the actual 'head.vars' is the string 'ab'" in outcome.notes[0]


@pytest.mark.parametrize(("actual_steps", "fragment"), [
    ([call("sparql_query", table(["a"], ("INF",)).replace('"literal"', '"literal", "datatype": '
                                                          '"http://www.w3.org/2001/XMLSchema#double"'), "c1")],
     "infinite xsd number (INF), on which graphrag-eval stops"),
    ([call("retrieval", None, "r1", status="error", error="boom"), call("sparql_query", table(["a"], ("1",)), "c1")],
     "a retrieval call without output (status 'error'), on which graphrag-eval 5.2 stops"),
    ([call("sparql_query", json.dumps({"boolean": True}), "c1")],
     "an ASK answer without a 'head' object, on which graphrag-eval stops"),
])
def test_inputs_graphrag_eval_stops_on_are_scored_with_a_note(actual_steps, fragment):
    reference = [[{"name": "sparql_query", "output": table(["a"], ("1",)), "output_media_type": SPARQL,
                   "required_columns": ["a"]}]]
    question = {"id": "q", "question_text": "?", "reference_steps": reference}
    result = evaluate_question(template_id="t", question=question,
                               response={"question_id": "q", "actual_steps": actual_steps})
    assert isinstance(result["steps_score"], float)
    assert fragment in result["steps_note"]


def test_matches_can_be_written_into_the_callers_dataset_as_graphrag_eval_does():
    dataset = [{"template_id": "t", "questions": [{"id": "q", "question_text": "?",
                                                   "reference_steps": [[{"name": "now", "output": "noon"}]]}]}]
    responses = {"q": {"question_id": "q", "actual_steps": [call("now", "noon", "c1")]}}
    run_evaluation(dataset, responses)
    assert "matches" not in dataset[0]["questions"][0]["reference_steps"][0][0]
    run_evaluation(dataset, responses, write_matches=True)
    assert dataset[0]["questions"][0]["reference_steps"][0][0]["matches"] == "c1"
    import qareport

    dataset[0]["questions"][0]["reference_steps"][0][0].pop("matches")
    qareport.run_evaluation(dataset, responses, judge=None, write_matches=True)
    assert dataset[0]["questions"][0]["reference_steps"][0][0]["matches"] == "c1"


# --- why a step lost points ---------------------------------------------------------------------------


def turn_of(reference_groups, actual_steps, *, semantics=5):
    question = {"id": "q", "question_text": "?", "reference_steps": reference_groups}
    from qareport.qa import evaluate_question_outcome

    result, outcome = evaluate_question_outcome(template_id="t", question=question,
                                                response={"question_id": "q", "actual_steps": actual_steps},
                                                semantics=semantics)
    from qareport.question_scores import QuestionScores

    return TurnResult(1, "?", scores={"qa": QuestionScores.from_graphrag_eval(result),
                                      **({"reference_steps": outcome} if outcome else {})})


def case_of(turn):
    case = TestCase("q", "qa", "?", ("t",), (Turn(1, "?", Target()),), Location("qa.yaml", 1))
    return CaseResult(case, "success", turns=(turn,))


SPARQL_STEP = {"name": "sparql_query", "output": table(["s", "name"], *[(f"u{i}", f"n{i}") for i in range(5)]),
               "output_media_type": SPARQL, "required_columns": ["s", "name"]}


@pytest.mark.parametrize(("groups", "calls", "exp"), [
    ([[SPARQL_STEP]], [call("now", "x", "c1")], "sparql_query not called"),
    ([[SPARQL_STEP]], [call("sparql_query", None, "c1", status="error", error="429 Too Many Requests")],
     "sparql_query failed: 429 Too Many Requests"),
    ([[SPARQL_STEP]], [call("sparql_query", table(["s", "name"], *[(f"u{i}", f"n{i}") for i in range(3)],
                                                    ("u9", "n9")), "c1")],
     "sparql_query returned other rows (3 of 5 required rows)"),
    ([[SPARQL_STEP]], [call("sparql_query", table(["s", "label"], *[(f"u{i}", f"x{i}") for i in range(5)]), "c1")],
     "sparql_query result lacks required column ?name"),
    ([[{"name": "retrieval", "output": json.dumps([{"id": "doc-16"}, {"id": "doc-17"}])}]],
     [call("retrieval", json.dumps([{"id": "doc-16"}, {"id": "x"}]), "r1", args={"k": 2})],
     "retrieval recall@2 0.50: missed doc-17"),
])
def test_the_reason_names_the_failure_category(groups, calls, exp):
    assert explain_turn(turn_of(groups, calls)) == exp


def test_the_new_kinds_say_what_differs():
    granularity = turn_of(POINTS, [points_call(start="2025-02-26T12:00:00Z", granularity="2h")], semantics=6)
    assert explain_turn(granularity) == "retrieve_data_points: granularity 2h, expected 1h"
    near_miss = turn_of(POINTS, [points_call(start="2025-02-26T12:01:01Z")], semantics=6)
    assert explain_turn(near_miss) == (
        "retrieve_data_points: start 2025-02-26T12:01:01Z, expected 3d-ago (= 2025-02-26T12:00:00+00:00, ±60 s)")
    literal = turn_of(IRI_STEP, [call("autocomplete_search", table(["s"], ("urn:x:2",), types={"s": "uri"}), "c1")],
                      semantics=6)
    assert explain_turn(literal) == "iri_discovery: IRI not found in any autocomplete_search binding"


def test_a_6x_reason_names_the_group_and_the_steps_never_tried():
    turn = turn_of([[A], [B], [C]], [call("lookup", "LOOKUP", "c1"), call("answer", "ANSWER", "c3")], semantics=6)
    assert explain_turn(turn) == "group 2: search not called"
    verdicts = step_verdicts(turn.qa.reference_steps, turn.qa.actual_steps, turn.scores["reference_steps"])
    assert [(v.group_number, v.name, v.scored) for v in verdicts] == [
        (1, "lookup", False), (2, "search", True), (3, "answer", True)]
    assert verdicts[0].reason == "not scored: group 2 was not matched in full"


def test_a_call_made_too_late_for_its_group_says_so():
    turn = turn_of([[A], [B]], [call("search", "SEARCH", "c1"), call("lookup", "LOOKUP", "c2")], semantics=6)
    assert explain_turn(turn) == "group 1: lookup called only after the steps of group 2"


def test_the_details_cell_shows_each_match_with_its_score_and_each_miss_with_its_reason():
    turn = turn_of(
        [[{"name": "retrieval", "output": json.dumps([{"id": "doc-16"}, {"id": "doc-17"}])}, SPARQL_STEP]],
        [call("retrieval", json.dumps([{"id": "doc-16"}]), "r1", args={"k": 2})])
    assert render_steps_details(case_of(turn)) == (
        "last reference group [2], steps score 0.25\n"
        "  ◐ retrieval matched by r1 (0.50): recall@2 0.50: missed doc-17\n"
        "  ✗ sparql_query: not called\n"
        "    required 5 rows (s, name): u0 | n0; u1 | n1; u2 | n2; …\n"  # what the SPARQL step had to return
        "actual calls [1], failed [0]"
    )


def test_the_details_cell_of_a_6x_question_shows_every_group():
    turn = turn_of([[A], [B], [C]], [call("lookup", "LOOKUP", "c1"), call("answer", "ANSWER", "c3")], semantics=6)
    assert render_steps_details(case_of(turn)) == (
        "reference groups [3], steps score 0.33 (graphrag-eval 6.x: every group)\n"
        "  – group 1 lookup: not scored: group 2 was not matched in full\n"
        "  ✗ group 2 search: not called\n"
        "  ✓ group 3 answer matched by c3 (1.00)\n"
        "actual calls [2], failed [0]"
    )


def test_a_case_reason_comes_from_the_kind():
    turn = turn_of([[SPARQL_STEP]], [])
    assert STEPS.explain(case_of(turn)) == "sparql_query not called"


def test_the_outcome_keeps_the_matches_of_every_group():
    outcome = evaluate_steps([[A], [B]], [call("lookup", "LOOKUP", "c1"), call("search", "SEARCH", "c2")], semantics=6)
    assert outcome.matches == (StepMatch(0, 1, "c2", 1.0, group_index=1), StepMatch(0, 0, "c1", 1.0, group_index=0))
    assert outcome.semantics == 6


def test_a_pair_knows_its_labels():
    pair = StepPair({"name": "now"}, {"name": "now", "id": "c1"}, 0, 2, "of group 2", 6)
    assert (pair.reference_label, pair.actual_label) == ("reference step 1 of group 2 ('now')",
                                                         "actual step 3 ('now', id 'c1')")
