"""The review happens in the workbook: the analyst marks cases in Overview (a drop-down and a note),
next week's report carries the marks over where nothing changed, asks again where something did,
and the Summary counts the regressions still to review as the analyst types."""

from __future__ import annotations

import csv
import json
import subprocess
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import typed_row
from openpyxl import load_workbook
from test_baseline_and_trend import REGRESSED, TESTCASES, WEEK_18, WEEK_20, last_week_responses, run
from test_libreoffice import require

from qareport.records import REVIEW_CHOICES
from qareport.run_reviews import read_reviews
from qareport.workbook.summary_grid import KEY_COLUMN, VALUE_COLUMN

KEY, VALUE = KEY_COLUMN - 1, VALUE_COLUMN - 1  # the Summary's right-hand block, counted from 0
UNCHANGED = "2818e6c6-6d0e-49a5-86af-cc5a22b108d2"  # scored the same both weeks


def _columns(ws) -> dict[str, int]:
    return {cell.value: cell.column for cell in ws[1]}


def review(path: Path, marks: dict[str, tuple[str | None, str | None]]) -> None:
    """What an analyst does: open the workbook, pick a review and type a note, save."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # openpyxl on XlsxWriter's data validation
        workbook = load_workbook(path)
    ws = workbook["Overview"]
    columns = _columns(ws)
    for row in range(2, ws.max_row + 1):
        case_id = ws.cell(row, 1).value
        if case_id in marks:
            verdict, note = marks[case_id]
            ws.cell(row, columns["review"]).value = verdict
            ws.cell(row, columns["review note"]).value = note
    workbook.save(path)


def overview(path: Path) -> dict[str, dict]:
    ws = load_workbook(path)["Overview"]
    columns = _columns(ws)
    return {ws.cell(row, 1).value: {name: ws.cell(row, column).value for name, column in columns.items()}
            for row in range(2, ws.max_row + 1)}


@pytest.fixture
def reviewed_last_week(tmp_path):
    report = tmp_path / "week18.xlsx"
    assert run(report, responses=last_week_responses(tmp_path / "responses"), epoch=WEEK_18) == 0
    review(report, {REGRESSED: ("known issue", "NGDP_R is a known synonym"), UNCHANGED: ("ok", "checked by Ana")})
    return report


def test_the_review_column_offers_the_review_choices_as_a_drop_down(tmp_path):
    report = tmp_path / "report.xlsx"
    assert run(report) == 0
    ws = load_workbook(report)["Overview"]
    letter = ws.cell(1, _columns(ws)["review"]).column_letter
    (validation,) = ws.data_validations.dataValidation
    assert validation.type == "list" and str(validation.sqref) == f"{letter}2:{letter}30"
    assert validation.formula1 == '"' + ",".join(REVIEW_CHOICES) + '"'


def test_reviews_are_read_back_from_the_overview_by_case_id(reviewed_last_week):
    reviews = read_reviews(reviewed_last_week)
    assert reviews[UNCHANGED].verdict == "ok" and reviews[UNCHANGED].note == "checked by Ana"
    assert set(reviews) == {REGRESSED, UNCHANGED}


def test_a_review_is_carried_over_where_nothing_changed_and_asked_again_where_something_did(reviewed_last_week, tmp_path):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(reviewed_last_week)) == 0
    cases = overview(report)
    assert (cases[UNCHANGED]["review"], cases[UNCHANGED]["review note"]) == ("ok", "checked by Ana")
    assert cases[REGRESSED]["review"] is None  # it regressed: the analyst decides again
    assert cases[REGRESSED]["review note"] == "was: known issue; NGDP_R is a known synonym"
    assert cases[REGRESSED]["vs baseline"] == "regression"


def test_the_summary_counts_the_regressions_still_to_review_and_follows_the_analysts_typing(reviewed_last_week, tmp_path):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(reviewed_last_week)) == 0
    summary = load_workbook(report)["Summary"]
    counts = {row[KEY].value: row[VALUE] for row in summary.iter_rows() if row[KEY].value}
    assert counts["regressions to review"].value.startswith("=SUMPRODUCT(")  # a live count...
    soffice = require("soffice")

    def recalculated(path: Path) -> dict[str, str]:
        """The Summary as LibreOffice computes it on opening (the first sheet, as CSV)."""
        outdir = path.parent / f"csv-{path.stem}"
        subprocess.run([soffice, f"-env:UserInstallation={(path.parent / 'lo-profile').as_uri()}", "--headless",
                        "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76", "--outdir", str(outdir), str(path)],
                       capture_output=True, timeout=300, check=True)
        rows = list(csv.reader((outdir / f"{path.stem}.csv").read_text(encoding="utf-8").splitlines()))
        return {row[KEY]: row[VALUE] for row in rows if len(row) > VALUE and row[KEY]}

    before = recalculated(report)
    assert (before["regressions reviewed"], before["regressions to review"]) == ("0", "1")
    review(report, {REGRESSED: ("fixed", None)})  # ...that follows the review column
    after = recalculated(report)
    assert (after["regressions reviewed"], after["regressions to review"], after["cases reviewed"]) == ("1", "0", "2")


# --- reviews are data: never lose one ----------------------------------------------------------------


def _edit_overview(path: Path, change) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        workbook = load_workbook(path)
    change(workbook["Overview"])
    workbook.save(path)


@pytest.mark.parametrize("headers", [("Review", "Review Note"), ("review ", " review  note"), ("REVIEW", "review note")])
def test_review_columns_are_found_the_way_an_analyst_names_them(reviewed_last_week, tmp_path, headers):
    def retype(ws) -> None:
        columns = _columns(ws)
        ws.cell(1, columns["review"]).value, ws.cell(1, columns["review note"]).value = headers

    _edit_overview(reviewed_last_week, retype)
    assert read_reviews(reviewed_last_week)[UNCHANGED].note == "checked by Ana"
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(reviewed_last_week)) == 0
    assert (overview(report)[UNCHANGED]["review"], overview(report)[UNCHANGED]["review note"]) == ("ok", "checked by Ana")


def test_reviews_are_read_when_the_analyst_inserted_rows_above_the_overview_header(reviewed_last_week):
    _edit_overview(reviewed_last_week, lambda ws: ws.insert_rows(1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        workbook = load_workbook(reviewed_last_week)
    workbook["Overview"]["A1"] = "Week 18, reviewed by Ana"
    workbook.save(reviewed_last_week)
    reviews = read_reviews(reviewed_last_week)
    assert (reviews[UNCHANGED].verdict, reviews[UNCHANGED].note) == ("ok", "checked by Ana")


def test_a_baseline_whose_overview_has_no_review_columns_says_so_and_keeps_the_reviews_it_carried(reviewed_last_week, tmp_path, capsys):
    week19, week20 = tmp_path / "week19.xlsx", tmp_path / "week20.xlsx"
    assert run(week19, "--baseline", str(reviewed_last_week)) == 0  # carries UNCHANGED's review

    def rename(ws) -> None:
        ws.cell(1, _columns(ws)["review"]).value = "verdict"
        ws.cell(1, _columns(ws)["review note"]).value = "remarks"

    _edit_overview(week19, rename)
    capsys.readouterr()
    assert run(week20, "--baseline", str(week19), epoch=WEEK_20) == 0
    err = capsys.readouterr().err
    assert f"qareport: {week19}: sheet 'Overview' has no column headed 'review' or 'review note'" in err
    problems = [row[3] for row in load_workbook(week20)["Problems"].iter_rows(min_row=2, values_only=True)]
    assert any("has no column headed 'review'" in text for text in problems)
    cases = overview(week20)
    assert (cases[UNCHANGED]["review"], cases[UNCHANGED]["review note"]) == ("ok", "checked by Ana")


def test_cases_x_and_x_with_a_trailing_space_keep_their_own_reviews(tmp_path):
    """Ids are compared as the run's own case ids are: a review never moves to another case."""
    from test_hostile_input import GOOD_RESPONSE, case

    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "cases.yaml").write_text(case("X") + case("'X '"), encoding="utf-8")
    responses = tmp_path / "responses.json"
    responses.write_text(json.dumps([{**GOOD_RESPONSE, "id": "X"}, {**GOOD_RESPONSE, "id": "X "}]), encoding="utf-8")
    week18, week19 = tmp_path / "week18.xlsx", tmp_path / "week19.xlsx"
    assert run(week18, testcases=folder, responses=responses, epoch=WEEK_18) in (0, 1)
    typed = {"X": ("ok", "the plain X"), "X ": ("known issue", "the X with a space")}
    review(week18, typed)
    assert run(week19, "--baseline", str(week18), testcases=folder, responses=responses) in (0, 1)
    cases = overview(week19)
    assert cases and set(cases) <= set(typed)
    for case_id, row in cases.items():
        assert (row["review"], row["review note"]) == typed[case_id], case_id


