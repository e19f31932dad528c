"""The "indicator selection details" cell: the seed's exact text, from an overridable template."""

import textwrap

from qareport.kinds.selection_details import render_indicator_details
from qareport.kinds.selection_scoring import score_indicator_selection
from qareport.records import (
    CaseResult,
    DatasetSelection,
    DimensionTerms,
    Location,
    Target,
    Term,
    TermMatching,
    TestCase,
    Turn,
    TurnResult,
)

GDP = Term("GDP", "gross domestic product")
GDPPC = Term("GDPPC", "GDP per capita")
GDP_CONST = Term("GDP_CONST", "gross domestic product constant prices")


def selection(**dimensions):
    return (DatasetSelection("IMF.RES:WEO", tuple(DimensionTerms(k, tuple(v)) for k, v in dimensions.items())),)


def case_result(*turns, match_terms_by=TermMatching.ID_AND_NAME):
    """turns: (user message, target dims, selected dims)."""
    case_turns, turn_results = [], []
    for number, (message, target, selected) in enumerate(turns, start=1):
        case_turns.append(Turn(number, message, Target(parts={"indicator_selection": selection(**target)})))
        score = score_indicator_selection(selection(**target), selection(**selected), match_terms_by=match_terms_by)
        turn_results.append(TurnResult(number, message, scores={"indicator_selection": score}))
    case = TestCase("c1", "conversation", "n", ("imf",), tuple(case_turns), Location("t.yaml", 1))
    return CaseResult(case, "success", turns=tuple(turn_results))


def test_the_seed_example_renders_exactly():
    got = render_indicator_details(case_result(("q", dict(INDICATOR=[GDP, GDPPC]), dict(INDICATOR=[GDP, GDPPC, GDP_CONST]))))
    exp = textwrap.dedent("""\
        INDICATOR
        [recall: 1.00, precision: 0.67]
        True Positives [2]
          * GDP: gross domestic product
          * GDPPC: GDP per capita
        False Negatives [0]
        False Positives [1]
          * GDP_CONST: gross domestic product constant prices""")
    assert got == exp


def test_blocks_are_separated_by_a_blank_line_and_dimensions_not_in_target_come_last():
    got = render_indicator_details(case_result((
        "q",
        dict(INDICATOR=[GDP], COUNTRY=[Term("MEX", "Mexico")]),
        dict(INDICATOR=[GDP], FREQ=[Term("A", "Annual")]),
    )))
    exp = textwrap.dedent("""\
        INDICATOR
        [recall: 1.00, precision: 1.00]
        True Positives [1]
          * GDP: gross domestic product
        False Negatives [0]
        False Positives [0]

        COUNTRY
        [recall: 0.00, precision: 0.00]
        True Positives [0]
        False Negatives [1]
          * MEX: Mexico
        False Positives [0]

        dimensions not in target
        FREQ [1]
          * A: Annual""")
    assert got == exp


def test_multi_turn_cases_repeat_the_blocks_under_a_turn_line():
    got = render_indicator_details(case_result(
        ("GDP of Germany?", dict(INDICATOR=[GDP]), dict(INDICATOR=[GDP])),
        ("And per capita?", dict(INDICATOR=[GDPPC]), dict()),
    ))
    exp = textwrap.dedent("""\
        Turn 1: GDP of Germany?
        INDICATOR
        [recall: 1.00, precision: 1.00]
        True Positives [1]
          * GDP: gross domestic product
        False Negatives [0]
        False Positives [0]

        Turn 2: And per capita?
        INDICATOR
        [recall: 0.00, precision: 0.00]
        True Positives [0]
        False Negatives [1]
          * GDPPC: GDP per capita
        False Positives [0]""")
    assert got == exp


def test_matching_by_id_shows_the_label_the_system_used():
    got = render_indicator_details(
        case_result(("q", dict(COUNTRY=[Term("MEX", "Mexico")]), dict(COUNTRY=[Term("MEX", "United Mexican States")]))),
        )
    assert "False Negatives [1]" in got  # by id and name, a relabelled term is a miss
    got = render_indicator_details(case_result(
        ("q", dict(COUNTRY=[Term("MEX", "Mexico")]), dict(COUNTRY=[Term("MEX", "United Mexican States")])),
        match_terms_by=TermMatching.ID,
    ))
    assert "  * MEX: Mexico (selected as: United Mexican States)" in got.splitlines()


def test_a_users_template_directory_overrides_the_bundled_template(tmp_path):
    (tmp_path / "indicator_selection_details.txt").write_text(
        "{% for turn in turns %}{% for dim in turn.dimensions %}{{ dim.name }}={{ '%.1f' | format(dim.recall) }}{% endfor %}{% endfor %}"
    )
    got = render_indicator_details(
        case_result(("q", dict(INDICATOR=[GDP, GDPPC]), dict(INDICATOR=[GDP]))), templates_dir=str(tmp_path)
    )
    assert got == "INDICATOR=0.5"


# --- the Overview's cells hold exactly their text -------------------------------------------------

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from openpyxl import load_workbook  # noqa: E402

