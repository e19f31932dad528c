"""The Summary sheet comes first and answers, in one screen: what was run, how good it is, what
was not scored and why, and which cases are worst (linked to Overview). And the analyst's
formatting everywhere: frozen headers, filters, colour scales, status colours, links, values."""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import load_workbook

from qareport.cli import main
from qareport.evaluation import evaluate_suite
from qareport.loading import load_suite
from qareport.records import RunInfo
from qareport.report import build_report
from qareport.workbook import write_workbook
from qareport.workbook.summary import VALUE_COLUMN, VALUE_WIDTH

ROOT = Path(__file__).resolve().parents[1]
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"
WEEK_19 = "1715162400"  # 2024-05-08 10:00 UTC


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("summary") / "report.xlsx"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", WEEK_19)
        assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(path), "--no-llm", "-q"]) == 0
    return path


@pytest.fixture(scope="module")
def workbook(report):
    return load_workbook(report)


def rows_of(ws):
    return [list(row) for row in ws.iter_rows(values_only=True)]


def row_starting(ws, label):
    return next(row for row in rows_of(ws) if row and row[0] == label)


def key_values(ws):
    """The right-hand block of the Summary: key -> list of value lines."""
    found: dict[str, list] = {}
    key = None
    for row in ws.iter_rows(min_col=VALUE_COLUMN - 1, max_col=VALUE_COLUMN):
        if row[0].value is not None:
            key = row[0].value
            found.setdefault(key, [])
        if key is not None and row[1].value is not None:
            found[key].append(row[1].value)
    return found


def test_the_sheets_come_in_the_order_readers_use_them_and_the_data_sheets_are_hidden(workbook):
    visible = [ws.title for ws in workbook.worksheets if ws.sheet_state == "visible"]
    assert visible == ["Summary", "Overview", "Details", "Statistics", "Problems"]
    assert [ws.title for ws in workbook.worksheets if ws.sheet_state != "visible"] == ["qareport_results", "qareport_run"]
    assert workbook.active.title == "Summary"


def test_the_headline_metrics_stand_with_the_cases_behind_them_and_the_cases_not_scored(workbook):
    summary = workbook["Summary"]
    header = row_starting(summary, "metric")
    assert header[:6] == ["metric", "mean", "cases", "errors", "missing", "invalid"]
    precision = row_starting(summary, "macro precision")
    statistics = row_starting(workbook["Statistics"], "all test cases")  # Data Query Metrics
    assert precision[1] == pytest.approx(statistics[6]) and precision[2] == statistics[2] == 15
    assert precision[3:6] == [1, 1, 0]
    steps = row_starting(summary, "steps score")
    assert steps[2] == 11 and steps[3] == 1
    cell = next(c for c in summary["B"] if c.value == precision[1])
    assert cell.number_format == "0.00"


def test_the_summary_counts_test_cases_by_status_with_their_shares(workbook):
    summary = workbook["Summary"]
    assert row_starting(summary, "test cases")[:7] == ["test cases", 29, 26, 2, 1, 0, 1]
    share = next(c for c in summary[row_starting_index(summary, "share of test cases")] if c.column == 3)
    assert share.value == pytest.approx(26 / 29) and share.number_format == "0.0%"


def row_starting_index(ws, label):
    return next(c.row for c in ws["A"] if c.value == label)


def test_the_summary_says_what_was_run_and_what_was_not_evaluated_and_why(workbook):
    suite = load_suite([str(TESTCASES)], [str(RESPONSES)])
    info = key_values(workbook["Summary"])
    assert info["date"] == ["2024-05-08 10:00 UTC"]
    assert info["qareport"] == ["0.1.0"]
    testcases = next(i for i in suite.inputs if i.role == "testcases")
    assert info["test cases"] == [str(TESTCASES), f"{testcases.files} file(s), 29 cases, sha256 {testcases.sha256[:12]}…"]
    assert info["responses"][1].startswith("2 file(s), 28 records, sha256 ")
    assert info["judge"] == ["not used"]
    assert "match terms by: id_and_name" in info["options"][0]
    assert " ".join(info["metrics"]).startswith("answer correctness, answer relevance")
    assert "LLM judge is turned off" in " ".join(info["why"])


def test_the_worst_cases_are_listed_lowest_first_with_links_to_their_overview_rows(workbook):
    summary, overview = workbook["Summary"], workbook["Overview"]
    start = row_starting_index(summary, "case id")
    links = [summary.cell(row=r, column=1) for r in range(start + 1, start + 11)]
    scores = [summary.cell(row=c.row, column=2).value for c in links]
    assert scores == sorted(scores) and scores[0] == 0.0
    overview_rows = {c.value: c.row for c in overview["A"]}
    for link in links:
        assert link.hyperlink.location == f"'Overview'!A{overview_rows[link.value]}"
    assert summary.cell(row=start + 11, column=1).value.startswith("Score: the mean")
    assert "3 more test case(s) were not evaluated" in summary.cell(row=start + 12, column=1).value