def _full_texts(path: Path, case_id: str, column: str) -> str:
    ws = load_workbook(path)["Full texts"]
    return "\n".join(row[3] for row in ws.iter_rows(min_row=2, values_only=True) if row[:2] == (case_id, column))


def _replace_text(path: Path, placeholder: str, text: str) -> None:
    """A text put in place of a placeholder in the workbook's XML (LibreOffice writes texts of any length)."""
    import zipfile
    from xml.sax.saxutils import escape

    with zipfile.ZipFile(path) as package:
        parts = {name: package.read(name) for name in package.namelist()}
    (name,) = [name for name, data in parts.items() if f">{placeholder}<".encode() in data]
    parts[name] = parts[name].replace(f">{placeholder}<".encode(), f">{escape(text)}<".encode())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in parts.items():
            package.writestr(name, data)


def test_a_review_note_longer_than_a_cell_is_kept_whole_in_full_texts_and_carried_whole(reviewed_last_week, tmp_path):
    note = "\n".join(f"line {number}: the analyst's long finding, pasted from a ticket" for number in range(1, 701))
    assert len(note) > 32_767
    review(reviewed_last_week, {UNCHANGED: ("ok", "PLACEHOLDER")})
    _replace_text(reviewed_last_week, "PLACEHOLDER", note)  # openpyxl cuts at 32,767; LibreOffice does not
    assert read_reviews(reviewed_last_week)[UNCHANGED].note == note
    week19, week20 = tmp_path / "week19.xlsx", tmp_path / "week20.xlsx"
    assert run(week19, "--baseline", str(reviewed_last_week)) == 0
    shown = overview(week19)[UNCHANGED]["review note"]
    assert len(shown) <= 32_767 and shown != note  # the cell holds what it can
    assert shown.endswith("[… 447 more lines cut; full text: the Full texts sheet]")  # and says it was cut
    assert _full_texts(week19, UNCHANGED, "review note") == note
    assert read_reviews(week19)[UNCHANGED] .note == note
    assert run(week20, "--baseline", str(week19), epoch=WEEK_20) == 0
    assert _full_texts(week20, UNCHANGED, "review note") == note
    assert read_reviews(week20)[UNCHANGED].note == note
    review(week20, {UNCHANGED: ("ok", note[:100])})  # the analyst shortens it: taken as typed
    assert read_reviews(week20)[UNCHANGED].note == note[:100].strip()