from qareport.evaluation import evaluate_suite  # noqa: E402
from qareport.loading import load_suite  # noqa: E402
from qareport.records import RunInfo  # noqa: E402
from qareport.report import build_report  # noqa: E402
from qareport.workbook import styles, write_workbook  # noqa: E402
from qareport.workbook.overview import MORE, overview_columns  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    """The bundled run's report model and its workbook's Overview."""
    suite = load_suite([str(ROOT / "testcases")], [str(ROOT / "testcases" / "responses")])
    report = build_report(evaluate_suite(suite).results, (), RunInfo(created="2024-05-08T10:00:00+00:00",
                                                                     qareport_version="0.1.0"))
    path = tmp_path_factory.mktemp("overview") / "report.xlsx"
    write_workbook(report, path)
    return report, load_workbook(path)["Overview"]


def test_every_text_cell_of_the_overview_equals_its_source_text(bundled):
    report, ws = bundled
    headers = [c.value for c in ws[1]]
    checked = 0
    for column in overview_columns(report):
        position = headers.index(column.header) + 1
        for row, result in enumerate(report.results, start=2):
            exp = column.value(result)
            if not isinstance(exp, str):
                continue
            got = ws.cell(row, position).value
            assert got == (exp or None), (column.header, result.case.id)
            checked += 1
    assert checked > 250
    assert not any("\u25bc" in str(cell.value) for row in ws.iter_rows() for cell in row)  # no marker anywhere


def test_the_details_cell_is_exactly_the_templates_output_even_when_it_is_taller_than_its_row(bundled):
    report, ws = bundled
    headers = [c.value for c in ws[1]]
    details = headers.index("indicator selection details") + 1
    seed = next(row for row, r in enumerate(report.results, start=2) if r.case.id.startswith("c540d28c"))
    got = ws.cell(seed, details).value
    assert got == render_indicator_details(report.results[seed - 2])
    assert got.splitlines()[:2] == ["INDICATOR", "[recall: 1.00, precision: 0.67]"]


def test_a_text_that_goes_on_below_its_rows_edge_is_counted_in_the_more_column_beside_it(bundled):
    _, ws = bundled
    headers = [c.value for c in ws[1]]
    details = headers.index("indicator selection details") + 1
    assert headers[details] == MORE  # the narrow column right of the details
    width = next(d.width for d in ws.column_dimensions.values() if d.min <= details <= d.max)
    counted = 0
    for row in range(2, ws.max_row + 1):
        text, more = ws.cell(row, details).value, ws.cell(row, details + 1)
        shown = round(ws.row_dimensions[row].height / 15)
        lines = styles.display_lines(text or "", width)
        if lines > shown:
            assert more.value == lines - shown and more.number_format.endswith('" lines"'), row
            counted += 1
        else:
            assert more.value is None, row
    assert counted >= 10


def test_details_has_a_row_per_reference_step_and_per_extra_call_with_its_verdict_and_score(bundled):
    report, _ = bundled
    path_rows = []
    from qareport.workbook.details import HEADERS, detail_rows  # the rows the sheet writes

    for result in report.results:
        path_rows += [dict(zip(HEADERS, row)) for row in detail_rows(report.kinds, result)]
    steps = [row for row in path_rows if row["dimension"] == "steps"]
    assert {row["verdict"] for row in steps} == {"matched", "missed", "extra", "not scored (error)"}
    for result in report.results:
        score = result.turns[0].qa.value("steps_score") if result.turns and result.turns[0].qa else None
        if score is None or result.status != "success":
            continue
        reference = [row for row in steps if row["case id"] == result.case.id and row["verdict"] != "extra"]
        assert reference, result.case.id
        assert sum(row["score"] for row in reference) / len(reference) == pytest.approx(score)  # 5.x: the mean
        calls = [step["id"] for step in result.turns[0].qa.actual_steps]
        listed = [row["term id"] for row in steps if row["case id"] == result.case.id and row["term id"]]
        assert sorted(listed) == sorted(calls)  # every call once: as the match of a step, or extra
    missed = next(row for row in steps if row["verdict"] == "missed" and row["reason"] == "not called")
    assert (missed["term name"], missed["score"], missed["term id"]) == ("sparql_query", 0.0, None)
    failed = next(row for row in steps if row["verdict"] == "not scored (error)")  # the system answered with an error
    assert failed["reason"].startswith("Error code: 429") and failed["score"] is None
    partial = next(row for row in steps if row["term name"] == "retrieval" and row["score"] == 0.5)
    assert partial["verdict"] == "matched" and partial["reason"].startswith("recall@2 0.50")


def test_the_details_sheet_shows_step_scores_as_numbers(bundled, tmp_path):
    report, _ = bundled
    write_workbook(report, tmp_path / "r.xlsx")
    ws = load_workbook(tmp_path / "r.xlsx")["Details"]
    headers = [c.value for c in ws[1]]
    assert headers[-2:] == ["score", "reason"]
    scores = [ws.cell(r, headers.index("score") + 1) for r in range(2, ws.max_row + 1)
              if ws.cell(r, headers.index("dimension") + 1).value == "steps"
              and ws.cell(r, headers.index("verdict") + 1).value in ("matched", "missed")]
    assert scores and all(isinstance(c.value, (int, float)) and c.number_format == "0.00" for c in scores)
