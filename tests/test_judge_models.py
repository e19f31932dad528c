"""Judge models that come and go: a model that refuses a parameter is asked again without it, once,
and the run records what it sent; a retired or unknown model stops the judging at once with a
message that names it and says how to configure another, and the report is still written. A run
whose judge model is announced to shut down soon says so on stderr; the default judge is not one."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.exit_status import JUDGE_FAILED, REPORT_WRITTEN
from qareport.judge import Judge, JudgeSettings
from qareport.judge.models import DEFAULT_MODEL, WARN_WITHIN_DAYS, announced_shutdown, retirement_note

KEY = "sk-test-models"


def settings_for(server, tmp_path, **overrides) -> JudgeSettings:
    values = dict(base_url=server.url, api_key=KEY, cache_path=str(tmp_path / "judge.sqlite3"), timeout=5.0,
                  max_retries=0, concurrency=1, metrics=("answer_correctness",))
    values.update(overrides)
    return JudgeSettings(**values)


def qa(n: int) -> dict:
    return {"question_id": f"q{n}", "question_text": f"question {n}?", "status": "success",
            "reference_answer": f"a{n}; b{n}", "actual_answer": f"a{n}; c{n}"}


def test_a_model_that_refuses_temperature_is_asked_again_without_it_once_and_the_run_says_so(server, tmp_path):
    server.default_temperature_only = {"reasoner-1"}
    warned: list[str] = []
    with Judge(settings_for(server, tmp_path, model="reasoner-1"), on_warning=warned.append) as judge:
        run = judge.judge_results([qa(n) for n in range(3)])
    assert [r["answer_f1"] for r in run.results] == [0.5] * 3
    sent = [(r.status, "temperature" in r.body) for r in server.requests]
    assert sent == [(400, True), (200, False), (200, False), (200, False)]  # refused once, then never sent
    assert (run.usage.calls, run.usage.failed_calls, run.failure) == (3, 0, None)
    assert set(run.usage.adapted_parameters) == {"temperature"}
    assert run.usage.to_dict()["parameters_adapted"] == {
        "temperature": "model's default temperature (temperature 0 left out)"}
    assert "temperature refused by the model" in run.usage.summary()
    assert len(warned) == 1 and "reasoner-1 refused temperature" in warned[0]


def test_a_model_that_refuses_max_tokens_gets_max_completion_tokens(server, tmp_path):
    server.completion_tokens_only = {"reasoner-2"}
    with Judge(settings_for(server, tmp_path, model="reasoner-2", max_tokens=300)) as judge:
        run = judge.judge_results([qa(n) for n in range(2)])
    assert [r["answer_f1"] for r in run.results] == [0.5] * 2
    bodies = [(r.status, r.body.get("max_tokens"), r.body.get("max_completion_tokens")) for r in server.requests]
    assert bodies == [(400, 300, None), (200, None, 300), (200, None, 300)]
    assert run.usage.adapted_parameters == {"max_tokens": "reply limit sent as max_completion_tokens (300)"}


def test_a_model_that_refuses_both_gets_both_adapted_within_one_judgment(server, tmp_path):
    server.default_temperature_only = server.completion_tokens_only = {"reasoner-3"}
    with Judge(settings_for(server, tmp_path, model="reasoner-3", max_tokens=200)) as judge:
        run = judge.judge_results([qa(0), qa(1)])
    assert [r["answer_f1"] for r in run.results] == [0.5] * 2
    assert [r.status for r in server.requests] == [400, 400, 200, 200]
    assert set(run.usage.adapted_parameters) == {"temperature", "max_tokens"}


def test_another_bad_request_is_not_taken_for_a_refused_parameter(server, tmp_path):
    """A 400 that names no parameter the judge can leave out fails that case's metric, as before."""
    from openai_stub import Fault

    server.script(Fault(status=400, message="the prompt was filtered"))
    with Judge(settings_for(server, tmp_path)) as judge:
        run = judge.judge_results([qa(0), qa(1)])
    assert "refused this request" in run.results[0]["answer_eval_error"]
    assert run.results[1]["answer_f1"] == 0.5
    assert run.usage.adapted_parameters == {}


def test_a_retired_model_stops_the_judging_at_once_and_the_report_is_still_written(tmp_path, monkeypatch, capsys):
    with serve_stub() as server:
        server.retired_models = {"gpt-4o-mini"}
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        out = tmp_path / "report.xlsx"
        code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--no-cache",
                     "--judge-concurrency", "1", "--judge-model", "gpt-4o-mini"])
        calls = server.calls
    shown = capsys.readouterr().err
    assert code == JUDGE_FAILED
    assert out.exists() and "Overview" in load_workbook(out, read_only=True).sheetnames
    assert calls == 1  # stopped at the first refusal: nothing else sent
    assert "gpt-4o-mini" in shown and "no longer offers it (retired)" in shown
    assert "--judge-model" in shown and "has been deprecated" in shown


