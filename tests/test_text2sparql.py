"""Text2SPARQL data as an analyst reviews it (the 2025 challenge's shapes, made here): a query
over several lines, a one-value answer, templates numbered db25-1 … db25-10, ids with a colon.
Compare shows a query as a query; the per-template changes sort as a reader counts; a one-value
answer that is wrong says both values."""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook

from qareport.cli import main

INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
QUERY = "\nPREFIX dbo: <http://dbpedia.org/ontology/>\nSELECT (COUNT(?p) AS ?count)\nWHERE {\n  ?p dbo:birthPlace dbr:Paris .\n}\n"
TEMPLATES = ("db25-1", "db25-2", "db25-10")


def count_result(value: int) -> str:
    return json.dumps({"head": {"vars": ["count"]}, "results": {"bindings": [
        {"count": {"type": "literal", "datatype": INTEGER, "value": str(value)}}]}})


def question_ids(template: str) -> list[str]:
    return [f"{template}:q{n}" for n in (1, 2)]


@pytest.fixture
def runs(tmp_path):
    """The suite, last week's responses (all right) and this week's (db25-2:q1 counts 736, not 2,892)."""
    suite = []
    for template in TEMPLATES:
        questions = [{"id": qid, "question_text": f"How many people were born in Paris? ({qid})",
                      "reference_answer": "2892",
                      "reference_steps": [[{"name": "sparql_query", "args": {"query": QUERY},
                                            "output": count_result(2892),
                                            "output_media_type": "application/sparql-results+json",
                                            "required_columns": ["count"]}]]}
                     for qid in question_ids(template)]
        suite.append({"template_id": template, "questions": questions})
    (tmp_path / "suite.yaml").write_text(json.dumps(suite))  # JSON is YAML

    def responses(wrong: set[str]) -> list[dict]:
        return [{"question_id": qid, "actual_answer": "736" if qid in wrong else "2892",
                 "actual_steps": [{"name": "sparql_query", "id": f"call-{qid}", "status": "success",
                                   "args": {"query": QUERY.replace("?count", "?c")},
                                   "output": count_result(736 if qid in wrong else 2892)}]}
                for template in TEMPLATES for qid in question_ids(template)]

    (tmp_path / "last.json").write_text(json.dumps(responses(set())))
    (tmp_path / "this.json").write_text(json.dumps(responses({"db25-2:q1"})))
    base = ["run", str(tmp_path / "suite.yaml"), "--no-llm", "-q"]
    assert main([*base, "-r", str(tmp_path / "last.json"), "-o", str(tmp_path / "last.xlsx")]) == 0
    assert main([*base, "-r", str(tmp_path / "this.json"), "-o", str(tmp_path / "this.xlsx"), "--baseline",
                 str(tmp_path / "last.xlsx")]) == 0
    return load_workbook(tmp_path / "this.xlsx")


def test_compare_shows_the_query_called_as_a_query_with_its_line_breaks(runs):
    cells = [cell.value for row in runs["Compare"].iter_rows() for cell in row if isinstance(cell.value, str)]
    steps = [text for text in cells if text.startswith("1. sparql_query")]
    assert steps, cells
    for text in steps:
        assert text.splitlines()[:5] == ["1. sparql_query [success]", "   query:",
                                         "     PREFIX dbo: <http://dbpedia.org/ontology/>",
                                         "     SELECT (COUNT(?p) AS ?c)", "     WHERE {"]
        assert "\\n" not in text and '\\"' not in text


def test_a_wrong_one_value_answer_says_both_values(runs):
    overview = runs["Overview"]
    header = [cell.value for cell in overview[1]]
    rows = {row[header.index("id")]: row for row in overview.iter_rows(min_row=2, values_only=True)}
    reason = rows["db25-2:q1"][header.index("reason")]
    assert "sparql_query returned 736, required 2,892" in reason


