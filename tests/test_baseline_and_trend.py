"""Weekly comparison (`--baseline`) and trend (`--history`): a workbook alone is enough as a
baseline, a results file too; the Changes and Trend sheets say what moved."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import link_by_id, link_target_row
from openpyxl import Workbook, load_workbook

from qareport.cli import main
from qareport.errors import BaselineError
from qareport.run_reading import read_history, read_report, read_run
from qareport.runs import RESULTS_SHEET, RUN_SHEET
from qareport.workbook.compare import NOT_KEPT
from qareport.workbook.summary_grid import KEY_COLUMN, VALUE_COLUMN

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"
REGRESSED = "c540d28c-31cc-40fa-930a-4380d76fd1e7"  # last week it selected exactly its target
IMPROVED = "c48d7624-d376-48ca-b2d8-386999befb45"  # last week it answered with an error
NS = {"c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
      "a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
WEEK_18, WEEK_19, WEEK_20 = "1714557600", "1715162400", "1715767200"  # Wednesdays in May 2024


def last_week_responses(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "power-system.json").write_bytes((RESPONSES / "power-system.json").read_bytes())
    records = [json.loads(line) for line in (RESPONSES / "imf.jsonl").read_text().splitlines() if line.strip()]
    for record in records:
        if record.get("test_case_id") == IMPROVED:
            record.clear()
            record.update(test_case_id=IMPROVED, status="error", error="timeout")
        if record.get("test_case_id") == REGRESSED:
            for dataset in record["indicator_selection"]:
                for dimension in dataset["dimensions"]:
                    dimension["values"] = [v for v in dimension["values"] if v["id"] != "NGDP_R"]
    (folder / "imf.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def run(output: Path, *extra: str, testcases: Path = TESTCASES, responses: Path = RESPONSES, epoch: str = WEEK_19) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", epoch)
        return main(["run", str(testcases), "--responses", str(responses), "--output", str(output),
                     "--no-llm", "-q", *extra])


@pytest.fixture(scope="module")
def last_week(tmp_path_factory):
    """Last week's workbook and results file."""
    folder = tmp_path_factory.mktemp("last-week")
    report = folder / "week18.xlsx"
    assert run(report, "--results", str(folder / "week18.yaml"),
               responses=last_week_responses(folder / "responses"), epoch=WEEK_18) == 0
    return report


@pytest.fixture(scope="module")
def compared_report(last_week, tmp_path_factory):
    report = tmp_path_factory.mktemp("this-week") / "week19.xlsx"
    assert run(report, "--baseline", str(last_week)) == 0
    return report


@pytest.fixture(scope="module")
def compared(compared_report):
    return load_workbook(compared_report)


@pytest.fixture(scope="module")
def compared_values(compared_report):
    """As a reader that does not calculate sees it: links by id show their cached text."""
    return load_workbook(compared_report, data_only=True)


def sheet_rows(ws):
    return [list(row) for row in ws.iter_rows(values_only=True)]


# --- the workbook as a baseline ----------------------------------------------------------------------


def test_a_workbook_carries_its_cases_in_a_hidden_sheet_the_same_as_the_results_file(last_week):
    from_workbook = read_run(last_week)
    from_results = read_run(last_week.with_suffix(".yaml"))
    assert from_workbook.cases == from_results.cases
    assert len(from_workbook.cases) == 29
    assert from_workbook.created == from_results.created == "2024-05-01T10:00:00+00:00"
    row = next(r for r in from_workbook.cases if r.case_id == REGRESSED)
    assert list(row.groups) == ["imf", "weo", "gdp"] and row.definition_hash and row.metric("macro_precision") == 1.0
    workbook = load_workbook(last_week, read_only=True)
    assert workbook[RESULTS_SHEET].sheet_state == "hidden" and workbook[RUN_SHEET].sheet_state == "hidden"
    workbook.close()


def test_the_run_sheet_holds_created_version_and_headline_metrics(last_week):
    workbook = load_workbook(last_week, read_only=True)
    metadata = {key: value for key, value in workbook[RUN_SHEET].iter_rows(min_row=2, values_only=True)}
    workbook.close()
    assert metadata["created"] == "2024-05-01T10:00:00+00:00" and metadata["qareport_version"]
    assert metadata["metric.macro_precision.cases"] == 14 and metadata["status.error"] == 3
    assert 0 < metadata["metric.macro_recall.mean"] <= 1


