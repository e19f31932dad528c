"""The judge against a real OpenAI-compatible HTTP server (tests/openai_stub.py); openai unpatched."""

from __future__ import annotations

import copy
import io
import json
import re
import socket
import time
from datetime import UTC

import pytest
from openai_stub import Fault, generated_questions, stub_embedding

from qareport.console import ProgressBar
from qareport.errors import JudgeError
from qareport.judge import Judge, JudgeSettings
from qareport.judge.answer_relevance import cosine_similarity
from qareport.judge.models import DEFAULT_MODEL
from qareport.retrieval_context import average_precision_of_verdicts as average_precision
from qareport.retrieval_context import with_retrieval_context_scores

KEY = "sk-test-LEAKCHECK-0123456789abcdef"


def settings_for(server, tmp_path, **overrides) -> JudgeSettings:
    values = dict(
        base_url=server.url,
        api_key=KEY,
        cache_path=str(tmp_path / "cache" / "judge.sqlite3"),
        timeout=5.0,
    )
    values.update(overrides)
    return JudgeSettings(**values)


def judge(settings: JudgeSettings, results: list[dict], **kwargs):
    """Judge `results`; the judged copies are written back into the given dicts so the tests can
    look at them where they were, and the usage is returned."""
    with Judge(settings) as j:
        run = j.judge_results(results, **kwargs)
    _write_back(results, run.results)
    return run.usage


def _write_back(results: list[dict], judged: list[dict]) -> None:
    assert len(judged) == len(results)
    for given, copy_ in zip(results, judged):
        given.clear()
        given.update(copy_)


def test_the_inputs_are_not_changed_and_copies_are_returned(server, tmp_path):
    results = [_retrieval_case(), qa(question="q2"), {**qa(), "status": "error"}]
    before = copy.deepcopy(results)
    with Judge(settings_for(server, tmp_path)) as j:
        run = j.judge_results(results)
    assert results == before
    assert [r["question_text"] for r in run.results] == [r["question_text"] for r in results]
    assert all(new is not old for new, old in zip(run.results, results))
    assert "answer_f1" in run.results[1] and "answer_f1" not in results[1]
    assert "retrieval_answer_recall" in run.results[0]["actual_steps"][0]
    assert run.results[2] == results[2]
    assert run.usage.cases == 2


def qa(reference: str | None = "OSLO T1; OSLO T2", actual: str | None = "OSLO T1; OSLO T3; OSLO T4",
       question: str = "List the transformers of OSLO", **extra) -> dict:
    result = {"question_id": "q1", "question_text": question, "status": "success", **extra}
    if reference is not None:
        result["reference_answer"] = reference
    if actual is not None:
        result["actual_answer"] = actual
    return result


# --- metric values -------------------------------------------------------------------------------


def test_answer_correctness_keys_and_arithmetic(server, tmp_path):
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert result["answer_reference_claims_count"] == 2
    assert result["answer_actual_claims_count"] == 3
    assert result["answer_matching_claims_count"] == 1
    assert result["answer_correctness_reason"].startswith("stub:")
    assert result["answer_recall"] == 0.5
    assert result["answer_precision"] == pytest.approx(1 / 3)
    assert result["answer_f1"] == pytest.approx(0.4)
    assert result["answer_correctness_cost"] > 0
    assert "answer_eval_error" not in result
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == DEFAULT_MODEL
    assert request.body["temperature"] == 0.0
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.body["response_format"]["json_schema"]["name"] == "answer_correctness"


def test_answer_correctness_needs_both_answers(server, tmp_path):
    results = [qa(reference=None), qa(actual=None), {**qa(), "status": "error"}]
    before = copy.deepcopy(results)
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), results)
    assert results == before
    assert server.calls == 0


