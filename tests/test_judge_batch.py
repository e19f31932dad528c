"""Judging in batches (`--judge-batch`): the OpenAI Batch API of the loopback stub, never patched."""

import dataclasses
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import REPO, RESPONSES, TESTCASES
from openai_stub import BatchPlan, Fault, serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.errors import BatchesPending
from qareport.exit_status import JUDGE_BATCHES_PENDING, JUDGE_FAILED, REPORT_WRITTEN, TERMINATED, USAGE_ERROR
from qareport.judge import batch as batch_module
from qareport.judge.batch import POLL_FIRST_SEC, POLL_GROWTH
from qareport.judge.models import DEFAULT_MODEL
from qareport.judge.prices import BATCH_PRICES, DEFAULT_PRICES, ModelPrice, PriceTable
from qareport.judge.runner import Judge
from qareport.judge.settings import JudgeSettings

API_KEY = "sk-test-batch-1234567890"


@pytest.fixture
def stub(monkeypatch):
    with serve_stub() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        yield server


def run(tmp_path, name, *extra, cache="cache.sqlite3"):
    out = tmp_path / f"{name}.xlsx"
    results = tmp_path / f"{name}.json"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--results", str(results),
                 "--cache-path", str(tmp_path / cache), "--quiet", *extra])
    return code, out, results


def without_costs(value):
    """A result with every `*_cost` key taken out (batch prices are half the direct ones)."""
    if isinstance(value, dict):
        return {k: without_costs(v) for k, v in value.items() if not k.endswith("_cost")}
    if isinstance(value, list):
        return [without_costs(v) for v in value]
    return value


def judged_results(path):
    return without_costs(json.loads(path.read_text())["results"])


def usage_of(path):
    return json.loads(path.read_text())["judge"]["usage"]


def chat_batches(server):
    return [batch for batch in server.batches.values() if batch.endpoint.endswith("/chat/completions")]


@pytest.fixture
def direct(stub, tmp_path):
    """A direct run's results and the chat requests it sent, on its own cache."""
    code, _, results = run(tmp_path, "direct", cache="direct.sqlite3")
    assert code == REPORT_WRITTEN
    asked = {json.dumps(r.body, sort_keys=True) for r in stub.requests if r.kind == "chat"}
    stub.reset()
    return results, asked


def test_a_batch_run_gives_the_metrics_of_a_direct_run_at_half_the_cost_without_a_direct_call(stub, direct, tmp_path,
                                                                                            capsys):
    direct_results, direct_chat = direct
    code, out, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    assert stub.direct_calls == 0  # the README's batch section lists no request sent directly
    assert judged_results(results) == judged_results(direct_results)
    sent = [json.dumps(line["body"], sort_keys=True) for batch in chat_batches(stub) for line in batch.lines]
    assert sorted(sent) == sorted(direct_chat)  # each request once, none twice
    got, exp = usage_of(results), usage_of(direct_results)
    assert got["input_tokens"] == exp["input_tokens"] and got["output_tokens"] == exp["output_tokens"]
    assert got["cost_usd"] == pytest.approx(exp["cost_usd"] / 2)
    assert got["batch"]["batches"] == len(stub.batches) == 2  # chat, then relevance's embeddings
    summary = [" ".join(str(c).split()) for row in load_workbook(out)["Summary"].iter_rows(values_only=True)
               for c in row if c]
    assert any(text.startswith("LLM judge (in batches): answer F1: 12 judged") for text in summary)
    assert any("judged in batches (2 batch(es))" in text for text in summary)  # beside the judge cost
    assert "judge (in batches): answer F1: 12 judged" in capsys.readouterr().out


def test_a_rerun_makes_no_call_and_creates_no_batch_batch_or_not(stub, tmp_path):
    assert run(tmp_path, "first", "--judge-batch")[0] == REPORT_WRITTEN
    before = len(stub.requests)
    code, _, results = run(tmp_path, "again", "--judge-batch")
    assert code == REPORT_WRITTEN
    assert len(stub.requests) == before  # no batch, no file, no direct call: every reply from the cache
    assert usage_of(results)["calls"] == 0 and usage_of(results)["cached_calls"] > 0
    code, _, results = run(tmp_path, "direct")
    assert code == REPORT_WRITTEN and len(stub.requests) == before
    assert usage_of(results)["calls"] == 0


