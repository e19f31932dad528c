"""What each fault of the judge becomes, against a real OpenAI-compatible server on loopback
(tests/openai_stub.py) that misbehaves: embeddings replies that cannot be used fail the cases they
cover (never a wrong number, never the run); a judge that is down still gives the report, with the
judged metrics marked not evaluated and exit status JUDGE_FAILED; the judge's figures are defined
once and read the same everywhere."""

from __future__ import annotations

import json
import math
import socket

import pytest
from conftest import RESPONSES, TESTCASES, typed_row
from openai_stub import (
    Fault,
    duplicate_indexes,
    generated_questions,
    infinite_component,
    nan_component,
    one_vector_less,
    reversed_indexes,
    serve_stub,
    string_indexes,
    stub_embedding,
    zero_vectors,
)
from openpyxl import load_workbook

from qareport.cli import main
from qareport.errors import JudgeOutputError
from qareport.exit_status import GATE_FAILED, JUDGE_FAILED, REPORT_WRITTEN
from qareport.headline import headline_metrics, score_distribution
from qareport.judge import Judge, JudgeSettings
from qareport.judge.answer_relevance import decode_vectors, encode_vectors, relevance_score

KEY = "sk-test-faults-0123456789"
EVALUATED = 26  # cases of testcases/ with status success
BAD_REPLIES = {
    "NaN": (nan_component, "not a finite number"),
    "Infinity": (infinite_component, "not a finite number"),
    "all-zero vectors": (zero_vectors, "all zeros"),
    "indexes as text": (string_indexes, "not an integer"),
    "reversed indexes": (reversed_indexes, "not in the order of their indexes"),
    "duplicate indexes": (duplicate_indexes, "each once"),
    "a vector short": (one_vector_less, "vectors for"),
}


@pytest.fixture
def stub(monkeypatch):
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield server


def run(tmp_path, *extra: str) -> int:
    return main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "report.xlsx"),
                 "--results", str(tmp_path / "results.json"), "--no-cache", "--judge-concurrency", "1", *extra])


def sheet(tmp_path, name: str) -> list[tuple]:
    return list(load_workbook(tmp_path / "report.xlsx")[name].iter_rows(values_only=True))


def overview(tmp_path) -> dict[str, dict]:
    rows = sheet(tmp_path, "Overview")
    return {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}


def judge_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("judge: "))


def qa(question: str, answer: str = "OSLO T1; OSLO T2") -> dict:
    return {"question_id": question, "question_text": question, "status": "success", "actual_answer": answer}


def relevance_judge(server, tmp_path) -> Judge:
    return Judge(JudgeSettings(base_url=server.url, api_key=KEY, use_cache=False, max_retries=0,
                               metrics=("answer_relevance",), cache_path=str(tmp_path / "unused.sqlite3")))


def expected_relevance(result: dict) -> float:
    questions = generated_questions(result["actual_answer"], 3)
    return relevance_score(stub_embedding(result["question_text"]), [stub_embedding(q) for q in questions],
                           [False] * 3)


# --- 1, 2: embeddings replies ----------------------------------------------------------------------


def test_nan_in_every_embeddings_reply_fails_answer_relevance_and_never_the_run(stub, tmp_path, capsys):
    stub.always(Fault(data=nan_component, path="embeddings"))
    assert run(tmp_path) == REPORT_WRITTEN  # unusable replies are failed cases: the judge itself answered
    out = capsys.readouterr().out
    assert f"answer relevance: 0 judged, {EVALUATED} failed" in judge_line(out)
    oslo = overview(tmp_path)["c10bbc8dce98a4b8832d125134a16153"]
    assert oslo["answer relevance"] is None
    assert "not a finite number" in oslo["judge errors"]
    assert isinstance(oslo["answer F1"], (int, float))  # the other metric kept its judgment