def test_the_per_template_changes_sort_as_a_reader_counts(runs):
    first_column = [row[0] for row in runs["Statistics"].iter_rows(values_only=True) if row and row[0]]
    templates = [text.removeprefix("template ") for text in first_column
                 if isinstance(text, str) and text.startswith("template db25")]
    assert list(dict.fromkeys(templates)) == ["db25-1", "db25-2", "db25-10"]


def test_details_rows_of_the_step_hold_both_queries_and_the_rows_returned_and_required(runs):
    details = runs["Details"]
    header = [cell.value for cell in details[1]]
    rows = [dict(zip(header, row)) for row in details.iter_rows(min_row=2, values_only=True)]
    mine = {row["verdict"]: row for row in rows if row["case id"] == "db25-2:q1" and row["dimension"] == "steps (SPARQL)"}
    assert mine["reference query"]["reason"] == QUERY.strip("\n")  # its line breaks kept
    assert mine["actual query"]["reason"] == QUERY.replace("?count", "?c").strip("\n")
    assert mine["actual query"]["term id"] == "call-db25-2:q1"
    assert mine["rows returned"]["reason"] == "1 row: 736"
    assert mine["rows required"]["reason"] == "1 row (count): 2892"
    verdicts = [row["verdict"] for row in rows if row["case id"] == "db25-2:q1" and row["dimension"] == "steps"]
    assert verdicts == ["missed", "extra"]  # the verdict rows are as before


def test_the_overview_steps_details_show_the_queries_of_a_step_that_lost_points(runs):
    overview = runs["Overview"]
    header = [cell.value for cell in overview[1]]
    rows = {row[header.index("id")]: row for row in overview.iter_rows(min_row=2, values_only=True)}
    wrong = rows["db25-2:q1"][header.index("steps details")]
    assert ("    reference query:\n      PREFIX dbo: <http://dbpedia.org/ontology/>\n"
            "      SELECT (COUNT(?p) AS ?count)\n      WHERE {\n        ?p dbo:birthPlace dbr:Paris .\n      }") in wrong
    assert "    actual query (call-db25-2:q1):\n      PREFIX dbo:" in wrong
    assert "    returned 1 row: 736\n    required 1 row (count): 2892" in wrong
    assert "reference query" not in rows["db25-2:q2"][header.index("steps details")]  # a step that matched is not reviewed


def bindings(*rows: dict) -> str:
    names = list(rows[0]) if rows else ["x"]
    return json.dumps({"head": {"vars": names}, "results": {"bindings": [
        {name: {"type": "literal", "value": value} for name, value in row.items()} for row in rows]}})


@pytest.mark.parametrize(("output", "columns", "exp"), [
    (bindings(*({"n": str(i)} for i in range(4000))), ["n"], "4,000 rows (n): 0; 1; 2; …"),
    (json.dumps({"head": {}, "boolean": True}), None, "yes"),
    (json.dumps({"head": {}, "boolean": False}), None, "no"),
    (bindings(), None, "no rows"),
    (bindings({"a": "x" * 70, "b": "line\nbreak  two"}), None, "1 row: " + "x" * 60 + "… | line break  two"),
    ("not json at all", None, None),
    ('{"results": {"bindings": [{"a": {"type": "uri", "value": "u"}}]}}', ["a", "b"], "1 row (a, b): u | –"),
])
def test_a_short_view_of_a_results_rows(output, columns, exp):
    from qareport.kinds.steps.sparql_view import rows_view

    assert rows_view(output, columns) == exp


def test_a_query_given_as_json_text_or_indented_is_shown_as_written():
    from qareport.kinds.steps.sparql_view import step_query

    assert step_query({"args": json.dumps({"query": "\n    SELECT ?x\n    WHERE { ?x ?y ?z }\n"})}) == (
        "SELECT ?x\nWHERE { ?x ?y ?z }")
    assert step_query({"args": {"k": 2}}) is None and step_query({}) is None