def test_replies_in_any_order_are_matched_by_custom_id(stub, direct, tmp_path):
    stub.batch_seed = 12345  # another shuffle of the output file
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    first = chat_batches(stub)[0]
    assert [item["custom_id"] for item in first.output] != [line["custom_id"] for line in first.lines]
    assert judged_results(results) == judged_results(direct[0])


def test_told_not_to_wait_the_run_submits_and_stops_and_a_rerun_collects_the_same_batch(stub, direct, tmp_path,
                                                                                       capsys):
    stub.batch_delay = 0.5
    code, out, _ = run(tmp_path, "batch", "--judge-batch", "--judge-batch-wait", "0")
    assert code == JUDGE_BATCHES_PENDING
    assert not out.exists()
    err = capsys.readouterr().err
    assert "1 judge batch(es) still running (batch_stub_1)" in err and "run the same command again" in err
    assert f"exit status {JUDGE_BATCHES_PENDING}" in err
    time.sleep(0.6)
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    assert len(chat_batches(stub)) == 1  # the first run's batch, collected, not submitted again
    assert judged_results(results) == judged_results(direct[0])


def start_batch_run(stub, tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}, **stub.environ(API_KEY)}
    return subprocess.Popen(
        [sys.executable, "-m", "qareport", "run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "b.xlsx"),
         "--cache-path", str(tmp_path / "cache.sqlite3"), "--judge-batch", "--quiet"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def terminate_when(child, ready):
    """SIGTERM to the child as soon as `ready()`; its stderr once it has exited."""
    try:
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        assert ready(), child.communicate()[1]
        child.send_signal(signal.SIGTERM)
        return child.communicate(timeout=30)[1]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_run_stopped_by_sigterm_after_submitting_is_picked_up_by_the_next_run(stub, direct, tmp_path):
    stub.plan_batches(BatchPlan(delay=60))
    child = start_batch_run(stub, tmp_path)
    err = terminate_when(child, lambda: any(r.path.startswith("/v1/batches/") for r in stub.requests))  # polling
    assert child.returncode == TERMINATED, err
    assert not (tmp_path / "b.xlsx").exists()
    stub.batches["batch_stub_1"].plan.delay = 0  # it finishes while nobody waits
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    assert [b.id for b in chat_batches(stub)] == ["batch_stub_1"]
    assert judged_results(results) == judged_results(direct[0])


def test_a_batch_created_by_a_run_stopped_before_it_recorded_it_is_found_by_its_file(stub, direct, tmp_path):
    stub.batch_create_delay = 1.0
    stub.plan_batches(BatchPlan(delay=60))
    child = start_batch_run(stub, tmp_path)
    err = terminate_when(child, lambda: any(r.path == "/v1/batches" for r in stub.requests))
    assert child.returncode == TERMINATED, err
    deadline = time.monotonic() + 10
    while stub.in_flight and time.monotonic() < deadline:  # the server goes on with the request
        time.sleep(0.05)
    assert list(stub.batches) == ["batch_stub_1"]  # the server made it, the stopped run did not record it
    stub.batch_create_delay = 0.0
    stub.batches["batch_stub_1"].plan.delay = 0
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    assert [b.id for b in chat_batches(stub)] == ["batch_stub_1"]  # found by its file: never submitted twice
    assert judged_results(results) == judged_results(direct[0])


def test_an_expired_batch_keeps_its_done_part_and_sends_the_rest_again(stub, direct, tmp_path):
    stub.plan_batches(BatchPlan(outcome="expired", done=10))
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    first, second = chat_batches(stub)
    answered = {item["custom_id"] for item in first.output}
    assert len(answered) == 10
    assert {line["custom_id"] for line in second.lines} == {line["custom_id"] for line in first.lines} - answered
    assert judged_results(results) == judged_results(direct[0])


def test_failed_lines_are_sent_again_in_a_new_batch(stub, direct, tmp_path):
    stub.plan_batches(BatchPlan(fail_lines=3))
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    first, second = chat_batches(stub)
    assert len(second.lines) == 3
    assert {line["custom_id"] for line in second.lines} == {item["custom_id"] for item in first.errors}
    assert judged_results(results) == judged_results(direct[0])


# two answers, each the only answer of a single-message case: a line failed is a case not judged (the
# first N lines of a batch are not: custom ids change with the stub's port, and a conversation's
# turn that fails leaves its case judged by its other turns)
FAILING_ANSWERS = ("I could not find bidding zones named NO1 or NO3", "Substation STAVANGER contains one transformer")


def test_lines_that_fail_twice_are_not_judged_and_counted_like_any_judgment_the_api_failed(stub, tmp_path, capsys):
    plan = BatchPlan(fail_matching=tuple(f"<answer>\\n{text}" for text in FAILING_ANSWERS), kind="chat")
    stub.plan_batches(plan, dataclasses.replace(plan))
    code, out, results = run(tmp_path, "batch", "--judge-batch")
    assert code == JUDGE_FAILED and out.exists()
    document = json.loads(results.read_text())
    assert sum(metric["not_judged"] for metric in document["judge"]["metrics"]) == 2
    assert "the batch could not answer this request (server_error: stub: this line failed)" in results.read_text()
    assert "2 judgment(s) could not be obtained" in capsys.readouterr().err
    assert [len(batch.errors) for batch in chat_batches(stub)] == [2, 2]  # the same two lines, sent twice


def test_a_conversation_turn_not_judged_leaves_its_case_judged_by_its_other_turns(stub, tmp_path, capsys):
    # the turn-1 answer of a two-turn case: the case's answer relevance is the mean over the turns judged
    plan = BatchPlan(fail_matching=("<answer>\\nAccording to the IMF World Economic Outlook, Germany",), kind="chat")
    stub.plan_batches(plan, dataclasses.replace(plan))
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == JUDGE_FAILED
    assert sum(metric["not_judged"] for metric in json.loads(results.read_text())["judge"]["metrics"]) == 0
    assert "1 judgment(s) could not be obtained" in capsys.readouterr().err


def test_a_failed_batch_leaves_its_judgments_not_judged_and_the_report_written(stub, tmp_path):
    stub.plan_batches(BatchPlan(outcome="failed"))
    code, out, results = run(tmp_path, "batch", "--judge-batch")
    assert code == JUDGE_FAILED and out.exists()
    assert len(chat_batches(stub)) == 1  # a batch refused as a whole is not sent again
    rows = json.loads(results.read_text())["results"]
    assert any("judge batch batch_stub_1 failed: stub: the batch failed" in str(row.get("answer_relevance_error"))
               for row in rows)


def test_an_unusable_batch_reply_gets_its_corrective_retry_in_the_next_batch(stub, direct, tmp_path):
    stub.script(Fault(content="not json", path="chat"))  # the first line of the first batch
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == REPORT_WRITTEN
    first, second = chat_batches(stub)[:2]
    assert len(second.lines) == 1 and len(second.lines[0]["body"]["messages"]) == 3  # told what was wrong
    assert second.lines[0]["body"]["messages"][1]["content"] == "not json"
    assert judged_results(results) == judged_results(direct[0])


def test_the_config_file_turns_batch_judging_on(stub, tmp_path, monkeypatch):
    (tmp_path / "qareport.yaml").write_text("judge:\n  batch: true\n")
    monkeypatch.chdir(tmp_path)
    code, _, results = run(tmp_path, "batch")
    assert code == REPORT_WRITTEN
    assert stub.batches and stub.direct_calls == 0
    assert usage_of(results)["batch"]["batches"] == 2


@pytest.mark.parametrize(("extra", "exp"), [
    (("--no-cache",), "judging in batches needs the judge cache"),
    (("--judge-budget", "1"), "a judge budget (--judge-budget / judge.budget) is not applied to batches"),
])
def test_batch_judging_without_what_it_needs_is_a_usage_error(stub, tmp_path, capsys, extra, exp):
    code, out, _ = run(tmp_path, "batch", "--judge-batch", *extra)
    assert code == USAGE_ERROR and not out.exists()
    assert exp in capsys.readouterr().err
    assert not stub.requests


# --- polling, through the library -------------------------------------------------------------


def judge_settings(server, tmp_path, **extra):
    return JudgeSettings(base_url=server.url, api_key=API_KEY, cache_path=str(tmp_path / "judge.sqlite3"),
                         metrics=("answer_correctness",), batch=True, **extra)


RESULTS = [{"status": "success", "question_text": f"Q{n}?", "reference_answer": "a; b",
            "actual_answer": "a" if n % 2 else "a; b"} for n in range(4)]


def retrieve_times(server):
    return [r.started for r in server.requests if r.kind == "batches" and r.path.count("/") == 3]


def test_polling_collects_a_one_second_batch_within_a_few_seconds(stub, tmp_path):
    stub.batch_delay = 1.0
    started = time.monotonic()
    with Judge(judge_settings(stub, tmp_path)) as judge:
        run_ = judge.judge_results(RESULTS)
    elapsed = time.monotonic() - started
    assert run_.failure is None and all("answer_f1" in r for r in run_.results)
    assert elapsed < 1.0 + 2.0
    looks = retrieve_times(stub)
    gaps = [b - a for a, b in itertools.pairwise(looks)]
    assert len(looks) <= 4  # at 0, 0.5, 1.25, 2.4 s: not polled every few milliseconds
    assert gaps[0] == pytest.approx(POLL_FIRST_SEC, abs=0.2)
    assert gaps[1] == pytest.approx(POLL_FIRST_SEC * POLL_GROWTH, abs=0.2)


def test_the_polling_interval_never_passes_judge_batch_poll(stub, tmp_path):
    stub.batch_delay = 2.0
    with Judge(judge_settings(stub, tmp_path, batch_poll=0.6)) as judge:
        assert judge.judge_results(RESULTS).failure is None
    looks = retrieve_times(stub)
    gaps = [b - a for a, b in itertools.pairwise(looks)]
    assert len(gaps) >= 3 and max(gaps) < 0.6 + 0.2


def test_the_batch_progress_says_the_state_of_each_batch(stub, tmp_path):
    told = []
    with Judge(judge_settings(stub, tmp_path)) as judge:
        judge.judge_results(RESULTS, on_progress=told.append)
    text = "\n".join(event.finished for event in told if event.finished)
    assert f"judge batch batch_stub_1: submitted 4 chat request(s) for {DEFAULT_MODEL}" in text
    assert "judge batch batch_stub_1: completed, 4/4 done" in text
    assert "judge batch batch_stub_1: completed; 4 of 4 repl(ies) collected" in text
    assert "judged in batches (1 batch(es), at batch prices)" in text


def test_a_wait_that_runs_out_stops_the_run_with_the_batches_still_running(stub, tmp_path):
    stub.batch_delay = 30
    started = time.monotonic()
    with Judge(judge_settings(stub, tmp_path, batch_wait=0.4)) as judge, pytest.raises(BatchesPending) as raised:
        judge.judge_results(RESULTS)
    assert 0.4 <= time.monotonic() - started < 2.0
    assert raised.value.batch_ids == ("batch_stub_1",)
    assert not stub.direct_calls


def test_a_stored_batch_the_api_no_longer_knows_is_asked_again(stub, tmp_path):
    stub.batch_delay = 30
    with Judge(judge_settings(stub, tmp_path, batch_wait=0)) as judge, pytest.raises(BatchesPending):
        judge.judge_results(RESULTS)
    del stub.batches["batch_stub_1"]  # deleted on the server side: GET answers 404
    stub.batch_delay = 0
    with Judge(judge_settings(stub, tmp_path)) as judge:
        run_ = judge.judge_results(RESULTS)
    assert run_.failure is None and all("answer_f1" in r for r in run_.results)
    assert list(stub.batches) == ["batch_stub_2"] and len(stub.batches["batch_stub_2"].lines) == 4


def test_a_batch_cancelled_from_outside_is_not_sent_again_and_its_judgments_are_not_judged(stub, tmp_path):
    import openai

    stub.batch_delay = 30
    with Judge(judge_settings(stub, tmp_path, batch_wait=0)) as judge, pytest.raises(BatchesPending):
        judge.judge_results(RESULTS)
    with openai.OpenAI(base_url=stub.url, api_key=API_KEY) as sdk:  # someone cancels it on the dashboard
        assert sdk.batches.cancel("batch_stub_1").status == "cancelled"
    with Judge(judge_settings(stub, tmp_path)) as judge:
        run_ = judge.judge_results(RESULTS)
    assert run_.not_judged == 4 and "was cancelled" in (run_.failure or "")
    assert list(stub.batches) == ["batch_stub_1"]


def test_batch_files_stay_within_the_request_and_size_limits(stub, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_module, "MAX_REQUESTS", 3)
    with Judge(judge_settings(stub, tmp_path)) as judge:
        assert judge.judge_results(RESULTS).failure is None
    assert [len(b.lines) for b in stub.batches.values()] == [3, 1]
    single = next(b for b in stub.batches.values() if len(b.lines) == 1)
    line_bytes = len(stub.files[single.input_file_id])  # one line, of the longest kind or nearly
    stub.batches.clear()
    stub.batches_created = 0
    monkeypatch.setattr(batch_module, "MAX_REQUESTS", 50_000)
    monkeypatch.setattr(batch_module, "MAX_FILE_BYTES", 2 * line_bytes + 8)  # room for two lines, not three
    with Judge(judge_settings(stub, tmp_path / "other")) as judge:
        assert judge.judge_results(RESULTS).failure is None
    assert [len(b.lines) for b in stub.batches.values()] == [2, 2]


def test_an_estimate_with_judge_batch_sends_nothing(stub, tmp_path, capsys):
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "--cache-path", str(tmp_path / "c.sqlite3"),
                 "--estimate", "--judge-batch"])
    assert code == REPORT_WRITTEN
    assert "in batches" in capsys.readouterr().out
    assert not stub.requests


