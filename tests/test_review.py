"""The review happens in the workbook: the analyst marks cases in Overview (a drop-down and a note),
next week's report carries the marks over where nothing changed, asks again where something did,
and the Summary counts the regressions still to review as the analyst types."""

from __future__ import annotations

import csv
import subprocess
import warnings
from pathlib import Path

import pytest
from openpyxl import load_workbook

from qareport.records import REVIEW_CHOICES
from qareport.runs import read_reviews
from qareport.workbook.summary import KEY_COLUMN, VALUE_COLUMN
from test_baseline_and_trend import REGRESSED, WEEK_18, last_week_responses, run
from test_libreoffice import require

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
