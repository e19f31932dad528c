"""The report, pinned: golden workbooks and results files, compared cell by cell.

Each scenario runs `qareport run` end to end in a scratch folder (relative paths, fixed
SOURCE_DATE_EPOCH) and compares the workbook's snapshot (`workbook_snapshot`) and the results file
with the files under `tests/golden/`. A change to what the report says must show up here as a
deliberate update of a golden file:

    QAREPORT_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TESTCASES
from openai_stub import serve_stub
from workbook_snapshot import first_difference, snapshot_workbook

from qareport.cli import main

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_workbook
import synthetic_suite

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("QAREPORT_UPDATE_GOLDEN") == "1"
BASELINE_EPOCH, EPOCH = "1714557600", "1715162400"


def _without_ports(data):
    return json.loads(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", json.dumps(data, sort_keys=False)))


def _check(name: str, data) -> None:
    data = _without_ports(data)
    path = GOLDEN / f"{name}.json"
    if UPDATE or not path.exists():
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"{path.name} did not exist and was written; check it by eye and commit it")
        return
    expected = json.loads(path.read_text(encoding="utf-8"))
    difference = first_difference(expected, data)
    assert difference is None, f"{path.name}: {difference}"


def _run(folder: Path, epoch: str, monkeypatch, *args: str) -> None:
    monkeypatch.chdir(folder)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    assert main(["run", *args, "--quiet"]) == 0


def _pin(name: str, folder: Path, workbook: str, results: str) -> None:
    _check(f"{name}.workbook", snapshot_workbook(folder / workbook))
    _check(f"{name}.results", json.loads((folder / results).read_text(encoding="utf-8")))


@pytest.fixture
def bundled(tmp_path):
    """The bundled test cases, and last week's responses: one case missing, one answered worse."""
    shutil.copytree(TESTCASES, tmp_path / "testcases")
    earlier = tmp_path / "last-week"
    shutil.copytree(TESTCASES / "responses", earlier)
    lines = (earlier / "imf.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    del records[1]
    first = records[0]
    for turn in first.get("turns", [first]):
        for dataset in turn.get("indicator_selection") or []:
            for dimension in dataset["dimensions"]:
                dimension["values"] = dimension["values"][:1]
    (earlier / "imf.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    questions = json.loads((earlier / "power-system.json").read_text(encoding="utf-8"))
    (earlier / "power-system.json").write_text(json.dumps(questions[1:]), encoding="utf-8")
    return tmp_path


def test_the_bundled_report_is_unchanged(bundled, monkeypatch):
    _run(bundled, EPOCH, monkeypatch, "testcases", "--responses", "testcases/responses", "--output", "report.xlsx",
         "--results", "results.json", "--no-llm")
    _pin("bundled", bundled, "report.xlsx", "results.json")


@pytest.mark.skipif(UPDATE, reason="compares with the goldens the other tests write")
def test_a_kind_registered_as_the_readme_says_leaves_a_run_without_it_unchanged(bundled, monkeypatch):
    """The README's recipe: a kind outside the package calls `qareport.register_kind`; a run whose
    inputs have nothing of it gets exactly the report it got before (no column, no row, no line)."""
    from test_kinds import ExpectedKeywords

    import qareport

    kind = qareport.register_kind(ExpectedKeywords())
    try:
        _run(bundled, EPOCH, monkeypatch, "testcases", "--responses", "testcases/responses", "--output",
             "report.xlsx", "--results", "results.json", "--no-llm")
    finally:
        qareport.kinds.unregister(kind.name)
    _pin("bundled", bundled, "report.xlsx", "results.json")


def test_the_bundled_report_against_a_baseline_and_history_is_unchanged(bundled, monkeypatch):
    _run(bundled, BASELINE_EPOCH, monkeypatch, "testcases", "--responses", "last-week", "--output", "last.xlsx",
         "--results", "last.yaml", "--no-llm")
    _run(bundled, EPOCH, monkeypatch, "testcases", "--responses", "testcases/responses", "--output", "report.xlsx",
         "--results", "results.json", "--no-llm", "--baseline", "last.xlsx", "--history", "last.yaml")
    _pin("bundled-baseline", bundled, "report.xlsx", "results.json")


def test_a_generated_suite_against_a_baseline_is_unchanged(tmp_path, monkeypatch):
    suite, responses = bench_workbook.generate(80, seed=11)
    bench_workbook.write_inputs(tmp_path / "this-week", suite, responses)
    bench_workbook.write_inputs(tmp_path / "last-week", suite, bench_workbook.last_week(suite, responses, 11))
    synthetic_suite.write_suite(tmp_path / "qa", 60, 5)
    shutil.copy(tmp_path / "last-week" / "testcases.yaml", tmp_path / "this-week" / "testcases.yaml")
    common = ["this-week/testcases.yaml", "qa/testcases"]
    _run(tmp_path, BASELINE_EPOCH, monkeypatch, *common, "--responses", "last-week/responses.jsonl",
         "qa/responses", "--output", "last.xlsx", "--results", "last.json", "--no-llm")
    _run(tmp_path, EPOCH, monkeypatch, *common, "--responses", "this-week/responses.jsonl", "qa/responses",
         "--output", "report.xlsx", "--results", "results.yaml", "--no-llm", "--baseline", "last.xlsx")
    _check("generated.workbook", snapshot_workbook(tmp_path / "report.xlsx"))
    _check("generated.results", yaml.safe_load((tmp_path / "results.yaml").read_text(encoding="utf-8")))


def test_the_bundled_report_with_the_judge_is_unchanged(bundled, monkeypatch):
    with serve_stub(latency=0.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        _run(bundled, EPOCH, monkeypatch, "testcases", "--responses", "testcases/responses", "--output",
             "report.xlsx", "--results", "results.json", "--cache-path", "cache.sqlite3",
             "--judge-concurrency", "1")
    _pin("judged", bundled, "report.xlsx", "results.json")


# --- the comparison itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(("exp", "got", "difference"), [
    ({"v": 0.5897666118218869}, {"v": 0.5897666118218867}, None),  # the last bits of a sum (Python 3.12's sum())
    ({"v": 0.5897666118218869}, {"v": 0.58976661182}, "/v: 0.5897666118218869 != 0.58976661182"),
    ({"v": '{"low": 0.5897666118218869}'}, {"v": '{"low": 0.5897666118218867}'}, None),  # figures in a JSON cell
    ({"v": '{"low": 0.59}'}, {"v": '{"low": 0.6}'}, "/v(json)/low: 0.59 != 0.6"),
    ({"v": '{"verdict": "ok"}'}, {"v": '{"verdict": "bad"}'}, "/v(json)/verdict: expected 'ok', got 'bad'"),
    ({"v": "{not json"}, {"v": "{not json either"}, "/v: expected '{not json', got '{not json either'"),
    ({"v": [1, 2]}, {"v": [1, 2, 3]}, "/v: expected 2 items, got 3"),
    ({"v": "0.59"}, {"v": "0.60"}, "/v: expected '0.59', got '0.60'"),  # a figure written as text is text
])
def test_snapshots_differ_by_a_changed_value_not_by_the_last_bits_of_a_figure(exp, got, difference):
    assert first_difference(exp, got) == difference
