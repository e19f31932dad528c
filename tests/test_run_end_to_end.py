"""`qareport run` end to end on the bundled test cases, read back with openpyxl."""

import json

import pytest
from conftest import RESPONSES, TESTCASES, run_qareport
from openpyxl import load_workbook

from qareport.cli import main

SEED_CASE = "c540d28c-31cc-40fa-930a-4380d76fd1e7"  # the methodology's worked example
MISSING_CASE = "fdd35173-4b4a-41a2-8bc4-dc44dbec4392"
ERROR_CASE = "33b75fb6-cf4d-475a-a6a7-8bf8fcc788cb"
MULTI_TURN_CASE = "500eb5b5-7686-4a27-84e3-a227046cab38"
RELABELLED_CASE = "71835466-0f13-4b64-845d-0894b7139beb"


@pytest.fixture(scope="module")
def bundled_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.xlsx"
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "--output", str(out), "--no-llm"]) == 0
    return out


def overview_rows(path):
    ws = load_workbook(path)["Overview"]
    headers = [c.value for c in ws[1]]
    return ws, headers, {row[0]: dict(zip(headers, row)) for row in ws.iter_rows(min_row=2, values_only=True)}


def test_the_workbook_has_overview_details_statistics_and_problems(bundled_report):
    names = load_workbook(bundled_report).sheetnames
    for sheet in ("Overview", "Details", "Statistics", "Problems"):
        assert sheet in names
    assert names.index("Overview") < names.index("Details") < names.index("Statistics") < names.index("Problems")


def test_overview_has_one_row_per_test_case_including_error_and_missing(bundled_report):
    _, headers, rows = overview_rows(bundled_report)
    assert {"macro recall", "macro precision", "indicator selection details"} <= set(headers)
    assert len(rows) == 17 + 12  # 17 conversation cases, 12 Q&A questions
    assert rows[MISSING_CASE]["status"] == "missing"
    assert rows[ERROR_CASE]["status"] == "error" and rows[ERROR_CASE]["error"]
    assert rows[MISSING_CASE]["macro recall"] is None  # never a made-up zero


def test_overview_scores_keep_full_values_shown_with_two_decimals(bundled_report):
    ws, headers, rows = overview_rows(bundled_report)
    assert rows[SEED_CASE]["macro precision"] == pytest.approx(0.8333333333)
    assert rows[SEED_CASE]["macro recall"] == 1
    row_number = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == SEED_CASE)
    assert ws.cell(row_number, headers.index("macro precision") + 1).number_format == "0.00"


def test_the_details_cell_is_the_seed_format(bundled_report):
    _, _, rows = overview_rows(bundled_report)
    details = rows[SEED_CASE]["indicator selection details"]
    lines = details.splitlines()
    assert lines[:3] == ["INDICATOR", "[recall: 1.00, precision: 0.67]", "True Positives [2]"]
    assert "False Positives [1]" in lines
    assert rows[MULTI_TURN_CASE]["indicator selection details"].startswith("Turn 1: ")


def test_overview_is_frozen_filtered_and_wrapped(bundled_report):
    ws, headers, _ = overview_rows(bundled_report)
    assert ws.freeze_panes == "C2"  # the id and the name stay in sight
    assert ws.auto_filter.ref.startswith("A1:")
    details_column = headers.index("indicator selection details") + 1
    cell = ws.cell(2, details_column)
    assert cell.alignment.wrap_text
    assert ws.row_dimensions[2].height and ws.row_dimensions[2].height > 15
    assert ws.column_dimensions["A"].width >= 20


def test_details_sheet_has_one_row_per_term_with_its_verdict(bundled_report):
    ws = load_workbook(bundled_report)["Details"]
    headers = [c.value for c in ws[1]]
    rows = [dict(zip(headers, r)) for r in ws.iter_rows(min_row=2, values_only=True)]
    seed = [(r["dimension"], r["term id"], r["verdict"]) for r in rows
            if r["case id"] == SEED_CASE and r["dimension"] not in ("(dataset)", "(grade)")]  # the turn's, not terms
    assert ("INDICATOR", "NGDP_R", "FP") in seed
    assert sum(v == "TP" for _, _, v in seed) == 3
    freq = [r for r in rows if r["case id"] == "1b64fa36-5f04-4a17-bd38-6d6fb79cc484" and r["dimension"] == "FREQ"]
    assert {r["verdict"] for r in freq} == {"not in target"}


def statistics_rows(path):
    ws = load_workbook(path)["Statistics"]
    return [row for row in ws.iter_rows(values_only=True)]


def test_statistics_has_data_query_metrics_over_all_evaluated_cases_with_counts(bundled_report):
    rows = statistics_rows(bundled_report)
    titles = [r[0] for r in rows]
    assert "Data Query Metrics" in titles
    overall = next(r for r in rows if r[0] == "all test cases")
    # test cases, evaluated, errors, missing, invalid, macro precision, macro recall (hand-computed in testcases/README.md)
    assert overall[1:6] == (17, 15, 1, 1, 0)
    assert overall[6] == pytest.approx(0.8361, abs=1e-4) and overall[7] == pytest.approx(0.8389, abs=1e-4)
    weo = next(r for r in rows if r[0] == "weo")
    assert weo[2] == 12 and weo[6] == pytest.approx(0.8090, abs=1e-4) and weo[7] == pytest.approx(0.7986, abs=1e-4)
    country = next(r for r in rows if r[0] == "COUNTRY")
    assert country[1] == 14 and country[2] == pytest.approx(0.8393, abs=1e-4) and country[3] == pytest.approx(0.8333, abs=1e-4)


