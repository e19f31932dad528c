"""The direct judge's speed without changing what it judges (issue 21, item 6): how it reads
replies, waits for its workers and stores replies. The figures are benchmarks/bench_judge.py's."""

from __future__ import annotations

import gc
import shutil
import ssl
import subprocess
import threading
import time

import pytest
from openai_stub import Fault, serve_stub

from qareport.judge import Judge, JudgeSettings
from qareport.judge.cache import JudgeCache


def settings_for(server, tmp_path, **overrides) -> JudgeSettings:
    values = dict(base_url=server.url, api_key="sk-test", cache_path=str(tmp_path / "judge.sqlite3"),
                  timeout=5.0, max_retries=0, metrics=("answer_correctness",))
    values.update(overrides)
    return JudgeSettings(**values)


def qa(n: int) -> dict:
    return {"question_id": f"q{n}", "question_text": f"question {n}?", "status": "success",
            "reference_answer": f"a{n}; b{n}", "actual_answer": f"a{n}; c{n}"}


@pytest.mark.parametrize("reply", [
    {"id": "chatcmpl-x", "object": "chat.completion", "model": "gpt-4o-mini"},
    {"id": "chatcmpl-x", "choices": [], "usage": None},
    {"choices": [{"message": None, "finish_reason": "stop"}]},
    {"choices": "not a list", "usage": {"prompt_tokens": "many"}},
    ["not", "an", "object"],
])
def test_a_malformed_chat_completion_fails_that_cases_metric_with_a_message_and_the_run_goes_on(
        server, tmp_path, reply):
    server.script(Fault(reply=reply), Fault(reply=reply))  # the first request and its corrective retry
    with Judge(settings_for(server, tmp_path, concurrency=1)) as judge:
        run = judge.judge_results([qa(0), qa(1)])
    failed = [r for r in run.results if "answer_eval_error" in r]
    assert len(failed) == 1 and "answer_f1" not in failed[0]
    assert "could not be used" in failed[0]["answer_eval_error"]
    assert sum("answer_f1" in r for r in run.results) == 1
    assert run.failure is None  # the judge answered: the reply, not the call, failed


def test_a_reply_read_from_json_gives_the_same_keys_usage_and_cache_as_before(server, tmp_path):
    server.usage = (120, 30)
    with Judge(settings_for(server, tmp_path, model="gpt-4o-mini")) as judge:  # its prices below
        first = judge.judge_results([qa(0)])
        again = judge.judge_results([qa(0)])
    judged = first.results[0]
    assert (judged["answer_reference_claims_count"], judged["answer_actual_claims_count"],
            judged["answer_matching_claims_count"], judged["answer_f1"]) == (2, 2, 1, 0.5)
    assert (first.usage.input_tokens, first.usage.output_tokens) == (120, 30)
    assert first.usage.cost_usd == pytest.approx((120 * 0.15 + 30 * 0.60) / 1e6)
    assert again.usage.calls == 0 and again.usage.cached_calls == 1
    assert again.results[0]["answer_f1"] == 0.5
    body = server.requests[0].body
    assert set(body) == {"model", "messages", "temperature", "response_format"}


def _runner_thread_cpu(settings: JudgeSettings, cases: int) -> float:
    """CPU time of the thread that runs `judge_results` (the workers' is not counted); the
    garbage collector is held off, whose passes grow with everything alive in the test process."""
    results = [qa(n) for n in range(cases)]
    with Judge(settings) as judge:
        gc.disable()
        try:
            started = time.thread_time()
            run = judge.judge_results(results)
            spent = time.thread_time() - started
        finally:
            gc.enable()
    assert run.usage.calls == cases
    return spent


def test_the_runners_wait_for_finished_work_does_not_grow_with_the_work_still_pending(server, tmp_path):
    """futures.wait(FIRST_COMPLETED) over every pending future cost the runner's thread time in
    proportion to the tasks still pending at every wake-up: with replies coming one by one, quadratic
    in the cases (measured: 8 times the cases took 35 times the CPU)."""
    server.latency = 0.004
    settings = settings_for(server, tmp_path, use_cache=False, concurrency=8)
    small = min(_runner_thread_cpu(settings, 200) for _ in range(2))
    large = _runner_thread_cpu(settings, 1600)
    assert large / small < 16  # 8 times the cases: linear is about 8, quadratic about 64


def test_the_cache_syncs_the_disk_at_checkpoints_not_at_every_reply_stored(tmp_path):
    cache = JudgeCache(tmp_path / "judge.sqlite3")
    try:
        connection = cache._connection
        assert connection is not None
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    finally:
        cache.close()


# --- the chat path: the SDK's public `client.post`, the reply read as text -------------------------


