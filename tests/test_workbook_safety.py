"""Text from inputs is always text, never breaks the file, and the file is written atomically."""

import json

import pytest
import xlsxwriter
from conftest import foreign_formulas
from openpyxl import load_workbook

from qareport.cli import main
from qareport.workbook.cells import MAX_CELL_CHARS, MAX_LINE_BREAKS, fit_text

CASE = """\
id: {id}
name: "{name}"
tags: [t]
conversation:
- role: user
  content: "{content}"
  target:
    indicator_selection:
    - dataset_id: D
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: "{term_id}"
          name: "{term_name}"
"""


def run_one(tmp_path, *, name="n", content="q", term_id="X", term_name="x", answer=None):
    (tmp_path / "c.yaml").write_text(CASE.format(id="c1", name=name, content=content, term_id=term_id, term_name=term_name))
    record = {"id": "c1", "indicator_selection": [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": term_id, "name": term_name}]}]}]}
    if answer is not None:
        record["actual_answer"] = answer
    (tmp_path / "r.json").write_text(json.dumps([record]))
    out = tmp_path / "out.xlsx"
    assert main(["run", str(tmp_path / "c.yaml"), "-r", str(tmp_path / "r.json"), "-o", str(out), "--no-llm"]) == 0
    return out


@pytest.mark.parametrize("text", ["=2+3", "+1", "-1-1", "@SUM(A1)", "=SUM(A1:A9)", "=HYPERLINK(\\\"http://x\\\")"])
def test_text_starting_like_a_formula_stays_text(tmp_path, text):
    out = run_one(tmp_path, name=text, term_name=text)
    ws = load_workbook(out)["Overview"]
    name_cell = ws.cell(2, 2)
    assert name_cell.data_type == "s" and name_cell.value == text.replace('\\"', '"')
    assert foreign_formulas(load_workbook(out)) == []


def test_characters_a_workbook_cannot_hold_are_replaced_visibly(tmp_path):
    out = run_one(tmp_path, content="bell\\a and escape\\e and nul\\0")
    ws = load_workbook(out)["Overview"]
    value = ws.cell(2, [c.value for c in ws[1]].index("user message") + 1).value
    assert value == "bell\ufffd and escape\ufffd and nul\ufffd"


def test_long_text_is_cut_with_a_visible_marker():
    got = fit_text("x" * (MAX_CELL_CHARS + 1000))
    assert len(got) <= MAX_CELL_CHARS and "more characters cut" in got
    got = fit_text("\n".join(["line"] * 1000), where_full="Details sheet")
    assert got.count("\n") <= MAX_LINE_BREAKS and "more lines cut; full text: Details sheet" in got


def test_a_huge_answer_does_not_break_the_workbook(tmp_path):
    out = run_one(tmp_path, answer="word " * 20000)
    ws = load_workbook(out)["Overview"]
    headers = [c.value for c in ws[1]]
    cell = ws.cell(2, headers.index("actual answer") + 1).value
    assert len(cell) <= MAX_CELL_CHARS and "more characters cut" in cell


def test_a_failed_save_leaves_the_previous_report_intact(tmp_path, monkeypatch):
    out = run_one(tmp_path)
    before = out.read_bytes()

    real_close = xlsxwriter.Workbook.close

    def failing_close(self):
        real_close(self)  # writes the file and lets go of the sheets' row files; then the disk fills up
        self.filename.write(b"PK\x03\x04 half a workbook")  # the file object qareport gave XlsxWriter
        raise xlsxwriter.exceptions.FileCreateError(OSError(28, "No space left on device"))

    monkeypatch.setattr(xlsxwriter.Workbook, "close", failing_close)
    assert main(["run", str(tmp_path / "c.yaml"), "-r", str(tmp_path / "r.json"), "-o", str(out), "--no-llm"]) == 2
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.xlsx")] == []


def test_sheets_cut_at_a_worksheets_last_row_say_so_in_problems_and_the_run_and_keep_every_case_stored(
        tmp_path, monkeypatch, capsys):
    from qareport import run_sheets
    from qareport.run_reading import read_report

    monkeypatch.setattr(run_sheets, "MAX_SHEET_ROWS", 8)  # a worksheet of 8 rows instead of 1,048,576
    cases = "---\n".join(CASE.format(id=f"c{n}", name="n", content="q", term_id="X", term_name="x") for n in range(12))
    (tmp_path / "c.yaml").write_text(cases)
    records = [{"id": f"c{n}", "indicator_selection": [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": "X", "name": "x"}]}]}]} for n in range(12)]
    records += [{"id": f"unknown-{n}", "actual_answer": "a"} for n in range(9)]  # nine problems
    (tmp_path / "r.json").write_text(json.dumps(records))
    out = tmp_path / "out.xlsx"
    assert main(["run", str(tmp_path / "c.yaml"), "-r", str(tmp_path / "r.json"), "-o", str(out), "--no-llm"]) == 0
    console = capsys.readouterr()
    assert "9 problem(s), 5 of them listed in the Problems sheet (a worksheet holds no more; all are listed above)" \
        in console.out + console.err
    assert sum("unknown-" in line for line in console.err.splitlines()) == 9  # every problem on the console
    workbook = load_workbook(out, read_only=True)
    details = list(workbook["Details"].iter_rows(values_only=True))
    assert len(details) == 8 and details[-1][0] == "c2"  # three rows a case
    problems = [row[3] for row in workbook["Problems"].iter_rows(values_only=True)]
    assert len(problems) == 8
    assert problems[1] == ("The Details sheet holds 7 of its 36 rows (a worksheet holds 8): the last 29 are left out; "
                           "every case's facts are in the stored results (the hidden 'qareport_results' sheet and "
                           "the --results file)")
    assert problems[2].startswith("The Problems sheet lists 5 of the 9 problems")
    assert all("unknown-" in text for text in problems[3:])
    stored = read_report(out)
    assert {"alert.cut.Details", "alert.cut.Problems"} <= stored.metadata.keys()
    assert len(stored.snapshot.cases) == 12


def test_ids_that_differ_only_in_case_link_to_their_own_rows_not_to_the_first_match(tmp_path):
    from conftest import link_by_id

    ids = ["q1", "Q1", "other"]
    (tmp_path / "c.yaml").write_text("---\n".join(
        CASE.format(id=case_id, name=case_id, content="q", term_id="X", term_name="x") for case_id in ids))

    def answers(term_id):
        return json.dumps([{"id": case_id, "indicator_selection": [{"dataset_id": "D", "dimensions": [
            {"dimension_name": "INDICATOR", "values": [{"id": term_id, "name": "x"}]}]}]} for case_id in ids])

    (tmp_path / "right.json").write_text(answers("X"))
    (tmp_path / "wrong.json").write_text(answers("Y"))
    last, this = tmp_path / "last.xlsx", tmp_path / "this.xlsx"
    assert main(["run", str(tmp_path / "c.yaml"), "-r", str(tmp_path / "right.json"), "-o", str(last), "--no-llm"]) == 0
    assert main(["run", str(tmp_path / "c.yaml"), "-r", str(tmp_path / "wrong.json"), "-o", str(this), "--no-llm",
                 "--baseline", str(last)]) == 0
    workbook = load_workbook(this)
    overview = {row[0].value: row[0].row for row in workbook["Overview"].iter_rows(min_row=2) if row[0].value in ids}
    linked = {}
    for row in workbook["Changes"].iter_rows(min_row=2):
        cell = row[0]
        if cell.value in ("q1", "Q1"):
            assert link_by_id(cell.value) is None and cell.hyperlink is not None  # a plain link, not MATCH
            linked[cell.value] = cell.hyperlink.location
        elif link_by_id(cell.value) is not None:
            assert link_by_id(cell.value)[2] == "other"  # an id without a twin is still found by id
    assert linked == {case_id: f"'Overview'!A{overview[case_id]}" for case_id in ("q1", "Q1")}