# -- the default judge and the shutdowns announced


def test_an_announced_shutdown_is_found_for_the_model_and_its_dated_snapshots():
    assert announced_shutdown("gpt-4o-mini") == date(2027, 1, 14)
    assert announced_shutdown("gpt-4o-mini-2024-07-18") == date(2027, 1, 14)
    assert announced_shutdown(" gpt-5-mini ") == date(2026, 12, 11)
    assert announced_shutdown("gpt-4o") == date(2027, 1, 14)  # its own entry, not gpt-4o-mini's


def test_a_model_with_no_shutdown_announced_has_none_whatever_its_name_looks_like():
    assert announced_shutdown(DEFAULT_MODEL) is None
    assert announced_shutdown(f"{DEFAULT_MODEL}-2026-03-17") is None
    for model in ("my-local-model", "gpt-4o-mini-fast", "gpt-4o-minix", "mini-2024", "2024", "", "gpt-4o-mini-"):
        assert announced_shutdown(model) is None, model


def test_the_default_judge_model_is_not_announced_to_go():
    assert announced_shutdown(DEFAULT_MODEL) is None
    assert retirement_note(DEFAULT_MODEL, today=date(2026, 11, 28)) is None


def test_the_retirement_note_starts_within_its_window_and_says_was_once_the_day_has_come():
    shutdown = date(2027, 1, 14)
    assert retirement_note("gpt-4o-mini", today=shutdown - timedelta(days=WARN_WITHIN_DAYS + 1)) is None
    ahead = retirement_note("gpt-4o-mini", today=shutdown - timedelta(days=WARN_WITHIN_DAYS))
    assert ahead is not None and ahead.startswith(
        "the judge model 'gpt-4o-mini' is announced to shut down on 2027-01-14: pin another with --judge-model")
    assert f"(the default is {DEFAULT_MODEL})" in ahead
    past = retirement_note("gpt-4o-mini", today=shutdown)
    assert past is not None and past.startswith("the judge model 'gpt-4o-mini' was announced to shut down")


def run_cli(tmp_path, *extra):
    out, results = tmp_path / "report.xlsx", tmp_path / "results.json"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--results", str(results),
                 "--cache-path", str(tmp_path / "judge.sqlite3"), "--judge-concurrency", "1", *extra])
    return code, json.loads(results.read_text())


@pytest.fixture
def stub(monkeypatch):
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield server


def test_a_run_judged_by_a_model_announced_to_go_says_so_on_stderr_and_is_judged(stub, tmp_path, capsys):
    code, document = run_cli(tmp_path, "--judge-model", "gpt-4o-mini")
    shown = capsys.readouterr().err
    assert code == REPORT_WRITTEN  # a warning, not a failure: the model still answers
    assert "the judge model 'gpt-4o-mini'" in shown and "announced to shut down on 2027-01-14" in shown
    assert f"the default is {DEFAULT_MODEL}" in shown
    assert {request.body["model"] for request in stub.requests if request.kind == "chat"} == {"gpt-4o-mini"}
    assert document["judge"]["usage"]["calls"] == stub.calls > 0


def test_a_run_judged_by_the_default_model_says_nothing_of_a_shutdown(stub, tmp_path, capsys):
    code, document = run_cli(tmp_path)
    shown = capsys.readouterr().err
    assert code == REPORT_WRITTEN
    assert "announced to shut down" not in shown
    assert {request.body["model"] for request in stub.requests if request.kind == "chat"} == {DEFAULT_MODEL}
    assert document["qareport"]["judge"]["model"] == DEFAULT_MODEL


def test_the_default_model_refusing_temperature_is_still_judged_and_the_run_records_it(stub, tmp_path, capsys):
    stub.default_temperature_only = {DEFAULT_MODEL}
    code, document = run_cli(tmp_path)
    shown = capsys.readouterr().err
    assert code == REPORT_WRITTEN
    chats = [request for request in stub.requests if request.kind == "chat"]
    assert [(r.status, "temperature" in r.body) for r in chats[:2]] == [(400, True), (200, False)]
    assert all(r.status == 200 and "temperature" not in r.body for r in chats[1:])  # refused once, then left out
    usage = document["judge"]["usage"]
    assert usage["failed_calls"] == 0 and usage["calls"] == stub.calls - 1  # the refusal is not a judgment
    assert usage["parameters_adapted"] == {"temperature": "model's default temperature (temperature 0 left out)"}
    assert all(m["failed"] == 0 and m["judged"] > 0 for m in document["judge"]["metrics"])
    assert f"{DEFAULT_MODEL} refused temperature" in shown
