"""pandas where it serves: the per-group figures computed from frames in one place, a case-results
frame for notebooks (`Report.to_pandas`), and pandas imported only when one of them is asked for."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from qareport import kinds
from qareport.evaluation import evaluate_suite
from qareport.kinds.selection_statistics import DataQueryFigures, selection_frames
from qareport.loading import load_suite
from qareport.records import RunInfo
from qareport.report import build_report
from qareport.statistics import summarize

ROOT = Path(__file__).resolve().parents[1]
# the per-question figures graphrag-eval gives, which the turn frame ends with (its kinds come last)
TURN_METRICS = ("steps_score", "answer_recall", "answer_precision", "answer_f1", "answer_relevance")
TESTCASES, RESPONSES = ROOT / "testcases", ROOT / "testcases" / "responses"


@pytest.fixture(scope="module")
def report():
    suite = load_suite([TESTCASES], [RESPONSES])
    evaluation = evaluate_suite(suite)
    return build_report(evaluation.results, (), RunInfo(created="2026-11-24T06:00:00+00:00",
                                                          qareport_version="0"))


def test_the_case_frame_has_one_row_per_case_with_the_overviews_figures(report):
    frame = report.to_pandas()
    assert list(frame["case_id"]) == [result.case.id for result in report.results]
    metric_keys = [metric.key for kind in report.kinds for metric in kind.metrics]
    assert list(frame.columns) == ["case_id", "name", "groups", "cluster", "status", "reason", *metric_keys]
    assert "steps_score" in metric_keys and "macro_recall" in metric_keys
    for result, row in zip(report.results, frame.itertuples(index=False), strict=True):
        assert row.name == result.case.name and row.groups == result.case.groups
        assert row.status == result.status and row.cluster == result.case.cluster
        assert row.reason == report.reasons.get(result.case.id)
        exp = kinds.catalogue().case_metrics(result)
        for key in metric_keys:
            got = getattr(row, key)
            assert (math.isnan(got) if exp[key] is None else got == exp[key]), (result.case.id, key)
    assert set(frame["status"]) >= {"success"}


def test_the_case_frame_groups_like_the_statistics(report):
    frame = report.to_pandas()
    tagged = frame[frame["macro_recall"].notna() & (frame["status"] == "success")].explode("groups")
    figures = report.statistics.figures_of(DataQueryFigures)
    assert figures is not None
    for group in figures.per_group:
        part = tagged[tagged["groups"] == group.group]
        assert len(part) == group.evaluated
        assert part["macro_recall"].mean() == pytest.approx(group.macro_recall)


def test_the_turn_frame_has_one_row_per_turn(report):
    frame = report.to_pandas(level="turn")
    turns = [(result.case.id, turn.number) for result in report.results for turn in result.turns]
    assert list(zip(frame["case_id"], frame["turn"], strict=True)) == turns
    assert list(frame.columns)[-len(TURN_METRICS):] == list(TURN_METRICS)
    scored = [turn.qa.value("steps_score") for result in report.results for turn in result.turns
              if turn.qa is not None and isinstance(turn.qa.value("steps_score"), float)]
    assert sorted(frame["steps_score"].dropna()) == sorted(scored) and scored


def test_a_frame_at_another_level_is_refused_with_the_levels_there_are(report):
    with pytest.raises(ValueError, match="level must be 'case' or 'turn'"):
        report.to_pandas(level="question")


def test_the_group_frames_hold_the_rows_the_statistics_are_computed_from(report):
    frames = selection_frames(report.results)
    assert frames is not None
    statistics = summarize(report.results).figures_of(DataQueryFigures)
    assert statistics is not None
    assert frames.groups["case"].nunique() == statistics.overall.cases
    assert set(frames.dimensions["dimension"]) == {d.dimension for d in statistics.per_dimension if d.cases}


def test_a_run_without_groups_to_count_needs_no_frames():
    assert selection_frames([]) is None


def _imports_pandas(code: str) -> bool:
    done = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint('pandas' in sys.modules)"],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    return done.stdout.strip().splitlines()[-1] == "True"


def test_importing_the_pipeline_and_the_cli_does_not_import_pandas():
    assert not _imports_pandas("import qareport, qareport.pipeline, qareport.cli")


@pytest.mark.parametrize(("folder", "responses", "exp"), [
    ("power-system", "power-system.json", False),  # Q&A questions only: nothing grouped by tag
    ("imf", "imf.jsonl", True),  # indicator selection: the per-tag and per-dimension frames
])
def test_pandas_is_imported_by_a_summary_only_when_it_has_groups_to_count(folder, responses, exp):
    code = ("from qareport.loading import load_suite\nfrom qareport.evaluation import evaluate_suite\n"
            "from qareport.statistics import summarize\n"
            "from qareport.kinds.qa_figures import QAFigures\n"
            "from qareport.kinds.selection_statistics import DataQueryFigures\n"
            f"suite = load_suite([{str(TESTCASES / folder)!r}], [{str(RESPONSES / responses)!r}])\n"
            "statistics = summarize(evaluate_suite(suite).results)\n"
            "data_query = statistics.figures_of(DataQueryFigures)\n"
            "assert statistics.figures_of(QAFigures) or (data_query and data_query.per_group)")
    assert _imports_pandas(code) is exp


def test_the_documented_notebook_example_runs(report):
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    example = text[text.index("frame = report.to_pandas()"):]
    example = example[:example.index("```")]
    namespace = {"report": report}
    exec(compile(example, "docs/library.md", "exec"), namespace)  # the library page's own example
    assert "steps_score" in namespace["frame"]
