"""The judge against the analysts: reviews that name the judged metric that was wrong, counted per metric
with a Wilson interval, this run and over a history of workbooks, against a real loopback judge."""

from __future__ import annotations

import json
import math
import subprocess
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook
from test_libreoffice import require

from qareport.case_record import CaseRow
from qareport.cli import main
from qareport.judge_agreement import (
    DISAGREEMENT_THRESHOLD,
    MIN_REVIEWED,
    Agreement,
    JudgeReview,
    count_reviewed,
    judge_agreement,
    known_names,
    read_judge_review,
    wilson_interval,
)
from qareport.records import Review, RunSnapshot
from qareport.report import reviewed_history
from qareport.run_reviews import read_reviews
from qareport.runs import case_row_from_stored

WEEK_1, WEEK_2, WEEK_3 = "1714557600", "1715162400", "1715767200"
A = "c10bbc8dce98a4b8832d125134a16153"  # judged: correctness, relevance, retrieval
B = "b33fbfd6-edbd-4cdd-a7ba-8fff8f52d648"  # correctness, relevance
C = "500eb5b5-7686-4a27-84e3-a227046cab38"  # relevance (two turns)
D = "8bbea9a10876a04ad77a82fd2aedee40"  # correctness, relevance
E = "1b64fa36-5f04-4a17-bd38-6d6fb79cc484"  # relevance
F = "d566b1e9da418ac83e520a66cc7af4d7"  # correctness, relevance
G = "2818e6c6-6d0e-49a5-86af-cc5a22b108d2"  # relevance


# --- the Wilson interval ------------------------------------------------------------------------------