# --- the Changes sheet ---------------------------------------------------------------------------


def test_changes_lists_regressions_first_in_red_then_improvements_in_green(compared_values):
    ws = compared_values["Changes"]
    header, *rows = sheet_rows(ws)
    assert header == ["case id", "name", "change", "metric", "old value", "new value", "delta", "old status",
                      "new status", "reason", "side by side"]
    assert rows[0][:4] == [REGRESSED, "show_me_gdp_and_gdp_per_capita_in_us_dollars_for_brazil", "regression", "macro precision"]
    assert rows[0][4] == 1.0 and rows[0][5] == pytest.approx(0.8333, abs=1e-4) and rows[0][6] == pytest.approx(-0.1667, abs=1e-4)
    assert rows[0][9] == "extra INDICATOR NGDP_R"  # what changed, not just that it did
    # its grade moved too: a line of its own, after its metrics, text values and no delta
    assert rows[1][:7] == [REGRESSED, "show_me_gdp_and_gdp_per_capita_in_us_dollars_for_brazil", "regression",
                           "grade", "ideal", "acceptable", None]
    # a status change keeps the value columns for numbers: the statuses have columns of their own
    assert rows[2][:9] == [IMPROVED, "could_you_give_me_the_population_numbers_for_mexico", "improvement", "status",
                           None, None, None, "error", "success"]
    assert rows[2][9] == "evaluated again (was: the system answered with an error)"
    assert ws["C2"].fill.fgColor.rgb.endswith("FFC7CE") and ws["C4"].fill.fgColor.rgb.endswith("C6EFCE")
    assert ws.freeze_panes == "B2" and ws.auto_filter.ref == "A1:K4"


def test_changes_and_overview_link_to_each_other(compared):
    overview = compared["Overview"]
    row = next(c.row for c in overview["A"] if c.value == REGRESSED)
    assert link_by_id(compared["Changes"]["A2"].value) == ("Overview", "A", REGRESSED, REGRESSED)  # found by id
    assert link_target_row(compared["Changes"]["A2"].value, compared) == row
    headers = [c.value for c in overview[1]]
    verdict = overview.cell(row=row, column=headers.index("vs baseline") + 1)
    assert verdict.value == "regression" and verdict.hyperlink.location == "'Changes'!A2"


def test_the_summary_shows_the_like_for_like_deltas_and_the_cases_that_moved_with_their_reasons(compared_values):
    rows = sheet_rows(compared_values["Summary"])
    header = next(r for r in rows if r[0] == "metric")
    assert header[:12] == ["metric", "mean", "95% interval", "cases", "not scored", "last report", "cases",
                           "last run", "this run", "change", "95% interval", "vs noise"]
    precision = next(r for r in rows if r[0] == "macro precision")
    assert precision[6] == 15  # the improved case was an error last week: shared, rising from failing (0)
    assert precision[8] - precision[7] == pytest.approx((1 - 0.1667) / 15, abs=0.0005)  # one lost 0.17, one rose 1
    assert precision[11].startswith("within noise, q ")
    worse = next(i for i, r in enumerate(rows) if r[0] == "What got worse (1)")
    assert [rows[worse + 1][c] for c in (0, 1, 5)] == ["case", "what moved", "reason"]
    assert rows[worse + 2][0] == "show_me_gdp_and_gdp_per_capita_in_us_dollars_for_brazil"  # whole
    assert rows[worse + 3][1].startswith("macro precision 1.00 \u2192 0.83")
    assert rows[worse + 3][5] == "extra INDICATOR NGDP_R"
    better = next(i for i, r in enumerate(rows) if r[0] == "What got better (1)")
    assert rows[better + 3][1] == "error \u2192 success"
    verdict = compared_values["Summary"]["A3"].value  # the change as the row shows it: 0.84 - 0.82
    # the improved case was an error last week: rising from failing, it outweighs the one that lost 0.17
    assert verdict.startswith("1 regression, macro recall 0.84 (+0.07), macro precision 0.84 (+0.06)")


