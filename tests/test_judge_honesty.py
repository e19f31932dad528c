"""The judge never flatters the report, and a rerun of unchanged inputs costs nothing: against a
real OpenAI-compatible server on loopback, with faults injected."""

from __future__ import annotations

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import Fault, serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.exit_status import JUDGE_FAILED


@pytest.fixture
def stub(monkeypatch):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


def run(tmp_path, *extra: str) -> int:
    return main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "report.xlsx"),
                 "--cache-path", str(tmp_path / "cache.sqlite3"), "--judge-concurrency", "1", *extra])


def rows(path, sheet):
    return [row for row in load_workbook(path)[sheet].iter_rows(values_only=True)]


def test_a_rerun_after_a_corrective_retry_makes_no_api_call(stub, tmp_path, capsys):
    stub.script(Fault(content="Sure! Here is my assessment.", path="chat"))  # the first reply is unusable
    assert run(tmp_path, "-q") == 0
    first = stub.chat_calls + stub.embedding_calls
    assert first > 0
    assert run(tmp_path, "-q") == 0
    assert stub.chat_calls + stub.embedding_calls == first  # every judgment came from the cache


def test_answer_relevance_that_failed_everywhere_keeps_its_row_with_its_failures(stub, tmp_path, capsys):
    stub.script(*[Fault(status=500, path="embeddings") for _ in range(200)])
    assert run(tmp_path, "--judge-retries", "0") == JUDGE_FAILED  # judgments not obtained: the judge failed
    out = capsys.readouterr().out
    report = tmp_path / "report.xlsx"

    summary = rows(report, "Summary")
    relevance = next(row for row in summary if row[0] == "answer relevance")
    assert relevance[1] is None and relevance[4] >= 20  # no mean, the failures beside it (not scored)
    assert any(isinstance(row[0], str) and row[0].startswith("LLM judge:") and "FAILED FOR MOST CASES" in row[0]
               for row in summary)

    statistics = rows(report, "Statistics")
    title = next(i for i, row in enumerate(statistics) if row[0] == "LLM-judged metrics")
    header = next(i for i, row in enumerate(statistics) if i > title and row[0] == "metric")  # after the note's lines
    assert statistics[header][:7] == ("metric", "mean", "judged", "failed", "not judged", "not applicable",
                                      "note")
    table = {row[0]: row for row in statistics[header + 1: header + 5]}
    assert table["answer relevance"][2] == 0 and table["answer relevance"][4] >= 20  # API errors: not judged
    assert table["answer relevance"][6].startswith("FAILED FOR MOST CASES")
    assert table["answer F1"][2] > 0 and table["answer F1"][3:5] == (0, 0)  # correctness was not hurt

    judge_line = next(line for line in out.splitlines() if line.startswith("judge: "))
    assert "answer relevance: 0 judged, 0 failed" in judge_line and "(FAILED FOR MOST CASES)" in judge_line


def test_garbage_replies_for_half_the_cases_are_counted_as_failures_not_dropped(stub, tmp_path, capsys):
    # the first 30 chat replies are garbage: the early cases fail, also after their corrective retry
    stub.script(*[Fault(content="not json at all", path="chat") for _ in range(30)])
    assert run(tmp_path) == 0
    out = capsys.readouterr().out
    summary = {row[0]: row for row in rows(tmp_path / "report.xlsx", "Summary")}
    judge_line = next(line for line in out.splitlines() if line.startswith("judge: "))
    counted = {part.split(": ")[0]: part.split(": ")[1] for part in judge_line.removeprefix("judge: ").split("; ")}
    failed = {label: int(text.split(", ")[1].split(" failed")[0]) for label, text in counted.items()}
    assert sum(failed.values()) > 0
    for label in ("answer F1", "answer relevance"):
        assert summary[label][4] >= failed[label]  # the failures stand among the cases not scored


def test_one_bad_embeddings_reply_costs_no_case_its_relevance(stub, tmp_path, capsys):
    stub.script(Fault(status=500, path="embeddings"))
    assert run(tmp_path, "--judge-retries", "0") == 0
    out = capsys.readouterr().out
    judge_line = next(line for line in out.splitlines() if line.startswith("judge: "))
    assert "answer relevance: 26 judged, 0 failed;" in judge_line  # every evaluated case
    assert stub.embedding_calls >= 2  # the batch was asked again, in parts


def test_judgments_that_failed_are_tried_again_on_the_next_run_and_the_console_says_how_many(stub, tmp_path, capsys):
    stub.script(*[Fault(content="not json at all", path="chat") for _ in range(4)])  # two judgments fail
    assert run(tmp_path, "-q") == 0
    capsys.readouterr()
    calls = stub.chat_calls
    assert run(tmp_path) == 0  # the judge's usage line is a routine notice: not printed with -q
    err = capsys.readouterr().err
    assert 0 < stub.chat_calls - calls <= 4  # only the failed ones were asked again
    assert "judgment(s) that failed in an earlier run tried again" in err
