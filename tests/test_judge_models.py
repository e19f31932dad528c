"""Judge models that come and go: a model that refuses a parameter is asked again without it, once,
and the run records what it sent; a retired or unknown model stops the judging at once with a
message that names it and says how to configure another, and the report is still written."""

from __future__ import annotations

from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.exit_status import JUDGE_FAILED
from qareport.judge import Judge, JudgeSettings

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