@pytest.mark.parametrize("name", list(BAD_REPLIES))
def test_an_embeddings_reply_that_cannot_be_used_fails_the_cases_it_covers(stub, tmp_path, name):
    mangle, reason = BAD_REPLIES[name]
    stub.always(Fault(data=mangle, path="embeddings"))
    results = [qa(f"question {n}?", f"answer {n}") for n in range(12)]  # one batch of 48 inputs at first
    with relevance_judge(stub, tmp_path) as judge:
        run = judge.judge_results(results)
    for judged in run.results:
        assert "answer_relevance" not in judged, name
        assert reason in judged["answer_relevance_error"], judged["answer_relevance_error"]
        assert not judged["answer_relevance_error"].startswith("not judged")  # a reply came: failed
    assert run.failure is None and run.not_judged == 0
    assert stub.embedding_calls > 1  # asked again in smaller batches, down to one case, before failing


@pytest.mark.parametrize("name", ["NaN", "indexes as text", "reversed indexes", "duplicate indexes",
                                  "all-zero vectors"])
def test_one_bad_embeddings_reply_is_asked_again_and_every_value_is_right(stub, tmp_path, name):
    stub.script(Fault(data=BAD_REPLIES[name][0], path="embeddings"))
    results = [qa(f"question {n}?", f"answer {n}") for n in range(12)]
    with relevance_judge(stub, tmp_path) as judge:
        run = judge.judge_results(results)
    for judged in run.results:
        assert judged["answer_relevance"] == pytest.approx(expected_relevance(judged), abs=1e-6), name
    assert run.failure is None


def test_cached_vectors_that_are_not_finite_or_all_zero_are_asked_for_again():
    good = [[0.5, -0.25], [0.125, 1.0]]
    assert decode_vectors(encode_vectors(good), 2) == good
    assert decode_vectors(encode_vectors([[math.nan, 1.0], [0.5, 0.5]]), 2) is None
    assert decode_vectors(encode_vectors([[0.0, 0.0], [0.5, 0.5]]), 2) is None


def test_a_custom_metric_value_that_is_not_finite_is_an_unusable_reply():
    from qareport.ge6_config import CustomEvaluation
    from qareport.judge.custom_metric import check_reply

    evaluation = CustomEvaluation(name="faith", instructions="Judge.", inputs=("actual_answer",),
                                  outputs=(("score", "a fraction"), ("why", "a reason")))
    assert check_reply("0.5\tgood", evaluation) == {"score": 0.5, "why": "good"}
    for word in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(JudgeOutputError, match="not a finite number"):
            check_reply(f"{word}\tgood", evaluation)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_score_that_is_not_finite_is_never_binned_or_averaged(bad):
    rows = [typed_row("a", status="success", kind="qa", answer_f1=0.5),
            typed_row("b", status="success", kind="qa", answer_f1=bad)]
    assert sum(score_distribution(rows, "answer_f1")) == 1
    (headline,) = [item for item in headline_metrics(rows) if item.metric == "answer_f1"]
    assert headline.mean == 0.5 and headline.cases == 1


# --- 3: a judge that is down -------------------------------------------------------------------


