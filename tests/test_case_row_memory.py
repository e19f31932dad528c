"""A run keeps every case's row (`case_rows.case_row`) to the end of the report and in the stored run:
the rows hold what repeats (fact texts, dimension scores) compactly, and say the same as before."""

from __future__ import annotations

import gc
import tracemalloc

from test_details_memory import generated_results

from qareport.case_rows import case_rows
from qareport.records import RunInfo
from qareport.report import build_report
from qareport.run_sheets import stored_run_tables
from qareport.runs import RESULTS_SHEET


def test_each_fact_text_of_a_run_is_held_once(tmp_path):
    present, results = generated_results(tmp_path, 200)
    rows = case_rows(results, present)
    items = [item for row in rows for facts in row.facts.values() for listed in facts.values() for item in listed]
    held: dict[str, set[int]] = {}
    for item in items:
        held.setdefault(item, set()).add(id(item))
    assert len(held) < len(items)  # the texts do repeat: "found" within "target", and across cases
    assert all(len(objects) == 1 for objects in held.values())


def test_the_hidden_results_sheet_encodes_each_case_as_it_is_written(tmp_path):
    present, results = generated_results(tmp_path, 200)
    report = build_report(results, (), RunInfo(created="2026-01-01T00:00:00+00:00", qareport_version="test"))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tables = stored_run_tables(report)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        cases = next(table for table in tables if table.sheet == RESULTS_SHEET)
        rows = list(cases.rows)
    finally:
        tracemalloc.stop()
    assert held < 20_000  # all the cases' encoded rows at once (their JSON texts) took about 475,000
    assert len(rows) == len(results) and all(len(row) == len(cases.header) for row in rows)
    assert [row[0] for row in rows] == [result.case.id for result in results]


def test_the_stored_case_rows_read_twice_give_the_same_rows(tmp_path):
    present, results = generated_results(tmp_path, 20)
    report = build_report(results, (), RunInfo(created="2026-01-01T00:00:00+00:00", qareport_version="test"))
    cases = next(table for table in stored_run_tables(report) if table.sheet == RESULTS_SHEET)
    first = list(cases.rows)
    assert len(first) == 20 and list(cases.rows) == first  # encoded afresh each time, never used up


def test_a_run_read_back_holds_each_fact_text_once_and_its_outputs_as_stored_until_shown(tmp_path):
    from qareport.run_reading import read_run
    from qareport.workbook import write_workbook

    present, results = generated_results(tmp_path, 200)
    report = build_report(results, (), RunInfo(created="2026-01-01T00:00:00+00:00", qareport_version="test"))
    write_workbook(report, tmp_path / "week.xlsx")
    read_run(tmp_path / "week.xlsx")  # what a first reading imports is not counted
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        stored = read_run(tmp_path / "week.xlsx")
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        shown = [dict(row.outputs) for row in stored.cases]  # parsed when read, as the Compare sheet reads them
    finally:
        tracemalloc.stop()
    assert shown == [dict(row.outputs) for row in report.rows]
    assert held < 200 * 5_800  # 4.9 KB a case; 6.9 KB when the outputs were parsed and the texts held apart
    items = [item for row in stored.cases for facts in row.facts.values() for listed in facts.values()
             for item in listed]
    held_texts: dict[str, set[int]] = {}
    for item in items:
        held_texts.setdefault(item, set()).add(id(item))
    assert len(held_texts) < len(items) and all(len(objects) == 1 for objects in held_texts.values())


def test_a_derived_mapping_reads_as_what_it_is_worked_out_into_once_a_reading_not_once_a_key():
    from qareport.case_record import Derived

    calls: list[str] = []

    def derive(source: str) -> dict[str, int]:
        calls.append(source)
        return {"precision": 1, "recall": 2}

    derived = Derived(derive, "case-1")
    assert derived == {"precision": 1, "recall": 2} and len(derived) == 2 and "recall" in derived
    assert derived.get("f1") is None and derived["precision"] == 1 and repr(derived) == repr(derive("x"))
    calls.clear()
    assert dict(derived) == {"precision": 1, "recall": 2} and [derived[key] for key in derived] == [1, 2]
    assert dict(derived.items()) == {"precision": 1, "recall": 2} and list(derived.values()) == [1, 2]
    assert calls == []  # still the mapping last worked out: never once a key
    other = Derived(derive, "case-2")
    assert dict(other) == {"precision": 1, "recall": 2} and dict(derived) == {"precision": 1, "recall": 2}
    assert calls == ["case-2", "case-1"]  # another mapping read in between: worked out again, once each


def test_the_figures_of_a_runs_cases_share_one_index_and_read_as_a_dict():
    from qareport.case_record import Figures

    first, second = Figures({"macro_recall": 1.0, "steps_score": None}), Figures({"macro_recall": 0.5, "steps_score": 0.2})
    assert first == {"macro_recall": 1.0, "steps_score": None} and list(second) == ["macro_recall", "steps_score"]
    assert second.get("steps_score") == 0.2 and first.get("answer_f1", "none") == "none"
    assert first._index is second._index  # the keys once for the run, each case its values only
