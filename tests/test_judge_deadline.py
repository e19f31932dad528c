"""A judge call has a deadline, its reply's reading included, and a stopped run does not wait for
the calls in flight: against a loopback server that trickles its reply one byte at a time."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from conftest import REPO, RESPONSES, TESTCASES
from openai_stub import Fault, serve_stub

from qareport.exit_status import TERMINATED
from qareport.judge import Judge, JudgeSettings

API_KEY = "sk-test-deadline"


def settings_for(server, tmp_path, **overrides) -> JudgeSettings:
    values = dict(base_url=server.url, api_key=API_KEY, cache_path=str(tmp_path / "judge.sqlite3"),
                  timeout=1.0, max_retries=0, concurrency=2, metrics=("answer_correctness",))
    values.update(overrides)
    return JudgeSettings(**values)


def qa(n: int) -> dict:
    return {"question_id": f"q{n}", "question_text": f"question {n}?", "status": "success",
            "reference_answer": f"a{n}; b{n}", "actual_answer": f"a{n}; c{n}"}


def test_a_reply_trickled_a_byte_every_half_second_times_out_at_the_judge_timeout(server, tmp_path):
    server.script(Fault(trickle=0.5, path="chat"))  # about 300 bytes: two and a half minutes
    started = time.monotonic()
    with Judge(settings_for(server, tmp_path)) as judge:
        run = judge.judge_results([qa(n) for n in range(3)])
    elapsed = time.monotonic() - started
    assert elapsed < 5, elapsed  # the timeout (1 s), and at most one more socket wait
    errors = [r.get("answer_eval_error") for r in run.results]
    assert sum(e is not None for e in errors) == 1
    assert "timed out after 1 s" in next(e for e in errors if e is not None)
    assert sum("answer_f1" in r for r in run.results) == 2


def test_an_attempt_cut_at_the_deadline_is_retried_by_the_sdk(server, tmp_path):
    server.script(Fault(trickle=0.5, path="chat"))
    with Judge(settings_for(server, tmp_path, max_retries=1, concurrency=1)) as judge:
        run = judge.judge_results([qa(0)])
    assert run.results[0]["answer_f1"] == 0.5
    assert (run.usage.calls, run.usage.retries, run.usage.failed_calls) == (1, 1, 0)


def test_a_reply_within_the_deadline_is_read_whole_however_it_arrives(server, tmp_path):
    with serve_stub(gzip=True) as slow:
        slow.script(Fault(trickle=0.002, path="chat"))  # about 0.6 s in all, under the 3 s timeout
        with Judge(settings_for(slow, tmp_path, timeout=3.0)) as judge:
            run = judge.judge_results([qa(0)])
    assert run.results[0]["answer_f1"] == 0.5


def cached_chat_replies(path) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM replies WHERE kind = 'chat'").fetchone()[0])


def test_sigterm_stops_a_run_waiting_on_a_reply_that_never_ends_within_seconds_keeping_what_was_judged(tmp_path):
    with serve_stub() as server:
        server.script(Fault(trickle=0.5, path="chat"))  # the first chat call: minutes, under the timeout
        cache = tmp_path / "cache.sqlite3"
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}, **server.environ(API_KEY)}
        child = subprocess.Popen(
            [sys.executable, "-m", "qareport", "run", str(TESTCASES), "-r", str(RESPONSES),
             "-o", str(tmp_path / "r.xlsx"), "--cache-path", str(cache), "--judge-timeout", "600",
             "--judge-concurrency", "2", "--quiet"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while (sum(r.status == 200 for r in server.requests if r.kind == "chat") < 5
                   and time.monotonic() < deadline and child.poll() is None):
                time.sleep(0.05)
            assert child.poll() is None, child.communicate()[1]
            sent = time.monotonic()
            child.send_signal(signal.SIGTERM)
            _, err = child.communicate(timeout=30)
            stopped_in = time.monotonic() - sent
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert child.returncode == TERMINATED, err
    assert stopped_in < 10, stopped_in
    assert cached_chat_replies(cache) >= 5  # the judgments already paid for are kept for the next run
