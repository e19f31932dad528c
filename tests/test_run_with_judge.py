"""`qareport run` with the LLM judge, against a real OpenAI-compatible server on loopback."""

import json
import zipfile

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import Fault, serve_stub
from openpyxl import load_workbook

from qareport.cli import main

API_KEY = "sk-test-DO-NOT-LEAK-1234567890"


@pytest.fixture
def stub(monkeypatch, tmp_path):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        yield server


def run(tmp_path, *extra):
    out = tmp_path / "report.xlsx"
    results = tmp_path / "results.json"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--results", str(results),
                 "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet", *extra])
    return code, out, results


def overview(path):
    ws = load_workbook(path)["Overview"]
    headers = [c.value for c in ws[1]]
    return {row[0]: dict(zip(headers, row)) for row in ws.iter_rows(min_row=2, values_only=True)}


def test_answers_are_judged_and_shown_with_their_scores(stub, tmp_path):
    code, out, results = run(tmp_path)
    assert code == 0
    rows = overview(out)
    oslo = rows["c10bbc8dce98a4b8832d125134a16153"]
    assert 0 <= oslo["answer F1"] <= 1
    assert isinstance(oslo["answer relevance"], float)  # a cosine similarity
    assert oslo["judge reason"]
    document = json.loads(results.read_text())
    judged = [r for r in document["results"] if "answer_f1" in r]
    assert judged and all("answer_relevance" in r for r in judged)
    assert stub.chat_calls > 0 and stub.embedding_calls > 0


def test_a_rerun_is_served_from_the_cache_and_the_workbook_says_so(stub, tmp_path):
    run(tmp_path)
    calls_before = stub.chat_calls + stub.embedding_calls
    code, out, _ = run(tmp_path)
    assert code == 0
    assert stub.chat_calls + stub.embedding_calls == calls_before  # no new API call
    stats = [r for r in load_workbook(out)["Statistics"].iter_rows(values_only=True)]
    header = next(r for r in stats if r[0] == "metric" and "cached calls" in r)
    overall = next(r for r in stats if r[0] == "all metrics")
    assert overall[header.index("calls")] == 0 and overall[header.index("cached calls")] > 0


def test_failing_judge_calls_are_recorded_per_case_and_the_report_is_still_written(stub, tmp_path):
    stub.script(*[Fault(content="this is not JSON")] * 500)  # every chat reply is garbage
    code, out, results = run(tmp_path, "--judge-retries", "0", "--no-cache")
    assert code == 0 and out.exists()
    document = json.loads(results.read_text())
    errors = [r for r in document["results"] if r.get("answer_eval_error") or r.get("answer_relevance_error")]
    assert errors, "a garbage reply must become a per-case error, never a number"
    assert not any("answer_f1" in r for r in document["results"])
    rows = overview(out)
    assert "answer_eval_error" in rows["c10bbc8dce98a4b8832d125134a16153"]["judge errors"]


def test_the_api_key_is_in_no_output(stub, tmp_path):
    run(tmp_path)
    for path in tmp_path.iterdir():
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(path) as archive:
                blob = b"".join(archive.read(name) for name in archive.namelist())
        else:
            blob = path.read_bytes()
        assert API_KEY.encode() not in blob, path


def test_without_a_key_the_llm_metrics_are_skipped_and_the_report_says_why(tmp_path, capsys):
    out = tmp_path / "report.xlsx"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out)])  # not --quiet: the notice is shown
    assert code == 0
    assert "LLM metrics skipped" in capsys.readouterr().err
    stats = [r for r in load_workbook(out)["Statistics"].iter_rows(values_only=True)]
    assert any(r[0] == "Metrics not evaluated" for r in stats)
    oslo = overview(out)["c10bbc8dce98a4b8832d125134a16153"]
    assert "answer F1" not in oslo and "judge reason" not in oslo  # no empty judge columns in the way
    assert oslo["actual answer"]  # the answer is still there to read


def test_the_questions_generated_for_relevance_are_kept_for_the_analyst(stub, tmp_path):
    _, out, results = run(tmp_path)
    oslo = overview(out)["c10bbc8dce98a4b8832d125134a16153"]
    assert oslo["relevance questions"].startswith("• ")
    document = json.loads(results.read_text())
    (result,) = [r for r in document["results"] if r["question_id"] == "c10bbc8dce98a4b8832d125134a16153"]
    assert len(result["answer_relevance_questions"]) == 3
