"""Ids and names are text exactly as written (YAML 1.1's conversions never apply to them), the same
on both sides after NFC and trimming, and differences that cannot be seen are shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from qareport.cli import main
from qareport.id_text import visible
from qareport.kinds.qa_turn import reference_answer_of

SCALARS = ["010", "1:20", "1.10", "0x1F", "1_000", "NO", "2024-01-02", "1e3", ".inf", "0o17", "+12"]


def _case_yaml(case_id: str, term_ids: list[str], *, dimension: str = "INDICATOR", dataset: str = "WEO",
               tags: str = "[2024, NO]") -> str:
    values = "\n".join(f"          - id: {term_id}\n            name: {term_id}" for term_id in term_ids)
    return f"""- id: {case_id}
  name: {case_id}
  tags: {tags}
  conversation:
  - role: user
    content: question
    target:
      indicator_selection:
      - dataset_id: {dataset}
        dimensions:
        - dimension_name: {dimension}
          values:
{values}
"""


def _response(case_id: object, term_ids: list[object], *, dimension: object = "INDICATOR",
              dataset: object = "WEO") -> dict:
    return {"id": case_id, "indicator_selection": [{"dataset_id": dataset, "dimensions": [
        {"dimension_name": dimension, "values": [{"id": t, "name": t} for t in term_ids]}]}]}


def _run(folder: Path, cases: str, responses: str, suffix: str = ".json") -> tuple[dict, list, str]:
    (folder / "cases.yaml").write_text(cases, encoding="utf-8")
    (folder / f"responses{suffix}").write_text(responses, encoding="utf-8")
    report = folder / "report.xlsx"
    status = main(["run", str(folder / "cases.yaml"), "--responses", str(folder / f"responses{suffix}"),
                   "--output", str(report), "--no-llm", "-q"])
    assert status == 0
    book = load_workbook(report)
    sheet = book["Overview"]
    header = [c.value for c in sheet[1]]
    rows = {row[0]: dict(zip(header, row)) for row in sheet.iter_rows(min_row=2, values_only=True)}
    problems = list(book["Problems"].iter_rows(min_row=2, values_only=True)) if "Problems" in book.sheetnames else []
    return rows, problems, str(report)


@pytest.mark.parametrize("scalar", SCALARS)
def test_a_yaml_scalar_id_scores_against_the_same_text_in_a_json_response(tmp_path, scalar):
    cases = _case_yaml(scalar, [scalar], dimension=scalar, dataset=scalar)
    rows, problems, _ = _run(tmp_path, cases, json.dumps([_response(scalar, [scalar], dimension=scalar,
                                                                    dataset=scalar)]))
    assert list(rows) == [scalar], problems
    row = rows[scalar]
    assert (row["status"], row["macro recall"], row["macro precision"]) == ("success", 1.0, 1.0), problems
    assert f"  * {scalar}: {scalar}" in row["indicator selection details"]
    assert not problems


@pytest.mark.parametrize("null", ["~", "null", "Null", ""])
def test_a_yaml_null_id_is_no_id_as_in_json_so_the_term_is_matched_by_its_name(tmp_path, null):
    cases = _case_yaml("c", ["GDP"]).replace("- id: GDP", f"- id: {null}")
    response = {"id": "c", "indicator_selection": [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": None, "name": "GDP"}]}]}]}
    rows, problems, report = _run(tmp_path, cases, json.dumps([response]))
    assert (rows["c"]["macro recall"], rows["c"]["macro precision"]) == (1.0, 1.0), problems
    details = list(load_workbook(report)["Details"].iter_rows(min_row=2, values_only=True))
    terms = [row for row in details if row[3] not in ("(dataset)", "(grade)")]  # the turn's dataset and grade rows aside
    assert [(row[4], row[5], row[6]) for row in terms] == [("TP", None, "GDP")]  # no id "null" or "~"


def test_tags_are_their_text_as_written(tmp_path):
    rows, _, report = _run(tmp_path, _case_yaml("c", ["A"]), json.dumps([_response("c", ["A"])]))
    groups = rows["c"].get("group") or rows["c"].get("tags")
    assert "2024" in str(groups) and "NO" in str(groups) and "False" not in str(groups)


@pytest.mark.parametrize("written", ["1.10", "1e3", "12"])
def test_a_json_number_id_is_the_text_of_the_number_as_written(tmp_path, written):
    text = json.dumps([_response("PLACEHOLDER", ["PLACEHOLDER"])]).replace('"PLACEHOLDER"', written)
    rows, problems, _ = _run(tmp_path, _case_yaml(f"'{written}'", [f"'{written}'"]), text)
    assert rows[written]["macro recall"] == 1.0, problems


def test_a_yaml_response_keeps_its_ids_as_written_too(tmp_path):
    responses = """- id: 010
  indicator_selection:
  - dataset_id: 1.10
    dimensions:
    - dimension_name: NO
      values: [{id: 0x1F, name: 1_000}]