def test_the_headline_row_adds_up_last_run_this_run_and_the_change_over_the_same_cases(compared_values):
    rows = sheet_rows(compared_values["Summary"])
    header = next(r for r in rows if r[0] == "metric")
    groups = rows[rows.index(header) - 1]
    assert groups[1] == "this run, all its evaluated cases" and groups[6].startswith("like for like: the 15 cases")
    summary = compared_values["Summary"]
    for label in ("macro precision", "macro recall", "steps score"):
        row = next(c.row for c in summary["A"] if c.value == label)
        last, this, change = (summary.cell(row, column) for column in (8, 9, 10))
        assert change.value == pytest.approx(round(this.value, 2) - round(last.value, 2))  # as shown, it adds up
        assert {last.number_format, this.number_format} == {"0.00"} and change.number_format == "+0.00;-0.00;0.00"
    precision = next(r for r in rows if r[0] == "macro precision")
    # no case of last week's left the shared set; last week's error joined it, failing (0)
    assert precision[7] == pytest.approx(precision[5] * 14 / 15, abs=1e-9)


def test_the_summary_counts_the_reviews_live_from_the_overview(compared):
    summary, overview = compared["Summary"], compared["Overview"]
    headers = [c.value for c in overview[1]]
    review = overview.cell(1, headers.index("review") + 1).column_letter
    change = overview.cell(1, headers.index("vs baseline") + 1).column_letter
    counts = {row[KEY_COLUMN - 1].value: row[VALUE_COLUMN - 1] for row in summary.iter_rows() if row[KEY_COLUMN - 1].value in (
        "cases reviewed", "regressions reviewed", "regressions to review")}
    assert counts["cases reviewed"].value == f"=COUNTA(Overview!${review}$2:${review}$30)"
    assert counts["regressions to review"].value == (
        f'=SUMPRODUCT((LEFT(Overview!${change}$2:${change}$30,10)="regression")*(Overview!${review}$2:${review}$30=""))')


def test_a_results_file_is_a_baseline_too(last_week, tmp_path):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week.with_suffix(".yaml"))) == 0
    rows = sheet_rows(load_workbook(report, data_only=True)["Changes"])[1:]
    assert [(r[0], r[2], r[3]) for r in rows] == [(REGRESSED, "regression", "macro precision"),
                                                  (REGRESSED, "regression", "grade"),  # ideal → acceptable
                                                  (IMPROVED, "improvement", "status")]


def test_a_case_whose_test_changed_is_flagged_and_not_counted_as_a_regression(last_week, tmp_path):
    testcases = tmp_path / "testcases"
    shutil.copytree(TESTCASES, testcases, ignore=shutil.ignore_patterns("responses"))
    weo = testcases / "imf" / "weo.yaml"
    weo.write_text(weo.read_text().replace("- id: NGDPDPC\n", "- id: NGDPDPC_EDITED\n", 1))
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week), testcases=testcases) == 0
    rows = sheet_rows(load_workbook(report, data_only=True)["Changes"])[1:]
    assert [(r[0], r[2]) for r in rows if r[0] == REGRESSED] == [(REGRESSED, "test changed")] * 2  # precision, recall
    assert "regression" not in [r[2] for r in rows]


# --- baselines qareport cannot use ---------------------------------------------------------------


@pytest.mark.parametrize(("content", "name", "message"), [
    (b"PK\x03\x04 not really a zip", "broken.xlsx", "cannot read it as an Excel workbook"),
    (None, "plain.xlsx", "not a qareport workbook with per-case results"),
    (b"case,score\n", "scores.csv", "a baseline must be a qareport workbook (.xlsx) or results file"),
    (b"just: a mapping\n", "other.yaml", "not a qareport results file"),
    (b"", "absent.xlsx", "no such file"),
])
def test_an_unusable_baseline_is_one_clear_line_exit_status_2_and_nothing_written(tmp_path, capsys, content, name, message):
    baseline = tmp_path / name
    if content is None:
        Workbook().save(baseline)
    elif name != "absent.xlsx":
        baseline.write_bytes(content)
    report = tmp_path / "report.xlsx"
    assert run(report, "--baseline", str(baseline)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"qareport: {baseline}") and message in err[0]
    assert not report.exists()


def test_read_run_raises_baseline_error():
    with pytest.raises(BaselineError):
        read_run(ROOT / "pyproject.toml")


# --- the Trend sheet -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history(last_week, tmp_path_factory):
    """Weeks 18 and 19 in a folder, with two files that are not runs; read only (a test that writes
    in it copies it first)."""
    folder = tmp_path_factory.mktemp("history")
    shutil.copy(last_week, folder / "week18.xlsx")
    assert run(folder / "week19.xlsx", "--results", str(folder / "week19.yaml"), epoch=WEEK_19) == 0
    (folder / "qareport.yaml").write_text("strict: false\n")  # a configuration, not a run
    (folder / "notes.txt").write_text("not a run either")
    return folder


