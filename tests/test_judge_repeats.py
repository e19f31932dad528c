"""Judge repeats (`--judge-repeats N`, `judge.repeats`): each judgment asked N times, each its own
cache entry; a metric's value is the mean over the repeats that gave one; the estimate and the
budget count every repeat. Against the loopback server of tests/openai_stub.py."""

from __future__ import annotations

import itertools
import json
import threading

import pytest
from conftest import RESPONSES, TESTCASES, judge_settings
from openai_stub import Fault, claims, section
from openpyxl import load_workbook

from qareport.errors import JudgeSettingsError
from qareport.exit_status import REPORT_WRITTEN
from qareport.judge import Judge
from qareport.judge.cache import cache_key
from qareport.judge_noise import noise_shares, split_variance
from qareport.pipeline import RunOptions, run_pipeline
from qareport.settings import resolve_judge_settings
from qareport.workbook.statistics_judge import NOISE_SHARES_TITLE, NOISE_TITLE


def qa(n: int) -> dict:
    return {"question_id": f"q{n}", "question_text": f"question {n}?", "status": "success",
            "reference_answer": f"a{n}; b{n}", "actual_answer": f"a{n}; c{n}"}


def noisy_correctness(server) -> None:
    """A judge that finds 0, 1, 2, 0, 1, 2, ... of the reference claims (at least two) among the
    answer's two, in the order it is asked: each repeat a different reply to the same request."""
    counter = itertools.count()
    lock = threading.Lock()

    def rule(prompt: str, body: dict) -> dict:
        reference = len(claims(section(prompt, "reference_answer") or "")) or 1
        with lock:
            matching = next(counter) % 3
        return {"reason": "noisy", "reference_claims_count": max(reference, 2), "actual_claims_count": 2,
                "matching_claims_count": matching}

    server.rules["answer_correctness"] = rule


def test_without_repeats_the_cache_keys_are_those_of_earlier_versions():
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Count the claims."}],
               "temperature": 0.0}
    # computed by the version before repeats existed: caches written then stay valid
    expected = "030f15270a6e97a4e1e31e16b3e1a3219883986c3f34a458d4679f2f9fbc4bba"
    assert cache_key("chat", request, endpoint="http://127.0.0.1:9/v1") == expected
    assert cache_key("chat", request, endpoint="http://127.0.0.1:9/v1", repeat=0) == expected
    others = {cache_key("chat", request, endpoint="http://127.0.0.1:9/v1", repeat=n) for n in range(1, 4)}
    assert len(others) == 3 and expected not in others


def test_each_repeat_is_asked_and_cached_and_the_value_is_their_mean(server, tmp_path):
    noisy_correctness(server)
    settings = judge_settings(server, tmp_path, repeats=3)
    with Judge(settings) as judge:
        run = judge.judge_results([qa(0), qa(1)])
        again = judge.judge_results([qa(0), qa(1)])
    assert server.chat_calls == 6 and run.usage.calls == 6
    bodies = {json.dumps(r.body, sort_keys=True) for r in server.requests}
    assert len(bodies) == 2  # the same request, asked three times: only the cache key tells the repeats apart
    first = run.results[0]
    # matching 0, 1, 2 of 2 reference and 2 actual claims: F1 0, 0.5, 1
    assert first["answer_f1_repeats"] == [0.0, 0.5, 1.0]
    assert first["answer_f1"] == pytest.approx(0.5)
    assert first["answer_recall"] == pytest.approx(0.5) and first["answer_precision"] == pytest.approx(0.5)
    assert first["answer_matching_claims_count"] == 0  # counts and reason: the first repeat's
    assert "answer_eval_error" not in first
    assert sum(r["answer_correctness_cost"] for r in run.results) == pytest.approx(run.usage.cost_usd)
    assert again.usage.calls == 0 and again.usage.cached_calls == 6
    assert [r["answer_f1_repeats"] for r in again.results] == [r["answer_f1_repeats"] for r in run.results]


def test_a_cache_filled_without_repeats_answers_the_first_repeat(server, tmp_path):
    with Judge(judge_settings(server, tmp_path)) as judge:
        single = judge.judge_results([qa(0)])
    assert server.chat_calls == 1 and "answer_f1_repeats" not in single.results[0]
    with Judge(judge_settings(server, tmp_path, repeats=3)) as judge:
        repeated = judge.judge_results([qa(0)])
    assert server.chat_calls == 3  # two more: the first repeat came from the cache
    assert repeated.usage.cached_calls == 1 and repeated.usage.calls == 2
    assert repeated.results[0]["answer_f1_repeats"] == [0.5, 0.5, 0.5]


