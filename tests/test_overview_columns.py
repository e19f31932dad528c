"""The Overview's columns for one suite from week to week: they follow from the test cases (their kinds
and targets) and the run's options (a judge or not), never from what a week's responses hold, so
the column letters an analyst's filters use stay; against a baseline, a column the baseline's
Overview had stays too (empty)."""

from conftest import RESPONSES, TESTCASES
from openai_stub import serve_stub
from openpyxl import load_workbook

from qareport.cli import main

JUDGE_COLUMNS = ("answer F1", "answer relevance", "answer recall", "answer precision", "relevance questions",
                 "judge reason", "judge errors")
USAGE = ["input tokens", "output tokens", "total tokens", "elapsed sec"]


def headers(tmp_path, name, responses, *options):
    out = tmp_path / f"{name}.xlsx"
    main(["run", str(TESTCASES), "--responses", *map(str, responses), "-q", "--output", str(out),
          "--cache-path", str(tmp_path / "cache.sqlite3"), "--judge-concurrency", "1", *options])
    return [cell.value for cell in load_workbook(out, read_only=True)["Overview"][1]]


def test_the_bundled_suite_has_the_same_overview_header_row_with_both_response_files_or_either(tmp_path):
    both = headers(tmp_path, "both", [RESPONSES / "imf.jsonl", RESPONSES / "power-system.json"], "--no-llm")
    without_selection = headers(tmp_path, "qa-only", [RESPONSES / "power-system.json"], "--no-llm")
    without_qa = headers(tmp_path, "imf-only", [RESPONSES / "imf.jsonl"], "--no-llm")
    assert without_selection == both and without_qa == both
    # the dimension columns follow from the targets, the usage columns from the Q&A cases, and every
    # long text after the review note has its `more` column whether or not a text is cut this week
    assert "INDICATOR recall" in both and "COUNTRY precision" in both
    assert both[-4:] == USAGE
    for text in ("indicator selection details", "steps details", "reference answer", "actual answer", "error"):
        assert both[both.index(text) + 1] == "more", text
    assert both[both.index("reason") + 1] == "review"  # no `more` column in the scanning part
    assert not set(JUDGE_COLUMNS) & set(both)  # no judge: no judge columns


def test_a_week_without_the_judge_keeps_the_judge_columns_of_the_baseline_week_empty(tmp_path, monkeypatch):
    responses = [RESPONSES / "imf.jsonl", RESPONSES / "power-system.json"]
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        week1 = headers(tmp_path, "week1", responses)
    monkeypatch.delenv("OPENAI_API_KEY")
    week2 = headers(tmp_path, "week2", responses, "--no-llm", "--baseline", str(tmp_path / "week1.xlsx"))
    alone = headers(tmp_path, "alone", responses, "--no-llm")
    assert set(JUDGE_COLUMNS) <= set(week1)
    assert [h for h in week2 if h != "vs baseline"] == week1  # every column of week 1, in its place
    assert not set(JUDGE_COLUMNS) & set(alone)  # without the baseline, no judge columns
    overview = load_workbook(tmp_path / "week2.xlsx", read_only=True)["Overview"]
    rows = list(overview.iter_rows(min_row=2, values_only=True))
    for header in JUDGE_COLUMNS:
        assert all(row[week2.index(header)] is None for row in rows), header  # kept, and empty


def test_the_answer_and_attempt_columns_a_week_lacks_stay_as_its_baseline_had_them(tmp_path):
    """Answers without a reference answer bring the answer columns, and attempts the attempt columns; a
    week whose responses hold no answer and one attempt keeps them against a baseline that had them."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("- template_id: t1\n  questions:\n  - id: q1\n    question_text: How many lines?\n",
                     encoding="utf-8")
    answered, silent = tmp_path / "answered.json", tmp_path / "silent.json"
    answered.write_text('[{"question_id": "q1", "attempt": 1, "actual_answer": "Three.", "total_tokens": 5},'
                        ' {"question_id": "q1", "attempt": 2, "actual_answer": "Two.", "total_tokens": 4}]',
                        encoding="utf-8")
    silent.write_text('[{"question_id": "q1", "elapsed_sec": 2.5}]', encoding="utf-8")

    def run(name, responses, *options):
        main(["run", str(suite), "--responses", str(responses), "-q", "--no-llm", "--output",
              str(tmp_path / f"{name}.xlsx"), *options])
        return [cell.value for cell in load_workbook(tmp_path / f"{name}.xlsx", read_only=True)["Overview"][1]]

    week1 = run("week1", answered)
    week2 = run("week2", silent, "--baseline", str(tmp_path / "week1.xlsx"))
    alone = run("alone", silent)
    assert "actual answer" in week1 and "attempts passed" in week1 and week1[-4:] == USAGE
    assert [h for h in week2 if h != "vs baseline"] == week1
    assert "actual answer" not in alone and "attempts passed" not in alone
    assert alone[-4:] == USAGE  # a Q&A suite always has the usage columns