def test_answer_relevance_is_the_mean_cosine_of_generated_questions(server, tmp_path):
    result = qa(question="Which transformers?", actual="OSLO T1 and OSLO T2")
    judge(settings_for(server, tmp_path, metrics=("answer_relevance",)), [result])
    questions = generated_questions("OSLO T1 and OSLO T2", 3)
    exp = sum(cosine_similarity(stub_embedding("Which transformers?"), stub_embedding(q)) for q in questions) / 3
    assert result["answer_relevance"] == pytest.approx(exp, abs=1e-6)
    assert result["answer_relevance_questions"] == [{"question": q, "noncommittal": False} for q in questions]
    assert result["answer_relevance_cost"] > 0
    embeddings = [r for r in server.requests if r.kind == "embeddings"]
    assert len(embeddings) == 1  # one request with the question and every generated question
    assert embeddings[0].body["input"] == ["Which transformers?", *questions]
    assert embeddings[0].body["model"] == "text-embedding-3-small"


def test_answer_relevance_is_zero_when_all_questions_are_noncommittal(server, tmp_path):
    result = qa(actual="I don't know.")
    judge(settings_for(server, tmp_path, metrics=("answer_relevance",)), [result])
    assert result["answer_relevance"] == 0.0
    assert all(q["noncommittal"] for q in result["answer_relevance_questions"])


def test_answer_relevance_question_count_is_a_setting(server, tmp_path):
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_relevance",), relevance_questions=2), [result])
    assert len(result["answer_relevance_questions"]) == 2


def test_embeddings_of_many_cases_share_requests(server, tmp_path):
    results = [qa(question=f"question {n}", actual=f"answer {n}") for n in range(30)]
    usage = judge(settings_for(server, tmp_path, metrics=("answer_relevance",)), results)
    assert all("answer_relevance" in r for r in results)
    assert server.chat_calls == 30
    assert 1 <= server.embedding_calls < 30
    assert usage.calls == server.calls
    assert sum(r["answer_relevance_cost"] for r in results) == pytest.approx(usage.cost_usd)


def _retrieval_case(reference="OSLO T1; OSLO T2", actual="OSLO T1 and T2", contexts=None, status="success"):
    contexts = contexts if contexts is not None else [
        "Transformer OSLO T1 is in Substation Oslo.",
        "The weather in Bergen is rainy.",
        "OSLO T2 is a transformer too.",
    ]
    output = json.dumps([{"id": f"doc{n}", "text": t} for n, t in enumerate(contexts)])
    step = {"name": "retrieval", "id": "call_1", "status": status, "args": {"k": 3}, "output": output}
    other = {"name": "sparql_query", "id": "call_2", "status": "success", "args": {}, "output": "{}"}
    return qa(reference=reference, actual=actual, actual_steps=[step, other])


def test_retrieval_answer_recall_and_precision(server, tmp_path):
    result = _retrieval_case()
    judge(settings_for(server, tmp_path, metrics=("retrieval_answer_recall", "retrieval_answer_precision")),
          [result])
    step = result["actual_steps"][0]
    assert step["retrieval_answer_recall"] == 1.0  # both statements are in the contexts
    assert step["retrieval_answer_precision"] == pytest.approx(average_precision([True, False, True]))
    assert step["retrieval_answer_f1"] == pytest.approx(2 * 1.0 * (5 / 6) / (1 + 5 / 6))
    assert step["retrieval_answer_f1_cost"] == pytest.approx(
        step["retrieval_answer_recall_cost"] + step["retrieval_answer_precision_cost"])
    assert "attributed: OSLO T1" in step["retrieval_answer_recall_reason"]
    assert "context 2: not useful" in step["retrieval_answer_precision_reason"]
    assert not any(k.startswith("retrieval") for k in result["actual_steps"][1])
    assert server.chat_calls == 2


