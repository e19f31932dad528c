"""The random audit of the judge (qareport.judge_audit): the sample is seeded and stable, the rates and
kappa agree with hand counts, the audited sample is reported apart from the reviews the analysts chose,
and the error rate's interval covers a planted judge's rate as often as it says."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace
from math import sqrt

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook
from test_judge_agreement import WEEK_1, WEEK_2, run, type_reviews

from qareport.case_record import CaseRow
from qareport.errors import SettingsError
from qareport.judge_agreement import wilson_interval
from qareport.judge_audit import (
    AUDIT_SIZE,
    AUDITED,
    CHOSEN,
    AuditedRun,
    Calibration,
    Confusion,
    calibrate,
    cohen_kappa,
    draw_audit_sample,
    kappa_interval,
)
from qareport.pipeline import RunOptions, run_pipeline
from qareport.records import Review
from qareport.runs import case_row_from_stored
from qareport.significance import SEED


def rows_of(count: int, *, metrics=("correctness", "relevance")) -> list[CaseRow]:
    return [CaseRow(f"case-{n:03d}", definition_hash=f"h{n}", judged={metric: (n % 5) / 4 for metric in metrics})
            for n in range(count)]


# --- the sample -----------------------------------------------------------------------------------------


def test_the_audit_sample_is_the_same_for_the_same_seed_and_suite_whatever_the_order():
    rows = rows_of(40)
    first = draw_audit_sample(rows, size=20, seed=7)
    assert len(first) == 20 and len(set(first)) == 20
    assert draw_audit_sample(list(reversed(rows)), size=20, seed=7) == first
    assert draw_audit_sample(rows, size=20, seed=8) != first
    assert draw_audit_sample(rows, size=500, seed=7) == draw_audit_sample(rows, size=80, seed=7)  # all 80
    assert draw_audit_sample(rows, size=0, seed=7) == ()
    with pytest.raises(ValueError, match="0 or more"):
        draw_audit_sample(rows, size=-1)


def test_a_case_added_to_the_suite_leaves_the_rest_of_the_sample_as_it_was():
    rows = rows_of(40)
    before = set(draw_audit_sample(rows, size=20, seed=3))
    added = CaseRow("case-new", definition_hash="n", judged={"correctness": 1.0, "relevance": 0.0})
    after = set(draw_audit_sample([*rows, added], size=20, seed=3))
    assert after <= before | {judgment for judgment in after if judgment.case_id == "case-new"}
    assert len(before - after) == len([judgment for judgment in after if judgment.case_id == "case-new"])


def test_every_judgment_is_drawn_equally_often_over_seeds():
    rows = rows_of(25)  # 50 judgments, 10 drawn: each in 1 draw of 5
    seeds = 2000
    counts = Counter(judgment for seed in range(seeds) for judgment in draw_audit_sample(rows, size=10, seed=seed))
    spread = sqrt(seeds * 0.2 * 0.8)  # binomial standard deviation of one judgment's count
    assert len(counts) == 50
    assert all(abs(count - seeds * 0.2) < 4.5 * spread for count in counts.values()), counts.most_common(3)


def test_the_sample_holds_only_judgments_shown_on_the_overview_row():
    rows = [CaseRow(f"c{n}", judged={"correctness": 1.0, "retrieval": 0.5, "Faithfulness": "yes"}) for n in range(5)]
    metrics = {judgment.metric for judgment in draw_audit_sample(rows, size=100)}
    assert metrics == {"correctness", "Faithfulness"}


# --- the figures ----------------------------------------------------------------------------------------


def test_kappa_and_the_rates_agree_with_a_hand_count():
    # judge passed 25 (20 right, 5 too lenient), failed 15 (10 right, 5 too harsh), of 40:
    # observed agreement 0.75; both pass 25 of 40, so chance 0.625^2 + 0.375^2 = 0.53125
    assert cohen_kappa(20, 5, 10, 5) == pytest.approx((0.75 - 0.53125) / (1 - 0.53125))
    item = Calibration("correctness", "answer correctness", None, AUDITED, Confusion(20, 5, 10, 5), drawn=40)
    assert item.error_rate == pytest.approx((10 / 40, *wilson_interval(10, 40)))
    assert item.true_positive_rate == pytest.approx((20 / 25, *wilson_interval(20, 25)))
    assert item.true_negative_rate == pytest.approx((10 / 15, *wilson_interval(10, 15)))
    low, high = item.kappa_interval
    assert -1 <= low < item.kappa < high <= 1
    assert item.kappa_interval == kappa_interval(20, 5, 10, 5)  # seeded: the same every time
    assert cohen_kappa(10, 0, 0, 0) is None and kappa_interval(10, 0, 0, 0) is None  # all passed by both
    assert cohen_kappa(10, 0, 10, 0) == 1.0 and cohen_kappa(0, 10, 0, 10) == -1.0
    stored = item.to_dict()
    assert (stored["audited"], stored["wrong"], stored["drawn"]) == (40, 10, 40)
    assert stored["error_rate"]["share"] == pytest.approx(0.25) and stored["kappa_low"] == low


def test_the_audited_sample_and_the_chosen_reviews_are_counted_apart():
    rows = rows_of(30, metrics=("correctness",))
    sample = draw_audit_sample(rows, size=5, seed=11)
    sampled = {judgment.case_id for judgment in sample}
    others = [row.case_id for row in rows if row.case_id not in sampled][:4]
    reviews = {case_id: Review("ok") for case_id in sampled}
    wrong = sorted(sampled)[0]
    reviews[wrong] = Review("judge wrong")
    reviews.update({case_id: Review("judge wrong: correctness") for case_id in others})
    (audited, chosen) = calibrate([AuditedRun(rows, reviews, judge="gpt-4o-mini")], size=5, seed=11)
    assert (audited.sample, chosen.sample) == (AUDITED, CHOSEN)
    assert audited.judge == chosen.judge == "gpt-4o-mini"
    assert (audited.drawn, audited.confusion.audited, audited.confusion.wrong) == (5, 5, 1)
    assert (chosen.confusion.audited, chosen.confusion.wrong) == (4, 4)
    value = next(row.judged["correctness"] for row in rows if row.case_id == wrong)
    exp = Confusion().added(passed=value >= 0.5, wrong=True)
    for judgment in sample:
        if judgment.case_id != wrong:
            exp = exp.added(passed=judgment.value >= 0.5, wrong=False)
    assert audited.confusion == exp


def test_runs_are_counted_per_judge_and_a_judgment_carried_over_weeks_once():
    rows = rows_of(10, metrics=("correctness",))
    reviews = {row.case_id: Review("ok") for row in rows}
    week1 = AuditedRun(rows, reviews, judge="judge A")
    week2 = AuditedRun(rows, reviews, judge="judge A")  # the same judgments, carried
    figures = calibrate([week1, week2], size=10)
    assert [(item.judge, item.sample, item.confusion.audited) for item in figures] == [("judge A", AUDITED, 10)]
    rejudged = [CaseRow(row.case_id, definition_hash=row.definition_hash, judged={"correctness": 1.0}) for row in rows]
    figures = calibrate([week1, AuditedRun(rejudged, reviews, judge="judge B")], size=10)
    assert [(item.judge, item.confusion.audited) for item in figures] == [("judge A", 10), ("judge B", 10)]


def test_a_drawn_sample_nobody_reviewed_yet_shows_as_drawn_with_nothing_audited():
    (item,) = calibrate([AuditedRun(rows_of(10, metrics=("correctness",)), {})], size=4)
    assert (item.sample, item.drawn, item.confusion.audited) == (AUDITED, 4, 0)
    assert item.error_rate is None and item.kappa is None


# --- coverage on a planted judge -----------------------------------------------------------------------

GOOD, HARSH, LENIENT = 0.7, 0.05, 0.15  # share of good answers; the judge fails a good one, passes a bad one
DRAWS, CASES, AUDIT = 400, 200, 50


def planted_run(generator: random.Random) -> tuple[list[CaseRow], dict[str, bool]]:
    """A suite judged by the planted judge: its rows and, per case, whether the judge was wrong."""
    rows, wrong = [], {}
    for n in range(CASES):
        good = generator.random() < GOOD
        mistaken = generator.random() < (HARSH if good else LENIENT)
        passed = good != mistaken
        rows.append(CaseRow(f"case-{n}", definition_hash="h", judged={"correctness": 1.0 if passed else 0.0}))
        wrong[f"case-{n}"] = mistaken
    return rows, wrong


def test_the_error_rate_on_the_audit_covers_a_planted_judges_rate_about_95_times_in_100():
    # Monte Carlo error of a 95 % coverage over 400 draws: sqrt(0.95 * 0.05 / 400) = 0.011; accepted from
    # 3 errors below. The chosen reviews (cases the judge failed, as analysts chasing failures pick them)
    # read the share wrong among failures, P(good | failed) = 0.035 / 0.29 = 0.12, not the judge's 0.08:
    # that is why they are reported apart.
    truth = GOOD * HARSH + (1 - GOOD) * LENIENT  # 0.08
    generator = random.Random(29)
    covered = {"error": 0, "tpr": 0, "tnr": 0}
    chosen_rates = []
    for draw in range(DRAWS):
        rows, wrong = planted_run(generator)
        sampled = {judgment.case_id for judgment in draw_audit_sample(rows, size=AUDIT, seed=draw)}
        failed = [row.case_id for row in rows if row.judged["correctness"] == 0.0 and row.case_id not in sampled]
        reviewed = sampled | set(failed[:AUDIT])
        reviews = {case_id: Review("judge wrong" if wrong[case_id] else "ok") for case_id in reviewed}
        audited, chosen = calibrate([AuditedRun(rows, reviews)], size=AUDIT, seed=draw)
        assert audited.sample == AUDITED and audited.confusion.audited == AUDIT
        covered["error"] += audited.error_rate[1] <= truth <= audited.error_rate[2]
        covered["tpr"] += audited.true_positive_rate[1] <= 1 - HARSH <= audited.true_positive_rate[2]
        covered["tnr"] += audited.true_negative_rate[1] <= 1 - LENIENT <= audited.true_negative_rate[2]
        chosen_rates.append(chosen.error_rate[0])
    floor = 0.95 - 3 * sqrt(0.95 * 0.05 / DRAWS)
    assert all(floor <= count / DRAWS <= 0.995 for count in covered.values()), covered
    among_failures = GOOD * HARSH / (GOOD * HARSH + (1 - GOOD) * (1 - LENIENT))
    assert sum(chosen_rates) / DRAWS == pytest.approx(among_failures, abs=0.01)
    assert among_failures > 1.4 * truth


# --- in the workbook, week after week -------------------------------------------------------------------


@pytest.fixture
def judge(monkeypatch):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-audit")
        yield server


def statistics_rows(path) -> list[tuple]:
    return list(load_workbook(path)["Statistics"].iter_rows(values_only=True))


def table_after(rows: list[tuple], title: str, first_header: tuple) -> list[tuple]:
    start = next(index for index, row in enumerate(rows) if row[0] == title)
    header = next(index for index in range(start, len(rows)) if rows[index][:len(first_header)] == first_header)
    found = []
    for row in rows[header + 1:]:
        if row[0] is None:
            break
        found.append(row)
    return found


def test_a_judged_run_lists_the_judgments_to_audit_and_the_next_run_measures_the_judge_on_them(judge, tmp_path):
    week1, week2 = tmp_path / "week1.xlsx", tmp_path / "week2.xlsx"
    assert run(tmp_path, week1, "--results", str(tmp_path / "week1.json"), epoch=WEEK_1) == 0
    stored = json.loads((tmp_path / "week1.json").read_text(encoding="utf-8"))
    rows = [case_row_from_stored(case) for case in stored["cases"]]
    sample = draw_audit_sample(rows, size=AUDIT_SIZE, seed=SEED)
    assert len(sample) == AUDIT_SIZE  # the bundled suite has more judgments than that
    labels = {"correctness": "answer correctness", "relevance": "answer relevance"}
    listed = table_after(statistics_rows(week1), f"Audit these {AUDIT_SIZE} judgments", ("case", "metric"))
    assert [(row[0], row[1], row[3]) for row in listed] == [
        (judgment.case_id, labels[judgment.metric], "not reviewed yet") for judgment in sample]
    assert [row[2] for row in listed] == pytest.approx([judgment.value for judgment in sample])
    assert stored["judge"]["audit"]["sample"][0]["case_id"] == sample[0].case_id

    # the analyst audits the sample (finding the judge wrong on one case) and chases one failure of their own
    sampled = list(dict.fromkeys(judgment.case_id for judgment in sample))
    chosen = next(row.case_id for row in rows if row.judged and row.case_id not in sampled)
    marks = {case_id: "ok" for case_id in sampled}
    marks[sampled[0]] = "judge wrong"
    marks[chosen] = "judge wrong"
    type_reviews(week1, marks)
    assert run(tmp_path, week2, "--baseline", str(week1), "--results", str(tmp_path / "week2.json"),
               epoch=WEEK_2) == 0
    listed = table_after(statistics_rows(week2), f"Audit these {AUDIT_SIZE} judgments", ("case", "metric"))
    assert [row[3] for row in listed] == [
        "judge wrong" if judgment.case_id == sampled[0] else "judge right" for judgment in sample]
    table = table_after(statistics_rows(week2), "The judge's calibration", ("metric", "sample"))
    got = {(row[0], row[1]): row[2:4] for row in table}
    chosen_row = next(row for row in rows if row.case_id == chosen)
    exp = {}
    for metric, label in labels.items():
        drawn = [judgment for judgment in sample if judgment.metric == metric]
        exp[label, AUDITED] = (len(drawn), sum(judgment.case_id == sampled[0] for judgment in drawn))
        if metric in chosen_row.judged:
            exp[label, CHOSEN] = (1, 1)
    assert got == exp
    calibration = json.loads((tmp_path / "week2.json").read_text(encoding="utf-8"))["judge"]["audit"]["calibration"]
    audited = [item for item in calibration if item["sample"] == AUDITED]
    assert sum(item["audited"] for item in audited) == AUDIT_SIZE
    assert all(item["error_rate"]["low"] <= item["error_rate"]["share"] <= item["error_rate"]["high"] for item in audited)


def test_the_audits_size_comes_from_the_option_or_the_configuration_and_a_negative_one_is_refused(judge, tmp_path):
    config = tmp_path / "qareport.yaml"
    config.write_text("audit_size: 3\n", encoding="utf-8")
    options = RunOptions(testcases=(str(TESTCASES),), responses=(str(RESPONSES),), output=str(tmp_path / "r.xlsx"),
                         judge_options={"cache_path": str(tmp_path / "cache.sqlite3")}, config_path=str(config))
    for given, exp in ((5, 5), (None, 3)):
        outcome = run_pipeline(replace(options, audit_size=given), on_progress=None)
        assert outcome.report.audit is not None and len(outcome.report.audit.sample) == exp
        listed = table_after(statistics_rows(tmp_path / "r.xlsx"), f"Audit these {exp} judgments", ("case", "metric"))
        assert len(listed) == exp
    with pytest.raises(SettingsError, match="'audit_size' must be an integer >= 0 \\(got -1\\)"):
        run_pipeline(replace(options, audit_size=-1), on_progress=None)
    config.write_text("audit_size: many\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="audit_size"):
        run_pipeline(replace(options, audit_size=None), on_progress=None)