@pytest.fixture(scope="module")
def week_20(history, tmp_path_factory) -> tuple[Path, str]:
    """Week 20's run with that history: its workbook and what it said on stderr."""
    report = tmp_path_factory.mktemp("week-20") / "week20.xlsx"
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        assert run(report, "--history", str(history), epoch=WEEK_20) == 0
    return report, said.getvalue()


def test_history_adds_a_trend_sheet_one_row_per_run_by_date_with_this_run_last(week_20):
    report, _ = week_20
    workbook = load_workbook(report)
    header, *rows = sheet_rows(workbook["Trend"])
    assert header[:10] == ["date (UTC)", "run", "qareport", "test cases", "evaluated", "errors", "missing", "invalid",
                           "regressed", "improved"]
    assert "macro precision" in header and "steps score" in header
    # week 19's workbook and results file are one run
    assert [(r[0].strftime("%Y-%m-%d"), r[1]) for r in rows] == [
        ("2024-05-01", "week18.xlsx"), ("2024-05-08", "week19.xlsx"), ("2024-05-15", "this run"),
    ]
    assert [r[4] for r in rows] == [25, 26, 26]
    assert [(r[8], r[9]) for r in rows] == [(None, None), (1, 1), (0, 0)]  # since the run before each
    assert workbook.sheetnames.index("Statistics") < workbook.sheetnames.index("Trend")


def test_a_file_in_a_history_folder_that_is_not_a_run_is_skipped_and_said(week_20):
    _, err = week_20
    assert re.search(r"qareport: history: skipped .*qareport\.yaml: not a qareport results file", err)


def test_the_trend_sheet_has_a_line_chart_of_the_headline_metrics(week_20):
    report, _ = week_20
    with zipfile.ZipFile(report) as package:
        charts = [ElementTree.fromstring(package.read(n)) for n in package.namelist() if n.startswith("xl/charts/chart")]
    (line,) = [c for c in charts if c.find(".//c:lineChart", NS) is not None]
    series = line.findall(".//c:lineChart/c:ser", NS)
    assert [s.find("c:tx//c:f", NS).text for s in series] == ["'Trend'!K1", "'Trend'!L1", "'Trend'!M1"]
    assert all(s.find("c:dLbls/c:showVal", NS).get("val") == "1" for s in series)  # each point says its value
    axis = line.find(".//c:valAx/c:scaling", NS)
    low, high = float(axis.find("c:min", NS).get("val")), float(axis.find("c:max", NS).get("val"))
    assert low > 0 and high - low <= 0.6  # the axis fits the values, not a fixed 0-1
    assert {s.find("c:cat//c:f", NS).text for s in series} == {"'Trend'!$A$2:$A$4"}  # the dates
    assert "".join(t.text for t in line.find("c:chart/c:title", NS).iter(f"{{{NS['a']}}}t")) == "Headline metrics per run"


def test_the_output_in_a_history_folder_is_not_its_own_history(history, tmp_path):
    history = Path(shutil.copytree(history, tmp_path / "history"))
    assert run(history / "week19.xlsx", "--history", str(history), epoch=WEEK_20) == 0
    rows = sheet_rows(load_workbook(history / "week19.xlsx")["Trend"])[1:]
    assert [r[1] for r in rows] == ["week18.xlsx", "week19.yaml", "this run"]


def test_read_history_reads_named_files_and_folders(history):
    found = read_history([history])
    assert sorted(Path(r.source).name for r in found.runs) == ["week18.xlsx", "week19.xlsx", "week19.yaml"]
    assert len(found.skipped) == 1 and "qareport.yaml" in found.skipped[0]


# --- baselines an analyst or another tool re-saved or edited ---------------------------------------