def test_a_repeat_that_fails_leaves_the_mean_of_the_others_and_none_in_its_place(server, tmp_path):
    noisy_correctness(server)
    server.script(Fault(content="not json"), Fault(content="still not json"))  # repeat 1 and its retry
    with Judge(judge_settings(server, tmp_path, repeats=3)) as judge:
        run = judge.judge_results([qa(0)])
    judged = run.results[0]
    assert judged["answer_f1_repeats"] == [None, 0.0, 0.5]  # the noisy rule was asked twice
    assert judged["answer_f1"] == pytest.approx(0.25)
    assert "answer_eval_error" not in judged
    assert run.failure is None and run.not_judged == 0
    assert run.usage.by_metric["answer_correctness"].errors == 0


def test_when_every_repeat_fails_the_judgment_fails_as_without_repeats(server, tmp_path):
    server.always(Fault(status=500), path="chat")
    with Judge(judge_settings(server, tmp_path, repeats=2)) as judge:
        run = judge.judge_results([qa(0)])
    judged = run.results[0]
    assert judged["answer_eval_error"].startswith("not judged: ")
    assert "answer_f1" not in judged and "answer_f1_repeats" not in judged
    assert run.not_judged == 1 and run.failure is not None
    assert run.usage.by_metric["answer_correctness"].errors == 1


def test_the_estimate_counts_every_repeat_and_the_cached_ones(server, tmp_path):
    with Judge(judge_settings(server, tmp_path, repeats=3)) as judge:
        estimate = judge.estimate_results([qa(0), qa(1)])
    row = estimate.metrics[0]
    assert (row.judgments, row.cached, row.calls) == (6, 0, 6)
    with Judge(judge_settings(server, tmp_path)) as judge:
        judge.judge_results([qa(0), qa(1)])  # the first repeat of each, cached
    with Judge(judge_settings(server, tmp_path, repeats=3)) as judge:
        estimate = judge.estimate_results([qa(0), qa(1)])
        run = judge.judge_results([qa(0), qa(1)])
    row = estimate.metrics[0]
    assert (row.judgments, row.cached, row.calls) == (6, 2, 4)
    assert run.usage.calls == row.calls and run.usage.cached_calls == row.cached


def test_the_budget_counts_every_repeat(server, tmp_path):
    server.usage = (1000, 100)
    with Judge(judge_settings(server, tmp_path / "one")) as judge:
        single = judge.judge_results([qa(0), qa(1)])
    assert single.usage.cost_usd is not None and single.budget_reached is None
    per_call = single.usage.cost_usd / 2
    budget = per_call * 3.5  # two judgments without repeats; not six calls
    with Judge(judge_settings(server, tmp_path / "again", budget_usd=budget)) as judge:
        assert judge.judge_results([qa(0), qa(1)]).budget_reached is None
    with Judge(judge_settings(server, tmp_path / "three", repeats=3, budget_usd=budget)) as judge:
        run = judge.judge_results([qa(0), qa(1)])
    assert run.budget_reached is not None
    assert 2 < run.usage.calls < 6 and run.usage.cost_usd <= budget
    assert run.usage.cost_usd == pytest.approx(per_call * run.usage.calls)
    first, second = run.results
    assert first["answer_f1_repeats"] == [0.5, 0.5, 0.5]
    # the repeats of the second case the budget stopped: None in its list, or all of them (not judged)
    stopped = second["answer_f1_repeats"].count(None) if "answer_f1_repeats" in second else 3
    assert stopped == 6 - run.usage.calls


def test_repeats_come_from_the_option_or_the_configuration_and_are_checked(tmp_path):
    environ = {"OPENAI_API_KEY": "sk-test"}
    settings, _ = resolve_judge_settings(options={"repeats": 4}, config={"repeats": 2}, environ=environ)
    assert settings is not None and settings.repeats == 4 and settings.describe()["repeats"] == 4
    settings, _ = resolve_judge_settings(options={}, config={"repeats": 2}, environ=environ)
    assert settings is not None and settings.repeats == 2
    settings, _ = resolve_judge_settings(options={}, config={}, environ=environ)
    assert settings is not None and settings.repeats == 1 and "repeats" not in settings.describe()
    for bad in (0, 21, "many", 2.5):
        with pytest.raises(JudgeSettingsError, match="repeats"):
            resolve_judge_settings(options={}, config={"repeats": bad}, environ=environ)


