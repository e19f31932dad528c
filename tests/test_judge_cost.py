"""Knowing the judge's cost before spending (`--estimate`) and capping it (`--judge-budget`), against
the loopback OpenAI-compatible server, which counts tokens as the README's rule does (`usage="chars"`).

Tolerances (README, "Cost: estimate and budget"): calls and chat input tokens are exact (same
prompts, same counting rule); output tokens are the per-metric allowance, which the stub's replies
stay under; answer relevance's embeddings inputs are estimated at 25 tokens per generated question
while the questions are unknown, within a factor of two of the stub's questions here.
"""

import json

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import chars_prompt_tokens, chars_tokens, metric_of, serve_stub
from openpyxl import load_workbook

from qareport.cli import main
from qareport.exit_status import JUDGE_FAILED, REPORT_WRITTEN
from qareport.judge.cost import estimate_call, output_allowance
from qareport.judge.models import DEFAULT_MODEL
from qareport.judge.prices import PriceTable
from qareport.pipeline import RunOptions, estimate_pipeline, run_pipeline

CORRECTNESS_ONLY = "judge:\n  metrics: [answer_correctness]\n"


@pytest.fixture
def stub(monkeypatch):
    with serve_stub(usage="chars") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield server


def options(tmp_path, cache="cache.sqlite3", config=None, **judge):
    return RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(tmp_path / "report.xlsx"),
                      config_path=config, judge_options={"cache_path": str(tmp_path / cache), **judge})


def estimate_rows(tmp_path, **kwargs):
    estimated = estimate_pipeline(options(tmp_path, **kwargs))
    assert estimated.estimate is not None
    return {row.metric: row for row in estimated.estimate.metrics}, estimated.estimate.total


def test_the_estimate_sends_nothing_writes_nothing_and_prints_each_metric(stub, tmp_path, capsys):
    out, cache = tmp_path / "report.xlsx", tmp_path / "cache.sqlite3"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--cache-path", str(cache),
                 "--results", str(tmp_path / "results.json"), "--estimate"])
    printed = capsys.readouterr().out
    assert code == REPORT_WRITTEN
    assert stub.calls == 0
    assert not out.exists() and not cache.exists() and not (tmp_path / "results.json").exists()
    for metric in ("answer_correctness", "answer_relevance", "answer_relevance embeddings", "total"):
        assert f"  {metric}: " in printed
    assert "in batches" in printed and "no request was sent" in printed


def test_the_estimate_needs_no_api_key(tmp_path, capsys):
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "r.xlsx"), "--estimate"])
    assert code == REPORT_WRITTEN
    assert "answer_correctness: " in capsys.readouterr().out


def test_the_estimate_equals_what_a_direct_run_then_reports(stub, tmp_path):
    rows, total = estimate_rows(tmp_path)
    assert stub.calls == 0
    outcome = run_pipeline(options(tmp_path))
    usage = outcome.report.run.judge_usage
    assert usage is not None
    usage = usage.to_dict()  # the usage as the results file stores it
    by_metric = usage["by_metric"]
    for metric in ("answer_correctness", "retrieval_answer_recall", "retrieval_answer_precision"):
        assert rows[metric].calls == by_metric[metric]["calls"] > 0, metric
    relevance, embeddings = rows["answer_relevance"], rows["answer_relevance embeddings"]
    assert relevance.calls + embeddings.calls == by_metric["answer_relevance"]["calls"]
    assert embeddings.calls == stub.embedding_calls
    assert total.calls == usage["calls"] == stub.calls
    # chat input tokens: the same prompts counted by the same rule
    chat_in = sum(chars_prompt_tokens(r.body) for r in stub.requests if r.kind == "chat")
    assert sum(row.input_tokens for row in rows.values() if "embeddings" not in row.metric) == chat_in
    embedded_in = sum(chars_tokens(text) for r in stub.requests if r.kind == "embeddings" for text in r.body["input"])
    assert usage["input_tokens"] == chat_in + embedded_in
    assert embedded_in / 2 <= embeddings.input_tokens <= embedded_in * 2
    # output tokens: an allowance per reply, which the stub's replies stay under
    assert 0 < usage["output_tokens"] <= total.output_tokens
    assert total.cost_usd is not None and usage["cost_usd"] <= total.cost_usd <= usage["cost_usd"] * 3
    assert total.batch_cost_usd == pytest.approx(total.cost_usd / 2)


