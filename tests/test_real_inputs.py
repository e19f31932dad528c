"""graphrag-eval's and statgpt's real data handled right (issue 18, items 3 to 8): structured answers,
the results file's per-question records, RAGAS's arithmetic, steps problems that say where and what
to do, `validate` refusing what `run` refuses, and inputs that used to pass in silence.

Inputs are small and made here, shaped as the published runs and ground-truth files are.
"""

from __future__ import annotations

import json

import pytest

from qareport import qa
from qareport.retrieval_context import ragas_average_precision, with_context_scores

# --- RAGAS's 1e-10 (item 5) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "verdicts, exp",
    [
        ([True], 1 / (1 + 1e-10)),
        ([True, True], 2 / (2 + 1e-10)),
        ([False, True], 0.5 / (1 + 1e-10)),
        ([True, False, True, True, False], (1 + 2 / 3 + 3 / 4) / (3 + 1e-10)),
        ([], 0.0),
        ([False, False], 0.0),
    ],
)
def test_context_precision_divides_by_relevant_plus_ragas_epsilon(verdicts, exp):
    assert ragas_average_precision(verdicts) == exp


def _retrieval_result(actual_texts, reference_texts):
    actual = json.dumps([{"id": str(n), "text": text} for n, text in enumerate(actual_texts)])
    reference = json.dumps([{"id": str(n), "text": text} for n, text in enumerate(reference_texts)])
    return qa.evaluate_question(
        template_id="t",
        question={"id": "q1", "question_text": "Which transformers are in Oslo?",
                  "reference_steps": [[{"name": "retrieval", "args": {"k": 5}, "output": reference}]]},
        response={"question_id": "q1", "actual_answer": "T1 and T2",
                  "actual_steps": [{"name": "retrieval", "id": "call_1", "status": "success", "args": {"k": 5},
                                    "output": actual}]},
    )


def test_a_perfect_retrieval_context_scores_as_graphrag_eval_5_2_scores_it():
    texts = ["Transformer OSLO T1 is in Substation Oslo.", "Transformer OSLO T2 is in Substation Oslo."]
    step = with_context_scores(_retrieval_result(texts, texts))["actual_steps"][0]
    # the numbers graphrag-eval 5.2.0 wrote into the published runs
    assert step["retrieval_context_recall"] == 1.0
    assert step["retrieval_context_precision"] == 0.99999999995
    assert step["retrieval_context_f1"] == 2 * (1.0 * 0.99999999995) / (1.0 + 0.99999999995)


# --- structured answers (item 3) ---------------------------------------------------------------------

import yaml  # noqa: E402
from openai_stub import serve_stub  # noqa: E402
from openpyxl import load_workbook  # noqa: E402

from qareport.cli import main  # noqa: E402
from qareport.question_scores import answer_text  # noqa: E402

CONTENT_PARTS = [{"type": "text", "text": "Substation Oslo has two transformers."},
                 {"type": "text", "text": "They are T1 and T2."}]
SPARQL_OUTPUT = json.dumps({"head": {"vars": ["t"]}, "results": {"bindings": [{"t": {"type": "uri", "value": "urn:T1"}}]}})


def write_qa_inputs(folder, responses, *, reference_steps=None):
    """A graphrag-eval reference dataset of one template and the given response records."""
    question = {"id": "q1", "question_text": "Which transformers are in Substation Oslo?",
                "reference_answer": "T1 and T2."}
    if reference_steps is not None:
        question["reference_steps"] = reference_steps
    dataset = folder / "dataset.yaml"
    dataset.write_text(yaml.safe_dump([{"template_id": "transformers", "questions": [question]}], sort_keys=False),
                       encoding="utf-8")
    answers = folder / "responses.json"
    answers.write_text(json.dumps(responses, indent=1), encoding="utf-8")
    return dataset, answers


def overview_rows(path):
    ws = load_workbook(path)["Overview"]
    headers = [c.value for c in ws[1]]
    return {row[0]: dict(zip(headers, row)) for row in ws.iter_rows(min_row=2, values_only=True)}


@pytest.mark.parametrize(
    "value, exp",
    [
        (CONTENT_PARTS, "Substation Oslo has two transformers.\n\nThey are T1 and T2."),
        ({"type": "text", "text": "T1"}, "T1"),
        ([{"type": "image_url", "image_url": {"url": "x.png"}}], '[{"type": "image_url", "image_url": {"url": "x.png"}}]'),
        ("plain", "plain"),
        (None, None),
    ],
)
def test_answer_text_joins_text_parts_and_never_writes_repr(value, exp):
    assert answer_text(value) == exp