def test_statistics_are_values_not_formulas(bundled_report):
    ws = load_workbook(bundled_report)["Statistics"]
    assert not any(c.data_type == "f" for row in ws.iter_rows() for c in row)


def test_problems_sheet_names_the_file_line_and_fix(bundled_report):
    ws = load_workbook(bundled_report)["Problems"]
    problems = [dict(zip([c.value for c in ws[1]], r)) for r in ws.iter_rows(min_row=2, values_only=True)]
    missing = next(p for p in problems if p["case id"] == MISSING_CASE)
    assert missing["file"].endswith("ifs.yaml") and isinstance(missing["line"], int)
    assert "no response" in missing["problem"]


def test_match_terms_by_id_turns_a_relabelled_term_into_a_true_positive(tmp_path):
    out = tmp_path / "by-id.xlsx"
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "-o", str(out), "--no-llm", "--match-terms-by", "id"]) == 0
    _, _, rows = overview_rows(out)
    assert rows[RELABELLED_CASE]["macro recall"] == 1
    assert "(selected as: China)" in rows[RELABELLED_CASE]["indicator selection details"]


def test_strict_mode_fails_with_status_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "strict.xlsx"
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "-o", str(out), "--no-llm", "--strict"]) == 2
    assert not out.exists()
    assert "--strict" in capsys.readouterr().err


def test_results_file_has_graphrag_results_aggregates_and_case_rows(tmp_path):
    out, results = tmp_path / "r.xlsx", tmp_path / "results.json"
    assert main(["run", str(TESTCASES), "--responses", str(RESPONSES), "-o", str(out), "--no-llm", "--results", str(results)]) == 0
    document = json.loads(results.read_text())
    assert len(document["results"]) == 12 and {"per_template", "micro", "macro"} <= set(document["aggregates"])
    assert len(document["cases"]) == 29
    assert document["data_query_metrics"]["all"]["evaluated"] == 15


@pytest.mark.parametrize(
    "args, exp_message",
    [
        (["run"], "the following arguments are required"),
        (["run", "testcases"], "--responses"),
        (["run", "testcases", "-r", "x", "--match-terms-by", "label"], "invalid choice"),
        (["frobnicate"], "unknown command 'frobnicate'"),
    ],
)
def test_wrong_usage_is_one_line_and_status_2(args, exp_message):
    got = run_qareport(*args)
    assert got.returncode == 2
    assert exp_message in got.stderr and "Traceback" not in got.stderr
    assert len(got.stderr.strip().splitlines()) <= 2  # usage line + the message


def test_version_and_help():
    assert run_qareport("--version").stdout.startswith("qareport ")
    help_text = run_qareport("run", "--help").stdout
    for option in ("--responses", "--output", "--strict", "--match-terms-by", "--templates", "--results"):
        assert option in help_text


def test_no_loadable_test_case_is_one_clear_error(tmp_path):
    (tmp_path / "bad.yaml").write_text("id: [\n")
    got = run_qareport("run", tmp_path, "-r", tmp_path, "-o", tmp_path / "x.xlsx", "--no-llm")
    assert got.returncode == 2 and "no test cases could be loaded" in got.stderr and "Traceback" not in got.stderr
    assert "bad.yaml:" in got.stderr


def test_the_command_works_from_another_directory(tmp_path):
    got = run_qareport("run", TESTCASES, "-r", RESPONSES, "-o", "out.xlsx", "--no-llm", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "out.xlsx").exists()
    assert "29 cases" in got.stdout


QA_EXPECTED_STEPS = {  # hand-computed in testcases/README.md
    "c10bbc8dce98a4b8832d125134a16153": 1.0,
    "8bbea9a10876a04ad77a82fd2aedee40": 1.0,
    "d1b6a65e4d2c3521619e0e099d501b1f": 0.5,
    "d566b1e9da418ac83e520a66cc7af4d7": 0.0,
    "af241297": 0.5,
    "ccd576d1": 0.0,
}


def test_qa_questions_get_their_steps_scores_and_details(bundled_report):
    _, _, rows = overview_rows(bundled_report)
    for question_id, expected in QA_EXPECTED_STEPS.items():
        (row,) = [r for case_id, r in rows.items() if case_id.startswith(question_id)]
        assert row["steps score"] == expected, question_id
    oslo = rows["c10bbc8dce98a4b8832d125134a16153"]
    assert oslo["tags / template"] == "list_all_transformers_within_Substation_SUBSTATION"
    assert "✓ sparql_query matched by call_3b3zHJnBXwYYSg04BiFGAAgO" in oslo["steps details"]
    seed_response = rows["f91fc938d606e5f6089912bebfaf114b"]
    assert "failed [1]" in seed_response["steps details"]
    assert "call_DbMkZ8kv3qkf49wNNdREkpRN (sparql_query): Error: ValueError" in seed_response["steps details"]
    assert seed_response["total tokens"] == 298753


def test_statistics_show_the_qa_aggregates_per_template_micro_and_macro(bundled_report):
    rows = statistics_rows(bundled_report)
    header = next(r for r in rows if r[0] == "template")
    steps_column = header.index("steps score")
    micro = next(r for r in rows if r[0] == "all questions (micro)")
    macro = next(r for r in rows if r[0] == "templates averaged (macro)")
    assert micro[1:3] == (11, 1)  # success and error samples
    assert micro[steps_column] == pytest.approx(8 / 11)
    assert macro[steps_column] == pytest.approx(0.7292, abs=1e-4)
    assert any(r[0] == "Q&A: tool calls per template" for r in rows)