"""
    cases = _case_yaml("'010'", ["'0x1F'"], dimension="'NO'", dataset="'1.10'").replace("name: '0x1F'", "name: '1_000'")
    rows, problems, _ = _run(tmp_path, cases, responses, suffix=".yaml")
    assert rows["010"]["macro recall"] == 1.0, problems


def test_an_id_keyed_yaml_response_mapping_keeps_its_keys_as_written(tmp_path):
    responses = """010:
  indicator_selection: [{dataset_id: WEO, dimensions: [{dimension_name: INDICATOR, values: [{id: A, name: A}]}]}]
"""
    rows, problems, _ = _run(tmp_path, _case_yaml("010", ["A"]), responses, suffix=".yaml")
    assert rows["010"]["macro recall"] == 1.0, problems


def test_token_counts_and_times_keep_their_yaml_and_json_types(tmp_path):
    record = _response("c", ["A"])
    text = json.dumps([record])[:-2] + ', "input_tokens": 10, "elapsed_sec": 1.50}]'
    rows, problems, report = _run(tmp_path, _case_yaml("c", ["A"]), text)
    assert not problems
    row = rows["c"]
    tokens = [value for key, value in row.items() if key and "token" in key.lower()]
    assert 10 in tokens or not tokens
    elapsed = [value for key, value in row.items() if key and ("elapsed" in key.lower() or "time" in key.lower())]
    assert all(isinstance(value, float) for value in elapsed if value is not None)


# --- invisible differences ---------------------------------------------------------------------------


def _details_rows(report: str) -> list[tuple]:
    return list(load_workbook(report)["Details"].iter_rows(values_only=True))


@pytest.mark.parametrize(("target", "got"), [
    ("Méxi\u0301co".replace("é", "e"), "Méxíco".replace("é", "e")),  # NFD in the target, NFC in the response
    ("MEX", " MEX "),  # white space around an id
    ("MEX\t", "MEX"),
])
def test_what_cannot_be_meant_differently_is_the_same_id(tmp_path, target, got):
    cases = _case_yaml("c", [json.dumps(target)])
    rows, problems, _ = _run(tmp_path, cases, json.dumps([_response(" c ", [got])]))
    assert rows["c"]["macro recall"] == 1.0 and rows["c"]["macro precision"] == 1.0, problems
    assert not problems


def test_a_case_id_in_nfd_in_the_response_finds_its_nfc_test_case(tmp_path):
    rows, problems, _ = _run(tmp_path, _case_yaml("Zürich", ["A"]),
                             json.dumps([_response("Zu\u0308rich", ["A"])]))
    assert rows["Zürich"]["status"] == "success", problems


@pytest.mark.parametrize(("target", "got", "shown"), [
    ("MEX", "MEX\u200b", "MEX\u27e8U+200B\u27e9"),  # a zero-width space
    ("NEW YORK", "NEW\u00a0YORK", "NEW\u27e8U+00A0\u27e9YORK"),  # a no-break space inside
])
def test_a_difference_that_cannot_be_seen_is_shown_by_its_code_point(tmp_path, target, got, shown):
    rows, problems, report = _run(tmp_path, _case_yaml("c", [json.dumps(target)]),
                                  json.dumps([_response("c", [got])]))
    row = rows["c"]
    assert row["macro recall"] == 0.0
    assert shown in row["reason"] and target in row["reason"]
    assert f"  * {shown}: {shown}" in row["indicator selection details"]
    assert any(shown in [str(value) for value in details_row] for details_row in _details_rows(report))


def test_visible_leaves_ordinary_text_alone():
    assert visible("GDP per capita, Zürich – 2024") == "GDP per capita, Zürich – 2024"
    assert visible("a\u2060b\u00adc") == "a\u27e8U+2060\u27e9b\u27e8U+00AD\u27e9c"


# --- an id-keyed mapping whose key and id field disagree ------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_mapping_key_that_disagrees_with_its_id_field_is_a_problem_and_pairs_nothing(tmp_path, suffix):
    cases = _case_yaml("a", ["A"]) + _case_yaml("b", ["B"])
    mapping = {"a": {**_response("b", ["A"]), "question_id": "b"}, "b": _response("b", ["B"])}
    for record in mapping.values():
        del record["id"]
    mapping["b"]["question_id"] = "b"
    text = json.dumps(mapping, indent=1)
    rows, problems, _ = _run(tmp_path, cases, text, suffix=suffix)
    assert rows["a"]["status"] == "missing"  # not scored with a response meant for another case
    assert rows["b"]["status"] == "success" and rows["b"]["macro recall"] == 1.0
    (found,) = [p for p in problems if "under key 'a'" in str(p)]
    assert "names case 'b' in its 'question_id' field" in str(found)
    first_line = text.splitlines().index('  "question_id": "b"') + 1  # record a's id field (YAML: key a)
    assert str(found[0]).endswith(f"responses{suffix}") and found[1] == (first_line if suffix == ".json" else 2)


def test_a_message_and_a_reference_answer_are_their_text_as_written(tmp_path):
    cases = _case_yaml("c", ["A"]).replace("content: question", "content: 1.10").replace(
        "    target:\n", "    target:\n      reference_answer: NO\n")
    (tmp_path / "cases.yaml").write_text(cases, encoding="utf-8")
    from qareport.loading import load_suite

    (case,) = load_suite([tmp_path / "cases.yaml"], []).cases
    assert case.turns[0].user_message == "1.10" and reference_answer_of(case.turns[0].target) == "NO"


def test_question_and_template_ids_are_their_text_as_written(tmp_path):
    cases = "- template_id: 1.10\n  questions:\n  - id: 010\n    question_text: what\n    reference_answer: x\n"
    (tmp_path / "cases.yaml").write_text(cases, encoding="utf-8")
    (tmp_path / "responses.json").write_text(json.dumps([{"question_id": "010", "actual_answer": "x"}]),
                                             encoding="utf-8")
    from qareport.loading import load_suite

    suite = load_suite([tmp_path / "cases.yaml"], [tmp_path / "responses.json"])
    (case,) = suite.cases
    assert (case.id, case.groups) == ("010", ("1.10",))
    assert list(suite.responses) == ["010"] and not suite.problems


@pytest.mark.parametrize("padding", ["", "  output: '" + "[" * 4_500 + "'\n"])  # the event-built reading too
def test_every_yaml_reading_keeps_the_text_of_scalars_read_as_something_else(padding):
    from qareport.yaml_input import yaml_documents
    from qareport.yaml_values import written_text

    text = "- id: 010\n  tags: [2024, NO]\n  v: {a: 1:20, b: ~, c: text, d: }\n" + padding
    (document,) = list(yaml_documents(text))
    item = document[0]
    assert written_text(item, "id") == "010" and item["id"] == 8
    assert [written_text(item["tags"], i) for i in range(2)] == ["2024", "NO"]
    assert {key: written_text(item["v"], key) for key in "abcd"} == {"a": "1:20", "b": "~", "c": None, "d": None}


def test_a_yaml_file_with_anchors_keeps_the_text_of_scalars_too():
    from qareport.yaml_input import yaml_documents
    from qareport.yaml_values import written_text

    (document,) = list(yaml_documents("- id: &shared 010\n  alias: *shared\n"))
    assert written_text(document[0], "id") == "010" and written_text(document[0], "alias") == "010"
