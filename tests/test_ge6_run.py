"""graphrag-eval 6.x users on the command line: steps semantics, a 6.x configuration with custom LLM
metrics (judged by the loopback OpenAI-compatible stub), baselines of the other semantics, and the
answer-correctness command's configuration file."""

from __future__ import annotations

import asyncio
import csv
import email
import email.policy
import json
import sys
import threading
from pathlib import Path

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook

from qareport import graphrag_eval_6, kinds
from qareport.cli import main
from qareport.cli import main as qareport_cli_main
from qareport.errors import SettingsError
from qareport.ge6_config import read_ge6_config
from qareport.kinds.custom_evaluations import kinds_for_run
from qareport.pipeline import RunOptions, run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from ge6_suite import write_suite

KEY = "sk-test-ge6-0123456789"


@pytest.fixture
def suite(tmp_path):
    testcases, responses = write_suite(tmp_path / "suite", 40, 5)
    return testcases, responses


def run(tmp_path, testcases, responses, *extra, name="report"):
    out = tmp_path / f"{name}.xlsx"
    results = tmp_path / f"{name}.json"
    code = main(["run", str(testcases), "-r", str(responses), "-o", str(out), "--results", str(results),
                 "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet", *map(str, extra)])
    return code, out, results


def overview(path):
    ws = load_workbook(path)["Overview"]
    headers = [c.value for c in ws[1]]
    return headers, {row[0]: dict(zip(headers, row)) for row in ws.iter_rows(min_row=2, values_only=True)}


def sheet_rows(path, name):
    return [row for row in load_workbook(path)[name].iter_rows(values_only=True)]


def hidden_run(path):
    return {row[0]: row[1] for row in load_workbook(path)["qareport_run"].iter_rows(values_only=True)}


# --- steps semantics ---------------------------------------------------------------------------------


def test_steps_semantics_6_scores_as_the_6x_library_and_the_report_says_so(tmp_path, suite):
    code, out, results = run(tmp_path, *suite, "--steps-semantics", "6", "--no-llm")
    assert code == 0
    _, rows = overview(out)
    library = asyncio.run(graphrag_eval_6.run_evaluation(
        __import__("yaml").safe_load(suite[0].read_text()), json.loads(suite[1].read_text())))
    for result in library:
        assert rows[result["question_id"]]["steps score"] == pytest.approx(result["steps_score"])
    document = json.loads(results.read_text())
    assert document["qareport"]["steps_semantics"] == 6
    assert document["aggregates"] == graphrag_eval_6.compute_aggregates(library)
    assert hidden_run(out)["option.steps_semantics"] == 6
    summary = " ".join(str(v) for row in sheet_rows(out, "Summary") for v in row if v)
    assert "steps semantics: 6" in summary