def test_cached_judgments_are_counted_as_cached(stub, tmp_path):
    config = tmp_path / "qareport.yaml"
    config.write_text(CORRECTNESS_ONLY)
    run_pipeline(options(tmp_path, config=str(config)))  # answer correctness only
    judged = stub.chat_calls
    rows, _ = estimate_rows(tmp_path)
    correctness, relevance = rows["answer_correctness"], rows["answer_relevance"]
    assert correctness.judgments == correctness.cached == judged and correctness.calls == 0
    assert correctness.cost_usd == 0
    assert relevance.cached == 0 and relevance.calls == relevance.judgments > 0

    run_pipeline(options(tmp_path))  # everything judged and cached
    rows, total = estimate_rows(tmp_path)
    assert total.calls == 0 and total.cost_usd == 0
    assert rows["answer_relevance embeddings"].cached == rows["answer_relevance embeddings"].judgments > 0
    assert rows["answer_relevance"].cached == rows["answer_relevance"].judgments > 0


PRICES = PriceTable()


def cost_of(request, longest_reply, prices=PRICES):
    """(estimated, actual) cost of one recorded chat request (actual: the stub's own count), the
    estimate allowing the reply at least the longest reply before it."""
    estimated = estimate_call("chat", "answer_correctness", request.body, prices=prices, models=(DEFAULT_MODEL,),
                              longest_reply=longest_reply)
    actual = prices.cost((DEFAULT_MODEL,), chars_prompt_tokens(request.body), chars_tokens(request.reply))
    return estimated.cost_usd, actual


def run_cli(tmp_path, cache, *extra):
    results = tmp_path / "results.json"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "report.xlsx"),
                 "--results", str(results), "--cache-path", str(tmp_path / cache), "--judge-concurrency", "1",
                 "--config", str(tmp_path / "qareport.yaml"), *extra])
    return code, json.loads(results.read_text())


def correctness_counts(document):
    (metric,) = [m for m in document["judge"]["metrics"] if m["key"] == "answer_f1"]
    return metric


def test_a_budget_that_runs_out_mid_run_stops_the_judging_and_a_rerun_judges_the_rest(stub, tmp_path, capsys):
    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY)
    code, _ = run_cli(tmp_path, "unlimited.sqlite3")
    assert code == REPORT_WRITTEN
    costs = [cost_of(request, max((chars_tokens(r.reply) for r in stub.requests[:i]), default=0))
             for i, request in enumerate(stub.requests)]  # in the order a single worker sends them
    n = len(costs)
    assert n >= 6
    half = n // 2
    budget = sum(actual for _, actual in costs[:half]) + costs[half][0] * 0.999
    expected = next(i for i in range(n) if sum(a for _, a in costs[:i]) + costs[i][0] > budget)
    assert 0 < expected < n
    stub.reset()

    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY + f"  budget: {budget!r}\n")  # judge.budget
    code, document = run_cli(tmp_path, "cache.sqlite3")
    err = capsys.readouterr().err
    assert code == JUDGE_FAILED
    assert stub.calls == expected
    usage = document["judge"]["usage"]
    assert usage["cost_usd"] <= budget
    counts = correctness_counts(document)
    assert counts["judged"] == expected and counts["failed"] == 0
    assert counts["not_judged"] == counts["not_judged_budget_reached"] == n - expected
    assert "the judge budget ended the judging" in err
    assert "not judged: budget reached" in " ".join(document["not_evaluated"]).lower() + \
        " ".join(str(r.get("answer_eval_error")) for r in document["results"])
    assert sum(1 for r in document["results"]
               if str(r.get("answer_eval_error", "")).startswith("not judged: budget reached")) == n - expected

    code, document = run_cli(tmp_path, "cache.sqlite3", "--judge-budget", "10")  # the option wins
    assert code == REPORT_WRITTEN
    assert stub.calls == n  # the cache answered the judgments already made
    counts = correctness_counts(document)
    assert counts["judged"] == n and counts["not_judged"] == 0


