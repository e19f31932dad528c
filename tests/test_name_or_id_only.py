"""A dimension value may give a name alone or an id alone (statgpt's documentation writes name-only
values): such a term matches by what it gives, the report says which terms were matched how, and a
value with neither is the only invalid one, each of them reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from qareport.cli import main
from qareport.kinds.selection_scoring import match_terms, score_dimension
from qareport.records import Term, TermMatching

GDP = Term("NGDP", "Gross domestic product")
NAME_ONLY = Term("", "Gross domestic product")
ID_ONLY = Term("NGDP", "")


@pytest.mark.parametrize(("exp", "got", "how"), [
    (NAME_ONLY, GDP, "name only"),
    (GDP, NAME_ONLY, "name only"),
    (ID_ONLY, GDP, "id only"),
    (GDP, ID_ONLY, "id only"),
    (NAME_ONLY, NAME_ONLY, "name only"),
    (ID_ONLY, ID_ONLY, "id only"),
    (GDP, GDP, None),
])
def test_a_term_giving_one_part_matches_by_that_part(exp, got, how):
    pairs, missed, extra = match_terms([exp], [got], match_terms_by=TermMatching.ID_AND_NAME)
    assert [(p[2]) for p in pairs] == [how] and missed == [] and extra == []
    score = score_dimension("INDICATOR", [exp], [got], match_terms_by=TermMatching.ID_AND_NAME)
    (found,) = score.true_positives
    assert (score.recall, score.precision, found.matched_by) == (1.0, 1.0, how)
    assert found.term == GDP or (exp == got and found.term == exp)  # shown with what either side gave


@pytest.mark.parametrize(("exp", "got"), [
    (NAME_ONLY, ID_ONLY),  # nothing in common
    (ID_ONLY, NAME_ONLY),
    (Term("", "GDP per capita"), GDP),
    (Term("NGDPPC", ""), GDP),
    (GDP, Term("NGDP", "Gross domestic product, constant prices")),  # both whole: id and name together
])
def test_terms_with_nothing_in_common_do_not_match(exp, got):
    score = score_dimension("INDICATOR", [exp], [got], match_terms_by=TermMatching.ID_AND_NAME)
    assert (score.recall, score.precision) == (0.0, 0.0)


def test_each_term_is_matched_once_exact_pairs_first():
    target = [NAME_ONLY, GDP]
    selected = [GDP, Term("X", "Gross domestic product")]
    pairs, missed, extra = match_terms(target, selected, match_terms_by=TermMatching.ID_AND_NAME)
    assert {(t, s) for t, s, _ in pairs} == {(GDP, GDP), (NAME_ONLY, Term("X", "Gross domestic product"))}
    assert missed == [] and extra == []


CASE = """- id: statgpt
  name: name-only values as statgpt's documentation writes them
  tags: [docs]
  conversation:
  - role: user
    content: GDP of Mexico
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: INDICATOR
          values:
          - name: Gross domestic product
        - dimension_name: COUNTRY
          values:
          - id: MEX
"""


def _run(folder: Path, cases: str, responses: list) -> tuple[dict, list, list, str]:
    (folder / "cases.yaml").write_text(cases, encoding="utf-8")
    (folder / "responses.json").write_text(json.dumps(responses), encoding="utf-8")
    report = folder / "report.xlsx"
    main(["run", str(folder / "cases.yaml"), "--responses", str(folder / "responses.json"),
          "--output", str(report), "--no-llm", "-q"])
    book = load_workbook(report)
    sheet = book["Overview"]
    header = [c.value for c in sheet[1]]
    rows = {row[0]: dict(zip(header, row)) for row in sheet.iter_rows(min_row=2, values_only=True)}
    problems = list(book["Problems"].iter_rows(min_row=2, values_only=True)) if "Problems" in book.sheetnames else []
    details = list(book["Details"].iter_rows(values_only=True))
    return rows, problems, details, str(report)


def test_name_only_and_id_only_values_are_scored_and_the_report_says_how(tmp_path):
    response = {"id": "statgpt", "indicator_selection": [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": "NGDP", "name": "Gross domestic product"}]},
        {"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}, {"name": "Canada"}]}]}]}
    rows, problems, details, _ = _run(tmp_path, CASE, [response])
    assert not problems
    row = rows["statgpt"]
    assert row["status"] == "success" and row["macro recall"] == 1.0 and row["macro precision"] == 0.75
    cell = row["indicator selection details"]
    assert "  * NGDP: Gross domestic product (matched by name only)" in cell
    assert "  * MEX: Mexico (matched by id only)" in cell
    assert "  * (no id): Canada" in cell
    assert details[0][-1] == "matched by"
    by_term = {(r[3], r[5]): r for r in details[1:]}
    assert by_term[("INDICATOR", "NGDP")][4] == "TP" and by_term[("INDICATOR", "NGDP")][-1] == "name only"
    assert by_term[("COUNTRY", "MEX")][-1] == "id only"
    (canada,) = [r for r in details[1:] if r[6] == "Canada"]
    assert canada[4] == "FP" and canada[5] is None
    assert "'Canada'" in row["reason"]


def test_every_value_with_neither_id_nor_name_is_reported_with_its_line(tmp_path):
    broken = CASE.replace("          - name: Gross domestic product\n",
                          "          - name: Gross domestic product\n          - {}\n") \
                 .replace("          - id: MEX\n", "          - id: MEX\n          - {id: '', name: ''}\n")
    rows, problems, _, _ = _run(tmp_path, broken, [{"id": "statgpt", "indicator_selection": []}])
    assert rows["statgpt"]["status"] == "invalid"
    found = [(p[1], str(p)) for p in problems if "neither 'id' nor 'name'" in str(p)]
    assert [line for line, _ in found] == [14, 18]
    assert "dimension 'INDICATOR'" in found[0][1] and "dimension 'COUNTRY'" in found[1][1]


def test_response_values_with_neither_id_nor_name_are_each_reported(tmp_path):
    response = {"id": "statgpt", "indicator_selection": [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": None}, {"name": " "}]}]}]}
    rows, problems, _, _ = _run(tmp_path, CASE, [response])
    assert len([p for p in problems if "neither 'id' nor 'name'" in str(p)]) == 2


def test_a_change_names_a_name_only_term_whole():
    from qareport.kinds.selection_changes import explain_indicator_change

    old = {"target": ["INDICATOR 'Gross domestic product'"], "found": ["INDICATOR 'Gross domestic product'"]}
    new = {"target": ["INDICATOR 'Gross domestic product'"], "extra": ["INDICATOR 'GDP per capita'"]}
    assert explain_indicator_change(old, new) == ("lost INDICATOR 'Gross domestic product'; "
                                                  "extra INDICATOR 'GDP per capita'")