def _load(path: Path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # openpyxl on XlsxWriter's data validation
        return load_workbook(path)


def resave_write_only(source: Path, target: Path) -> Path:
    """The workbook's values re-saved by openpyxl's write-only mode, whose sheets have no
    `<dimension>` element (nor any empty cell)."""
    original = _load(source)
    copy = Workbook(write_only=True)
    for ws in original.worksheets:
        sheet = copy.create_sheet(ws.title)
        sheet.sheet_state = ws.sheet_state
        for row in ws.iter_rows(values_only=True):
            sheet.append(list(row))
    copy.save(target)
    with zipfile.ZipFile(target) as package:
        assert not any(b"<dimension" in package.read(name) for name in package.namelist()
                       if name.startswith("xl/worksheets/sheet"))
    return target


def edit_hidden_cells(source: Path, target: Path, edits: dict[tuple[str, str, str], object]) -> dict[tuple[str, str, str], str]:
    """What an analyst may do to the hidden data: (sheet, row key, column) -> a new value; the row
    key is a case id in qareport_results, a key in qareport_run. Returns each edited cell's address."""
    workbook = _load(source)
    where = {}
    for (sheet, key, column), value in edits.items():
        ws = workbook[sheet]
        header = [cell.value for cell in ws[1]]
        row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == key)
        cell = ws.cell(row, header.index(column) + 1)
        cell.value = value
        where[(sheet, key, column)] = cell.coordinate
    workbook.save(target)
    return where


def test_a_baseline_whose_sheets_lack_the_dimension_element_is_still_a_baseline_for_run_and_email(last_week, tmp_path):
    copy = resave_write_only(last_week, tmp_path / "week18-write-only.xlsx")
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(copy)) == 0
    rows = sheet_rows(load_workbook(report, data_only=True)["Changes"])[1:]  # ids: linked by id
    assert [(r[0], r[2], r[3]) for r in rows] == [(REGRESSED, "regression", "macro precision"),
                                                  (REGRESSED, "regression", "grade"),  # ideal → acceptable
                                                  (IMPROVED, "improvement", "status")]
    assert read_run(copy).cases == read_run(last_week).cases
    assert main(["email", str(copy), "--eml", str(tmp_path / "week18.eml"), "--to", "qa@example.org"]) == 0
    assert (tmp_path / "week18.eml").stat().st_size > 1000


def test_a_baseline_whose_hidden_data_was_edited_is_read_with_each_value_converted_or_left_out_and_said(last_week, tmp_path, capsys):
    edits = {
        (RESULTS_SHEET, REGRESSED, "macro_precision"): " 1.0 ",  # a score typed as text: unambiguous
        (RESULTS_SHEET, IMPROVED, "status"): "Error",  # a status retyped
        (RESULTS_SHEET, "2818e6c6-6d0e-49a5-86af-cc5a22b108d2", "macro_recall"): "n/a",  # not a number
        (RUN_SHEET, "metric.macro_precision.cases", "value"): "14",  # a count typed as text
        (RUN_SHEET, "status.error", "value"): "three",  # not a count
    }
    copy = tmp_path / "week18-edited.xlsx"
    cells = edit_hidden_cells(last_week, copy, edits)
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(copy)) == 0
    err = capsys.readouterr().err
    rows = sheet_rows(load_workbook(report, data_only=True)["Changes"])[1:]  # ids: linked by id
    assert [(r[0], r[2], r[3]) for r in rows] == [(REGRESSED, "regression", "macro precision"),
                                                  (REGRESSED, "regression", "grade"),  # ideal → acceptable
                                                  (IMPROVED, "improvement", "status")]
    recall = cells[(RESULTS_SHEET, "2818e6c6-6d0e-49a5-86af-cc5a22b108d2", "macro_recall")]
    errors = cells[(RUN_SHEET, "status.error", "value")]
    assert (f"qareport: {copy}: sheet '{RESULTS_SHEET}', cell {recall}: 'macro_recall' must be a number "
            "(got text 'n/a'); left out") in err
    assert f"qareport: {copy}: sheet '{RUN_SHEET}', cell {errors}: 'status.error' must be a whole number (got text 'three')" in err
    problems = [row[3] for row in sheet_rows(load_workbook(report)["Problems"])[1:]]
    assert any(f"cell {recall}: 'macro_recall'" in str(text) for text in problems)
    record = read_report(copy)
    assert next(h for h in record.headline if h.metric == "macro_precision").cases == 14
    assert "error" not in record.status_counts