def test_under_6x_the_console_says_its_steps_mean_counts_error_responses_as_zero(tmp_path, capsys):
    out = tmp_path / "report.xlsx"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--no-llm", "--steps-semantics", "6"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "mean steps score 0.67 (graphrag-eval 6.x's mean, error responses counted as 0)" in printed
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--no-llm"])
    printed = capsys.readouterr().out
    assert "mean steps score 0.73;" in printed and "6.x's mean" not in printed


def test_the_default_is_5x_and_the_configuration_file_may_choose_6x(tmp_path, suite, monkeypatch):
    code, out, results = run(tmp_path, *suite, "--no-llm", name="five")
    assert code == 0 and json.loads(results.read_text())["qareport"]["steps_semantics"] == 5
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qareport.yaml").write_text("strict: false\nsteps_semantics: 6\n")
    code, out, results = run(tmp_path, *suite, "--no-llm", name="six")
    assert code == 0 and json.loads(results.read_text())["qareport"]["steps_semantics"] == 6
    code, out, results = run(tmp_path, *suite, "--no-llm", "--steps-semantics", "5", name="option")
    assert json.loads(results.read_text())["qareport"]["steps_semantics"] == 5  # the option wins


def test_a_wrong_steps_semantics_in_the_configuration_names_file_and_line(tmp_path, suite, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qareport.yaml").write_text("strict: false\nsteps_semantics: 7\n")
    code, _, _ = run(tmp_path, *suite, "--no-llm")
    assert code == 2
    assert "qareport.yaml:2: 'steps_semantics' must be 5 or 6" in capsys.readouterr().err


def test_a_baseline_of_the_other_semantics_is_compared_with_a_warning(tmp_path, suite, capsys):
    _, six, _ = run(tmp_path, *suite, "--steps-semantics", "6", "--no-llm", name="six")
    capsys.readouterr()
    code, out, _ = run(tmp_path, *suite, "--no-llm", "--baseline", six, name="five")
    assert code == 0
    err = capsys.readouterr().err
    assert "the baseline's steps scores follow graphrag-eval 6.x's rules and this run's 5.x's" in err
    problems = " ".join(str(v) for row in sheet_rows(out, "Problems") for v in row if v)
    assert "Run both with the same --steps-semantics" in problems
    assert "Changes" in load_workbook(out).sheetnames  # compared all the same
    summary = load_workbook(out)["Summary"]
    key_cell = next(cell for row in summary.iter_rows() for cell in row if cell.value == "warning")
    lines = [summary.cell(row, key_cell.column + 1).value for row in range(key_cell.row, key_cell.row + 4)]
    assert "the baseline's steps scores follow graphrag-eval 6.x's rules" in " ".join(filter(None, lines))
    eml = tmp_path / "five.eml"
    assert main(["email", str(out), "--to", "team@example.org", "--from", "qa@example.org", "--eml", str(eml)]) == 0
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    for kind in ("plain", "html"):
        body = message.get_body((kind,)).get_content().replace("&#39;", "'")
        assert "Note: the baseline's steps scores follow graphrag-eval 6.x's rules and this run's 5.x's" in body
    _, same, _ = run(tmp_path, *suite, "--steps-semantics", "6", "--no-llm", "--baseline", six, name="again")
    assert "the baseline's steps scores follow" not in capsys.readouterr().err


# --- a 6.x configuration: the judge and custom LLM metrics ----------------------------------------------


def ge6_config(tmp_path, base_url, extra=""):
    path = tmp_path / "graphrag-eval.yaml"
    path.write_text(f"""\
llm:
  generation:
    provider: openai
    model: judge-model
    base_url: {base_url}
    api_key: {KEY}
    max_tokens: 300
  embedding:
    provider: openai
    model: embedding-model
custom_evaluations:
  - name: coverage
    inputs: [question, reference_answer, actual_answer]
    instructions: Say how much of the reference answer the answer covers.
    outputs:
      coverage_score: a fraction from 0 to 1 of the reference claims stated
      coverage_reason: why, in one sentence
  - name: sparql_use
    inputs: [actual_steps]
    steps_name: sparql_query
    steps_keys: [output]
    instructions: Judge the SPARQL results the agent used.
    outputs:
      sparql_use_verdict: a word
{extra}""", encoding="utf-8")
    return path


@pytest.fixture
def stub(monkeypatch):
    with serve_stub() as server:
        yield server


def scripted_custom(coverage):
    """The stub's custom metric replies: `coverage` and a reason, or a verdict, tab-separated."""
    return lambda prompt, body: (f"{coverage}\tthe answer names most of them" if "coverage_score" in prompt
                                 else "sound")


def test_custom_metrics_reach_overview_statistics_the_results_file_and_the_comparison(tmp_path, stub):
    config = ge6_config(tmp_path, stub.url)
    stub.rules["custom"] = scripted_custom(0.75)
    code, out, results = run(tmp_path, TESTCASES, RESPONSES, "--config-ge6", config)
    assert code == 0
    headers, rows = overview(out)
    assert {"coverage score", "coverage reason", "sparql use verdict"} <= set(headers)
    document = json.loads(results.read_text())
    by_id = {r["question_id"]: r for r in document["results"]}
    judged_rows = [row for case_id, row in rows.items() if "coverage_score" in by_id.get(case_id, {})]
    assert judged_rows and all(row["coverage score"] == pytest.approx(0.75) for row in judged_rows)
    assert all(row["coverage reason"] == "the answer names most of them" for row in judged_rows)
    assert all(row["sparql use verdict"] == "sound" for row in judged_rows)
    statistics = sheet_rows(out, "Statistics")
    title = next(i for i, row in enumerate(statistics) if row[0] and "Custom LLM metrics" in str(row[0]))
    header = statistics[title + 1]
    coverage = next(row for row in statistics[title:] if row[1] == "coverage_score")
    assert header[:3] == ("evaluation", "output", "numeric values") and coverage[0] == "coverage"
    judged = [r for r in document["results"] if "coverage_score" in r]
    assert judged and all(r["coverage_score"] == 0.75 for r in judged)
    assert "coverage_score" in document["aggregates"]["micro"]  # aggregated as 6.x aggregates them
    assert "coverage_reason" not in document["aggregates"]["micro"]
    prompts = [r.body for r in stub.requests if r.kind == "chat" and "response_format" not in r.body]
    assert prompts and all(r["max_tokens"] == 300 and r["model"] == "judge-model" for r in prompts)
    assert any("# Reference answer\nOSLO T1, OSLO T2" in r["messages"][0]["content"] for r in prompts)
    assert any(row["case_id"] == "c10bbc8dce98a4b8832d125134a16153" and row["coverage_score"] == pytest.approx(0.75)
               for row in document["cases"])

    stub.rules["custom"] = scripted_custom(0.25)
    code, again, _ = run(tmp_path, TESTCASES, RESPONSES, "--config-ge6", config, "--baseline", out, "--no-cache",
                         name="again")
    assert code == 0
    changes = sheet_rows(again, "Changes")
    assert any("coverage score" in str(row) and "c10bbc8dce98a4b8832d125134a16153" in str(row) for row in changes)


def test_a_reply_with_the_wrong_number_of_values_is_retried_then_recorded_as_the_metrics_error(tmp_path, stub):
    config = ge6_config(tmp_path, stub.url)
    stub.rules["custom"] = lambda prompt, body: "only one value"
    code, out, results = run(tmp_path, TESTCASES, RESPONSES, "--config-ge6", config)
    assert code == 0
    judged = [r for r in json.loads(results.read_text())["results"] if "coverage_error" in r]
    assert judged and all(r["coverage_score"] is None and r["coverage_reason"] is None for r in judged)
    assert "expected 2 tab-separated values" in judged[0]["coverage_error"]
    retries = [r for r in stub.requests if len(r.body.get("messages", [])) == 3]
    assert retries and "separated by tab characters" in retries[0].body["messages"][2]["content"]


def test_the_6x_library_judges_with_the_configuration_and_keeps_6x_keys(tmp_path, stub):
    config = ge6_config(tmp_path, stub.url, extra="answer_correctness:\n  prompt: |\n    <reference_answer>\n"
                        "    {reference_answer}\n    </reference_answer>\n    <candidate_answer>\n"
                        "    {actual_answer}\n    </candidate_answer>\n    Count the claims of {question}.\n")
    dataset = __import__("yaml").safe_load((Path(__file__).parent / "data" / "qa_power_system_reference.yaml").read_text())
    responses = json.loads((Path(__file__).parent / "data" / "qa_power_system_responses.json").read_text())
    stub.rules["custom"] = scripted_custom(0.5)
    results = asyncio.run(graphrag_eval_6.run_evaluation(dataset, responses, config))
    oslo = next(r for r in results if r["question_id"] == "c10bbc8dce98a4b8832d125134a16153")
    assert 0 <= oslo["answer_f1"] <= 1 and isinstance(oslo["answer_relevance"], float)  # a cosine
    assert oslo["coverage_score"] == 0.5 and oslo["sparql_use_verdict"] == "sound"
    assert not any(key.endswith("_cost") for r in results for key in r)
    assert list(oslo)[:3] == ["template_id", "question_id", "question_text"]
    assert list(oslo).index("steps_score") < list(oslo).index("answer_relevance") < list(oslo).index("answer_f1")
    retrieval = next(s for s in oslo["actual_steps"] if s["name"] == "retrieval")
    assert {"retrieval_answer_recall", "retrieval_context_recall", "retrieval_context_f1"} <= set(retrieval)
    prompts = [r.body["messages"][0]["content"] for r in stub.requests if r.kind == "chat"]
    assert any(p.startswith("<reference_answer>\nOSLO T1, OSLO T2\n</reference_answer>") for p in prompts)
    aggregates = graphrag_eval_6.compute_aggregates(results, config)
    assert "coverage_score" in aggregates["macro"]


def test_a_judge_failure_uses_6x_error_key(tmp_path, stub):
    config = ge6_config(tmp_path, stub.url)
    stub.rules["answer_correctness"] = lambda prompt, body: {"reason": "x"}
    dataset = __import__("yaml").safe_load((Path(__file__).parent / "data" / "qa_power_system_reference.yaml").read_text())
    responses = json.loads((Path(__file__).parent / "data" / "qa_power_system_responses.json").read_text())
    results = asyncio.run(graphrag_eval_6.run_evaluation(dataset, responses, config))
    failed = [r for r in results if "answer_correctness_error" in r]
    assert failed and not any("answer_eval_error" in r for r in results)


def test_the_custom_kind_belongs_to_its_run_and_never_enters_the_catalogue(tmp_path, stub):
    before = kinds.catalogue()
    config = ge6_config(tmp_path, stub.url)
    code, out, _ = run(tmp_path, TESTCASES, RESPONSES, "--config-ge6", config)
    assert code == 0 and "coverage score" in overview(out)[0]
    assert kinds.catalogue() == before and kinds.catalogue().named("custom_evaluations") is None
    code, plain, _ = run(tmp_path, TESTCASES, RESPONSES, "--no-llm", name="plain")
    assert code == 0 and "coverage score" not in overview(plain)[0]
    assert kinds.catalogue() == before


def test_a_custom_output_named_as_another_kinds_metric_is_a_settings_error(tmp_path):
    path = tmp_path / "clash.yaml"
    path.write_text("llm:\n  generation:\n    provider: openai\n    model: m\n"
                    "custom_evaluations:\n  - name: x\n    inputs: [question]\n    instructions: i\n"
                    "    outputs:\n      macro_precision: a number\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"macro_precision.*belong to another kind; give the outputs other names"):
        kinds_for_run(read_ge6_config(path).custom_evaluations)
    assert kinds.catalogue().named("custom_evaluations") is None


def test_two_runs_at_once_in_one_process_each_get_exactly_their_own_kinds(tmp_path, stub):
    """A run with custom evaluations and one without, in two threads: the second starts once the
    first has made its kinds, and they wait for each other before evaluating and before writing.
    Each workbook, results file and report has its own columns and metrics, and the catalogue is as
    it was."""
    before = kinds.catalogue()
    config = ge6_config(tmp_path, stub.url)
    stub.rules["custom"] = scripted_custom(0.75)
    together = threading.Barrier(2, timeout=120)
    first_loading = threading.Event()

    def in_step(stage: str) -> None:
        if stage == "loading":
            first_loading.set()
        if stage in ("evaluating", "writing"):
            together.wait()

    def options(name: str, **given) -> RunOptions:
        return RunOptions((str(TESTCASES),), (str(RESPONSES),), output=str(tmp_path / f"{name}.xlsx"),
                          results_path=str(tmp_path / f"{name}.json"), **given)

    custom = options("custom", config_ge6=str(config), judge_options={"cache_path": str(tmp_path / "c.sqlite3")})
    plain = options("plain", judge_options={"enabled": False})
    outcomes: dict[str, object] = {}
    failures: list[BaseException] = []

    def run_one(name: str, given: RunOptions) -> None:
        try:
            outcomes[name] = run_pipeline(given, on_stage=in_step)
        except Exception as error:  # noqa: BLE001 (told below, in the test's thread)
            together.abort()
            failures.append(error)

    threads = [threading.Thread(target=run_one, args=item) for item in (("custom", custom), ("plain", plain))]
    threads[0].start()
    assert first_loading.wait(timeout=120)
    threads[1].start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures
    custom_keys = {"coverage_score", "coverage_reason", "sparql_use_verdict"}
    custom_report, plain_report = outcomes["custom"].report, outcomes["plain"].report
    assert custom_keys <= set(custom_report.kind_set.case_metric_keys())
    assert "custom_evaluations" in [kind.name for kind in custom_report.kinds]
    assert not custom_keys & set(plain_report.kind_set.case_metric_keys())
    assert "custom_evaluations" not in [kind.name for kind in plain_report.kinds]
    headers, rows = overview(tmp_path / "custom.xlsx")
    assert {"coverage score", "coverage reason", "sparql use verdict"} <= set(headers)
    assert any(row["coverage score"] == pytest.approx(0.75) for row in rows.values())
    headers, _ = overview(tmp_path / "plain.xlsx")
    assert not {"coverage score", "coverage reason", "sparql use verdict"} & set(headers)
    stored = sheet_rows(tmp_path / "custom.xlsx", "qareport_results")[0]
    assert custom_keys <= set(stored)
    assert not custom_keys & set(sheet_rows(tmp_path / "plain.xlsx", "qareport_results")[0])
    custom_cases = json.loads((tmp_path / "custom.json").read_text())["cases"]
    plain_cases = json.loads((tmp_path / "plain.json").read_text())["cases"]
    assert any(case.get("coverage_score") == pytest.approx(0.75) for case in custom_cases)
    assert not any(custom_keys & set(case) for case in plain_cases)
    assert kinds.catalogue() == before and kinds.catalogue().named("custom_evaluations") is None


def test_a_wrong_6x_configuration_stops_the_run_with_file_and_line(tmp_path, suite, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("custom_evaluations:\n  - name: x\n    inputs: [question]\n    instructions: i\n"
                    "    outputs: {x_score: s}\n")
    code, out, _ = run(tmp_path, *suite, "--config-ge6", path)
    assert code == 2 and not out.exists()
    assert f"{path}:1: custom evaluations need an LLM" in capsys.readouterr().err


# --- answer-correctness with a 6.x configuration ----------------------------------------------------------


def test_answer_correctness_takes_the_6x_configuration_and_its_prompt(tmp_path, stub):
    config = ge6_config(tmp_path, stub.url, extra="answer_correctness:\n  prompt: '<reference_answer>\n"
                        "    {reference_answer}\n\n    </reference_answer> <candidate_answer>\n\n    {actual_answer}\n\n"
                        "    </candidate_answer> Count the claims for {question}.'\n")
    tsv = tmp_path / "in.tsv"
    with open(tsv, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["Question", "Reference answer", "Actual answer"])
        writer.writerow(["Which transformers?", "OSLO T1; OSLO T2", "OSLO T1"])
    out = tmp_path / "out.tsv"
    code = qareport_cli_main(["answer-correctness", "--input-tsv-file-path", str(tsv), "--output-tsv-file-path", str(out),
                                        "--config-yaml-file-path", str(config), "--quiet",
                                        "--cache-path", str(tmp_path / "c.sqlite3")])
    assert code == 0
    with open(out, encoding="utf-8", newline="") as handle:
        row = next(csv.DictReader(handle, delimiter="\t"))
    assert (row["#Reference"], row["#PTarget"], row["#Matching"]) == ("2", "1", "1")
    prompt = stub.requests[0].body["messages"][0]["content"]
    assert prompt.endswith("Count the claims for Which transformers?.") and stub.requests[0].body["model"] == "judge-model"


def test_answer_correctness_refuses_a_configuration_without_it(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("llm:\n  generation: {provider: openai, model: m}\nanswer_correctness: {enabled: false}\n")
    tsv = tmp_path / "in.tsv"
    tsv.write_text("Question\tReference answer\tActual answer\nq\tr\ta\n")
    code = qareport_cli_main(["answer-correctness", "-i", str(tsv), "-o", str(tmp_path / "o.tsv"), "-c", str(config)])
    assert code == 2
    assert "answer correctness is disabled" in capsys.readouterr().err


def test_under_6x_rules_the_judge_also_judges_the_retrieval_contexts_named_apart(tmp_path, monkeypatch):
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        code, out, results = run(tmp_path, TESTCASES, RESPONSES, "--steps-semantics", "6")
        assert code == 0
        asked = {r.body.get("response_format", {}).get("json_schema", {}).get("name") for r in server.requests}
    assert {"retrieval_context_recall", "retrieval_context_precision"} <= asked
    steps = [s for r in json.loads(results.read_text())["results"] for s in r.get("actual_steps", [])
             if "retrieval_context_recall" in s]
    assert steps and all("retrieval_context_recall_cost" in s for s in steps)  # judged, not string similarity
    labels = [row[0] for row in sheet_rows(out, "Statistics") if row and row[0]]
    assert "retrieval context recall (LLM)" in labels


def test_under_5x_rules_the_retrieval_contexts_stay_string_similarities(tmp_path, monkeypatch):
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        code, out, results = run(tmp_path, TESTCASES, RESPONSES)
        asked = {r.body.get("response_format", {}).get("json_schema", {}).get("name") for r in server.requests}
    assert code == 0 and "retrieval_context_recall" not in asked
    steps = [s for r in json.loads(results.read_text())["results"] for s in r.get("actual_steps", [])
             if "retrieval_context_recall" in s]
    assert steps and not any("retrieval_context_recall_cost" in s for s in steps)
    labels = [row[0] for row in sheet_rows(out, "Statistics") if row and row[0]]
    assert "retrieval context recall (LLM)" not in labels
