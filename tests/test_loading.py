"""Loading test cases and responses: every shape SPEC.md section 1 allows, and every way to get it wrong."""

import json
import textwrap

import pytest

from qareport.kinds.qa_turn import answer_of, reference_answer_of
from qareport.kinds.selection_parts import target_selection
from qareport.loading import load_suite

CASE = """\
id: {id}
name: population_of_mexico
tags: [imf, weo]
conversation:
- role: user
  content: Could you give me the population numbers for Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.RES:WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: LP
          name: Population
"""


def write(path, text):
    path.write_text(textwrap.dedent(text) if isinstance(text, str) else text, encoding="utf-8")
    return path


def response_line(case_id, **extra):
    record = {"test_case_id": case_id, "indicator_selection": [
        {"dataset_id": "IMF.RES:WEO", "dimensions": [{"dimension_name": "INDICATOR", "values": [{"id": "LP", "name": "Population"}]}]}
    ], **extra}
    return json.dumps(record)


def messages(suite):
    return [str(p) for p in suite.problems]


def test_a_file_may_hold_one_case_a_list_or_several_documents(tmp_path):
    write(tmp_path / "one.yaml", CASE.format(id="a"))
    write(tmp_path / "list.yml", "- " + CASE.format(id="b").replace("\n", "\n  ").rstrip() + "\n- " + CASE.format(id="c").replace("\n", "\n  "))
    write(tmp_path / "docs.yaml", CASE.format(id="d") + "---\n" + CASE.format(id="e"))
    suite = load_suite([tmp_path], [])
    assert sorted(c.id for c in suite.cases) == ["a", "b", "c", "d", "e"]
    case = next(c for c in suite.cases if c.id == "a")
    assert case.groups == ("imf", "weo") and target_selection(case.turns[0].target)[0].dimensions[0].values[0].id == "LP"


def test_directories_are_searched_recursively_in_sorted_order(tmp_path):
    write((tmp_path / "b").mkdir() or tmp_path / "b" / "x.yaml", CASE.format(id="from_b"))
    write((tmp_path / "a").mkdir() or tmp_path / "a" / "y.yaml", CASE.format(id="from_a"))
    write(tmp_path / "notes.txt", "not a test case")
    assert [c.id for c in load_suite([tmp_path], []).cases] == ["from_a", "from_b"]


def test_responses_as_json_list_mapping_json_lines_and_yaml(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    for case_id in "abcd":
        write(cases / f"{case_id}.yaml", CASE.format(id=case_id))
    responses = tmp_path / "responses"
    responses.mkdir()
    write(responses / "list.json", "[" + response_line("a") + "]")
    write(responses / "map.json", json.dumps({"b": json.loads(response_line("b"))}))
    write(responses / "lines.jsonl", response_line("c") + "\n")
    write(responses / "r.yaml", "- id: d\n  indicator_selection: []\n")
    suite = load_suite([cases], [responses])
    assert sorted(suite.responses) == ["a", "b", "c", "d"]
    assert suite.problems == ()


def test_multi_turn_responses_use_turns_and_error_responses_keep_their_message(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a") + "---\n" + CASE.format(id="b"))
    write(tmp_path / "r.jsonl", json.dumps({"id": "a", "turns": [{"indicator_selection": []}, {"actual_answer": "x"}]})
          + "\n" + json.dumps({"id": "b", "status": "error", "error": "timeout"}) + "\n")
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    assert len(suite.responses["a"].turns) == 2 and answer_of(suite.responses["a"].turns[1]) == "x"
    assert suite.responses["b"].status == "error" and suite.responses["b"].error == "timeout"


def test_qa_templates_become_single_turn_cases_grouped_by_template(tmp_path):
    write(tmp_path / "qa.yaml", """\
        - template_id: list_transformers
          questions:
          - id: q1
            question_text: List all transformers within Substation OSLO
            reference_answer: OSLO T1, OSLO T2
        """)
    (case,) = load_suite([tmp_path], []).cases
    assert (case.id, case.kind, case.groups, case.name) == ("q1", "qa", ("list_transformers",), "List all transformers within Substation OSLO")
    assert reference_answer_of(case.turns[0].target) == "OSLO T1, OSLO T2"


@pytest.mark.parametrize(
    "text, exp_line, exp_message",
    [
        ("id: a\nconversation: [\n", 3, "invalid YAML"),
        (CASE.format(id="a").replace("        - id: LP\n          name: Population\n", "          LP\n"), 12,
         "'values' must be a list of {id, name} (got str 'LP')"),
        (CASE.format(id="a").replace("id: a\n", ""), 1, "test case has no 'id'"),
        ("name: x\n", 1, "needs 'conversation'"),
        ("", None, "the file is empty"),
    ],
)
def test_a_bad_test_case_file_is_reported_with_its_line_and_the_rest_still_loads(tmp_path, text, exp_line, exp_message):
    write(tmp_path / "bad.yaml", text)
    write(tmp_path / "good.yaml", CASE.format(id="good"))
    suite = load_suite([tmp_path], [])
    assert "good" in [c.id for c in suite.cases]
    (problem,) = [p for p in suite.problems if p.location.path.endswith("bad.yaml")]
    assert exp_message in problem.message
    assert problem.location.line == exp_line


def test_a_non_utf8_file_is_reported_not_decoded_into_garbage(tmp_path):
    (tmp_path / "latin1.yaml").write_bytes(CASE.format(id="a").replace("Mexico", "M\xe9xico").encode("latin-1"))
    (problem,) = load_suite([tmp_path], []).problems
    assert "not UTF-8" in problem.message and problem.location.line == 6


def test_duplicate_case_ids_keep_the_first_and_report_the_second(tmp_path):
    write(tmp_path / "a.yaml", CASE.format(id="same"))
    write(tmp_path / "b.yaml", CASE.format(id="same"))
    suite = load_suite([tmp_path], [])
    assert [c.location.path for c in suite.cases] == [str(tmp_path / "a.yaml")]
    (problem,) = [p for p in suite.problems if "duplicate" in p.message]
    assert "duplicate test case id 'same'" in problem.message and str(tmp_path / "a.yaml") in problem.message


def test_a_case_with_a_malformed_target_still_gets_an_invalid_row(tmp_path):
    write(tmp_path / "a.yaml", CASE.format(id="broken").replace("        - id: LP\n          name: Population\n", "          LP\n"))
    suite = load_suite([tmp_path], [])
    (case,) = suite.cases
    assert case.id == "broken" and case.turns == () and "'values' must be a list" in case.comments


def test_unknown_response_ids_and_missing_responses_are_both_reported(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a") + "---\n" + CASE.format(id="b"))
    write(tmp_path / "r.jsonl", response_line("a") + "\n" + response_line("zzz") + "\n")
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    found = messages(suite)
    assert any("r.jsonl:2: response for unknown case id 'zzz'" in m for m in found)
    assert any("case 'b' has no response" in m for m in found)
    assert "zzz" not in suite.responses


@pytest.mark.parametrize(
    "name, content, exp_line, exp_message",
    [
        ("r.json", '[{"id": "a",\n "indicator_selection": [}]', 2, "invalid JSON"),
        ("r.jsonl", response_line("a") + "\n{not json\n", 2, "invalid JSON on this line"),
        ("r.jsonl", json.dumps({"indicator_selection": []}) + "\n", 1, "names no case"),
        ("r.json", json.dumps([{"id": "a", "indicator_selection": [{"dataset_id": "W", "dimensions": [{"dimension_name": "I", "values": "LP"}]}]}]), 1,
         "'values' must be a list"),
    ],
)
def test_a_bad_responses_file_is_reported_with_its_line(tmp_path, name, content, exp_line, exp_message):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / name, content)
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / name])
    problem = next(p for p in suite.problems if p.location.path.endswith(name))
    assert exp_message in problem.message and problem.location.line == exp_line