def test_the_summary_fits_one_screen_without_wrapping_or_clipping(workbook):
    summary = workbook["Summary"]
    assert summary.max_row <= 40 and summary.max_column <= VALUE_COLUMN
    assert all(summary.row_dimensions[r].height in (None, 15) for r in range(2, summary.max_row + 1))
    values = [c.value for c in summary[summary.cell(row=1, column=VALUE_COLUMN).column_letter] if c.value]
    assert all(len(str(v)) <= VALUE_WIDTH for v in values)
    # fit to one page: 1 is the default of fitToHeight and fitToWidth, which a writer may leave out
    assert summary.sheet_properties.pageSetUpPr.fitToPage
    assert summary.page_setup.fitToHeight in (None, 1) and summary.page_setup.fitToWidth in (None, 1)


def test_the_judge_and_its_cost_appear_when_the_judge_ran(tmp_path):
    suite = load_suite([str(TESTCASES)], [str(RESPONSES)])
    results = evaluate_suite(suite).results
    usage = {"model": "gpt-4o-mini", "embedding_model": "text-embedding-3-small", "calls": 120, "cached_calls": 30,
             "failed_calls": 0, "cost_usd": 0.01234}
    run = RunInfo(created="2024-05-08T10:00:00+00:00", qareport_version="0.1.0", judge_model="gpt-4o-mini", judge_usage=usage)
    write_workbook(build_report(results, (), run), tmp_path / "report.xlsx")
    info = key_values(load_workbook(tmp_path / "report.xlsx")["Summary"])
    assert info["judge"] == ["gpt-4o-mini, embeddings text-embedding-3-small"]
    assert info["judge cost"] == ["$0.0123 (120 calls, 30 cached, 0 failed)"]


def test_text_from_test_cases_stays_text_in_the_summary(tmp_path):
    suite = tmp_path / "cases.yaml"
    suite.write_text(
        "- id: '=HYPERLINK(\"http://x\")'\n  name: '=1+1'\n  conversation:\n  - role: user\n    content: '@SUM(A1)'\n"
        "    target:\n      indicator_selection:\n      - dataset_id: D\n        dimensions:\n"
        "        - dimension_name: INDICATOR\n          values: [{id: GDP, name: gdp}]\n"
    )
    responses = tmp_path / "responses.json"
    responses.write_text('[{"id": "=HYPERLINK(\\"http://x\\")", "indicator_selection": [{"dataset_id": "D", '
                         '"dimensions": [{"dimension_name": "INDICATOR", "values": [{"id": "CPI", "name": "cpi"}]}]}]}]')
    out = tmp_path / "report.xlsx"
    assert main(["run", str(suite), "--responses", str(responses), "--output", str(out), "--no-llm", "-q"]) == 0
    summary = load_workbook(out)["Summary"]
    start = row_starting_index(summary, "case id")
    assert summary.cell(row=start + 1, column=1).value == '=HYPERLINK("http://x")'
    assert summary.cell(row=start + 1, column=3).value == "=1+1"
    assert summary.cell(row=start + 1, column=1).data_type == "s" and summary.cell(row=start + 1, column=3).data_type == "s"


def test_every_sheet_holds_values_not_formulas(workbook):
    for ws in workbook.worksheets:
        assert not [c.coordinate for row in ws.iter_rows() for c in row if c.data_type == "f"], ws.title


# --- analyst formatting in the list sheets --------------------------------------------------------


def test_overview_has_frozen_header_and_id_filters_status_colours_colour_scales_and_links_to_details(workbook):
    overview, details = workbook["Overview"], workbook["Details"]
    headers = [c.value for c in overview[1]]
    assert overview.freeze_panes == "B2"
    assert overview.auto_filter.ref == f"A1:{overview.cell(row=1, column=len(headers)).column_letter}30"
    status = headers.index("status") + 1
    assert overview.cell(row=2, column=status).fill.fgColor.rgb.endswith("E2EFDA")  # success: green
    error_row = next(r for r in range(2, 31) if overview.cell(row=r, column=status).value == "error")
    assert overview.cell(row=error_row, column=status).fill.fgColor.rgb.endswith("F8CBAD")
    scaled = {str(rng.sqref) for rng in overview.conditional_formatting}
    recall = overview.cell(row=1, column=headers.index("macro recall") + 1).column_letter
    assert f"{recall}2:{recall}30" in scaled
    first = overview["A2"]
    target_row = int(first.hyperlink.location.split("!A")[1])
    assert details.cell(row=target_row, column=1).value == first.value
    assert details.cell(row=target_row, column=1).hyperlink.location == "'Overview'!A2"  # and back


def test_overview_columns_fit_their_content_and_wrapped_rows_are_tall_enough(workbook):
    overview = workbook["Overview"]
    headers = [c.value for c in overview[1]]
    id_width = overview.column_dimensions["A"].width
    assert id_width >= max(len(str(c.value)) for c in overview["A"])  # ids are never cut
    details = headers.index("indicator selection details") + 1
    for row in range(2, 31):
        text = overview.cell(row=row, column=details).value
        if text:
            assert overview.row_dimensions[row].height >= min(409, 15 * text.count("\n") + 15)


def test_details_and_problems_have_frozen_headers_and_filters(workbook):
    for name in ("Details", "Problems"):
        ws = workbook[name]
        assert ws.freeze_panes in ("B2", "A2") and ws.auto_filter.ref.startswith("A1:")
        assert ws.print_title_rows == "$1:$1"  # the header on every printed page