def test_retrieval_precision_uses_the_actual_answer_without_a_reference(server, tmp_path):
    result = _retrieval_case(reference=None, actual="OSLO T2")
    judge(settings_for(server, tmp_path), [result])
    step = result["actual_steps"][0]
    assert "retrieval_answer_recall" not in step  # recall is measured against a reference answer
    assert "retrieval_answer_f1" not in step
    assert step["retrieval_answer_precision"] == pytest.approx(average_precision([False, False, True]))
    prompts = [r.body["messages"][0]["content"] for r in server.requests if r.kind == "chat"]
    assert any("<answer>\nOSLO T2\n</answer>" in p and "<context number=" in p for p in prompts)


def test_retrieval_steps_skipped_without_answers_or_success(server, tmp_path):
    results = [_retrieval_case(reference=None, actual=None), _retrieval_case(status="error")]
    judge(settings_for(server, tmp_path, metrics=("retrieval_answer_recall", "retrieval_answer_precision")),
          results)
    assert server.calls == 0
    assert not any(k.startswith("retrieval_answer") for r in results for k in r["actual_steps"][0])


def test_retrieval_with_bad_output_or_no_contexts(server, tmp_path):
    bad = _retrieval_case()
    bad["actual_steps"][0]["output"] = "not json"
    empty = _retrieval_case(contexts=[])
    judge(settings_for(server, tmp_path, metrics=("retrieval_answer_recall", "retrieval_answer_precision")),
          [bad, empty])
    assert "not JSON" in bad["actual_steps"][0]["retrieval_answer_recall_error"]
    assert "not JSON" in bad["actual_steps"][0]["retrieval_answer_precision_error"]
    step = empty["actual_steps"][0]
    assert (step["retrieval_answer_recall"], step["retrieval_answer_precision"]) == (0.0, 0.0)
    assert step["retrieval_answer_f1"] == 0.0
    assert server.calls == 0


def test_retrieval_context_metrics_need_no_llm_call(server, tmp_path):
    result = _retrieval_case()
    result["reference_steps"] = [[{"name": "retrieval", "matches": "call_1",
                                   "output": json.dumps([{"id": "doc0", "text": "Transformer OSLO T1 is in Substation Oslo."}])}]]
    [result] = with_retrieval_context_scores([result])  # string similarity: outside the judge
    step = result["actual_steps"][0]
    assert step["retrieval_context_recall"] == 1.0
    assert step["retrieval_context_precision"] == 0.9999999999  # RAGAS's 1 / (1 + 1e-10), as graphrag-eval 5.2
    assert server.calls == 0


# --- transient failures and bad replies ----------------------------------------------------------


def test_429_is_retried_after_retry_after(server, tmp_path):
    server.script(Fault(status=429, headers={"Retry-After": "0.3"}))
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert result["answer_recall"] == 0.5
    first, second = server.requests
    assert first.status == 429 and second.status == 200
    assert second.started - first.started >= 0.29
    assert (usage.calls, usage.retries, usage.failed_calls) == (1, 1, 0)


def test_retry_after_ms_is_honoured(server, tmp_path):
    server.script(Fault(status=429, headers={"retry-after-ms": "200", "Retry-After": "30"}))
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    first, second = server.requests
    assert 0.19 <= second.started - first.started < 5


def test_500_then_success(server, tmp_path):
    server.script(Fault(status=500), Fault(status=503))
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert result["answer_f1"] == pytest.approx(0.4)
    assert [r.status for r in server.requests] == [500, 503, 200]
    assert usage.retries == 2


def test_timeout_then_success(server, tmp_path):
    server.script(Fault(sleep=1.0))
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",), timeout=0.25), [result])
    assert result["answer_recall"] == 0.5
    assert usage.retries == 1
    assert server.chat_calls == 2


def test_retries_run_out_into_the_error_key(server, tmp_path):
    server.script(*[Fault(status=500, message="overloaded")] * 3)
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",), max_retries=2), [result])
    assert "after 3 attempts" in result["answer_eval_error"]
    assert "HTTP 500" in result["answer_eval_error"]
    assert "answer_recall" not in result
    assert usage.failed_calls == 1
    assert usage.by_metric["answer_correctness"].errors == 1