def _score_test_bounds(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson interval computed another way: the proportions p at which the score statistic
    |p̂ - p| / sqrt(p (1 - p) / n) equals z, found by bisection on each side of p̂."""
    share = successes / trials

    def excess(p: float) -> float:
        return abs(share - p) - z * math.sqrt(p * (1 - p) / trials)

    def bisect(inside: float, outside: float) -> float:
        for _ in range(200):
            middle = (inside + outside) / 2
            inside, outside = (middle, outside) if excess(middle) < 0 else (inside, middle)
        return (inside + outside) / 2

    low = 0.0 if successes == 0 else bisect(share, 0.0)
    high = 1.0 if successes == trials else bisect(share, 1.0)
    return low, high


@pytest.mark.parametrize(("successes", "trials", "exp"), [
    (0, 20, (0.0, 0.1611)),  # upper bound z² / (n + z²)
    (81, 263, (0.2553, 0.3662)),  # Newcombe (1998), Statistics in Medicine 17, table II
    (15, 148, (0.0624, 0.1605)),  # ibid.
    (1, 29, (0.0061, 0.1718)),  # ibid.
])
def test_the_wilson_interval_gives_the_published_values(successes, trials, exp):
    got = wilson_interval(successes, trials)
    assert got == pytest.approx(exp, abs=5e-5)


@pytest.mark.parametrize("trials", [1, 2, 5, 13, 20, 57, 400])
def test_the_wilson_interval_is_where_the_score_test_stops_rejecting(trials):
    for successes in range(0, trials + 1, max(1, trials // 9)):
        assert wilson_interval(successes, trials) == pytest.approx(_score_test_bounds(successes, trials), abs=1e-9)


def test_a_share_of_nothing_has_no_interval():
    with pytest.raises(ValueError):
        wilson_interval(0, 0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


# --- reading a review -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("typed", "exp"), [
    ("ok", JudgeReview()),
    (" OK ", JudgeReview()),
    ("judge wrong", JudgeReview(all_wrong=True)),
    ("Judge Wrong:", JudgeReview(all_wrong=True)),
    ("judge wrong: correctness", JudgeReview(wrong=frozenset({"correctness"}))),
    ("Judge  Wrong : Correctness", JudgeReview(wrong=frozenset({"correctness"}))),
    ("judge wrong: relevance , correctness", JudgeReview(wrong=frozenset({"correctness", "relevance"}))),
    ("judge wrong:answer_correctness; Answer Relevance", JudgeReview(wrong=frozenset({"correctness", "relevance"}))),
    ("judge wrong: retrieval", JudgeReview(wrong=frozenset({"retrieval"}))),
    ("judge wrong: faithfulness", JudgeReview(wrong=frozenset({"faithfulness"}))),  # a custom metric
    ("judge wrong: corectness", JudgeReview(unknown=("corectness",))),
    ("judge wrong: corectness, relevance", JudgeReview(wrong=frozenset({"relevance"}), unknown=("corectness",))),
    ("known issue", None),
    ("needs a look", None),
    ("", None),
    (None, None),
])
def test_a_review_says_which_judged_metric_was_wrong(typed, exp):
    assert read_judge_review(typed, known_names(["Faithfulness"])) == (
        exp if exp is None or "faithfulness" not in exp.wrong else JudgeReview(wrong=frozenset({"Faithfulness"})))


def test_a_judgment_carried_from_week_to_week_counts_once_with_its_latest_review():
    row = CaseRow("a", definition_hash="h", judged={"correctness": 0.5, "relevance": 0.9})
    week1 = ([row], {"a": Review("ok")})
    week2 = ([row], {"a": Review("judge wrong: correctness")})  # the analyst looked again
    assert count_reviewed([week1, week2]) == {"correctness": (1, 1), "relevance": (1, 0)}
    judged_again = replace(row, judged={"correctness": 0.25, "relevance": 0.9})  # a new judgment of correctness
    week3 = ([judged_again], {"a": Review("judge wrong")})
    assert count_reviewed([week1, week2, week3]) == {"correctness": (2, 2), "relevance": (1, 1)}


def test_a_review_naming_only_metrics_the_case_was_not_judged_on_says_nothing_of_the_others():
    row = CaseRow("a", definition_hash="h", judged={"relevance": 0.9})
    assert count_reviewed([([row], {"a": Review("judge wrong: retrieval")})]) == {}
    assert count_reviewed([([row], {"a": Review("judge wrong: retrieval, relevance")})]) == {"relevance": (1, 1)}
    assert count_reviewed([([row], {"a": Review("judge wrong: corectness")})]) == {}  # a typo: said in Problems
    assert count_reviewed([([row], {"a": Review("known issue")})]) == {}


def test_ok_counts_only_for_the_judged_metrics_shown_on_the_cases_row():
    # retrieval is judged on the case's steps and shown in no Overview column: an `ok` or a plain `judge
    # wrong` on the row says nothing of it; a review that names it does
    row = CaseRow("a", definition_hash="h", judged={"correctness": 0.5, "relevance": 0.9, "retrieval": 0.4,
                                                    "Faithfulness": 1.0})
    custom = ["Faithfulness"]
    assert count_reviewed([([row], {"a": Review("ok")})], custom=custom) == {
        "correctness": (1, 0), "relevance": (1, 0), "Faithfulness": (1, 0)}
    assert count_reviewed([([row], {"a": Review("judge wrong")})], custom=custom) == {
        "correctness": (1, 1), "relevance": (1, 1), "Faithfulness": (1, 1)}
    assert count_reviewed([([row], {"a": Review("judge wrong: retrieval")})], custom=custom) == {
        "correctness": (1, 0), "relevance": (1, 0), "retrieval": (1, 1), "Faithfulness": (1, 0)}
    assert count_reviewed([([row], {"a": Review("judge wrong: correctness")})], custom=custom) == {
        "correctness": (1, 1), "relevance": (1, 0), "Faithfulness": (1, 0)}


def test_a_run_read_from_a_re_saved_copy_of_its_workbook_counts_once_in_the_history(tmp_path):
    row = CaseRow("a", definition_hash="h", judged={"correctness": 0.5})
    week1 = RunSnapshot(source=str(tmp_path / "week1.xlsx"), created="2026-11-02T09:00:00+00:00",
                        qareport_version="1", cases=(row,))
    copy = replace(week1, source=str(tmp_path / "copies" / "week1 (reviewed).xlsx"))
    week2 = replace(week1, source=str(tmp_path / "week2.xlsx"), created="2026-11-09T09:00:00+00:00")
    history = reviewed_history([(week1, {"a": Review("ok")}), (copy, {"a": Review("judge wrong")}),
                                (week2, {})])
    assert len(history) == 2
    assert history[0][1] == {"a": Review("judge wrong")}  # both readings' reviews kept, the later one last
    agreement = judge_agreement(([row], {}), history=history)
    assert agreement is not None and agreement.history_runs == 3  # week 1, week 2 and this run


@pytest.mark.parametrize(("reviewed", "wrong", "flagged"), [
    (MIN_REVIEWED, 6, True),  # 30 %, interval 14.5-51.9 %: wholly above 10 %
    (MIN_REVIEWED - 1, 6, False),  # too few reviews to say
    (MIN_REVIEWED, 3, False),  # 15 %, interval from 5.2 %: could be below 10 %
    (100, 16, True),  # 16 %, interval from 10.1 %
    (100, 15, False),
])
def test_a_metric_is_flagged_with_enough_reviews_and_an_interval_above_the_threshold(reviewed, wrong, flagged):
    item = Agreement("correctness", "answer correctness", reviewed, wrong)
    assert item.flagged is flagged
    assert flagged is (reviewed >= MIN_REVIEWED and wilson_interval(wrong, reviewed)[0] > DISAGREEMENT_THRESHOLD)


def test_an_edited_judged_cell_is_read_without_a_crash():
    assert case_row_from_stored({"case_id": "a", "judged": "not json"}).judged == {}
    assert case_row_from_stored({"case_id": "a", "judged": '["correctness"]'}).judged == {}
    got = case_row_from_stored({"case_id": "a", "judged": '{"correctness": 0.5, "relevance": NaN, "x": [1], "y": true}'})
    assert got.judged == {"correctness": 0.5}
    assert case_row_from_stored({"case_id": "a"}).judged == {}  # a workbook from before qareport kept judgments


# --- three weeks of workbooks with typed reviews ----------------------------------------------------------


@pytest.fixture
def judge(monkeypatch):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-agreement")
        yield server


def run(tmp_path: Path, output: Path, *extra: str, epoch: str, responses: Path = RESPONSES) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", epoch)
        return main(["run", str(TESTCASES), "-r", str(responses), "-o", str(output),
                     "--cache-path", str(tmp_path / "cache.sqlite3"), "--quiet", *extra])


def type_reviews(path: Path, marks: dict[str, str]) -> None:
    """What an analyst does: open the workbook, type into the review column, save."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        workbook = load_workbook(path)
    ws = workbook["Overview"]
    column = next(cell.column for cell in ws[1] if cell.value == "review")
    for row in range(2, ws.max_row + 1):
        if ws.cell(row, 1).value in marks:
            ws.cell(row, column).value = marks[ws.cell(row, 1).value]
    workbook.save(path)


def agreement_table(path: Path) -> dict[tuple[str, str], tuple]:
    """The Statistics sheet's "The judge against the analysts": (metric, over) -> reviewed, wrong, share, low, high."""
    rows = list(load_workbook(path)["Statistics"].iter_rows(values_only=True))
    start = next(index for index, row in enumerate(rows) if row[0] == "The judge against the analysts")
    header = next(index for index in range(start, len(rows)) if rows[index][:2] == ("metric", "over"))
    table = {}
    for row in rows[header + 1:]:
        if row[0] is None:
            break
        table[(row[0], row[1])] = row[2:8]
    return table


def summary_text(path: Path) -> str:
    """The Summary's left-hand column, its notes' lines joined again."""
    return " ".join(str(row[0]) for row in load_workbook(path)["Summary"].iter_rows(values_only=True)
                    if row[0] is not None)


def responses_with_a_new_answer(folder: Path) -> Path:
    """The bundled responses, with case C answering differently (judged again: a new judgment)."""
    folder.mkdir()
    for path in RESPONSES.iterdir():
        text = path.read_text(encoding="utf-8")
        if path.name == "imf.jsonl":
            old = "Germany's real GDP contracted by 0.3 percent in 2023 and was broadly flat in 2024."
            assert old in text
            text = text.replace(old, "Germany's economy shrank slightly in 2023.")
        (folder / path.name).write_text(text, encoding="utf-8")
    return folder


def test_reviews_naming_a_metric_over_three_weeks_give_the_figures_a_hand_count_gives(judge, tmp_path):
    week1, week2, week3 = (tmp_path / f"week{n}.xlsx" for n in (1, 2, 3))
    assert run(tmp_path, week1, epoch=WEEK_1) == 0
    type_reviews(week1, {A: "judge wrong: correctness", B: "ok", C: "judge wrong", D: "Judge Wrong : Relevance , Correctness",
                         E: "known issue", F: "judge wrong: corectness"})
    assert run(tmp_path, week2, "--baseline", str(week1), epoch=WEEK_2) == 0
    # week 2 carried every review (nothing changed); the analyst revises B and reviews G
    carried = {case_id: review.verdict for case_id, review in read_reviews(week2).items()}
    assert carried[A] == "judge wrong: correctness" and carried[D] == "Judge Wrong : Relevance , Correctness"
    type_reviews(week2, {B: "judge wrong: relevance", G: "OK"})
    results = tmp_path / "week3.json"
    assert run(tmp_path, week3, "--baseline", str(week2), "--history", str(week1), str(week2), "--results", str(results),
               epoch=WEEK_3, responses=responses_with_a_new_answer(tmp_path / "responses")) == 0

    # By hand. Judged: A correctness, relevance, retrieval; B correctness, relevance; C, G relevance; D
    # correctness, relevance. Week 3 carries the reviews of A, B (as revised), D, G; C answered anew, so
    # its review is not carried (E says nothing of the judge, F names no metric).
    #   this run   correctness: A wrong, B right, D wrong = 2 of 3; relevance: A right, B wrong, D wrong,
    #              G right = 2 of 4; retrieval: none reviewed (A's review names correctness, and retrieval
    #              is not on A's row)
    #   3 runs     the same judgments once each with their latest review, and C's judgment of weeks 1-2
    #              (judge wrong): relevance 3 of 5
    table = agreement_table(week3)
    exp = {("answer correctness", "this run"): (3, 2), ("answer correctness", "3 runs"): (3, 2),
           ("answer relevance", "this run"): (4, 2), ("answer relevance", "3 runs"): (5, 3),
           ("retrieval (LLM)", "this run"): (0, 0), ("retrieval (LLM)", "3 runs"): (0, 0)}
    assert {key: values[:2] for key, values in table.items()} == exp
    for (reviewed, wrong), values in zip(exp.values(), table.values()):
        if not reviewed:
            assert values[2:5] == (None, None, None)
            continue
        assert values[2] == pytest.approx(wrong / reviewed)
        assert values[3:5] == pytest.approx(wilson_interval(wrong, reviewed))
        assert values[5] is None  # too few reviews to flag anything
    text = summary_text(week3)
    assert ("judge vs analysts (reviewed judgments found wrong), this run: answer correctness 2 of 3 (67 %, 95 % 21–94 %); "
            "answer relevance 2 of 4 (50 %, 95 % 15–85 %); retrieval (LLM) none reviewed") in text
    assert ("judge vs analysts (reviewed judgments found wrong), 3 runs: answer correctness 2 of 3 (67 %, 95 % 21–94 %); "
            "answer relevance 3 of 5 (60 %, 95 % 23–88 %)") in text
    document = json.loads(results.read_text(encoding="utf-8"))
    agreement = document["judge"]["agreement"]
    assert [(item["metric"], item["reviewed"], item["wrong"]) for item in agreement["history"]] == [
        ("correctness", 3, 2), ("relevance", 5, 3), ("retrieval", 0, 0)]
    assert agreement["history_runs"] == 3 and agreement["flagged"] == []
    # the review naming no metric is said where the analyst will look, with how to write it
    problems = [row[3] for row in load_workbook(week3)["Problems"].iter_rows(min_row=2, values_only=True)]
    assert any(F in text and "'corectness'" in text and "judge wrong: METRIC" in text for text in problems)


def test_a_metric_the_analysts_often_find_wrong_is_flagged_do_not_gate_on_it(judge, tmp_path, capsys):
    week1, week2 = tmp_path / "week1.xlsx", tmp_path / "week2.xlsx"
    assert run(tmp_path, week1, "--results", str(tmp_path / "week1.json"), epoch=WEEK_1) == 0
    cases = [case for case in json.loads((tmp_path / "week1.json").read_text())["cases"] if "relevance" in case["judged"]]
    assert len(cases) >= MIN_REVIEWED
    marks = {case["case_id"]: "judge wrong: relevance" if index < 8 else "ok" for index, case in enumerate(cases[:22])}
    type_reviews(week1, marks)
    assert run(tmp_path, week2, "--baseline", str(week1), epoch=WEEK_2) == 0
    table = agreement_table(week2)
    assert table[("answer relevance", "this run")][:2] == (22, 8)  # 36 %, interval from 19.7 %
    assert table[("answer relevance", "this run")][5] == "THE JUDGE DISAGREES WITH THE ANALYSTS: do not gate on it"
    assert table[("answer correctness", "this run")][5] is None  # 0 of those reviewed found wrong
    assert "The judge disagrees with the analysts on answer relevance: do not gate on it" in summary_text(week2)
    judge_line = [line for line in capsys.readouterr().out.splitlines() if line.startswith("judge: ")][-1]
    assert judge_line.endswith("; the judge disagrees with the analysts on answer relevance: do not gate on it")


def test_the_drop_down_offers_judge_wrong_per_judged_metric_and_only_warns_on_other_typing(judge, tmp_path):
    report = tmp_path / "week1.xlsx"
    assert run(tmp_path, report, epoch=WEEK_1) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (validation,) = load_workbook(report)["Overview"].data_validations.dataValidation
    assert validation.formula1 == ('"ok,judge wrong,judge wrong: correctness,judge wrong: relevance,'
                                   'judge wrong: retrieval,known issue,fixed,needs a look"')
    assert validation.errorStyle == "warning"  # `judge wrong: correctness, relevance` is typed and kept


def test_a_typed_judge_wrong_correctness_survives_a_libreoffice_round_trip_and_counts_next_week(judge, tmp_path):
    soffice = require("soffice")
    week1, week2 = tmp_path / "week1.xlsx", tmp_path / "week2.xlsx"
    assert run(tmp_path, week1, epoch=WEEK_1) == 0
    type_reviews(week1, {A: "judge wrong: correctness", B: "Judge wrong: correctness, relevance"})
    subprocess.run([soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(tmp_path / "saved"), str(week1)],
                   capture_output=True, timeout=300, check=True)
    saved = tmp_path / "saved" / "week1.xlsx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (validation,) = load_workbook(saved)["Overview"].data_validations.dataValidation
    assert validation.errorStyle == "warning" and "judge wrong: correctness" in validation.formula1  # as LibreOffice kept it
    assert run(tmp_path, week2, "--baseline", str(saved), "--history", str(saved), epoch=WEEK_2) == 0
    assert {case_id: review.verdict for case_id, review in read_reviews(week2).items()} == {
        A: "judge wrong: correctness", B: "Judge wrong: correctness, relevance"}
    table = agreement_table(week2)
    # A: correctness wrong, relevance right (retrieval is not on its row); B: correctness and relevance wrong
    assert table[("answer correctness", "this run")][:2] == (2, 2)
    assert table[("answer relevance", "this run")][:2] == (2, 1)
    assert table[("retrieval (LLM)", "2 runs")][:2] == (0, 0)
