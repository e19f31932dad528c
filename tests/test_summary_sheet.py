"""The Summary sheet comes first and answers, in one screen: what was run, how good it is, what
was not scored and why, and which cases are worst (linked to Overview). And the analyst's
formatting everywhere: frozen headers, filters, colour scales, status colours, links, values."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import foreign_formulas, link_by_id, link_target_row
from openpyxl import load_workbook

from qareport.cli import main
from qareport.evaluation import evaluate_suite
from qareport.judge.usage import JudgeUsage
from qareport.loading import load_suite
from qareport.records import RunInfo
from qareport.report import build_report
from qareport.workbook import write_workbook
from qareport.workbook.summary_grid import VALUE_COLUMN, VALUE_WIDTH

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


@pytest.fixture(scope="module")
def values(report):
    """The workbook as a reader that does not calculate sees it: the cached results of formulas."""
    return load_workbook(report, data_only=True)


def listed_cases(ws, values_ws, title):
    """The cases a Summary list shows under `title`: name (as shown), what, reason, link formula.
    A case is a name row (a link) and then rows of what (B) and reason (F), each maybe several."""
    start = next(c.row for c in values_ws["A"] if c.value == title) + 2  # past the header
    cases = []
    for row in range(start, values_ws.max_row + 1):
        name, what, reason = (values_ws.cell(row, column).value for column in (1, 2, 6))
        if link_by_id(ws.cell(row, 1).value) is not None:
            if cases and cases[-1]["what"] == "":  # a name longer than a row goes on
                cases[-1]["name"] += " " + name
                continue
            cases.append({"name": name, "what": "", "reason": "", "link": ws.cell(row, 1).value})
        elif cases and (what is not None or reason is not None):
            cases[-1]["what"] = " ".join(part for part in (cases[-1]["what"], what) if part)
            cases[-1]["reason"] = " ".join(part for part in (cases[-1]["reason"], reason) if part)
        else:
            break
    return cases


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


def test_the_headline_metrics_stand_with_their_interval_the_cases_behind_them_and_the_cases_not_scored(workbook):
    summary = workbook["Summary"]
    header = row_starting(summary, "metric")
    assert header[:5] == ["metric", "mean", "95% interval", "cases", "not scored"]
    precision = row_starting(summary, "macro precision")
    statistics = row_starting(workbook["Statistics"], "all test cases")  # Data Query Metrics
    assert precision[1] == pytest.approx(statistics[6]) and precision[3] == statistics[2] == 15
    low, high = (float(part) for part in precision[2].split(" – "))
    assert low < precision[1] < high
    assert precision[4] == 2  # one error, one missing: cases with an indicator target only
    steps = row_starting(summary, "steps score")
    assert steps[3] == 11 and steps[4] == 1
    cell = next(c for c in summary["B"] if c.value == precision[1])
    assert cell.number_format == "0.00"


def test_the_verdict_comes_first_in_one_line(workbook):
    verdict = workbook["Summary"]["A3"].value
    assert verdict.startswith("macro precision 0.84, macro recall 0.84, steps score 0.73") and len(verdict) <= 80


def test_the_summary_counts_test_cases_by_status(workbook):
    info = key_values(workbook["Summary"])
    assert (info["total"], info["evaluated"], info["errors"], info["missing"], info["invalid"], info["problems"]) == (
        [29], [26], [2], [1], [0], [1])


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
    assert " ".join(info["metrics"]) == "answer correctness, answer relevance, retrieval answer metrics"
    assert "LLM judge is turned off" in " ".join(info["why"])


def test_the_weakest_cases_are_listed_per_family_lowest_first_with_reasons_and_links(workbook, values):
    summary, overview = workbook["Summary"], workbook["Overview"]
    titles = [c.value for c in summary["A"] if str(c.value).startswith("Weakest cases")]
    assert titles == ["Weakest cases: indicator selection", "Weakest cases: reference steps"]
    start = row_starting_index(summary, "Weakest cases: indicator selection") + 1
    assert [summary.cell(start, c).value for c in (1, 2, 6)] == ["case", "macro recall / macro precision", "reason"]
    lines = listed_cases(summary, values["Summary"], "Weakest cases: indicator selection")
    assert len(lines) == 5
    recalls = [float(line["what"].split(" / ")[0]) for line in lines]
    assert recalls == sorted(recalls) and recalls[0] == 0.0 and all(r < 1 or float(line["what"].split(" / ")[1]) < 1
                                                                    for r, line in zip(recalls, lines))
    assert lines[0]["reason"] == "selected nothing"
    names = {c.value: c.row for c in overview["B"]}
    for line in lines:  # each name leads to its own case, found by id
        assert link_target_row(line["link"], workbook) == names[line["name"]]


def test_the_summary_fits_one_screen_without_wrapping_or_clipping(workbook):
    summary = workbook["Summary"]
    assert summary.max_row <= 40 and summary.max_column <= VALUE_COLUMN
    assert all(summary.row_dimensions[r].height in (None, 15, 20) for r in range(2, summary.max_row + 1))
    values = [c.value for c in summary[summary.cell(row=1, column=VALUE_COLUMN).column_letter] if c.value]
    assert all(len(str(v)) <= VALUE_WIDTH for v in values)
    assert not any(c.alignment.wrap_text for row in summary.iter_rows() for c in row)
    # one page wide and as many pages long as it needs (0), never shrunk onto one page; 1 is the default of
    # fitToWidth, which a writer may leave out
    assert summary.sheet_properties.pageSetUpPr.fitToPage
    assert summary.page_setup.fitToHeight == 0 and summary.page_setup.fitToWidth in (None, 1)


def test_the_judge_and_its_cost_appear_when_the_judge_ran(tmp_path):
    suite = load_suite([str(TESTCASES)], [str(RESPONSES)])
    results = evaluate_suite(suite).results
    usage = JudgeUsage(model="gpt-4o-mini", embedding_model="text-embedding-3-small", calls=120, cached_calls=30,
                       failed_calls=0, cost_usd=0.01234)
    run = RunInfo(created="2024-05-08T10:00:00+00:00", qareport_version="0.1.0", judge_model="gpt-4o-mini", judge_usage=usage)
    write_workbook(build_report(results, (), run), tmp_path / "report.xlsx")
    info = key_values(load_workbook(tmp_path / "report.xlsx")["Summary"])
    assert info["judge"] == ["gpt-4o-mini, embeddings text-embedding-3-small"]
    assert info["judge cost"] == ["$0.0123 (120 calls, 30 cached, 0 calls failed)"]  # calls, never cases


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
    start = row_starting_index(summary, "Weakest cases: indicator selection") + 2
    name = summary.cell(row=start, column=1)
    # a link by id, the id and the name only ever inside text constants (quotes doubled)
    assert name.value == ("""=HYPERLINK("#'Overview'!A"&MATCH("=HYPERLINK(""http://x"")",'Overview'!$A:$A,0),"=1+1")""")
    assert link_by_id(name.value) == ("Overview", "A", '=HYPERLINK("http://x")', "=1+1")
    assert load_workbook(out, data_only=True)["Summary"].cell(row=start, column=1).value == "=1+1"
    assert summary.cell(row=start + 1, column=6).value == "INDICATOR: missed GDP, extra CPI"


def test_every_sheet_holds_values_not_formulas_but_the_live_review_counts(workbook):
    assert foreign_formulas(workbook) == []


# --- analyst formatting in the list sheets --------------------------------------------------------


def test_overview_has_frozen_header_and_id_filters_status_colours_colour_scales_and_links_to_details(workbook):
    overview, details = workbook["Overview"], workbook["Details"]
    headers = [c.value for c in overview[1]]
    assert overview.freeze_panes == "C2"  # id and name stay in sight
    assert overview.auto_filter.ref == f"A1:{overview.cell(row=1, column=len(headers)).column_letter}30"
    status = headers.index("status") + 1
    assert overview.cell(row=2, column=status).fill.fgColor.rgb.endswith("E2EFDA")  # success: green
    error_row = next(r for r in range(2, 31) if overview.cell(row=r, column=status).value == "error")
    assert overview.cell(row=error_row, column=status).fill.fgColor.rgb.endswith("F8CBAD")
    scaled = {str(rng.sqref) for rng in overview.conditional_formatting}
    recall = overview.cell(row=1, column=headers.index("macro recall") + 1).column_letter
    assert f"{recall}2:{recall}30" in scaled
    for row in range(2, 31):  # every case leads to its block in Details, and back
        first = overview.cell(row, 1)
        target_row = int(first.hyperlink.location.split("!A")[1])
        assert details.cell(row=target_row, column=1).value == first.value
        assert details.cell(row=target_row, column=1).hyperlink.location == f"'Overview'!A{row}"


def test_overview_rows_stay_compact_and_a_cut_text_stays_whole_with_its_hidden_lines_counted_beside_it(workbook):
    overview = workbook["Overview"]
    headers = [c.value for c in overview[1]]
    id_width = overview.column_dimensions["A"].width
    assert id_width >= max(len(str(c.value)) for c in overview["A"])  # ids are never cut
    heights = [overview.row_dimensions[row].height for row in range(2, 31)]
    assert all(45 <= height <= 120 for height in heights)  # at most eight lines, at least three with long text
    assert sum(heights[:10]) + overview.row_dimensions[1].height <= 560  # ten cases in a 1600x1000 window
    details = headers.index("indicator selection details") + 1
    multi_turn = next(r for r in range(2, 31) if str(overview.cell(r, details).value).startswith("Turn 1:"))
    text = overview.cell(multi_turn, details).value
    assert "\u25bc" not in text and text.endswith("* DEU: Germany")  # the whole text, and nothing else
    more = overview.cell(multi_turn, details + 1)
    assert headers[details] == "more" and more.value >= text.count("\n") + 1 - overview.row_dimensions[multi_turn].height / 15


def test_overview_puts_who_how_good_and_why_first_and_the_long_texts_last(workbook):
    headers = [c.value for c in workbook["Overview"][1]]
    assert headers[:7] == ["id", "name / question", "status", "macro recall", "macro precision", "steps score", "reason"]
    assert headers[7:10] == ["review", "review note", "grade"]
    assert headers.index("INDICATOR recall") < headers.index("comments") < headers.index("user message") \
        < headers.index("indicator selection details")
    assert "answer F1" not in headers and "judge reason" not in headers  # no judge ran: no empty judge columns
    assert "actual answer" in headers  # the answers themselves are still there to read


def test_details_and_problems_have_frozen_headers_and_filters(workbook):
    for name in ("Details", "Problems"):
        ws = workbook[name]
        assert ws.freeze_panes in ("B2", "A2") and ws.auto_filter.ref.startswith("A1:")
        assert ws.print_title_rows == "$1:$1"  # the header on every printed page


def test_overview_has_a_recall_and_a_precision_column_per_dimension_as_numbers(workbook):
    overview, details = workbook["Overview"], workbook["Details"]
    headers = [c.value for c in overview[1]]
    dimensions = [h.removesuffix(" recall") for h in headers if h.endswith(" recall") and h != "macro recall"]
    assert {"INDICATOR", "COUNTRY"} <= set(dimensions)
    assert all(f"{name} precision" in headers for name in dimensions)
    detail_header = [c.value for c in details[1]]
    terms = [dict(zip(detail_header, row)) for row in details.iter_rows(min_row=2, values_only=True)]
    checked = 0
    for row in range(2, 31):
        case_id = overview.cell(row, 1).value
        if overview.cell(row, headers.index("status") + 1).value != "success" or any(
                t["turn"] not in (1, None) for t in terms if t["case id"] == case_id):
            continue  # a multi-turn case averages its turns; the check below pools terms
        for name in dimensions:
            verdicts = [t["verdict"] for t in terms if t["case id"] == case_id and t["dimension"] == name]
            recall = overview.cell(row, headers.index(f"{name} recall") + 1).value
            if "TP" in verdicts or "FN" in verdicts:  # a target dimension of a single-turn case
                assert isinstance(recall, (int, float)) and recall == verdicts.count("TP") / (
                    verdicts.count("TP") + verdicts.count("FN")), (case_id, name)
                checked += 1
    assert checked >= 20


def test_overview_shows_the_test_authors_comments(workbook):
    overview = workbook["Overview"]
    headers = [c.value for c in overview[1]]
    comments = [overview.cell(r, headers.index("comments") + 1).value for r in range(2, 31)]
    assert "The user did not ask for a frequency, so FREQ is not part of the target." in comments
    assert "=> BoJ left negative rates in March 2024; expect monthly data (FREQ M)." in comments  # text, not a formula


def test_the_headline_interval_agrees_with_a_bootstrap_computed_here_from_the_overview(workbook):
    import random

    overview, summary = workbook["Overview"], workbook["Summary"]
    headers = [c.value for c in overview[1]]
    values = [v for r in range(2, 31) if isinstance(v := overview.cell(r, headers.index("macro recall") + 1).value,
                                                     (int, float))]
    draws = random.Random(7)
    means = sorted(sum(draws.choice(values) for _ in values) / len(values) for _ in range(20_000))
    low, high = means[int(0.025 * len(means))], means[int(0.975 * len(means)) - 1]
    shown = row_starting(summary, "macro recall")[2]
    got_low, got_high = (float(part) for part in shown.split(" – "))
    assert got_low == pytest.approx(low, abs=0.02) and got_high == pytest.approx(high, abs=0.02)


# --- a week later: names whole, links by id, long ids ------------------------------------------------

LONG_ID = "case-" + "x" * 300  # longer than a tool tip, a text constant or a MATCH can hold
WILD_ID = "ok*"  # MATCH's wildcard: found as written, never as a pattern (which "ok0" to "ok3" would match)
SIMILAR = {  # names alike in their first 40 characters, as real test suites write them
    "no1": "List all substations within bidding zone NO1 that are connected to a DC line",
    "no2": "List all substations within bidding zone NO2 that are connected to a DC line",
}


def week_case(case_id: str, name: str) -> str:
    return (f"- id: '{case_id}'\n  name: '{name}'\n  tags: [grid]\n  conversation:\n  - role: user\n"
            "    content: which substations?\n    target:\n      indicator_selection:\n      - dataset_id: D\n"
            "        dimensions:\n        - dimension_name: INDICATOR\n"
            "          values: [{id: A, name: a}, {id: B, name: b}]\n")


def week_response(case_id: str, ids: list[str]) -> dict:
    return {"id": case_id, "indicator_selection": [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": i, "name": i.lower()} for i in ids]}]}]}


@pytest.fixture(scope="module")
def week_pair(tmp_path_factory):
    """Last week every case selected its target; this week the two similar ones and the one with a
    long id lost terms (the first of them both precision and recall)."""
    import json

    folder = tmp_path_factory.mktemp("week-pair")
    cases = {**SIMILAR, LONG_ID: "a case with a very long id", WILD_ID: "a case whose id MATCH reads as a pattern",
             **{f"ok{n}": f"steady case {n}" for n in range(4)}}
    (folder / "cases.yaml").write_text("".join(week_case(i, n) for i, n in cases.items()))
    now = {"no1": ["A", "X"], "no2": ["A"], LONG_ID: ["A", "B", "X"], WILD_ID: ["B"]}
    for week, picks in (("last", {}), ("this", now)):
        records = [week_response(i, picks.get(i, ["A", "B"])) for i in cases]
        (folder / f"{week}.json").write_text(json.dumps(records))
    base = ["run", str(folder / "cases.yaml"), "--no-llm", "-q"]
    assert main([*base, "-r", str(folder / "last.json"), "-o", str(folder / "last.xlsx")]) == 0
    assert main([*base, "-r", str(folder / "this.json"), "-o", str(folder / "this.xlsx"),
                 "--baseline", str(folder / "last.xlsx")]) == 0
    return folder / "this.xlsx"


def test_names_in_the_summary_are_whole_so_two_cases_never_look_alike(week_pair):
    book, shown = load_workbook(week_pair), load_workbook(week_pair, data_only=True)
    worse = listed_cases(book["Summary"], shown["Summary"], "What got worse (4)")
    names = [line["name"] for line in worse]
    assert set(SIMILAR.values()) <= set(names) and len(set(names)) == len(names)
    assert not any("…" in line["name"] + line["what"] + (line["reason"] or "") for line in worse)


def test_every_metric_that_moved_is_shown_in_the_summary(week_pair):
    book, shown = load_workbook(week_pair), load_workbook(week_pair, data_only=True)
    worse = listed_cases(book["Summary"], shown["Summary"], "What got worse (4)")
    both = next(line for line in worse if line["name"] == SIMILAR["no1"])
    assert "macro precision 1.00 \u2192 0.50" in both["what"] and "macro recall 1.00 \u2192 0.50" in both["what"]


def test_a_case_id_longer_than_a_tool_tip_reaches_the_summary_and_changes_whole(week_pair):
    book = load_workbook(week_pair)
    overview_row = next(c.row for c in book["Overview"]["A"] if c.value == LONG_ID)  # the id itself is whole
    summary_link = next(c for c in book["Summary"]["A"] if c.hyperlink is not None and c.value == "a case with a very long id")
    assert summary_link.hyperlink.location == f"'Overview'!A{overview_row}"  # too long to look up: a plain link
    assert len(summary_link.hyperlink.tooltip) == 255 and summary_link.hyperlink.tooltip.endswith("\u2026")
    assert LONG_ID.startswith(summary_link.hyperlink.tooltip[:-1])
    change = next(c for c in book["Changes"]["A"] if c.value == LONG_ID)
    assert change.hyperlink.location == f"'Overview'!A{overview_row}"


def test_links_from_summary_and_changes_find_their_case_by_id_after_overview_is_sorted(week_pair, tmp_path):
    book = load_workbook(week_pair)
    overview = book["Overview"]
    rows = [[c.value for c in row] for row in overview.iter_rows(min_row=2)]
    for row, values in enumerate(reversed(rows), start=2):  # the analyst sorts: the last case comes first
        for column, value in enumerate(values, start=1):
            overview.cell(row, column).value = value
    sorted_path = tmp_path / "sorted.xlsx"
    book.save(sorted_path)
    book = load_workbook(sorted_path)
    checked = 0
    for sheet in ("Summary", "Changes"):
        for cell in book[sheet]["A"]:
            found = link_by_id(cell.value)
            if found is None or found[0] != "Overview":
                continue
            target = link_target_row(cell.value, book)
            assert target is not None and book["Overview"].cell(target, 1).value == found[2]
            checked += 1
    assert checked >= 6  # the similar cases and the one with wildcards, in Summary and in Changes


RECALCULATE_ALWAYS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">
<value>0</value></prop></item>
</oor:items>
"""


