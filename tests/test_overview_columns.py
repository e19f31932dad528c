"""The Overview's columns for one suite from week to week: the kinds' score columns (the dimension
columns of indicator selection among them) follow from the test cases' targets, so a week whose
responses lack a dimension, or lack a whole response file, keeps that dimension's columns."""

from conftest import RESPONSES, TESTCASES
from openpyxl import load_workbook

from qareport.cli import main


def headers(tmp_path, name, responses):
    out = tmp_path / f"{name}.xlsx"
    main(["run", str(TESTCASES), "--responses", *map(str, responses), "-q", "--no-llm", "--output", str(out)])
    return [cell.value for cell in load_workbook(out, read_only=True)["Overview"][1]]


def test_a_week_without_the_responses_that_held_a_dimension_keeps_that_dimensions_columns(tmp_path):
    full = headers(tmp_path, "week1", [RESPONSES / "imf.jsonl", RESPONSES / "power-system.json"])
    without = headers(tmp_path, "week2", [RESPONSES / "power-system.json"])  # no indicator selection at all
    assert "INDICATOR recall" in full and "COUNTRY precision" in full
    # `more` columns (beside a text that goes on below its row's edge) still follow the texts
    assert [h for h in without if h != "more"] == [h for h in full if h != "more"]