def test_max_retries_is_the_sdk_s_retry_budget(server, tmp_path):
    server.script(Fault(status=503), Fault(status=503))
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",), max_retries=0), [result])
    assert [r.status for r in server.requests] == [503]
    assert result["answer_eval_error"].startswith("not judged: judge call failed: HTTP 503")
    assert (usage.retries, usage.failed_calls) == (0, 1)
    assert server.requests[0].headers.get("x-stainless-retry-count") == "0"


def test_a_400_is_not_retried(server, tmp_path):
    server.script(Fault(status=400, message="context too long"))
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert "HTTP 400" in result["answer_eval_error"]
    assert server.calls == 1


@pytest.mark.parametrize(
    "bad, problem",
    [
        ("Sure! The reference has 2 claims.", "not JSON"),
        ('{"reason": "x", "reference_claims_count": 2}', "lacks 'actual_claims_count'"),
        ('{"reason": "x", "reference_claims_count": 2, "actual_claims_count": 1, "matching_claims_count": 3}',
         "contradicting claim counts"),
        ('{"reason": "x", "reference_claims_count": 0, "actual_claims_count": 1, "matching_claims_count": 0}',
         "at least 1 claim"),
        ('{"reason": "x", "reference_claims_count": "2", "actual_claims_count": 1, "matching_claims_count": 0}',
         "must be an integer"),
        ("[1, 2, 3]", "not a JSON object"),
    ],
)
def test_unusable_reply_is_retried_once_then_recorded_as_error(server, tmp_path, bad, problem):
    server.script(Fault(content=bad), Fault(content=bad))
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert server.chat_calls == 2
    assert problem in result["answer_eval_error"]
    assert "also after one retry" in result["answer_eval_error"]
    for key in ("answer_recall", "answer_precision", "answer_f1", "answer_reference_claims_count"):
        assert key not in result
    assert result["answer_correctness_cost"] > 0  # both replies were paid for
    assert usage.by_metric["answer_correctness"].errors == 1
    # nothing unusable was cached: a rerun asks again
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [qa()])
    assert server.chat_calls == 3


def test_one_unusable_reply_then_a_good_one(server, tmp_path):
    server.script(Fault(content="```json\nnot quite\n```"))
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert result["answer_recall"] == 0.5
    retry = server.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == "```json\nnot quite\n```"
    assert "not JSON" in retry[2]["content"]


def test_fenced_json_is_accepted(server, tmp_path):
    reply = {"reason": "r", "reference_claims_count": 2, "actual_claims_count": 2, "matching_claims_count": 2}
    server.script(Fault(content="```json\n" + json.dumps(reply) + "\n```"))
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert result["answer_f1"] == 1.0
    assert server.chat_calls == 1


def test_bad_relevance_and_precision_replies(server, tmp_path):
    server.script(Fault(content='{"questions": []}'), Fault(content='{"questions": [{"question": ""}]}'))
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_relevance",)), [result])
    assert "no question" in result["answer_relevance_error"]
    assert "answer_relevance" not in result
    server.script(*[Fault(content='{"verdicts": [{"context": 1, "reason": "", "useful": true}]}')] * 2)
    case = _retrieval_case()
    judge(settings_for(server, tmp_path, metrics=("retrieval_answer_precision",)), [case])
    assert "expected 3 verdicts" in case["actual_steps"][0]["retrieval_answer_precision_error"]


# --- concurrency, cache, cost --------------------------------------------------------------------


def test_concurrency_is_bounded(server, tmp_path):
    server.latency = 0.03
    results = [qa(question=f"q{n}") for n in range(24)]
    judge(settings_for(server, tmp_path, metrics=("answer_correctness", "answer_relevance"), concurrency=4),
          results)
    assert all("answer_f1" in r and "answer_relevance" in r for r in results)
    assert 1 < server.max_in_flight <= 4