def test_a_second_response_for_the_same_case_is_reported_and_ignored(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", response_line("a", actual_answer="first") + "\n" + response_line("a", actual_answer="second") + "\n")
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    assert answer_of(suite.responses["a"].turns[0]) == "first"
    assert "a second response for 'a'" in suite.problems[0].message


def test_a_path_that_does_not_exist_is_a_problem_not_a_crash(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    suite = load_suite([tmp_path / "c.yaml", tmp_path / "nope"], [tmp_path / "missing.json"])
    assert [c.id for c in suite.cases] == ["a"]
    assert sum("no such file or directory" in m for m in messages(suite)) == 2


def test_inputs_are_summarised_with_counts_and_hashes(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", response_line("a") + "\n")
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    cases_input, responses_input = suite.inputs
    assert (cases_input.role, cases_input.records, responses_input.records) == ("testcases", 1, 1)
    assert len(cases_input.sha256) == 64


@pytest.mark.parametrize("keys", [["1: x", "b: y"], ["2024-01-02: x"]])
def test_a_target_with_keys_json_cannot_sort_is_loaded_not_a_crash(tmp_path, keys):
    extra = "".join(f"    {key}\n" for key in keys)
    write(tmp_path / "c.yaml", CASE.format(id="a").replace("    indicator_selection:\n", extra + "    indicator_selection:\n"))
    suite = load_suite([tmp_path / "c.yaml"], [])
    assert [c.id for c in suite.cases] == ["a"] and len(suite.cases[0].definition_hash) == 16


def test_a_response_key_an_older_graphrag_eval_named_gets_the_advice_to_rename_it(tmp_path):
    (tmp_path / "qa.yaml").write_text(textwrap.dedent("""\
        - template_id: t
          questions:
          - id: q1
            question_text: Which?
            reference_steps: [[{name: sparql_query, args: {query: q}, output: o}]]
    """), encoding="utf-8")
    (tmp_path / "r.jsonl").write_text(json.dumps({"question_id": "q1", "steps": []}) + "\n", encoding="utf-8")
    suite = load_suite([tmp_path / "qa.yaml"], [tmp_path / "r.jsonl"])
    (problem,) = [p for p in suite.problems if "'steps'" in p.message]
    assert problem.message.endswith("graphrag-eval 4.0 called the tool calls 'steps'; rename the key to 'actual_steps'")