def test_with_concurrency_the_spend_never_passes_the_budget(stub, tmp_path, capsys):
    budget = 0.002  # sized for gpt-4o-mini's prices: some judgments of each metric fit, not all
    out = tmp_path / "report.xlsx"
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(out), "--results",
                 str(tmp_path / "results.json"), "--cache-path", str(tmp_path / "c.sqlite3"),
                 "--judge-model", "gpt-4o-mini", "--judge-concurrency", "8", "--judge-budget", str(budget)])
    printed = capsys.readouterr()
    assert code == JUDGE_FAILED and out.exists()
    document = json.loads((tmp_path / "results.json").read_text())
    # the documented bound: the budget, plus what replies used beyond the output they were allowed
    # (the stub's answer-relevance questions repeat the whole answer, longer than the allowance)
    excess = 0.0
    prices = PriceTable()
    for request in stub.requests:
        if request.kind == "chat":
            allowed = output_allowance(metric_of(request.body), request.body)
            excess += max(0, chars_tokens(request.reply) - allowed) * prices.price("gpt-4o-mini").output_per_million / 1e6
    assert 0 < document["judge"]["usage"]["cost_usd"] <= budget + excess
    stopped = sum(m["not_judged_budget_reached"] for m in document["judge"]["metrics"])
    assert stopped > 0
    assert all(m["not_judged"] == m["not_judged_budget_reached"] for m in document["judge"]["metrics"])
    # every answer-relevance chat the budget paid for got its embeddings: its judgment was made
    (relevance,) = [m for m in document["judge"]["metrics"] if m["key"] == "answer_relevance"]
    asked = sum(1 for r in stub.requests if r.kind == "chat" and metric_of(r.body) == "answer_relevance")
    embedded = sum(len(r.body["input"]) for r in stub.requests if r.kind == "embeddings")
    assert relevance["judged"] > 0 and embedded == asked * (3 + 1)  # the real question and 3 generated
    assert "budget reached" in printed.out  # the console's judge line counts them
    assert "the judge budget ended the judging" in printed.err
    workbook = load_workbook(out)
    for sheet in ("Summary", "Statistics"):
        text = " ".join(str(c) for row in workbook[sheet].iter_rows(values_only=True) for c in row if c)
        assert "budget reached" in text, sheet
    statistics = list(workbook["Statistics"].iter_rows(values_only=True))
    at = next(i for i, row in enumerate(statistics) if "not judged" in row)  # the LLM-judged metrics table
    header = statistics[at]
    relevance = next(row for row in statistics[at + 1:] if row[0] == "answer relevance")
    (counted,) = [m for m in document["judge"]["metrics"] if m["key"] == "answer_relevance"]
    assert relevance[header.index("not judged")] == counted["not_judged"]


def test_a_budget_needs_the_models_price(stub, tmp_path, capsys):
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "r.xlsx"),
                 "--judge-model", "my-local-model", "--judge-budget", "1"])
    assert code == 2 and not (tmp_path / "r.xlsx").exists()
    assert "judge.prices.my-local-model" in capsys.readouterr().err
    assert stub.calls == 0


def test_a_budget_must_be_a_number(tmp_path, capsys):
    (tmp_path / "qareport.yaml").write_text("judge:\n  budget: lots\n")
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / "r.xlsx"),
                 "--config", str(tmp_path / "qareport.yaml")])
    assert code == 2
    assert "judge.budget" in capsys.readouterr().err


def test_a_budget_reserves_the_calls_in_flight_and_counts_what_replies_cost():
    from qareport.judge.cost import Budget, BudgetReached, CallEstimate

    budget = Budget(1.0)
    call = CallEstimate("chat", "answer_correctness", 100, 10, 0.4)
    first, second = budget.admit(call), budget.admit(call)  # two in flight: 0.8 reserved
    with pytest.raises(BudgetReached):
        budget.admit(call)  # 0.8 + 0.4 would pass 1.0
    budget.settle(first, 0.1)
    budget.settle(second, 0.1)
    assert budget.spent == pytest.approx(0.2) and budget.reserved == pytest.approx(0.0)
    with pytest.raises(BudgetReached):  # once reached, nothing more is sent
        budget.admit(CallEstimate("chat", "answer_correctness", 1, 1, 0.01))
    assert "$0.2000 of the $1.0000 judge budget spent" in budget.describe()


def test_a_failed_call_and_the_budget_are_each_counted_and_told_apart(stub, tmp_path, capsys):
    from openai_stub import Fault

    # the budget is sized for gpt-4o-mini's prices: room for some judgments, not all
    (tmp_path / "qareport.yaml").write_text(CORRECTNESS_ONLY + "  model: gpt-4o-mini\n  budget: 0.0005\n")
    stub.script(Fault(status=500))  # the first call fails (no retry)
    code, document = run_cli(tmp_path, "cache.sqlite3", "--judge-retries", "0")
    err = capsys.readouterr().err
    assert code == JUDGE_FAILED
    counts = correctness_counts(document)
    assert counts["not_judged"] == counts["not_judged_budget_reached"] + 1
    assert counts["not_judged_budget_reached"] > 0 and counts["judged"] > 0
    assert "JUDGE FAILED: 1 judgment(s) could not be obtained" in err and "budget reached: $" in err


def test_a_budget_holds_the_embeddings_of_relevance_chats_it_admitted():
    from qareport.judge.cost import Budget, BudgetReached, CallEstimate

    budget = Budget(1.0)
    chat = CallEstimate("chat", "answer_relevance", 100, 10, 0.5, hold_usd=0.2)
    budget.settle(budget.admit(chat), 0.5)  # 0.5 spent, 0.2 held for its embeddings
    with pytest.raises(BudgetReached):  # 0.5 + 0.2 + 0.4 would pass 1.0
        budget.admit(CallEstimate("chat", "answer_correctness", 100, 10, 0.4))
    embeddings = CallEstimate("embeddings", "answer_relevance", 50, 0, 0.3)
    budget.settle(budget.admit(embeddings), 0.3)  # reached, but it completes a judgment paid for, and fits
    assert budget.spent == pytest.approx(0.8) and budget.held == pytest.approx(0.0)