def test_a_rerun_is_served_from_the_cache(server, tmp_path):
    results = [_retrieval_case(), qa(question="another")]
    settings = settings_for(server, tmp_path)
    first = judge(settings, results)
    calls = server.calls
    assert first.calls == calls > 0 and first.cached_calls == 0
    again = [_retrieval_case(), qa(question="another")]
    second = judge(settings, again)
    assert server.calls == calls  # no request at all
    assert second.calls == 0
    assert second.cached_calls == server.chat_calls + 2  # every chat reply, each case's embeddings
    assert second.cost_usd == 0.0
    assert again[1]["answer_correctness_cost"] == 0.0
    assert again[1]["answer_relevance"] == results[1]["answer_relevance"]
    assert again[0]["actual_steps"][0]["retrieval_answer_precision"] == \
        results[0]["actual_steps"][0]["retrieval_answer_precision"]


def test_a_new_model_or_no_cache_means_new_calls(server, tmp_path):
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [qa()])
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",), model="gpt-4.1-mini"), [qa()])
    assert server.chat_calls == 2
    assert server.requests[1].body["model"] == "gpt-4.1-mini"
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",), use_cache=False), [qa()])
    assert server.chat_calls == 3


def test_a_new_prompt_template_means_new_calls(server, tmp_path):
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [qa()])
    custom = tmp_path / "templates" / "judge"
    custom.mkdir(parents=True)
    (custom / "answer_correctness.txt").write_text(
        "CUSTOM PROMPT reference_claims_count\n<reference_answer>\n{{ reference_answer }}\n</reference_answer>\n"
        "<candidate_answer>\n{{ actual_answer }}\n</candidate_answer>\n{{ question }}\n")
    result = qa()
    with Judge(settings_for(server, tmp_path, metrics=("answer_correctness",)),
               templates_dir=str(tmp_path / "templates")) as j:
        _write_back([result], j.judge_results([result]).results)
    assert server.chat_calls == 2
    assert server.requests[1].body["messages"][0]["content"].startswith("CUSTOM PROMPT")
    assert result["answer_recall"] == 0.5


def test_a_broken_template_is_a_judge_error(server, tmp_path):
    custom = tmp_path / "templates" / "judge"
    custom.mkdir(parents=True)
    (custom / "answer_relevance.txt").write_text("{{ no_such_variable }}")
    with pytest.raises(JudgeError, match=r"judge/answer_relevance\.txt"):
        Judge(settings_for(server, tmp_path), templates_dir=str(tmp_path / "templates"))


def test_cost_from_usage(server, tmp_path):
    server.usage = (1000, 200)
    server.embedding_tokens_per_input = 10
    results = [qa()]
    usage = judge(settings_for(server, tmp_path, model="gpt-4o-mini", metrics=("answer_correctness", "answer_relevance")),
                  results)
    chat = (1000 * 0.15 + 200 * 0.60) / 1e6  # gpt-4o-mini, pinned so the arithmetic stays the table's
    embeddings = 4 * 10 * 0.02 / 1e6  # question + 3 generated questions, text-embedding-3-small
    assert results[0]["answer_correctness_cost"] == pytest.approx(chat)
    assert results[0]["answer_relevance_cost"] == pytest.approx(chat + embeddings)
    assert usage.cost_usd == pytest.approx(2 * chat + embeddings)
    assert (usage.input_tokens, usage.output_tokens) == (2000 + 40, 400)
    assert usage.by_metric["answer_relevance"].calls == 2
    assert usage.by_metric["answer_relevance"].cost_usd == pytest.approx(chat + embeddings)


