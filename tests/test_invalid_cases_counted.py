"""An indicator-selection case that is invalid (its test case or its response could not be read)
counts wherever a figure stands beside a mean: Data Query Metrics (overall and per tag, a tag whose
cases were all invalid included), per dimension, and the Summary's "not scored". Read back from the
workbook with openpyxl."""

from __future__ import annotations

import json
from pathlib import Path

from openpyxl import load_workbook

from qareport.cli import main


def indicator_case(case_id: str, tags: str, values: str) -> str:
    return f"""- id: {case_id}
  tags: {tags}
  conversation:
  - role: user
    content: GDP of Mexico
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: COUNTRY
          values: {values}
"""


GOOD = {"indicator_selection": [{"dataset_id": "WEO", "dimensions": [
    {"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}]}


def _workbook(folder: Path, cases: str, responses: list) -> tuple:
    (folder / "cases.yaml").write_text(cases, encoding="utf-8")
    (folder / "responses.json").write_text(json.dumps(responses), encoding="utf-8")
    report = folder / "report.xlsx"
    main(["run", str(folder / "cases.yaml"), "--responses", str(folder / "responses.json"),
          "--output", str(report), "--no-llm", "-q"])
    book = load_workbook(report)
    return book, [row for row in book["Statistics"].iter_rows(values_only=True)]


def _table(rows: list[tuple], title: str) -> dict[str, dict]:
    """The rows of the table after the section `title`, by their first cell, as header -> value."""
    start = next(i for i, row in enumerate(rows) if row[0] == title)
    header_at = next(i for i in range(start + 1, len(rows)) if rows[i][1] is not None and isinstance(rows[i][1], str))
    header = rows[header_at]
    table = {}
    for row in rows[header_at + 1:]:
        if row[0] is None:
            break
        table[row[0]] = dict(zip(header[1:], row[1:]))
    return table


def _summary_not_scored(book) -> dict[str, int]:
    """The Summary's "not scored" beside each indicator-selection headline."""
    rows = list(book["Summary"].iter_rows(values_only=True))
    header = next(row for row in rows if "not scored" in row)
    metric, not_scored = header.index("metric"), header.index("not scored")
    return {row[metric]: row[not_scored] for row in rows
            if row[metric] in ("macro precision", "macro recall")}


def test_invalid_test_cases_are_counted_in_data_query_metrics_per_tag_and_the_summary(tmp_path):
    cases = (indicator_case("good", "[a, shared]", "[{id: MEX, name: Mexico}]")
             + indicator_case("broken", "[b, shared]", "[{}]"))  # a value with neither id nor name: invalid
    book, rows = _workbook(tmp_path, cases, [{"id": "good", **GOOD}, {"id": "broken", **GOOD}])
    overall = _table(rows, "Data Query Metrics")["all test cases"]
    assert (overall["test cases"], overall["evaluated"], overall["invalid"]) == (2, 1, 1)
    per_tag = _table(rows, "Data Query Metrics per tag")
    assert per_tag["b"]["test cases"] == 1 and per_tag["b"]["invalid"] == 1 and per_tag["b"]["evaluated"] == 0
    assert per_tag["shared"]["test cases"] == 2 and per_tag["shared"]["invalid"] == 1
    assert per_tag["a"]["invalid"] == 0
    assert _summary_not_scored(book) == {"macro precision": 1, "macro recall": 1}


def test_cases_with_an_unusable_response_or_an_error_are_counted_per_dimension(tmp_path):
    cases = (indicator_case("good", "[a]", "[{id: MEX, name: Mexico}]") + indicator_case("unusable", "[a]", "[{id: MEX}]")
             + indicator_case("failed", "[a]", "[{id: MEX}]"))
    unusable = {"id": "unusable", "indicator_selection": [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{}]}]}]}
    book, rows = _workbook(tmp_path, cases, [{"id": "good", **GOOD}, unusable,
                                             {"id": "failed", "status": "error", "error": "timeout"}])
    overall = _table(rows, "Data Query Metrics")["all test cases"]
    assert (overall["test cases"], overall["evaluated"], overall["errors"], overall["invalid"]) == (3, 1, 1, 1)
    country = _table(rows, "Data Query Metrics per dimension")["COUNTRY"]
    assert country["test cases"] == 1 and country["not scored"] == 2
    assert _summary_not_scored(book) == {"macro precision": 2, "macro recall": 2}