def test_a_row_copied_in_the_hidden_reviews_sheet_does_not_double_a_carried_review(tmp_path):
    import xlsxwriter

    path = tmp_path / "copied.xlsx"
    workbook = xlsxwriter.Workbook(str(path))
    workbook.add_worksheet("Overview").write_row(0, 0, ["id", "review", "review note"])
    stored = workbook.add_worksheet("qareport_reviews")
    rows = [("case_id", "field", "part", "text"), ("gone", "review", 1, "ok"), ("gone", "review note", 1, "first "),
            ("gone", "review note", 2, "second")]
    for number, values in enumerate([*rows, rows[1], rows[3], rows[2]]):  # three rows copied below
        stored.write_row(number, 0, values)
    workbook.close()
    got = read_reviews(path)["gone"]
    assert (got.verdict, got.note) == ("ok", "first second")


def _suite_without(folder: Path, case_id: str, how: str) -> Path:
    """The bundled test cases with the document holding `case_id` broken (not loaded) or without that case."""
    import shutil

    testcases = folder / "testcases"
    shutil.copytree(TESTCASES, testcases, ignore=shutil.ignore_patterns("responses"))
    path = testcases / "imf" / "conversations.yaml"
    text = path.read_text(encoding="utf-8")
    assert case_id in text
    if how == "broken":  # the document holding the case broken: a broken document loses only itself
        parts = text.split("\n---\n")
        path.write_text("\n---\n".join(part.replace("conversation:", "conversation: [", 1) if case_id in part else part
                                         for part in parts), encoding="utf-8")
    else:
        path.write_text("\n---\n".join(part for part in text.split("\n---\n") if case_id not in part), encoding="utf-8")
    return testcases