# --- batch prices -------------------------------------------------------------------------------


def test_batch_prices_are_half_the_standard_ones():
    for model, price in BATCH_PRICES.items():
        exp = DEFAULT_PRICES[model]
        assert price.input_per_million == pytest.approx(exp.input_per_million / 2)
        assert price.output_per_million == pytest.approx(exp.output_per_million / 2)
    table = PriceTable({"my-model": ModelPrice(2.0, 4.0), "gpt-4o-mini": ModelPrice(1.0, 1.0)})
    assert table.cost(("my-model",), 1_000_000, 1_000_000, batch=True) == pytest.approx(3.0)
    assert table.cost(("gpt-4o-mini",), 1_000_000, batch=True) == pytest.approx(0.5)  # an override wins
    assert table.cost(("gpt-4o-mini-2024-07-18",), 1_000_000, batch=True) == pytest.approx(0.5)
    assert PriceTable().cost(("gpt-4o-mini-2024-07-18",), 1_000_000, 1_000_000, batch=True) == pytest.approx(0.375)


def test_two_batch_runs_on_one_cache_never_submit_the_same_request_twice(stub, direct, tmp_path):
    """The second run starts while the first has uploaded its file and is still creating its batch:
    it finds the first's note, leaves it, and waits for that batch instead of submitting its own."""
    stub.batch_create_delay = 2.0
    first = start_batch_run(stub, tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not any(r.path == "/v1/batches" for r in stub.requests) and time.monotonic() < deadline:
            time.sleep(0.02)  # the first run's file is uploaded and noted; its batch is being created
        assert first.poll() is None, first.communicate()[1]
        code, _, results = run(tmp_path, "batch", "--judge-batch")
        _, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert (code, first.returncode) == (REPORT_WRITTEN, REPORT_WRITTEN), err
    submitted = [line["custom_id"] for batch in stub.batches.values() for line in batch.lines]
    assert submitted and len(submitted) == len(set(submitted))  # each request in one batch only
    assert judged_results(results) == judged_results(direct[0])


def test_a_note_is_live_while_its_run_is_alive_here_or_recent_elsewhere():
    from qareport.judge.batch import INTENT_GRACE_SEC, _live_intent

    here, now = socket.gethostname(), time.time()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert _live_intent({"host": here, "pid": os.getpid(), "noted": now - 10 * INTENT_GRACE_SEC}, now=now)
    assert not _live_intent({"host": here, "pid": dead.pid, "noted": now}, now=now)
    assert _live_intent({"host": "elsewhere.example", "pid": 1, "noted": now - 1}, now=now)
    assert not _live_intent({"host": "elsewhere.example", "pid": 1, "noted": now - INTENT_GRACE_SEC - 1}, now=now)
    assert not _live_intent({}, now=now)  # a note of an older qareport: its run is long gone


def test_a_completed_batch_whose_output_lacks_lines_says_so_not_that_it_was_cancelled(stub, tmp_path, capsys):
    plan = BatchPlan(lost_lines=2, kind="chat")
    stub.plan_batches(plan, dataclasses.replace(plan))
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == JUDGE_FAILED
    said = capsys.readouterr().err + results.read_text()
    assert re.search(r"judge batch batch_stub_\d+ completed, but its output lacks 2 of \d+ replies", said)
    assert "cancelled" not in said


def test_a_completed_batch_whose_output_is_not_json_lines_says_so(stub, tmp_path, capsys):
    plan = BatchPlan(output_text=b"<html>gateway error</html>\n", kind="chat")
    stub.plan_batches(plan, dataclasses.replace(plan))
    code, _, results = run(tmp_path, "batch", "--judge-batch")
    assert code == JUDGE_FAILED
    said = capsys.readouterr().err + results.read_text()
    assert re.search(r"judge batch batch_stub_\d+ completed, but its output is not JSON Lines", said)
    assert "cancelled" not in said