def test_email_of_a_workbook_whose_hidden_data_was_edited_is_still_sent(last_week, tmp_path, capsys):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week)) == 0
    workbook = _load(report)
    metadata = {row[0].value: row[1] for row in workbook[RUN_SHEET].iter_rows(min_row=2)}
    metadata["baseline.metric.macro_precision.cases"].value = "14 cases"
    metadata["baseline.metric.macro_precision.shared_old"].value = "high"
    digest = json.loads(metadata["digest.1"].value)
    digest["headline"][0]["mean"] = "high"  # a number in the stored digest replaced by a word
    metadata["digest.1"].value = json.dumps(digest)
    changes = workbook["qareport_changes"]
    header = [cell.value for cell in changes[1]]
    changes.cell(2, header.index("delta") + 1).value = "big"  # the regression's delta
    changes.cell(3, header.index("kind") + 1).value = "improvment"  # not a kind of change
    workbook.save(report)
    message = tmp_path / "week19.eml"
    capsys.readouterr()
    assert main(["email", str(report), "--eml", str(message), "--to", "qa@example.org"]) == 0
    assert "regression" in message.read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert "'baseline.metric.macro_precision.cases' must be a whole number (got text '14 cases')" in err
    assert "the digest (keys digest.1 to digest.1): not the digest qareport wrote; made again from the stored run" in err
    assert "sheet 'qareport_changes', cell G2: 'delta' must be a number (got text 'big')" in err
    assert "sheet 'qareport_changes', row 3: not a change qareport wrote (kind 'improvment'); left out" in err


BOMB = "".join(f'{name}: &{name} [{", ".join([f"*{before}"] * 9)}]\n'
               for before, name in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize(("name", "content", "message"), [
    ("only-cases.yaml", "cases: []\n", "no 'qareport:' header with its version"),
    ("other-tool.yaml", "tool: another\ncases: []\nscores: {a: 1}\n", "no 'qareport:' header with its version"),
    ("only-cases.json", '{"cases": []}', "no 'qareport:' header with its version"),
    ("bomb.yaml", 'a: &a ["lol"]\n' + BOMB + "cases: []\n", "billion laughs"),
    ("bomb-with-header.yaml", 'qareport: {version: "1.0"}\na: &a ["lol"]\n' + BOMB + "cases: []\n", "billion laughs"),
])
def test_a_results_file_that_is_not_a_qareport_run_is_refused_as_a_baseline(tmp_path, name, content, message):
    """Exit status 2 naming it, within a memory and time limit: an alias bomb is never expanded."""
    import resource
    import subprocess
    import sys

    baseline = tmp_path / name
    baseline.write_text(content, encoding="utf-8")
    report = tmp_path / "report.xlsx"

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))

    completed = subprocess.run(
        [sys.executable, "-m", "qareport", "run", str(TESTCASES), "--responses", str(RESPONSES), "--output",
         str(report), "--no-llm", "-q", "--baseline", str(baseline)],
        capture_output=True, text=True, timeout=120, preexec_fn=limit_memory)
    assert completed.returncode == 2, completed.stderr
    (line,) = [line for line in completed.stderr.splitlines() if str(baseline) in line]
    assert line.startswith(f"qareport: {baseline}") and message in line
    assert "Traceback" not in completed.stderr and not report.exists()


def test_a_results_file_is_written_without_yaml_aliases_so_it_reads_back_under_the_alias_guard(tmp_path):
    from qareport.results_file import write_results_file

    shared = {"groups": ["imf", "weo"]}
    path = tmp_path / "results.yaml"
    write_results_file({"qareport": {"version": "1", "created": "2024-05-01"}, "cases": [], "a": shared, "b": shared}, path)
    text = path.read_text(encoding="utf-8")
    assert "&id" not in text and "*id" not in text
    assert read_run(path).cases == ()


# --- the trend, with a baseline LibreOffice re-saved ------------------------------------------------


@pytest.fixture(scope="module")
def resaved_by_libreoffice(last_week, tmp_path_factory):
    """Last week's workbook opened and saved again by LibreOffice (which keeps 15 digits of a number)."""
    import subprocess

    from test_libreoffice import require

    soffice = require("soffice")
    folder = tmp_path_factory.mktemp("libreoffice-resave")
    subprocess.run([soffice, f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(folder / "out"), str(last_week)],
                   capture_output=True, timeout=300, check=True)
    resaved = folder / "out" / last_week.name
    assert resaved.is_file(), "LibreOffice did not write the workbook"
    return resaved