def noise_table(path) -> dict[str, tuple]:
    """The Statistics sheet's judge-noise table: metric -> the other columns."""
    rows = list(load_workbook(path)["Statistics"].iter_rows(values_only=True))
    start = next(index for index, row in enumerate(rows) if row[0] == NOISE_TITLE)
    header = next(index for index in range(start, len(rows)) if rows[index][:2] == ("metric", "cases"))
    table = {}
    for row in rows[header + 1:]:
        if row[0] is None:
            break
        table[row[0]] = row[1:8]
    return table


def shares_table(path) -> dict[tuple[str, str], tuple]:
    """The Statistics sheet's table of the judge's shares: (metric, share of) -> the other columns."""
    rows = list(load_workbook(path)["Statistics"].iter_rows(values_only=True))
    start = next(index for index, row in enumerate(rows) if row[0] == NOISE_SHARES_TITLE)
    header = next(index for index in range(start, len(rows)) if rows[index][:2] == ("metric", "share of"))
    table = {}
    for row in rows[header + 1:]:
        if row[0] is None:
            break
        table[row[0], row[1]] = row[2:7]
    return table


def test_a_run_with_repeats_shows_the_variance_split_its_judged_values_give(server, tmp_path, monkeypatch):
    noisy_correctness(server)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    output = tmp_path / "report.xlsx"
    options = RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(output),
                         results_path=str(tmp_path / "results.json"),
                         judge_options={"cache_path": str(tmp_path / "cache.sqlite3"), "repeats": 3,
                                        "metrics": ("answer_correctness",), "concurrency": 1})
    outcome = run_pipeline(options, on_progress=None)
    assert outcome.exit_status == REPORT_WRITTEN
    per_case = []
    for result in outcome.report.results:
        for turn in result.turns:
            if turn.qa is not None and turn.qa.has("answer_f1_repeats"):
                repeats = turn.qa.value("answer_f1_repeats")
                assert turn.qa.answer_f1 == pytest.approx(sum(repeats) / 3)
                per_case.append([repeats])
    assert len(per_case) * 3 == server.chat_calls
    expected = split_variance(per_case)
    table = noise_table(output)
    assert set(table) == {"answer F1"}
    cases, values, judge_variance, attempts_variance, cases_variance, share, sd = table["answer F1"]
    assert (cases, values) == (len(per_case), 3 * len(per_case))
    assert judge_variance == pytest.approx(expected.judge) and judge_variance > 0
    assert attempts_variance is None
    assert cases_variance == pytest.approx(expected.case)
    assert share == pytest.approx(expected.judge / (expected.judge + max(expected.case, 0.0)))
    assert sd == pytest.approx(expected.judge ** 0.5)
    (stored,) = json.loads((tmp_path / "results.json").read_text())["judge"]["noise"]
    assert stored["key"] == "answer_f1" and stored["attempts_variance"] is None
    assert (stored["cases"], stored["values"]) == (cases, values)
    assert stored["judge_variance"] == pytest.approx(expected.judge)
    assert stored["cases_variance"] == pytest.approx(expected.case)
    assert stored["judge_share"] == pytest.approx(share)
    shares = noise_shares(per_case)
    assert shares is not None
    one, used = shares.one_judgment, shares.case_value
    got = shares_table(output)
    assert set(got) == {("answer F1", "one judgment"), ("answer F1", "a case's value")}
    assert got["answer F1", "one judgment"][:4] == pytest.approx((1, share, one.low, one.high))
    assert one.value == pytest.approx(share)
    repeats, value, low, high, note = got["answer F1", "a case's value"]
    assert (repeats, value, low, high) == pytest.approx((3, used.value, used.low, used.high))
    assert used.value <= share  # three repeats: the value used is never less steady than one judgment
    exp_note = (f"{shares.repeats_to_halve} repeats would halve it" if shares.repeats_to_halve is not None
                else "no number of repeats up to 20 halves it: a steadier judge would")
    assert note == exp_note
    assert stored["judge_share_of_value"] == pytest.approx(used.value)
    assert stored["repeats"] == pytest.approx(3) and stored["repeats_to_halve"] == shares.repeats_to_halve


def test_a_run_without_repeats_has_no_variance_split(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    output = tmp_path / "report.xlsx"
    options = RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(output),
                         judge_options={"cache_path": str(tmp_path / "cache.sqlite3"),
                                        "metrics": ("answer_correctness",)})
    outcome = run_pipeline(options, on_progress=None)
    assert outcome.report.judge_noise == ()
    rows = list(load_workbook(output)["Statistics"].iter_rows(values_only=True))
    assert all(row[0] != NOISE_TITLE for row in rows)