def test_a_rejected_key_writes_the_report_marks_the_judged_metrics_not_evaluated_and_exits_4(stub, tmp_path, capsys):
    stub.api_key = "the-right-key"
    assert run(tmp_path, "-q") == JUDGE_FAILED
    captured = capsys.readouterr()
    assert "JUDGE FAILED: the judge at" in captured.err and "rejected the API key" in captured.err
    assert KEY not in captured.err + captured.out
    assert stub.calls == 1  # the 401 stopped the judge at once: no case was sent after it
    oslo = overview(tmp_path)["c10bbc8dce98a4b8832d125134a16153"]
    assert "not judged: the judge was stopped" in oslo["judge errors"]
    assert "answer not judged (the judge failed)" in oslo["reason"]
    assert oslo["answer F1"] is None and oslo["steps score"] is not None  # everything else was computed

    summary = sheet(tmp_path, "Summary")
    why = next(row[column + 1] for row in summary for column, value in enumerate(row[:-1]) if value == "why")
    assert why.startswith("the judge failed: the judge at")  # the Summary runs the reason on over a few rows
    statistics = sheet(tmp_path, "Statistics")
    start = next(i for i, row in enumerate(statistics) if row[0] == "Metrics not evaluated")
    assert statistics[start + 2][0].startswith("answer F1, answer relevance, ")  # the metrics it covers
    assert "judgment(s) not obtained" in statistics[start + 2][0]
    assert statistics[start + 2][1].startswith("the judge failed: the judge at ")
    assert "rejected the API key" in statistics[start + 2][1]
    document = json.loads((tmp_path / "results.json").read_text())
    assert any(text.startswith("the judge failed") for text in document["not_evaluated"].values())
    f1 = next(m for m in document["judge"]["metrics"] if m["key"] == "answer_f1")
    assert f1["judged"] == 0 and f1["failed"] == 0 and f1["not_judged"] > 0