def test_the_trend_lists_a_run_once_when_its_workbook_was_re_saved_by_libreoffice(last_week, resaved_by_libreoffice, tmp_path):
    before, after = read_run(last_week), read_run(resaved_by_libreoffice)
    assert before.created == after.created and before.cases != after.cases  # LibreOffice rounded some scores
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(resaved_by_libreoffice),
               "--history", str(last_week), str(resaved_by_libreoffice)) == 0
    rows = sheet_rows(load_workbook(report)["Trend"])[1:]
    assert [(r[0].strftime("%Y-%m-%d"), r[1]) for r in rows] == [("2024-05-01", "week18.xlsx"), ("2024-05-08", "this run")]


@pytest.mark.parametrize(("got", "expected", "exp"), [
    ("14", "count", 14), (" 14 ", "count", 14), ("14.0", "count", 14), (14.0, "count", 14), ("", "count", None),
    ("14 cases", "count", "BAD"), ("three", "count", "BAD"), (-1, "count", "BAD"), (1.5, "count", "BAD"),
    (True, "count", "BAD"), (" 0.5", "number", 0.5), ("1", "number", 1.0), ("n/a", "number", "BAD"),
    ("nan", "number", "BAD"), ("1e400", "number", "BAD"), ("0,5", "number", "BAD"), (float("inf"), "number", "BAD"),
    (0.25, "number", 0.25), (None, "number", None), (10, "text", "10"), (1.0, "text", "1"), ("X ", "text", "X "),
])
def test_a_stored_value_of_another_type_is_converted_only_when_unambiguous(got, expected, exp):
    from qareport.runs import BAD, convert_value

    value = convert_value(got, expected)
    assert (value is BAD) if exp == "BAD" else (value == exp and type(value) is type(exp))


# --- the Compare sheet -------------------------------------------------------------------------------


def compare_blocks(ws):
    """The Compare sheet's blocks: case id -> {label: (last run, this run)}, from its rows."""
    blocks: dict[str, dict] = {}
    current = None
    for row in ws.iter_rows(min_row=2, values_only=True):
        label, old, new = (list(row) + [None] * 3)[:3]
        if label is None and old is None and new is None:
            current = None
            continue
        if current is None:
            current = blocks.setdefault(label, {"name": old, "kind": new})
            continue
        current[label] = (old, new)
    return blocks


def test_a_regressed_case_shows_last_weeks_and_this_weeks_outputs_side_by_side_from_the_stored_run(compared_values):
    blocks = compare_blocks(compared_values["Compare"])
    assert list(blocks) == [REGRESSED, IMPROVED]  # the order of Changes
    regressed = blocks[REGRESSED]
    assert regressed["kind"] == "regression"
    assert regressed["what moved"][0] == "macro precision 1.00 \u2192 0.83, grade ideal \u2192 acceptable"
    old, new = regressed["indicator selection"]
    assert "NGDP_R" not in old and "NGDP_R (" in new  # the extra term it picked this week, last week's from the stored run
    assert old.startswith("dataset ") and "INDICATOR: NGDPD (" in old
    assert regressed["answer"][0] == regressed["answer"][1]  # the answer did not change
    improved = blocks[IMPROVED]
    assert improved["status"] == ("error", "success") and improved["error"][0] == "timeout"
    assert improved["answer"][0] is None and improved["answer"][1].startswith("According to the IMF")


def test_each_regressed_or_improved_line_in_changes_opens_its_compare_block(compared):
    changes, compare = compared["Changes"], compared["Compare"]
    for row in (2, 3):
        link = changes.cell(row, 11)
        assert link.value == "compare"
        target = int(link.hyperlink.location.split("!A")[1])
        assert link.hyperlink.location.startswith("'Compare'!")
        assert link_by_id(compare.cell(target, 1).value)[2] == link_by_id(changes.cell(row, 1).value)[2]


def test_a_baseline_that_kept_no_outputs_says_so_in_compare(last_week, tmp_path):
    from openpyxl import load_workbook as load

    old = load(last_week)
    results = old[RESULTS_SHEET]
    header = [c.value for c in results[1]]
    column = header.index("outputs") + 1
    results.delete_cols(column)  # as a workbook of an earlier qareport: no outputs column
    older = tmp_path / "older.xlsx"
    old.save(older)
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(older)) == 0
    blocks = compare_blocks(load(report, data_only=True)["Compare"])
    assert blocks[REGRESSED]["outputs"] == (NOT_KEPT, None)  # said, not left blank
    assert blocks[REGRESSED]["indicator selection"][0] is None
    assert blocks[REGRESSED]["indicator selection"][1].startswith("dataset ")