def test_unknown_model_costs_none_and_says_so(server, tmp_path):
    result = qa()
    usage = judge(settings_for(server, tmp_path, metrics=("answer_correctness",), model="llama3"), [result])
    assert result["answer_correctness_cost"] is None
    assert usage.cost_usd is None
    assert usage.unpriced_models == ["llama3"]
    assert "no price for llama3" in usage.summary()
    assert usage.to_dict()["cost_note"].startswith("cost unknown")


def test_price_override(server, tmp_path):
    from qareport.judge.prices import ModelPrice

    server.usage = (1_000_000, 0)
    result = qa()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",), model="llama3",
                       prices={"llama3": ModelPrice(0.5, 1.0)}), [result])
    assert result["answer_correctness_cost"] == pytest.approx(0.5)


# --- configuration problems ----------------------------------------------------------------------


def judge_run(settings: JudgeSettings, results: list[dict]):
    """The whole JudgeRun (results written back as `judge` does), for the failure it reports."""
    with Judge(settings) as j:
        run = j.judge_results(results)
    _write_back(results, run.results)
    return run


def test_a_rejected_key_fails_the_judge_without_the_key_and_stops_at_once(server, tmp_path):
    server.api_key = "the-right-key"
    results = [qa(question=f"q{n}") for n in range(20)]
    run = judge_run(settings_for(server, tmp_path, metrics=("answer_correctness",), concurrency=1), results)
    message = run.failure
    assert "rejected the API key" in message and "OPENAI_API_KEY" in message
    assert KEY not in message
    assert "***" in message  # the stub echoed it; the judge masked it
    assert server.calls == 1  # the first 401 stops the judge: no other case is sent
    assert run.not_judged == 20
    assert all(r["answer_eval_error"].startswith("not judged: the judge was stopped: the judge at ") for r in results)
    assert not any(KEY in r["answer_eval_error"] for r in results)


def test_an_unknown_model_fails_the_judge(server, tmp_path):
    server.known_models = {"gpt-4o-mini", "text-embedding-3-small"}
    results = [qa() for _ in range(5)]
    run = judge_run(settings_for(server, tmp_path, model="gpt-4o"), results)
    assert re.search("does not know this model.*gpt-4o", run.failure)
    assert all("answer_f1" not in r and r["answer_eval_error"].startswith("not judged: ") for r in results)


def test_an_unreachable_server_fails_the_judge_quickly(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = JudgeSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, use_cache=False,
                             max_retries=1, timeout=2)
    started = time.monotonic()
    results = [qa(question=f"q{n}") for n in range(20)]
    run = judge_run(settings, results)
    assert "cannot reach the judge at http://127.0.0.1" in run.failure
    assert time.monotonic() - started < 10
    assert run.not_judged == 40  # answer correctness and relevance of each case
    assert all(r["answer_relevance_error"].startswith("not judged: ") for r in results)


def test_azure_requests_go_to_the_deployments(server, tmp_path):
    settings = settings_for(server, tmp_path, base_url=None, azure_endpoint=server.root_url,
                            azure_deployment="chat-dep", azure_embedding_deployment="emb-dep",
                            api_version="2024-10-21")
    result = qa()
    judge(settings, [result])
    assert "answer_f1" in result and "answer_relevance" in result
    paths = {r.path for r in server.requests}
    assert paths == {"/openai/deployments/chat-dep/chat/completions",
                     "/openai/deployments/emb-dep/embeddings"}
    assert all(r.headers.get("api-key") == KEY for r in server.requests)


def test_json_object_mode_for_servers_without_schemas(server, tmp_path):
    result = _retrieval_case()
    judge(settings_for(server, tmp_path, response_format="json_object"), [result])
    assert {r.body["response_format"]["type"] for r in server.requests if r.kind == "chat"} == {"json_object"}
    assert result["answer_reference_claims_count"] == 2
    assert "answer_relevance" in result
    assert result["actual_steps"][0]["retrieval_answer_recall"] == 1.0


# --- outputs -------------------------------------------------------------------------------------


