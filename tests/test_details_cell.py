"""The "indicator selection details" cell: the seed's exact text, from an overridable template."""

import textwrap

from qareport.kinds.indicator_selection import score_indicator_selection
from qareport.records import (
    CaseResult, DatasetSelection, DimensionTerms, Location, Target, Term, TestCase, Turn, TurnResult,
)
from qareport.kinds.indicator_selection import render_indicator_details

GDP = Term("GDP", "gross domestic product")
GDPPC = Term("GDPPC", "GDP per capita")
GDP_CONST = Term("GDP_CONST", "gross domestic product constant prices")


def selection(**dimensions):
    return (DatasetSelection("IMF.RES:WEO", tuple(DimensionTerms(k, tuple(v)) for k, v in dimensions.items())),)


def case_result(*turns, match_by="id_and_name"):
    """turns: (user message, target dims, selected dims)."""
    case_turns, turn_results = [], []
    for number, (message, target, selected) in enumerate(turns, start=1):
        case_turns.append(Turn(number, message, Target(indicator_selection=selection(**target))))
        score = score_indicator_selection(selection(**target), selection(**selected), match_by=match_by)
        turn_results.append(TurnResult(number, message, indicator=score))
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
        match_by="id",
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
