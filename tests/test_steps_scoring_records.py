"""What `qa.run_evaluation` makes for each question, and no more: the result dicts are those the
report's evaluation gets with its `StepsOutcome`, without making the outcome, the failed-call list
or a new verdict object for every SPARQL pair (the per-question records graphrag-eval does not
make, which kept qareport slower on the common question's shape)."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from qareport import qa
from qareport.kinds.steps import matching, parsed_outputs, registry, retrieval, step_shapes, tables
from qareport.kinds.steps.parsed_outputs import question_scope
from qareport.kinds.steps.step_kind import StepsError

sys.path.insert(0, str(REPO / "benchmarks"))
import ge6_suite
import synthetic_suite


def _questions(widths_or_ge6, seed=3):
    if widths_or_ge6 == "ge6":
        reference_qas, responses = ge6_suite.generate_ge6_suite(120, seed)
    else:
        reference_qas, records = synthetic_suite.generate_suite(120, seed, widths=widths_or_ge6)
        responses = {record["question_id"]: record for record in records}
    for template in reference_qas:
        for question in template["questions"]:
            yield template["template_id"], question, responses.get(question["id"])


@pytest.mark.parametrize("semantics", [5, 6])
@pytest.mark.parametrize("suite", ["ordinary", "seed", "ge6"])
def test_a_result_dict_is_the_one_the_evaluation_with_its_steps_outcome_gets(suite, semantics):
    for template_id, question, response in _questions(suite):
        alone = qa.evaluate_question(template_id=template_id, question=question, response=response,
                                     semantics=semantics)
        result, outcome = qa.evaluate_question_outcome(template_id=template_id, question=question,
                                                       response=response, semantics=semantics)
        assert alone == result
        if outcome is not None:
            assert outcome == matching.evaluate_steps(question["reference_steps"], response.get("actual_steps", []),
                                                      question_id=question["id"], semantics=semantics)


@pytest.mark.parametrize("semantics", [5, 6])
def test_run_evaluation_makes_no_steps_outcome_and_looks_for_no_failed_calls(monkeypatch, semantics):
    reference_qas, records = synthetic_suite.generate_suite(60, 5, widths="ordinary")
    expected = qa.run_evaluation(reference_qas, records, semantics=semantics)
    assert any(step.get("status") == "error" for record in records for step in record.get("actual_steps") or [])

    def refused(*_, **__):
        raise AssertionError("made for a result dict")

    monkeypatch.setattr(step_shapes, "failed_calls", refused)
    monkeypatch.setattr(matching, "StepsOutcome", refused)
    assert qa.run_evaluation(reference_qas, records, semantics=semantics) == expected


def test_a_steps_fault_reads_the_same_in_the_result_dict_and_the_outcome():
    question = {"id": "q1", "question_text": "?", "reference_steps": [[{"name": "sparql_query"}]]}
    response = {"question_id": "q1", "actual_steps": [
        {"name": "sparql_query", "id": "c1", "status": "success"},  # no output: 5.x stops on it
        {"name": "sparql_query", "id": "c2", "status": "error", "error": "timeout"},
    ]}
    result, outcome = qa.evaluate_question_outcome(template_id="t", question=question, response=response)
    assert outcome is not None and outcome.error is not None
    assert result["steps_error"] == outcome.error == f"question 'q1': {outcome.fault}"
    assert outcome.fault_in_reference  # the reference step has no output
    assert [call.id for call in outcome.failed_calls] == ["c2"]


def test_a_common_sparql_verdict_is_one_shared_object():
    reference = {"head": {"vars": ["a"]}, "results": {"bindings": [{"a": {"type": "uri", "value": "x"}}]}}
    same = {"head": {"vars": ["b", "a"]}, "results": {"bindings": [{"a": {"type": "uri", "value": "x"},
                                                                      "b": {"type": "literal", "value": "y"}}]}}
    other = {"head": {"vars": ["a"]}, "results": {"bindings": [{"a": {"type": "uri", "value": "z"}}]}}
    assert tables.compare_tables(reference, same, ["a"]) is tables.MATCHED
    assert tables.compare_tables(reference, other, ["a"]) is tables.UNMATCHED
    assert tables.compare_tables(reference, other, ["a"], explain=True).reason  # asked why: its own verdict


def test_an_output_text_is_parsed_once_in_a_scope_whatever_it_holds(monkeypatch):
    parsed = []
    loads = parsed_outputs._loads_text
    monkeypatch.setattr(parsed_outputs, "_loads_text", lambda text: parsed.append(text) or loads(text))
    with question_scope():
        for _ in range(3):
            assert parsed_outputs.parsed_json("null") is None
            assert parsed_outputs.parsed_json('{"a": 1}') == {"a": 1}
    assert parsed == ["null", '{"a": 1}']


_documents = st.lists(st.one_of(st.fixed_dictionaries({"id": st.integers(0, 3)}), st.just({}), st.just("doc"),
                                 st.just(["id"])), max_size=4)


@settings(max_examples=200, deadline=None)
@given(documents=_documents | st.just({}) | st.just({"id": 1}) | st.just("") | st.just("ab") | st.just(3))
def test_the_ids_read_in_one_loop_are_those_every_document_check_gives(documents):
    def checked_then_read(documents):
        if isinstance(documents, (list, dict, str)) and all(isinstance(d, dict) and "id" in d for d in documents):
            return [d["id"] for d in documents]
        return StepsError

    try:
        found = retrieval.context_ids(json.dumps(documents), "actual step 1", "actual")
    except StepsError:
        found = StepsError
    assert found == checked_then_read(documents)


@pytest.mark.parametrize("semantics", [5, 6])
def test_the_kinds_kept_for_a_reference_step_are_those_asked_for_each_pair(semantics):
    registry._CHOSEN.clear()
    for _, question, response in _questions("ge6", seed=8):
        for group in question.get("reference_steps") or []:
            for reference in group:
                for actual in (response or {}).get("actual_steps") or []:
                    asked = registry.ask_step_kinds(reference, actual, semantics=semantics)
                    assert registry.step_kind_for(reference, actual, semantics=semantics) is asked
                    kept = registry.chosen_kinds(reference, semantics=semantics)
                    assert kept[actual["name"]] is asked