def test_the_api_key_appears_in_no_output(server, tmp_path, capsys):
    results = [_retrieval_case(), qa(question="q2")]
    settings = settings_for(server, tmp_path)
    usage = judge(settings, results, on_progress=ProgressBar(io.StringIO()))
    judge(settings, copy.deepcopy(results))
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)  # it was sent
    texts = [json.dumps(results), json.dumps(usage.to_dict()), usage.summary(), repr(settings),
             json.dumps(settings.describe())]
    for text in texts:
        assert KEY not in text
    for path in (tmp_path / "cache").iterdir():
        data = path.read_bytes()
        assert KEY.encode() not in data
        assert KEY[-12:].encode() not in data
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err


def test_progress_summary_line_when_not_a_tty(server, tmp_path):
    stream = io.StringIO()
    usage = judge(settings_for(server, tmp_path), [qa(), qa(question="q2")], on_progress=ProgressBar(stream))
    lines = stream.getvalue().splitlines()
    assert lines == [usage.summary()]
    # requests only: cases are counted once, by qareport.judged_metrics (the judge line), not here
    # (the two cases share an answer: whether its embedding is asked twice or found in the cache depends
    # on which request finishes first, so the cached count is not pinned)
    assert re.match(rf"judge {re.escape(DEFAULT_MODEL)}: {usage.calls} API calls \(\d+ cached, 0 calls failed, ", lines[0]), lines[0]
    assert "\r" not in stream.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_tty(server, tmp_path):
    stream = _Terminal()
    judge(settings_for(server, tmp_path), [qa(), qa(question="q2")], on_progress=ProgressBar(stream))
    text = stream.getvalue()
    assert "\r\x1b[2Kqareport: judging [" in text and "4/4" in text  # the one bar (`console.ProgressBar`)
    assert text.endswith("s\n")


def test_on_result_is_called_once_per_case_when_done(server, tmp_path):
    seen = []
    results = [_retrieval_case(), qa(question="q2"), {**qa(), "status": "error"}]
    judge(settings_for(server, tmp_path), results, on_result=lambda r: seen.append(
        (r["question_text"], "answer_relevance" in r, "answer_f1" in r)))
    assert sorted(seen) == sorted([(results[0]["question_text"], True, True), ("q2", True, True)])


def test_a_retry_after_too_long_is_not_waited_for(server, tmp_path):
    server.script(Fault(status=429, headers={"Retry-After": "600"}, message="quota exhausted"))
    result = qa()
    started = time.monotonic()
    judge(settings_for(server, tmp_path, metrics=("answer_correctness",)), [result])
    assert time.monotonic() - started < 5
    assert "HTTP 429" in result["answer_eval_error"] and "quota exhausted" in result["answer_eval_error"]


def test_retry_after_header_forms():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from qareport.judge.transport import retry_after as _retry_after

    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert _retry_after({}) is None
    assert _retry_after({"retry-after": "soon"}) is None
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < _retry_after({"retry-after": when}) <= 30


def test_the_cache_is_safe_across_threads(tmp_path):
    import threading

    from qareport.judge.cache import JudgeCache, cache_key

    cache = JudgeCache(tmp_path / "c.sqlite3")
    failures = []

    def work(worker: int) -> None:
        try:
            for n in range(100):
                key = cache_key("chat", {"worker": worker, "n": n}, endpoint="e")
                cache.put(key, kind="chat", model="m", value={"content": f"{worker}-{n}"})
                assert cache.get(key) == {"content": f"{worker}-{n}"}
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failures == []
        assert len(cache) == 800
    finally:
        cache.close()
    assert cache_key("chat", {"a": 1, "b": 2}, endpoint="e") == cache_key("chat", {"b": 2, "a": 1}, endpoint="e")
    assert cache_key("chat", {"a": 1}, endpoint="e") != cache_key("embeddings", {"a": 1}, endpoint="e")
