"""The report holds every case's Details rows, computed once before any writer (`case_table.details_table`),
at a small cost per row: the case id and groups once per case, rows without their trailing empty values,
equal rows held once. The sheet gets the same rows as `detail_rows` gives."""

from __future__ import annotations

import gc
import sys
import tracemalloc

from conftest import REPO

from qareport import kinds
from qareport.case_table import detail_rows, details_table
from qareport.evaluation import evaluate_suite
from qareport.loading import load_suite

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_workbook

BYTES_A_ROW = 120  # the rows as the sheet writes them, each with its attempt, took about 205


def generated_results(tmp_path, cases: int):
    suite, responses = bench_workbook.generate(cases, seed=7)
    testcases, answers = bench_workbook.write_inputs(tmp_path, suite, responses)
    results = evaluate_suite(load_suite([str(testcases)], [str(answers)])).results
    return kinds.catalogue().present_in(results), results


def test_holding_every_cases_details_rows_costs_little_a_row(tmp_path):
    present, results = generated_results(tmp_path, 200)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        details = details_table(present, results, {})
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    rows = sum(1 for case in details for _ in case.rows())
    assert rows > 10 * len(results)
    assert held / rows < BYTES_A_ROW


def written(values):
    """A row's values as the sheet writes them: trailing empty cells are not written."""
    values = list(values)
    while values and values[-1] is None:
        values.pop()
    return values


def test_the_details_rows_held_are_those_the_kinds_give(tmp_path):
    present, results = generated_results(tmp_path, 40)
    details = details_table(present, results, {})
    assert [[written(values) for _, values in case.rows()] for case in details] == [
        [written(values) for values in detail_rows(present, result)] for result in results]
    assert all(attempt is None for case in details for attempt, _ in case.rows())
