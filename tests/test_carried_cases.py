"""A case its run could not load (its test file broken for a week) is stored with its last seen row,
so the week the file is fixed compares it with that result instead of calling it a new case."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import typed_row
from openpyxl import load_workbook
from test_baseline_and_trend import REGRESSED, TESTCASES, WEEK_18, WEEK_19, WEEK_20, last_week_responses, run
from test_libreoffice import require

from qareport.comparison import compare_runs
from qareport.records import CarriedCase, RunSnapshot
from qareport.run_reading import read_run

WEO = "imf/weo.yaml"
WEEK_21 = "1716372000"  # a week after WEEK_20
SAME_FILE = "4f1a0365-8c7e-4792-850f-8563d1b51444"  # in the broken file, scored the same every week


def _suite(folder: Path, *, broken: bool) -> Path:
    """The bundled test cases, with the WEO file made unreadable as a whole when `broken`."""
    testcases = folder / "testcases"
    shutil.copytree(TESTCASES, testcases, ignore=shutil.ignore_patterns("responses"))
    if broken:
        path = testcases / WEO
        path.write_bytes(b"\xff\xfe not text at all\n" + path.read_bytes())
    return testcases


def _cases_of(path: Path) -> set[str]:
    return {str(row[0]) for row in load_workbook(path)["Overview"].iter_rows(min_row=2, values_only=True) if row[0]}


def _changes(path: Path) -> dict[str, list[tuple[str, str | None]]]:
    """Case id -> its lines in the visible Changes sheet: (change, reason)."""
    ws = load_workbook(path)["Changes"]
    header = [cell.value for cell in ws[1]]
    kind, case_id, reason = header.index("change"), header.index("case id"), header.index("reason")
    lines: dict[str, list[tuple[str, str | None]]] = {}
    for values in ws.iter_rows(min_row=2, values_only=True):
        if values[case_id]:  # the case id, or a link to its Overview row that shows it
            shown = (re.findall(r'"([^"]*)"', str(values[case_id])) or [str(values[case_id])])[-1]
            lines.setdefault(shown, []).append((values[kind], values[reason]))
    return lines


def _stored_case_count(path: Path) -> int:
    return next(value for key, value in load_workbook(path)["qareport_run"].iter_rows(values_only=True) if key == "cases")


@pytest.fixture(scope="module")
def weeks(tmp_path_factory):
    """Week 1 as usual; week 2 with the WEO file broken; week 3 fixed, where one WEO case now answers
    worse than in week 1 (REGRESSED) and the others as in week 1."""
    folder = tmp_path_factory.mktemp("carried")
    old_answers = last_week_responses(folder / "old-answers")
    week1, week2, week3 = folder / "week1.xlsx", folder / "week2.xlsx", folder / "week3.xlsx"
    assert run(week1, testcases=_suite(folder / "w1", broken=False), responses=old_answers, epoch=WEEK_18) == 0
    assert run(week2, "--baseline", str(week1), testcases=_suite(folder / "w2", broken=True),
               responses=old_answers, epoch=WEEK_19) == 0
    assert run(week3, "--baseline", str(week2), testcases=_suite(folder / "w3", broken=False), epoch=WEEK_20) == 0
    return week1, week2, week3


def test_a_week_with_a_broken_file_keeps_its_cases_out_of_its_figures_but_stores_their_last_rows(weeks):
    week1, week2, _ = weeks
    lost = _cases_of(week1) - _cases_of(week2)
    assert {REGRESSED, SAME_FILE} <= lost
    assert _stored_case_count(week2) == len(_cases_of(week2)) == len(_cases_of(week1)) - len(lost)
    assert all(kind == "not loaded" for case_id in lost for kind, _ in _changes(week2)[case_id])
    stored = read_run(week2)
    assert {row.case_id for row in stored.cases}.isdisjoint(lost)
    carried = {item.row.case_id: item for item in stored.carried}
    assert set(carried) == lost
    assert carried[REGRESSED].row == {row.case_id: row for row in read_run(week1).cases}[REGRESSED]
    assert (carried[REGRESSED].last_seen[:10], carried[REGRESSED].not_loaded[:10]) == ("2024-05-01", "2024-05-08")


def test_the_week_the_file_is_fixed_compares_its_cases_with_their_last_seen_results(weeks):
    week1, week2, week3 = weeks
    lost = _cases_of(week1) - _cases_of(week2)
    changes = _changes(week3)
    assert not any(kind == "new case" for lines in changes.values() for kind, _ in lines)
    kinds = {kind for kind, _ in changes[REGRESSED]}
    assert "regression" in kinds
    assert all(reason and reason.startswith("compared with its result of 2024-05-01 (not loaded on 2024-05-08)")
               for _, reason in changes[REGRESSED])
    unchanged = lost - {REGRESSED}
    assert unchanged and unchanged.isdisjoint(changes)  # the same as when last seen: no line at all
    overview = load_workbook(week3)["Overview"]
    header = [cell.value for cell in overview[1]]
    versus = {row[0]: row[header.index("vs baseline")] for row in overview.iter_rows(min_row=2, values_only=True)}
    assert versus[REGRESSED] == "regression"
    compare = [row[:3] for row in load_workbook(week3)["Compare"].iter_rows(values_only=True)]
    start = next(index for index, row in enumerate(compare) if REGRESSED in str(row[0]))
    selection = next(row for row in compare[start:] if row[0] == "indicator selection")
    assert selection[1] and "NGDPD" in selection[1]  # its output when last seen, beside this week's
    assert read_run(week3).carried == ()  # every case loaded: nothing carried further


def test_a_case_not_loaded_two_weeks_running_keeps_its_last_seen_row_and_first_missed_week(weeks, tmp_path):
    week1, week2, _ = weeks
    again = tmp_path / "week3-broken.xlsx"
    assert run(again, "--baseline", str(week2), testcases=_suite(tmp_path / "w3", broken=True),
               responses=last_week_responses(tmp_path / "old-answers"), epoch=WEEK_20) == 0
    carried = {item.row.case_id: item for item in read_run(again).carried}
    assert carried == {item.row.case_id: item for item in read_run(week2).carried}
    assert {case_id for case_id, lines in _changes(again).items() if ("not loaded", None) in lines} == set(carried)
    fixed = tmp_path / "week4.xlsx"
    assert run(fixed, "--baseline", str(again), testcases=_suite(tmp_path / "w4", broken=False), epoch=WEEK_21) == 0
    assert all(reason and reason.startswith("compared with its result of 2024-05-01 (not loaded on 2024-05-08)")
               for _, reason in _changes(fixed)[REGRESSED])


def test_a_carried_pair_counts_as_a_case_change_but_not_in_the_like_for_like_headline():
    seen = typed_row("a", status="success", definition_hash="h", macro_recall=1.0)
    now = typed_row("a", status="success", definition_hash="h", macro_recall=0.0)
    other_old = typed_row("b", status="success", definition_hash="h", macro_recall=0.5)
    other_new = typed_row("b", status="success", definition_hash="h", macro_recall=0.5)
    baseline = RunSnapshot("week2", "2024-05-08T10:00:00+00:00", "x", cases=(other_old,),
                           carried=(CarriedCase(seen, "2024-05-01T10:00:00+00:00", "2024-05-08T10:00:00+00:00"),))
    comparison = compare_runs(baseline, RunSnapshot("week3", "2024-05-15", "x", cases=(now, other_new)))
    assert comparison.cases_with("regression") == 1 and comparison.cases_with("new case") == 0
    assert comparison.regressions[0].reason.startswith("compared with its result of 2024-05-01 (not loaded on 2024-05-08)")
    recall = next(delta for delta in comparison.headline if delta.metric == "macro_recall")
    assert recall.shared_cases == 1 and recall.delta == 0.0  # only the case both runs evaluated


def test_the_results_file_carries_the_unloaded_cases_too(tmp_path):
    old_answers = last_week_responses(tmp_path / "old-answers")
    week1, week2, week3 = tmp_path / "week1.xlsx", tmp_path / "week2.xlsx", tmp_path / "week3.xlsx"
    assert run(week1, "--results", str(tmp_path / "week1.yaml"), responses=old_answers, epoch=WEEK_18) == 0
    assert run(week2, "--baseline", str(tmp_path / "week1.yaml"), "--results", str(tmp_path / "week2.yaml"),
               testcases=_suite(tmp_path / "w2", broken=True), responses=old_answers, epoch=WEEK_19) == 0
    assert {item.row.case_id for item in read_run(tmp_path / "week2.yaml").carried} == {
        item.row.case_id for item in read_run(week2).carried}
    assert run(week3, "--baseline", str(tmp_path / "week2.yaml"), epoch=WEEK_20) == 0
    changes = _changes(week3)
    assert "regression" in {kind for kind, _ in changes[REGRESSED]}
    assert not any(kind == "new case" for lines in changes.values() for kind, _ in lines)


def test_a_carried_row_an_edit_made_unreadable_is_left_out_with_a_problem(weeks, tmp_path):
    _, week2, _ = weeks
    edited = tmp_path / "week2-edited.xlsx"
    workbook = load_workbook(week2)
    sheet = workbook["qareport_carried"]
    header = [cell.value for cell in sheet[1]]
    sheet.cell(2, header.index("row") + 1).value = "{not json"
    workbook.save(edited)
    problems = []
    carried = read_run(edited, on_problem=problems.append).carried
    assert len(carried) == len(read_run(week2).carried) - 1
    assert any("sheet 'qareport_carried', row 2: not a carried case qareport wrote" in problem.message
               for problem in problems)


def test_a_carried_case_gone_from_the_fixed_file_is_a_removed_case():
    seen = typed_row("a", status="success", definition_hash="h", macro_recall=1.0, file="imf/weo.yaml")
    other = typed_row("b", status="success", definition_hash="h", macro_recall=0.5)
    baseline = RunSnapshot("week2", "2024-05-08T10:00:00+00:00", "x", cases=(other,),
                           carried=(CarriedCase(seen, "2024-05-01T10:00:00+00:00", "2024-05-08T10:00:00+00:00"),))
    comparison = compare_runs(baseline, RunSnapshot("week3", "2024-05-15", "x", cases=(other,)))
    assert [(change.kind, change.case_id) for change in comparison.changes] == [("removed case", "a")]


def test_the_carried_rows_survive_a_libreoffice_resave_of_the_workbook(weeks, tmp_path):
    _, week2, _ = weeks
    soffice = require("soffice")
    subprocess.run([soffice, f"-env:UserInstallation={(tmp_path / 'lo-profile').as_uri()}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(tmp_path / "saved"), str(week2)],
                   capture_output=True, timeout=300, check=True)
    problems = []
    resaved = read_run(tmp_path / "saved" / week2.name, on_problem=problems.append).carried
    assert resaved and resaved == read_run(week2).carried and not problems