@pytest.mark.parametrize("how", ["broken", "removed"])
def test_reviews_survive_a_week_in_which_their_case_was_not_loaded_or_missing(reviewed_last_week, tmp_path, how):
    """Three weeks: reviewed, the case's file broken (or the case gone) for a week, fixed."""
    week19, week20 = tmp_path / "week19.xlsx", tmp_path / "week20.xlsx"
    assert run(week19, "--baseline", str(reviewed_last_week),
               testcases=_suite_without(tmp_path / "week19", UNCHANGED, how)) == 0
    assert UNCHANGED not in overview(week19)
    expected = "not loaded" if how == "broken" else "removed case"
    assert [row[2] for row in load_workbook(week19)["Changes"].iter_rows(values_only=True) if row[0] == UNCHANGED] == [expected]
    assert run(week20, "--baseline", str(week19), epoch=WEEK_20) == 0
    cases = overview(week20)
    assert (cases[UNCHANGED]["review"], cases[UNCHANGED]["review note"]) == ("ok", "checked by Ana")  # as it was
    # the regressed case was reviewed in week 18, not changed since, and is compared with week 19 as usual
    assert cases[REGRESSED]["review note"] == "was: known issue; NGDP_R is a known synonym"


def test_the_analysts_round_trip_libreoffice_resave_sorted_overview_typed_review_next_weeks_baseline(tmp_path):
    report = tmp_path / "week18.xlsx"
    assert run(report, responses=last_week_responses(tmp_path / "responses"), epoch=WEEK_18) == 0
    soffice = require("soffice")
    subprocess.run([soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(tmp_path / "saved"), str(report)],
                   capture_output=True, timeout=300, check=True)
    saved = tmp_path / "saved" / "week18.xlsx"

    def sort_by_status_descending(ws) -> None:
        rows = [[cell.value for cell in row] for row in ws.iter_rows(min_row=2, max_row=ws.max_row)]
        status = _columns(ws)["status"] - 1
        rows.sort(key=lambda values: (str(values[status]), str(values[0])), reverse=True)
        for number, values in enumerate(rows, start=2):
            for column, value in enumerate(values, start=1):
                ws.cell(number, column).value = value

    _edit_overview(saved, sort_by_status_descending)
    review(saved, {REGRESSED: ("known issue", "NGDP_R is a known synonym"), UNCHANGED: ("ok", "checked by Ana")})
    assert load_workbook(saved)["Overview"]["A2"].value != load_workbook(report)["Overview"]["A2"].value  # sorted
    week19 = tmp_path / "week19.xlsx"
    assert run(week19, "--baseline", str(saved), "--history", str(report), str(saved)) == 0
    cases = overview(week19)
    assert (cases[UNCHANGED]["review"], cases[UNCHANGED]["review note"]) == ("ok", "checked by Ana")
    assert cases[REGRESSED]["review note"] == "was: known issue; NGDP_R is a known synonym"
    assert cases[REGRESSED]["vs baseline"] == "regression"
    trend = [row[1] for row in load_workbook(week19)["Trend"].iter_rows(min_row=2, values_only=True)]
    assert trend == ["week18.xlsx", "this run"]
    # the next week the same: the reviews qareport stored with week 19 go through LibreOffice too
    subprocess.run([soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(tmp_path / "saved"), str(week19)],
                   capture_output=True, timeout=300, check=True)
    week20 = tmp_path / "week20.xlsx"
    assert run(week20, "--baseline", str(tmp_path / "saved" / "week19.xlsx"), epoch=WEEK_20) == 0
    cases = overview(week20)
    assert (cases[UNCHANGED]["review"], cases[UNCHANGED]["review note"]) == ("ok", "checked by Ana")
    assert (cases[REGRESSED]["review"], cases[REGRESSED]["review note"]) == (None, "was: known issue; NGDP_R is a known synonym")


def test_a_case_back_after_an_absence_is_compared_with_the_run_it_was_last_seen_in():
    from qareport.comparison import Comparison
    from qareport.records import Review
    from qareport.report import carry_reviews

    seen = typed_row("a", status="success", definition_hash="h1", macro_recall=1.0)
    absent = Comparison("last week", "", "", changes=(), headline=())  # the case was not in last week's run
    kept = {"a": Review("ok", "checked", last_seen=seen)}
    assert carry_reviews(kept, absent, [replace(seen)]) == {"a": Review("ok", "checked")}
    assert carry_reviews(kept, absent, [replace(seen, metrics={"macro_recall": 0.5})]) == {
        "a": Review(None, "was: ok; checked")}
    assert carry_reviews(kept, absent, [replace(seen, definition_hash="h2")]) == {"a": Review(None, "was: ok; checked")}