def _python_calls_per_chat_call(settings: JudgeSettings, cases: int) -> float:
    """Python function calls made in the judge's worker threads per chat call: a measure of its CPU
    cost that does not depend on the machine's load."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    with Judge(settings) as judge:
        judge.judge_results([qa(-1)])  # the first connection and imports are not counted
        threading.setprofile(count)  # the runner's worker threads start after this
        try:
            run = judge.judge_results([qa(n) for n in range(cases)])
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
    assert run.usage.calls == cases
    return calls / cases


def test_a_chat_call_skips_the_sdks_typed_request_transform_and_reply_model(server, tmp_path):
    """Through `client.post` with the reply taken as text, a judged chat call runs about 1,600
    Python calls in its worker, the whole judgment (prompt, cache, checks) included; through
    `chat.completions.with_raw_response.create`, whose typed-parameter transform walks the request,
    about 3,250 (and more with the typed reply model)."""
    per_call = _python_calls_per_chat_call(settings_for(server, tmp_path, concurrency=1), 20)
    assert per_call < 2200


def test_a_workers_chat_requests_share_one_kept_alive_connection(server, tmp_path):
    with Judge(settings_for(server, tmp_path, concurrency=1)) as judge:
        run = judge.judge_results([qa(n) for n in range(5)])
    assert run.usage.calls == 5
    assert len({request.peer for request in server.requests}) == 1


def test_the_connections_are_kept_from_one_run_to_the_next_not_made_anew(server, tmp_path):
    """Each run has worker threads of its own: the connections are the judge's, not the threads'."""
    with Judge(settings_for(server, tmp_path, concurrency=2)) as judge:
        for first in (0, 10, 20):
            run = judge.judge_results([qa(n) for n in range(first, first + 6)])
            assert run.usage.calls == 6
    assert server.calls == 18
    assert len({request.peer for request in server.requests}) <= 2
    assert len(server.connections) <= 2


def test_a_connection_the_server_closed_while_idle_is_opened_again_without_a_retry(server, tmp_path):
    with Judge(settings_for(server, tmp_path, concurrency=1, max_retries=0)) as judge:
        first = judge.judge_results([qa(0)])
        deadline = time.monotonic() + 5
        while server.drop_connections() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the server's side is gone
        again = judge.judge_results([qa(1)])
    assert "answer_f1" in first.results[0] and "answer_f1" in again.results[0]
    assert (again.usage.calls, again.usage.retries, again.usage.failed_calls) == (1, 0, 0)
    assert [request.status for request in server.requests] == [200, 200]
    assert server.requests[0].peer != server.requests[1].peer


def test_chat_requests_carry_the_sdks_headers_and_number_each_attempt(server, tmp_path):
    """The chat requests (direct) and the embeddings requests (through the SDK) carry the same SDK
    headers; each attempt of a retried chat request says which it is, as the SDK's own retries do."""
    server.script(Fault(status=500), Fault(status=503))
    settings = settings_for(server, tmp_path, max_retries=2, concurrency=1,
                            metrics=("answer_correctness", "answer_relevance"))
    with Judge(settings) as judge:
        run = judge.judge_results([qa(0)])
    assert "answer_f1" in run.results[0] and "answer_relevance" in run.results[0]
    chats = [r for r in server.requests if r.kind == "chat"]
    embeddings = [r for r in server.requests if r.kind == "embeddings"]
    assert [(r.status, r.headers.get("x-stainless-retry-count")) for r in chats[:3]] == [
        (500, "0"), (503, "1"), (200, "2")]
    assert run.usage.retries == 2
    sdk_headers = {name: value for name, value in embeddings[0].headers.items()
                   if name.startswith("x-stainless-") and name != "x-stainless-retry-count"}
    assert sdk_headers and "x-stainless-package-version" in sdk_headers
    for request in chats:
        assert {name: request.headers.get(name) for name in sdk_headers} == sdk_headers
        assert request.headers["user-agent"] == embeddings[0].headers["user-agent"]
        assert request.headers["authorization"] == "Bearer sk-test"
        assert request.headers["content-type"] == "application/json"


def test_a_redirect_is_followed_as_the_sdks_client_follows_it(server, tmp_path):
    server.script(Fault(status=307, headers={"Location": server.url + "/chat/completions"}))
    with Judge(settings_for(server, tmp_path)) as judge:
        run = judge.judge_results([qa(0)])
    assert run.results[0]["answer_f1"] == 0.5
    assert [request.status for request in server.requests] == [307, 200]
    assert (run.usage.calls, run.usage.retries, run.usage.failed_calls) == (1, 0, 0)
    assert server.requests[1].body == server.requests[0].body  # the same request, not a corrective one


def test_chat_requests_over_https_verify_the_servers_certificate_as_the_sdk_does(tmp_path, monkeypatch):
    """The certificates are httpx's (`SSL_CERT_FILE` here): trusted, the judge judges; not
    trusted, it cannot reach the server, as through the SDK."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serve_stub(tls=context) as server:
        assert server.url.startswith("https://")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        with Judge(settings_for(server, tmp_path, concurrency=2)) as judge:
            run = judge.judge_results([qa(n) for n in range(4)])
        assert [r["answer_f1"] for r in run.results] == [0.5] * 4
        assert len({request.peer for request in server.requests}) <= 2
        monkeypatch.delenv("SSL_CERT_FILE")
        with Judge(settings_for(server, tmp_path, use_cache=False, max_retries=1)) as judge:
            refused = judge.judge_results([qa(0)])
        assert refused.failure is not None and "cannot reach the judge at https://127.0.0.1" in refused.failure
        assert server.calls == 4


def test_a_proxy_from_the_environment_carries_the_chat_requests(server, tmp_path, monkeypatch):
    """The SDK's client honours HTTP_PROXY and the like: the stub, named as the proxy, receives the
    requests meant for a host that does not exist, and answers them."""
    monkeypatch.setenv("HTTP_PROXY", server.url.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    settings = settings_for(server, tmp_path, base_url="http://judge.example.invalid/v1")
    with Judge(settings) as judge:
        run = judge.judge_results([qa(0)])
    assert run.results[0]["answer_f1"] == 0.5
    assert server.chat_calls == 1


def test_closing_the_judge_closes_its_connections(server, tmp_path):
    with Judge(settings_for(server, tmp_path, concurrency=4)) as judge:
        judge.judge_results([qa(n) for n in range(8)])
        assert server.connections
    deadline = time.monotonic() + 5
    while server.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.connections