def test_libreoffice_recalculates_the_links_to_the_sorted_rows_and_keeps_the_names_shown(week_pair, tmp_path):
    """The analyst sorts Overview, LibreOffice recalculates every formula on load (a profile that says
    so), and each link's target, worked out by LibreOffice itself, holds the case's id."""
    import re
    import subprocess

    from test_libreoffice import require

    soffice = require("soffice")
    book = load_workbook(week_pair)
    overview = book["Overview"]
    rows = [[c.value for c in row] for row in overview.iter_rows(min_row=2)]
    for row, values in enumerate(reversed(rows), start=2):
        for column, value in enumerate(values, start=1):
            overview.cell(row, column).value = value
    probes = book.create_sheet("probe")  # each link's target as a value LibreOffice computes
    links = [(ws.title, c.coordinate, c.value) for ws in (book["Summary"], book["Changes"]) for c in ws["A"]
             if link_by_id(c.value) is not None and link_by_id(c.value)[0] == "Overview"]
    for row, (_, _, formula) in enumerate(links, start=1):
        probes.cell(row, 1).value = "=" + re.match(r"=HYPERLINK\((.*?,0\)),", formula).group(1)
    book.save(tmp_path / "sorted.xlsx")
    profile = tmp_path / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(RECALCULATE_ALWAYS)
    subprocess.run([soffice, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx:Calc MS Excel 2007 XML", "--outdir", str(tmp_path / "lo"),
                    str(tmp_path / "sorted.xlsx")], capture_output=True, text=True, timeout=300)
    again = load_workbook(tmp_path / "lo" / "sorted.xlsx", data_only=True)
    assert len(links) >= 6 and any(link_by_id(formula)[2] == WILD_ID for _, _, formula in links)
    for row, (sheet, coordinate, formula) in enumerate(links, start=1):
        _, _, case_id, shown = link_by_id(formula)
        target = again["probe"].cell(row, 1).value
        assert target.startswith("#'Overview'!A"), target
        assert again["Overview"].cell(int(target.rsplit("A", 1)[1]), 1).value == case_id
        assert again[sheet][coordinate].value == shown  # the link still shows its text


@pytest.mark.parametrize(("case_id", "exp"), [("ok*", "ok~*"), ("why?", "why~?"), ("a~b", "a~~b"), ("~*?", "~~~*~?")])
def test_an_id_is_looked_up_as_written_its_wildcards_escaped(case_id, exp):
    from qareport.workbook.case_links import lookup_text

    assert lookup_text(case_id) == exp
