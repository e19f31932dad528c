"""Every kind's suite figures go through the protocol (`Kind.suite_figures`): the built-in kinds'
Data Query Metrics and graphrag-eval aggregates as any kind's tables, with their notes, charts and
row formats laid out by the Statistics sheet as given, and their results-file entries derived in one
place. Read back from the workbook and the results file a real run writes."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook
from test_invalid_cases_counted import indicator_case

from qareport import kinds
from qareport.cli import main
from qareport.kinds import Chart, Kind, Metric, Table, TurnInput
from qareport.records import CaseResult

ROOT = Path(__file__).resolve().parents[1]

QA = """- template_id: substations
  questions:
  - id: q1
    question_text: Which substation?
    reference_steps:
    - - name: sparql_query
        args: {query: "SELECT ?x WHERE {}"}
        output: '{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": "OSLO"}}]}}'
  - id: q2
    question_text: Which other substation?
    reference_steps:
    - - name: sparql_query
        args: {query: "SELECT ?x WHERE {}"}
        output: '{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": "BERGEN"}}]}}'
"""


def _case(case_id: str, tags: str) -> str:
    return indicator_case(case_id, tags, "[{id: MEX, name: Mexico}]")


def _selection(values: list[dict[str, str]]) -> dict[str, Any]:
    return {"indicator_selection": [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "COUNTRY", "values": values}]}]}


STEPS = [{"name": "sparql_query", "args": {"query": "SELECT ?x WHERE {}"}, "id": "c1", "status": "success",
          "output": '{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": "OSLO"}}]}}'}]


def _run(folder: Path, *extra: str) -> tuple[Path, dict[str, Any]]:
    (folder / "qa.yaml").write_text(QA, encoding="utf-8")
    (folder / "cases.yaml").write_text(_case("good", "[a]") + _case("unusable", "[a, b]"), encoding="utf-8")
    responses = [
        {"id": "good", **_selection([{"id": "MEX", "name": "Mexico"}])},
        {"id": "unusable", **_selection([{}])},  # a term with neither id nor name: the case is invalid
        {"question_id": "q1", "actual_steps": STEPS},
        {"question_id": "q2", "actual_steps": "not a list of steps"},  # unusable: the question is invalid
    ]
    (folder / "responses.json").write_text(json.dumps(responses), encoding="utf-8")
    report = folder / "report.xlsx"
    code = main(["run", str(folder / "qa.yaml"), str(folder / "cases.yaml"), "--responses",
                 str(folder / "responses.json"), "--output", str(report), "--results", str(folder / "results.json"),
                 "--no-llm", "--quiet", *extra])
    assert code == 0
    return report, json.loads((folder / "results.json").read_text(encoding="utf-8"))


def _statistics(report: Path) -> list[tuple[Any, ...]]:
    return list(load_workbook(report)["Statistics"].iter_rows(values_only=True))


def _titles(rows: list[tuple[Any, ...]]) -> list[str]:
    """The section titles of the sheet, in order (a title: a text alone in its row, followed by a row)."""
    bold = []
    for row in rows:
        cells = [value for value in row if value is not None]
        if len(cells) == 1 and isinstance(cells[0], str):
            bold.append(cells[0])
    return bold


def test_invalid_indicator_selection_cases_are_counted_in_data_query_metrics_as_invalid_questions_are(tmp_path):
    _, document = _run(tmp_path)
    overall = document["data_query_metrics"]["all"]
    assert (overall["cases"], overall["evaluated"], overall["invalid"]) == (2, 1, 1)
    per_tag = {group["group"]: group for group in document["data_query_metrics"]["per_group"]}
    assert (per_tag["b"]["cases"], per_tag["b"]["invalid"], per_tag["b"]["evaluated"]) == (1, 1, 0)
    country = document["data_query_metrics"]["per_dimension"][0]
    assert (country["dimension"], country["cases"], country["not_scored"]) == ("COUNTRY", 1, 1)
    # the invalid question is counted beside graphrag-eval's means too, as an error sample
    micro = document["aggregates"]["micro"]
    assert (micro["number_of_success_samples"], micro["number_of_error_samples"]) == (1, 1)
    statuses = {case["case_id"]: case["status"] for case in document["cases"]}
    assert statuses == {"q1": "success", "q2": "invalid", "good": "success", "unusable": "invalid"}


class Spread(Kind):
    """A kind whose table has a note, a chart and a row of its own unit (seconds), and is leading."""

    name = "spread"
    label = "spread"
    reads_target = False
    metrics = (Metric("spread_score", "spread score"),)

    @property
    def output_key(self) -> str | None:
        return None

    def present(self, results: Sequence[CaseResult]) -> bool:
        return bool(results)

    def evaluate_turn(self, turn: TurnInput) -> Any:
        return None

    def statistics_tables(self, results: Sequence[CaseResult]) -> list[Table]:
        return [
            Table("Spread per tag", ("tag", "score", "time"), (("a", 0.25, 1.5), ("b", 0.75, 2.5), ("all", 0.5, 4.0)),
                  (None, "score", "score"), note="A note under the title.",
                  chart=Chart("Spread score per tag", "tag", (2,), totals=1),
                  row_formats=(None, "seconds", None), leading=True),
            Table("Spread, further", ("what", "cases"), (("all", len(results)),), (None, "integer")),
        ]


@pytest.fixture
def spread_kind():
    kind = kinds.register(Spread())
    yield kind
    kinds.unregister(kind.name)


def test_a_kinds_table_is_laid_out_with_its_note_chart_and_row_formats(spread_kind, tmp_path):
    report, document = _run(tmp_path)
    rows = _statistics(report)
    at = next(index for index, row in enumerate(rows) if row[0] == "Spread per tag")
    assert rows[at + 1][0] == "A note under the title." and rows[at + 2][:3] == ("tag", "score", "time")
    sheet = load_workbook(report)["Statistics"]
    first = at + 4  # 1-based row of the first data row: title, note, header above it
    assert sheet.cell(first, 2).value == 0.25
    assert sheet.cell(first, 2).number_format == sheet.cell(first, 3).number_format == "0.00"
    assert sheet.cell(first + 1, 2).number_format == sheet.cell(first + 1, 3).number_format == "0.0"  # seconds
    with zipfile.ZipFile(report) as package:
        charts = [package.read(name).decode() for name in package.namelist()
                  if re.match(r"xl/charts/chart\d+\.xml$", name)]
    drawn = next(chart for chart in charts if "Spread score per tag" in chart)
    assert f"Statistics!$B${first}:$B${first + 1}" in drawn.replace("'", "")  # the total row is not a category
    assert "kinds" not in document  # it has no results-file section of its own


def test_every_kinds_leading_tables_come_before_the_others_in_kind_order(spread_kind, tmp_path):
    report, _ = _run(tmp_path)
    titles = _titles(_statistics(report))
    order = ["Data Query Metrics", "Data Query Metrics per tag", "Data Query Metrics per dimension",
             "Q&A: means per template", "Q&A: all questions (micro)", "Q&A: tool calls per template",
             "Spread per tag", "Indicator selection grades and dataset choice per tag", "Spread, further"]
    assert [title for title in titles if title in order] == order


def test_the_statistics_modules_name_no_kind():
    """The Statistics sheet and the suite statistics ask the kinds; neither knows one by name."""
    names = [kind.name for kind in kinds.catalogue()] + ["data_query", "qa_aggregates", "has_indicator_target",
                                                      "question_results", ".indicator", ".qa"]
    for module in ("qareport/statistics.py", "qareport/workbook/statistics_sheet.py"):
        code = (ROOT / module).read_text(encoding="utf-8")
        found = [name for name in names if re.search(re.escape(name) + r"\b", code)]
        assert found == [], (module, found)


def test_a_report_built_without_statistics_aggregates_by_the_rules_its_run_was_scored_by():
    """`build_report` without `statistics` computes graphrag-eval's aggregates by the run's own steps
    rules, the rules its results file orders the per-question records by and its note names."""
    from qareport.aggregates import compute_aggregates
    from qareport.evaluation import evaluate_suite
    from qareport.evaluation_options import EvaluationOptions
    from qareport.kinds.qa_figures import QAFigures, question_results
    from qareport.loading import load_suite
    from qareport.records import DEFAULT_TERM_MATCHING, OptionsUsed, RunInfo
    from qareport.report import build_report

    folder = ROOT / "testcases"
    suite = load_suite([folder / "power-system"], [folder / "responses" / "power-system.json"])
    results = evaluate_suite(suite, options=EvaluationOptions(steps_semantics=6)).results
    options = OptionsUsed(match_terms_by=DEFAULT_TERM_MATCHING, templates=None, config=None, strict=False,
                          steps_semantics=6, acceptable_extras=0, cluster_by_tag=None, config_ge6=None, judge=None)
    report = build_report(results, (), RunInfo(created="2026-11-25T06:00:00+00:00", qareport_version="0",
                                               options=options))
    figures = report.statistics.figures_of(QAFigures)
    assert figures is not None and figures.steps_semantics == 6
    exp = compute_aggregates(question_results(results), semantics=6)
    assert figures.aggregates == exp
    assert exp != compute_aggregates(question_results(results), semantics=5)  # the rules make a difference here