def test_an_unreachable_base_url_writes_the_report_and_exits_4(tmp_path, monkeypatch, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert run(tmp_path, "--judge-retries", "0") == JUDGE_FAILED
    assert "cannot reach the judge" in capsys.readouterr().err
    assert (tmp_path / "report.xlsx").exists() and (tmp_path / "results.json").exists()


def test_a_judge_whose_every_call_fails_stops_after_ten_in_a_row_and_exits_4(stub, tmp_path, capsys):
    stub.always(Fault(status=500))
    assert run(tmp_path, "--judge-retries", "0") == JUDGE_FAILED
    assert stub.calls == 10  # then the calls not yet sent were not sent
    err = capsys.readouterr().err
    assert "failed 10 calls in a row" in err
    document = json.loads((tmp_path / "results.json").read_text())
    metrics = {m["key"]: m for m in document["judge"]["metrics"]}
    assert metrics["answer_relevance"]["not_judged"] == EVALUATED and metrics["answer_relevance"]["judged"] == 0


def test_a_request_the_judge_refuses_fails_that_case_only_and_the_run_exits_0(stub, tmp_path, capsys):
    """HTTP 400 (a prompt too long, a content filter) is the server answering about one request: that
    case's metric failed, as with an unusable reply; the judge did not fail and the other calls go on."""
    stub.script(Fault(status=400, path="chat", message="maximum context length exceeded"))
    assert run(tmp_path, "--judge-retries", "0") == 0
    assert "JUDGE FAILED" not in capsys.readouterr().err
    document = json.loads((tmp_path / "results.json").read_text())
    metrics = {m["key"]: m for m in document["judge"]["metrics"]}
    assert all(m["not_judged"] == 0 for m in metrics.values())
    errors = [row["judge errors"] for row in overview(tmp_path).values() if row.get("judge errors")]
    assert len(errors) == 1 and "the judge refused this request (HTTP 400: " in errors[0] and "maximum context length exceeded" in errors[0]


def test_a_failed_gate_takes_precedence_over_a_failed_judge(stub, tmp_path):
    stub.api_key = "the-right-key"
    assert run(tmp_path, "-q", "--fail-under", "macro_recall=0.99") == GATE_FAILED


# --- 4: one definition, one number ------------------------------------------------------------


def test_judge_figures_agree_everywhere_on_a_mix_of_good_unusable_and_failed_replies(stub, tmp_path, capsys):
    stub.script(Fault(content="not json", path="chat"), Fault(content="still not json", path="chat"),  # unusable
                Fault(status=500, path="chat"),  # not judged (no retry: --judge-retries 0)
                Fault(content="not json", path="chat"), Fault(content="not json", path="chat"),
                Fault(status=503, path="chat"))
    assert run(tmp_path, "--judge-retries", "0") == JUDGE_FAILED
    out = capsys.readouterr().out
    document = json.loads((tmp_path / "results.json").read_text())
    metrics = {m["label"]: m for m in document["judge"]["metrics"]}
    f1 = metrics["answer F1"]
    assert "answer relevance" in metrics
    assert sum(m["failed"] for m in metrics.values()) >= 1 and sum(m["not_judged"] for m in metrics.values()) >= 1

    summary = sheet(tmp_path, "Summary")
    headline = {row[0]: row for row in summary if row[0] in metrics}
    statistics = sheet(tmp_path, "Statistics")
    title = next(i for i, row in enumerate(statistics) if row[0] == "LLM-judged metrics")
    header = next(i for i, row in enumerate(statistics) if i > title and row[0] == "metric")  # after the note's lines
    table = {row[0]: row for row in statistics[header + 1: header + 1 + len(metrics)]}
    console = judge_line(out)
    note = next(row[0] for row in summary if isinstance(row[0], str) and row[0].startswith("LLM judge: "))
    rows = document["cases"]
    for label, metric in metrics.items():
        described = (f"{label}: {metric['judged']} judged, {metric['failed']} failed"
                     + (f", {metric['not_judged']} not judged" if metric["not_judged"] else ""))
        assert described in console
        assert table[label][1:5] == (pytest.approx(metric["mean"]), metric["judged"], metric["failed"],
                                     metric["not_judged"])
        assert metric["judged"] + metric["failed"] + metric["not_judged"] + metric["not_applicable"] == EVALUATED
        if label in headline:  # the headline row rests on exactly the judged cases, with the same mean
            assert headline[label][1] == pytest.approx(metric["mean"]) and headline[label][3] == metric["judged"]
            unscored = sum(1 for row in rows if row["status"] != "success" and label == "answer F1"
                           and row.get("targets") and "reference_answer" in row["targets"])
            if label == "answer F1":
                assert headline[label][4] == unscored + metric["failed"] + metric["not_judged"]
            assert described in note or not note.endswith(described[:10])
            # the results file's case rows too
            assert sum(1 for row in rows if row["status"] == "success"
                       and isinstance(row.get(metric["key"]), (int, float))) == metric["judged"]
    assert "answer F1: " in note and f"{f1['judged']} judged, {f1['failed']} failed" in note


# --- 5, 6: settings and the console ---------------------------------------------------------


def test_a_bad_judge_setting_in_the_config_file_is_a_usage_error_without_a_key(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qareport.yaml").write_text("judge:\n  timeout: soon\n")
    assert run(tmp_path) == 2
    err = capsys.readouterr().err
    assert "qareport.yaml" in err and "timeout" in err
    assert not (tmp_path / "report.xlsx").exists()


def test_quiet_prints_no_routine_notice(tmp_path, capsys):
    assert run(tmp_path, "-q") == REPORT_WRITTEN
    err = capsys.readouterr().err
    assert "LLM metrics skipped" not in err
    assert "has no response" in err  # problems are still printed
    assert run(tmp_path) == REPORT_WRITTEN
    assert "LLM metrics skipped" in capsys.readouterr().err  # without -q the notice is there


def test_quiet_prints_no_judge_usage_line(stub, tmp_path, capsys):
    assert run(tmp_path, "-q") == REPORT_WRITTEN
    captured = capsys.readouterr()
    assert "API calls" not in captured.err
    assert judge_line(captured.out)  # the result lines stay


def test_a_rejected_key_sends_no_more_than_the_calls_already_in_flight(stub, tmp_path):
    stub.api_key = "the-right-key"
    stub.latency = 0.05  # the first calls overlap, as they do against a real server
    results = [qa(f"question {n}?") for n in range(60)]
    settings = JudgeSettings(base_url=stub.url, api_key=KEY, use_cache=False, concurrency=8,
                             cache_path=str(tmp_path / "unused.sqlite3"))
    with Judge(settings) as judge:
        run = judge.judge_results(results)
    assert stub.calls <= 8  # 60 cases: only the calls already sent when the 401 came
    assert run.not_judged == 60 and "rejected the API key" in run.failure  # answer relevance of each
