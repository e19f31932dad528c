"""What a reply says it used is believed only when it can be true: a reply without a usage block,
or with token counts that cannot be true (negative), is counted apart and never costed at $0; the
price table is never blamed for it, and a budget still holds."""

from __future__ import annotations

from openai_stub import serve_stub

from qareport.judge import Judge, JudgeSettings
from qareport.judge.replies import ChatReply


def settings_for(server, tmp_path, **overrides) -> JudgeSettings:
    values = dict(base_url=server.url, api_key="sk-test", use_cache=False, timeout=5.0, max_retries=0,
                  concurrency=1, metrics=("answer_correctness",))
    values.update(overrides)
    return JudgeSettings(**values)


def qa(n: int) -> dict:
    return {"question_id": f"q{n}", "question_text": f"question {n}?", "status": "success",
            "reference_answer": f"a{n}; b{n}", "actual_answer": f"a{n}; c{n}"}


def test_replies_without_usage_are_counted_apart_and_the_price_table_is_not_blamed(tmp_path):
    with serve_stub(usage="none") as server, Judge(settings_for(server, tmp_path)) as judge:
        run = judge.judge_results([qa(n) for n in range(3)])
    usage = run.usage
    assert [r["answer_f1"] for r in run.results] == [0.5] * 3
    assert (usage.calls, usage.no_usage, usage.invalid_usage) == (3, 3, 0)
    assert usage.unpriced_models == [] and usage.cost_note is None  # the default model's price is known
    assert usage.cost_usd == 0.0  # what is known: the replies that said what they used (none here)
    assert "3 replies reported no token usage: their cost is not included" in usage.summary()
    assert usage.to_dict()["replies_without_usage"] == 3
    assert all(r["answer_correctness_cost"] is None for r in run.results)  # unknown, not $0


def test_a_mix_of_replies_costs_those_with_usage_and_counts_the_rest_apart(tmp_path):
    with serve_stub(usage=(1000, 100)) as server, Judge(settings_for(server, tmp_path)) as judge:
        priced = judge.judge_results([qa(0)]).usage.cost_usd
        server.usage = "none"
        run = judge.judge_results([qa(1), qa(2)])
        server.usage = (1000, 100)
        mixed = judge.judge_results([qa(3), qa(4)])
    assert priced is not None and priced > 0
    assert run.usage.no_usage == 2 and run.usage.cost_usd == 0.0
    assert mixed.usage.no_usage == 0 and mixed.usage.cost_usd == priced * 2


def test_negative_token_counts_are_invalid_usage_never_a_free_call(tmp_path):
    with serve_stub(usage=(-1_000_000, -1000)) as server, Judge(settings_for(server, tmp_path)) as judge:
        run = judge.judge_results([qa(n) for n in range(3)])
    usage = run.usage
    assert (usage.calls, usage.invalid_usage, usage.no_usage) == (3, 3, 0)
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)
    assert usage.cost_usd == 0.0 and usage.unpriced_models == []
    assert "3 replies reported token counts that cannot be true" in usage.summary()
    assert all(r["answer_correctness_cost"] is None for r in run.results)


def test_a_budget_counts_replies_with_impossible_usage_at_their_estimate_and_stops(tmp_path):
    """Each call reserves its estimate; a reply whose counts cannot be believed keeps its reservation
    as spent, so such replies use the budget up as honest ones would instead of slipping past it."""
    results = [qa(n) for n in range(40)]
    sized = dict(model="gpt-4o-mini", budget_usd=0.0003)  # a budget that holds some of its calls, not all
    with serve_stub(usage=(-1_000_000, -1000)) as server:
        with Judge(settings_for(server, tmp_path, **sized)) as judge:
            run = judge.judge_results(results)
        honest = serve_stub(usage="chars")
    assert run.budget_reached is not None
    assert 0 < run.usage.calls < len(results)
    with honest as server, Judge(settings_for(server, tmp_path, **sized)) as judge:
        fair = judge.judge_results(results)
    assert fair.budget_reached is not None
    assert run.usage.calls <= fair.usage.calls  # never more judgments for the same money than honest replies


def test_usage_is_read_as_reported_missing_or_invalid():
    def reply(usage):
        return ChatReply.of_json({"choices": [{"message": {"content": "x"}}], **usage})

    assert reply({"usage": {"prompt_tokens": 5, "completion_tokens": 2}}).usage == "reported"
    assert reply({}).usage == "missing"
    assert reply({"usage": None}).usage == "missing"
    assert reply({"usage": {"prompt_tokens": -5, "completion_tokens": 2}}).usage == "invalid"
    assert reply({"usage": {"prompt_tokens": "many", "completion_tokens": 2}}).usage == "invalid"
    assert reply({"usage": {"prompt_tokens": True, "completion_tokens": 2}}).usage == "invalid"


def test_the_estimate_counts_identical_prompts_once_as_the_run_sends_them(tmp_path):
    twins = [qa(0), {**qa(0), "question_id": "q0-again"}, qa(1), {**qa(1), "question_id": "q1-again"}, qa(2)]
    with serve_stub(usage="chars") as server:
        settings = settings_for(server, tmp_path, use_cache=True, cache_path=str(tmp_path / "c.sqlite3"))
        with Judge(settings) as judge:
            estimate = judge.estimate_results(twins)
            assert server.calls == 0
            run = judge.judge_results(twins)
    row = next(m for m in estimate.metrics if m.metric == "answer_correctness")
    assert (row.judgments, row.calls, row.cached) == (5, 3, 2)
    assert (run.usage.calls, run.usage.cached_calls) == (row.calls, row.cached)
    assert row.input_tokens == run.usage.input_tokens  # the same requests, counted by the same rule