def test_a_content_part_answer_is_json_data_in_the_results_file_and_text_in_the_workbook(tmp_path):
    dataset, answers = write_qa_inputs(tmp_path, [
        {"question_id": "q1", "actual_answer": CONTENT_PARTS, "actual_steps": [],
         "input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "elapsed_sec": 1.5}])
    for suffix in ("json", "yaml"):
        results = tmp_path / f"results.{suffix}"
        out = tmp_path / f"report-{suffix}.xlsx"
        assert main(["run", str(dataset), "-r", str(answers), "-o", str(out), "--results", str(results),
                     "--no-llm", "--quiet"]) == 0
        text = results.read_text(encoding="utf-8")
        document = json.loads(text) if suffix == "json" else yaml.safe_load(text)
        assert document["results"][0]["actual_answer"] == CONTENT_PARTS
        assert "{'type'" not in text
    cell = overview_rows(out)["q1"]["actual answer"]
    assert cell == "Substation Oslo has two transformers.\n\nThey are T1 and T2."


def test_the_judge_reads_the_text_of_a_content_part_answer(tmp_path, monkeypatch):
    dataset, answers = write_qa_inputs(tmp_path, [{"question_id": "q1", "actual_answer": CONTENT_PARTS}])
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        code = main(["run", str(dataset), "-r", str(answers), "-o", str(tmp_path / "r.xlsx"),
                     "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet"])
        prompts = [json.dumps(r.body, ensure_ascii=False) for r in server.requests if r.kind == "chat"]
    assert code == 0 and prompts
    assert any("They are T1 and T2." in prompt for prompt in prompts)
    assert not any("'type': 'text'" in prompt or '\\"type\\": \\"text\\"' in prompt for prompt in prompts)


# --- the results file's per-question records are the library's (item 4) -------------------------------

import asyncio  # noqa: E402

import qareport  # noqa: E402
from qareport import graphrag_eval_6  # noqa: E402

CONTEXTS = json.dumps([{"id": "doc-1", "text": "Transformer OSLO T1 is in Substation Oslo."},
                       {"id": "doc-2", "text": "Transformer OSLO T2 is in Substation Oslo."}])
SPARQL_REFERENCE = [[{"name": "sparql_query", "args": {"query": "SELECT ?t"}, "output": SPARQL_OUTPUT,
                      "output_media_type": "application/sparql-results+json", "required_columns": ["t"]}]]
RETRIEVAL_REFERENCE = [[{"name": "retrieval", "args": {"query": "Oslo", "k": 2}, "output": CONTEXTS}]]
SPARQL_CALL = {"name": "sparql_query", "id": "call_1", "args": {"query": "SELECT ?t"}, "status": "success",
               "output": SPARQL_OUTPUT}
RETRIEVAL_CALL = {"name": "retrieval", "id": "call_2", "args": {"query": "Oslo", "k": 2}, "status": "success",
                  "output": CONTEXTS}
USAGE = {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150, "elapsed_sec": 2.25}
MIXED_RESPONSES = [
    {"question_id": "q1", "actual_answer": "T1.", "actual_steps": [SPARQL_CALL], **USAGE},
    {"question_id": "q2", "status": "error", "error": "Recursion limit reached", "actual_steps": []},
    {"question_id": "q3", "status": "error", "error": "timeout"},
    {"question_id": "q4", "actual_answer": CONTENT_PARTS, **USAGE},
    {"question_id": "q5", "status": "error", "error": "late", "actual_steps": [SPARQL_CALL], "input_tokens": 7},
    {"question_id": "q6", "actual_answer": "T1 and T2.", "actual_steps": [RETRIEVAL_CALL], **USAGE},
    {"question_id": "q7", "actual_answer": "none", "actual_steps": []},
]  # q8 has no response


def mixed_dataset():
    questions = [{"id": f"q{n}", "question_text": f"Question {n}?", "reference_answer": "T1 and T2.",
                  "reference_steps": RETRIEVAL_REFERENCE if n == 6 else SPARQL_REFERENCE} for n in range(1, 9)]
    return [{"template_id": "sparql", "questions": questions[:4]}, {"template_id": "mixed", "questions": questions[4:]}]


@pytest.mark.parametrize("semantics", [5, 6])
def test_the_results_files_records_are_the_librarys_records(tmp_path, semantics):
    dataset = tmp_path / "dataset.yaml"
    dataset.write_text(yaml.safe_dump(mixed_dataset(), sort_keys=False), encoding="utf-8")
    answers = tmp_path / "responses.json"
    answers.write_text(json.dumps(MIXED_RESPONSES), encoding="utf-8")
    results = tmp_path / "results.json"
    main(["run", str(dataset), "-r", str(answers), "-o", str(tmp_path / "r.xlsx"), "--results", str(results),
          "--steps-semantics", str(semantics), "--no-llm", "--quiet"])
    got = json.loads(results.read_text(encoding="utf-8"))["results"]
    if semantics == 5:
        exp = qareport.run_evaluation(mixed_dataset(), MIXED_RESPONSES, judge=None)
    else:
        by_id = {record["question_id"]: record for record in MIXED_RESPONSES}
        exp = asyncio.run(graphrag_eval_6.run_evaluation(mixed_dataset(), by_id))
    exp = json.loads(json.dumps(exp))  # as a results file holds it
    assert got == exp
    assert [list(record) for record in got] == [list(record) for record in exp]  # keys in the library's order
    if semantics == 6:
        assert [r.get("actual_steps") for r in got if r["status"] == "error"] == [[], [], [SPARQL_CALL], []]


# --- steps problems say where, once, and what works (item 6) -----------------------------------------

STEPS_DATASET = """\
- template_id: power
  questions:
  - id: empty-group
    question_text: Which transformers are in Oslo?
    reference_steps:
    - []
    - - name: sparql_query
        args: {query: SELECT ?t}
        output: '{"head": {"vars": ["t"]}, "results": {"bindings": [{"t": {"type": "uri", "value": "urn:T1"}}]}}'
        output_media_type: application/sparql-results+json
        required_columns: [t]
  - id: series
    question_text: Last ten values of the Oslo load?
    reference_steps:
    - - name: retrieve_time_series
        args: {mrid: m-1, limit: 10}
  - id: iri
    question_text: What is T1's IRI?
    reference_steps:
    - - name: iri_discovery
        output: urn:T1
"""
STEPS_RESPONSES = [
    {"question_id": "empty-group", "actual_answer": "T1", "actual_steps": [SPARQL_CALL]},
    {"question_id": "series", "actual_answer": "...", "actual_steps": [
        {"name": "retrieve_time_series", "id": "call_3", "args": {"mrid": "m-1", "limit": 10}, "status": "success",
         "output": "[]"}]},
    {"question_id": "iri", "actual_answer": "urn:T1", "actual_steps": [
        {"name": "autocomplete_search", "id": "call_4", "args": {"q": "T1"}, "status": "success",
         "output": SPARQL_OUTPUT}]},
]


def run_steps_suite(tmp_path, capsys, *options):
    dataset = tmp_path / "power.yaml"
    dataset.write_text(STEPS_DATASET, encoding="utf-8")
    answers = tmp_path / "responses.json"
    answers.write_text(json.dumps(STEPS_RESPONSES), encoding="utf-8")
    code = main(["run", str(dataset), "-r", str(answers), "-o", str(tmp_path / "r.xlsx"), "--no-llm", *options])
    lines = [line for line in capsys.readouterr().err.splitlines() if "LLM metrics skipped" not in line]
    return code, dataset, lines


def test_an_empty_reference_group_is_located_in_the_test_file_and_names_the_case_once(tmp_path, capsys):
    _, dataset, lines = run_steps_suite(tmp_path, capsys, "--steps-semantics", "6")
    (line,) = [line for line in lines if "empty-group" in line]
    assert line.startswith(f"qareport: {dataset}:5: question 'empty-group': group 1 of 'reference_steps' is empty")
    assert line.count("empty-group") == 1


def test_six_only_steps_under_5x_rules_say_to_use_the_6x_rules_at_the_test_file(tmp_path, capsys):
    _, dataset, lines = run_steps_suite(tmp_path, capsys)
    series = next(line for line in lines if "'series'" in line)
    iri = next(line for line in lines if "'iri'" in line)  # a last group graphrag-eval 5.x scores 0 in silence
    assert series.startswith(f"qareport: {dataset}:14: question 'series': ")
    assert iri.startswith(f"qareport: {dataset}:19: question 'iri': ")
    for line in (series, iri):
        assert "--steps-semantics 6" in line and "add the output" not in line
        assert line.count("question '") == 1


def test_under_6x_rules_the_six_only_steps_are_scored(tmp_path, capsys):
    _, _, lines = run_steps_suite(tmp_path, capsys, "--steps-semantics", "6")
    assert not any("'series'" in line or "'iri'" in line for line in lines)


def test_a_conversation_turns_steps_problem_names_the_case_once(tmp_path, capsys):
    cases = tmp_path / "cases.yaml"
    cases.write_text("""\
id: oslo
conversation:
- role: user
  content: Which transformers are in Oslo?
  target:
    reference_steps:
    - - name: sparql_query
        args: {query: SELECT ?t}
""", encoding="utf-8")
    answers = tmp_path / "responses.json"
    answers.write_text(json.dumps([{"test_case_id": "oslo", "actual_steps": [SPARQL_CALL]}]), encoding="utf-8")
    main(["run", str(cases), "-r", str(answers), "-o", str(tmp_path / "r.xlsx"), "--no-llm"])
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "'oslo'" in line]
    assert line.startswith(f"qareport: {cases}:6: case 'oslo', turn 1: reference step 1 of the last group")
    assert "no 'output'" in line and line.count("oslo") == 1


# --- validate refuses what run refuses (item 7) ------------------------------------------------------


def problem_lines(text):
    return sorted(line.removeprefix("qareport: ") for line in text.splitlines()
                  if line.startswith(("qareport: ", "/")) and "LLM metrics skipped" not in line
                  and "problem(s)" not in line and ": valid" not in line)


@pytest.mark.parametrize("rules", [["--steps-semantics", "5"], ["--steps-semantics", "6"], ["--config", "CONFIG"]])
def test_validate_lists_exactly_the_problems_run_lists_with_the_same_options(tmp_path, capsys, rules):
    dataset = tmp_path / "power.yaml"
    dataset.write_text(STEPS_DATASET, encoding="utf-8")
    answers = tmp_path / "responses.json"
    answers.write_text(json.dumps([*STEPS_RESPONSES, {"question_id": "unknown", "actual_answer": "?"}]),
                       encoding="utf-8")
    config = tmp_path / "qareport.yaml"
    config.write_text("steps_semantics: 6\n", encoding="utf-8")
    rules = [str(config) if option == "CONFIG" else option for option in rules]
    main(["run", str(dataset), "-r", str(answers), "-o", str(tmp_path / "r.xlsx"), "--no-llm", *rules])
    ran = problem_lines(capsys.readouterr().err)
    code = main(["validate", str(dataset), "-r", str(answers), *rules])
    captured = capsys.readouterr()
    assert code == 1
    assert ran and problem_lines(captured.out) == ran
    assert any("reference_steps" in line or "--steps-semantics 6" in line for line in ran)


@pytest.mark.parametrize("semantics, case", [("6", "empty-group"), ("5", "series"), ("5", "iri")])
def test_validate_of_test_cases_alone_finds_what_any_run_would_refuse(tmp_path, capsys, semantics, case):
    dataset = tmp_path / "power.yaml"
    dataset.write_text(STEPS_DATASET, encoding="utf-8")
    code = main(["validate", str(dataset), "--steps-semantics", semantics])
    out = capsys.readouterr().out
    assert code == 1
    assert any(line.startswith(f"{dataset}:") and f"question '{case}'" in line for line in out.splitlines())


def test_validate_refuses_a_configuration_run_refuses(tmp_path, capsys):
    dataset = tmp_path / "power.yaml"
    dataset.write_text(STEPS_DATASET, encoding="utf-8")
    config = tmp_path / "qareport.yaml"
    config.write_text("steps_semantics: 7\n", encoding="utf-8")
    assert main(["validate", str(dataset), "--config", str(config)]) == 2
    assert "steps_semantics" in capsys.readouterr().err


def test_validate_refuses_custom_llm_metrics_a_run_refuses(tmp_path, capsys):
    """The run's kinds, its custom LLM metrics among them, are made as a run makes them: an output
    named as another kind's metric stops validate as it stops run."""
    dataset = tmp_path / "power.yaml"
    dataset.write_text(STEPS_DATASET, encoding="utf-8")
    config = tmp_path / "ge6.yaml"
    config.write_text("llm:\n  generation:\n    provider: openai\n    model: m\n"
                      "custom_evaluations:\n  - name: x\n    inputs: [question]\n    instructions: i\n"
                      "    outputs:\n      macro_precision: a number\n", encoding="utf-8")
    assert main(["validate", str(dataset), "--config-ge6", str(config)]) == 2
    assert "belong to another kind; give the outputs other names" in capsys.readouterr().err
    (tmp_path / "responses").mkdir()
    assert main(["run", str(dataset), "-r", str(tmp_path / "responses"), "--config-ge6", str(config), "--no-llm",
                 "-o", str(tmp_path / "r.xlsx")]) == 2
    assert "belong to another kind; give the outputs other names" in capsys.readouterr().err


# --- inputs that used to pass in silence (item 8) ----------------------------------------------------


def test_a_response_in_graphrag_eval_4_shape_is_named_with_the_fix(tmp_path, capsys):
    dataset, answers = write_qa_inputs(tmp_path, [
        {"question_id": "q1", "actual_answer": "T1", "steps": [SPARQL_CALL]}], reference_steps=SPARQL_REFERENCE)
    assert main(["validate", str(dataset), "-r", str(answers)]) == 1
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "'steps'" in line]
    assert line.startswith(f"{answers}:3: unknown key 'steps' in the response for 'q1': not evaluated")
    assert "rename the key to 'actual_steps'" in line


def test_statgpt_target_keys_are_each_named_once_per_file(tmp_path, capsys):
    cases = tmp_path / "ground_truth.yaml"
    cases.write_text("""\
- id: gdp-france
  conversation:
  - role: user
    content: GDP of France in 2020?
    target:
      is_out_of_scope: false
      query_normalization: GDP of France in 2020
      datasets_selection: [WEO]
      tool_calls: [{name: search_datasets}]
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: INDICATOR
          values: [{id: NGDP, name: Gross domestic product}]
- id: gdp-italy
  conversation:
  - role: user
    content: GDP of Italy?
    target:
      tool_calls: []
      indicator_selection: []
""", encoding="utf-8")
    assert main(["validate", str(cases)]) == 1
    lines = capsys.readouterr().out.splitlines()
    exp = {"is_out_of_scope": 6, "query_normalization": 7, "datasets_selection": 8, "tool_calls": 9}
    for key, number in exp.items():
        (line,) = [line for line in lines if f"'{key}'" in line]
        assert line.startswith(f"{cases}:{number}: unknown key '{key}' in the target of case 'gdp-france'")
        assert "not evaluated" in line
    assert "also in 1 more target of this file" in next(line for line in lines if "'tool_calls'" in line)
    assert len(lines) == 4


def test_a_describe_result_under_5x_rules_is_scored_with_the_note_graphrag_eval_would_stop_on(tmp_path, capsys):
    turtle = {**SPARQL_CALL, "output": "<urn:T1> a <urn:Transformer> ."}
    dataset, answers = write_qa_inputs(tmp_path, [{"question_id": "q1", "actual_answer": "T1",
                                                    "actual_steps": [turtle]}], reference_steps=SPARQL_REFERENCE)
    results = tmp_path / "results.json"
    main(["run", str(dataset), "-r", str(answers), "-o", str(tmp_path / "r.xlsx"), "--results", str(results),
          "--no-llm"])
    (record,) = json.loads(results.read_text())["results"]
    assert record["steps_score"] == 0.0
    assert "not JSON" in record["steps_note"] and "graphrag-eval 5.2 stops" in record["steps_note"]
    assert any("question 'q1': note:" in line and "DESCRIBE" in line for line in capsys.readouterr().err.splitlines())


def test_retrieval_results_with_ids_but_no_text_get_the_note(tmp_path, capsys):
    ids_only = {**RETRIEVAL_CALL, "output": json.dumps([{"id": "doc-1"}, {"id": "doc-7"}])}
    result = qareport.run_evaluation(
        [{"template_id": "t", "questions": [{"id": "q1", "question_text": "Oslo?",
                                            "reference_steps": RETRIEVAL_REFERENCE}]}],
        [{"question_id": "q1", "actual_answer": "T1", "actual_steps": [ids_only]}], judge=None)[0]
    assert result["steps_score"] == 0.5  # recall@2 of the ids, as graphrag-eval scores it
    assert "'call_2'" in result["steps_note"] and "graphrag-eval 5.2 stops" in result["steps_note"]