def test_the_stored_run_keeps_each_cases_outputs_in_the_workbook_and_the_results_file(last_week):
    from_workbook = {row.case_id: row for row in read_run(last_week).cases}
    outputs = from_workbook[REGRESSED].outputs
    (turn,) = outputs["turns"]
    assert turn["turn"] == 1 and turn["selection"].startswith("dataset ") and "NGDP_R" not in turn["selection"]
    assert from_workbook[IMPROVED].outputs == {"error": "timeout"}


def test_the_console_gives_the_change_the_summary_shows(last_week, tmp_path, capsys):
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(last_week)) == 0
    line = next(text for text in capsys.readouterr().out.splitlines() if text.startswith("since the baseline"))
    assert "macro precision 0.84 (+0.06)" in line  # 0.78 -> 0.84 over the shared cases, as the Summary's row
    summary = load_workbook(report, data_only=True)["Summary"]
    row = next(c.row for c in summary["A"] if c.value == "macro precision")
    assert summary.cell(row, 10).value == pytest.approx(0.06)


@pytest.mark.parametrize(("content", "name", "message"), [
    (None, "plain.xlsx", "not a qareport workbook with per-case results"),
    (b"", "absent.xlsx", "no such file"),
])
def test_an_unusable_reference_run_is_one_clear_line_exit_status_2_and_nothing_written(tmp_path, capsys, content, name, message):
    reference = tmp_path / name
    if content is None:
        Workbook().save(reference)
    report = tmp_path / "report.xlsx"
    assert run(report, "--reference", str(reference)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(reference) in err[0] and message in err[0]
    assert not report.exists()


def test_a_pinned_reference_run_is_said_in_what_was_run(last_week, tmp_path):
    report = tmp_path / "report.xlsx"
    assert run(report, "--reference", str(last_week)) == 0
    summary = load_workbook(report)["Summary"]
    cells = [[str(value) for value in row if value is not None] for row in summary.iter_rows(values_only=True)]
    (said,) = [row for row in cells if "reference run" in row]
    assert any(value.endswith(last_week.name) for value in said)



def _all_failing_responses(folder: Path) -> Path:
    """This week's responses with every indicator-selection case answered by an error: far below any reference."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "power-system.json").write_bytes((RESPONSES / "power-system.json").read_bytes())
    records = [json.loads(line) for line in (RESPONSES / "imf.jsonl").read_text().splitlines() if line.strip()]
    failing = [{"test_case_id": r["test_case_id"], "status": "error", "error": "timeout"} for r in records if "test_case_id" in r]
    (folder / "imf.jsonl").write_text("".join(json.dumps(r) + "\n" for r in failing))
    return folder


def test_a_pinned_reference_run_shows_a_drift_line_under_the_verdict_only_when_the_run_drifted(last_week, tmp_path):
    drifted, steady = tmp_path / "drifted.xlsx", tmp_path / "steady.xlsx"
    assert run(drifted, "--reference", str(last_week), "--min-evaluated", "0", responses=_all_failing_responses(tmp_path / "failing")) == 0
    assert run(steady, "--reference", str(last_week)) == 0

    def summary_text(path: Path) -> str:
        ws = load_workbook(path)["Summary"]
        return "\n".join(str(value) for row in ws.iter_rows(values_only=True) for value in row if value is not None)

    assert f"drift since the reference run ({last_week}" in summary_text(drifted)
    assert "drift since the reference run" not in summary_text(steady)


@pytest.mark.parametrize("field", ["facts", "outputs"])
def test_a_stored_cell_nested_thousands_deep_loses_only_that_value_with_a_problem_naming_the_cell(
        last_week, tmp_path, field):
    old = load_workbook(last_week)
    results = old[RESULTS_SHEET]
    column = [c.value for c in results[1]].index(field) + 1
    results.cell(2, column).value = "[" * 16_000 + "]" * 16_000  # fits a cell: 32,000 characters
    edited = tmp_path / "edited.xlsx"
    old.save(edited)
    report = tmp_path / "week19.xlsx"
    assert run(report, "--baseline", str(edited)) == 0
    book = load_workbook(report, read_only=True)
    assert "Changes" in book.sheetnames  # the comparison stands
    problems = " ".join(str(cell) for row in book["Problems"].iter_rows(values_only=True) for cell in row if cell)
    letter = results.cell(2, column).column_letter
    assert f"sheet '{RESULTS_SHEET}', cell {letter}2: '{field}' nests more than" in problems
