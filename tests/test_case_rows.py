"""A case's typed row (`CaseRow`) and its stored form: a run's rows read back from the workbook's
hidden sheet and from the results file are the rows the report model was built with, for cases with
attempts, facts, grades, dimensions, judgments and a custom kind's metrics; a stored run of an older
format still reads and compares."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import RESPONSES, TESTCASES, typed_row
from openai_stub import serve_stub
from test_ge6_run import ge6_config, scripted_custom

from qareport.case_record import CaseRow
from qareport.case_rows import case_fields
from qareport.comparison import compare_runs
from qareport.kinds import RunKinds
from qareport.pipeline import RunOptions, run_pipeline
from qareport.records import RunSnapshot
from qareport.results_file import stored_case_rows
from qareport.run_reading import read_run
from qareport.runs import case_row_from_stored, stored_case_values


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """The bundled suite (indicator selection, steps, answers) answered twice (attempt 1 as given,
    attempt 2 with every other conversation case's selection dropped), judged by the loopback stub
    with two custom LLM metrics: the report model's rows, and the workbook and results file written."""
    folder = tmp_path_factory.mktemp("judged")
    responses = folder / "responses"
    responses.mkdir()
    conversation = [json.loads(line) for line in (RESPONSES / "imf.jsonl").read_text("utf-8").splitlines() if line]
    questions = json.loads((RESPONSES / "power-system.json").read_text("utf-8"))
    for attempt in (1, 2):
        lines = [{**record, "attempt": attempt,
                  **({"indicator_selection": []} if attempt == 2 and index % 2 and "indicator_selection" in record
                     else {})}
                 for index, record in enumerate(conversation)]
        (responses / f"imf-{attempt}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
        (responses / f"power-system-{attempt}.json").write_text(
            json.dumps([{**record, "attempt": attempt} for record in questions]), "utf-8")
    with serve_stub() as stub:
        stub.rules["custom"] = scripted_custom(0.75)
        outcome = run_pipeline(RunOptions(
            testcases=(str(TESTCASES),), responses=(str(responses),), output=str(folder / "run.xlsx"),
            results_path=str(folder / "run.json"), config_ge6=str(ge6_config(folder, stub.url)),
            judge_options={"cache_path": str(folder / "cache.sqlite3")}))
    # read back by the run's kinds (its custom kind among them), as the next run with the same
    # configuration reads its baseline
    kind_set = outcome.report.kind_set
    yield (outcome.report.rows, read_run(folder / "run.xlsx", kinds=kind_set),
           read_run(folder / "run.json", kinds=kind_set), kind_set)


def test_the_run_has_cases_with_every_part_a_row_holds(judged_run):
    rows, _, _, _ = judged_run
    assert any(row.attempts for row in rows)
    assert any(row.facts.get("indicator_selection", {}).get("grade") for row in rows)
    assert any(row.dimensions for row in rows)
    assert any(row.judged for row in rows)
    assert any(row.metric("coverage_score") is not None for row in rows)  # the custom kind's metric
    assert any(row.outputs for row in rows) and any(row.usage.get("total_tokens") for row in rows)
    assert any(row.reason for row in rows) and all(row.targets for row in rows)


def stored_as_read(row: CaseRow, *, in_cells: bool = False) -> CaseRow:
    """A model row as a stored run gives it back: a case answered several times without a value in
    any attempt as a case answered once (a cell holds both as {}); with `in_cells`, its metric and
    usage numbers at the 16 significant digits a cell of the hidden sheet keeps (its JSON values keep
    every digit)."""
    def cell(value: float | None) -> float | None:
        return float(f"{value:.16G}") if isinstance(value, float) else value

    row = replace(row, attempts=row.attempts or None)
    if not in_cells:
        return row
    return replace(row, metrics={key: cell(value) for key, value in row.metrics.items()},
                   usage={key: cell(value) for key, value in row.usage.items()})


def test_a_run_read_back_from_the_workbook_has_the_rows_of_the_report_model(judged_run):
    rows, from_workbook, _, _ = judged_run
    assert from_workbook.cases == tuple(stored_as_read(row, in_cells=True) for row in rows)
    assert sum(row.attempts == {} for row in rows) == 2  # the two error cases, answered twice with no value


def test_a_run_read_back_from_the_results_file_has_the_rows_of_the_report_model(judged_run):
    rows, _, from_results, _ = judged_run
    assert from_results.cases == tuple(stored_as_read(row) for row in rows)


def test_a_row_and_its_stored_values_go_both_ways():
    row = typed_row("a", kind="conversation", name="A", groups=["imf", "weo"], cluster="family:x", status="success",
                    definition_hash="h", file="cases.yaml", reason="INDICATOR: missed LP",
                    targets=["indicator_selection"], facts={"indicator_selection": {"grade": ["acceptable"]}},
                    outputs={"turns": [{"turn": 1, "user_message": "q", "selection": "dataset X"}]},
                    judged={"correctness": 0.5, "verdict": "sound"},
                    dimensions={"COUNTRY": {"precision": 1.0, "recall": 0.5}},
                    usage={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "elapsed_sec": 1.5},
                    attempts={"macro_recall": [1.0, None, 0.0]}, macro_recall=0.5, macro_precision=None)
    values = stored_case_values(row)
    assert values["groups"] == ["imf", "weo"] and values["attempts"] == {"macro_recall": [1.0, None, 0.0]}
    back = case_row_from_stored(values)
    assert back == replace(row, metrics={**dict.fromkeys(back.metrics), "macro_recall": 0.5})


def test_a_field_a_stored_run_lacks_is_none_never_a_default_that_counts():
    row = case_row_from_stored({"case_id": "a", "status": "success", "macro_recall": 0.5})
    assert row.targets is None  # stored before runs kept their targets: the headline falls back
    assert row.metric("macro_precision") is None and row.usage["total_tokens"] is None
    assert row.attempts is None and row.kind is None and row.error is None and row.definition_hash is None
    stored = stored_case_values(row)  # stored again (a review's "last seen"): every column, the lacking ones empty
    assert set(case_fields()) <= set(stored) and stored["targets"] is None and stored["macro_precision"] is None


def test_the_results_file_leaves_out_the_metrics_of_kinds_the_run_does_not_have(judged_run):
    rows, _, _, kind_set = judged_run
    (stored,) = stored_case_rows(rows[:1], RunKinds(()), kind_set)
    assert "macro_recall" not in stored and "steps_score" not in stored and stored["case_id"] == rows[0].case_id


OLD_FORMAT_CASES = [  # a results file's case rows as qareport wrote them before runs kept targets,
    # facts, outputs, judgments, clusters and attempts (and with a score typed as text by an analyst)
    {"case_id": "a", "kind": "conversation", "name": "a", "groups": ["imf"], "status": "success", "error": None,
     "definition_hash": "h", "macro_precision": 1.0, "macro_recall": 1.0},
    {"case_id": "b", "kind": "conversation", "name": "b", "groups": ["imf"], "status": "success", "error": None,
     "definition_hash": "h", "macro_precision": 1.0, "macro_recall": "0.5"},
    {"case_id": "q", "kind": "qa", "name": "q", "groups": ["t1"], "status": "success", "error": None,
     "definition_hash": "", "steps_score": 1.0},
]


def test_an_old_format_baseline_still_reads_and_compares(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"qareport": {"version": "0.1.0", "created": "2024-05-01T10:00:00+00:00"},
                               "cases": OLD_FORMAT_CASES}), "utf-8")
    baseline = read_run(old)
    by_id = {row.case_id: row for row in baseline.cases}
    assert by_id["b"].metric("macro_recall") == 0.5 and by_id["a"].targets is None and by_id["q"].attempts is None
    now = RunSnapshot("this run", "2024-05-08T10:00:00+00:00", "0.2.0", (
        replace(by_id["a"], metrics={**by_id["a"].metrics, "macro_recall": 0.5}, targets=("indicator_selection",)),
        replace(by_id["b"], targets=("indicator_selection",)),
        replace(by_id["q"], metrics={**by_id["q"].metrics, "steps_score": 0.0}, targets=("reference_steps",),
                definition_hash="h2"),
    ))
    comparison = compare_runs(baseline, now)
    # the old run kept no definition hash of "q": its test is not taken as changed, the drop counts
    assert [(change.kind, change.case_id, change.metric) for change in comparison.changes] == [
        ("regression", "q", "steps_score"), ("regression", "a", "macro_recall")]
    recall = next(delta for delta in comparison.headline if delta.metric == "macro_recall")
    assert (recall.old, recall.new, recall.shared_cases) == (0.75, 0.5, 2)

