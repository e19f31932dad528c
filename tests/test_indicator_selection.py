"""Indicator selection, rule by rule as SPEC.md section 2 states them."""

import pytest

from qareport.kinds.selection_scoring import score_indicator_selection
from qareport.records import DatasetSelection, DimensionTerms, Term, TermMatching

GDP = Term("GDP", "gross domestic product")
GDPPC = Term("GDPPC", "GDP per capita")
GDP_CONST = Term("GDP_CONST", "gross domestic product constant prices")
MEX = Term("MEX", "Mexico")
DEU = Term("DEU", "Germany")
ANNUAL = Term("A", "Annual")


def selection(dataset_id="IMF.RES:WEO", **dimensions):
    return (DatasetSelection(dataset_id, tuple(DimensionTerms(k, tuple(v)) for k, v in dimensions.items())),)


def test_the_methodology_worked_example_gives_precision_two_thirds_and_recall_one():
    got = score_indicator_selection(selection(INDICATOR=[GDP, GDPPC]), selection(INDICATOR=[GDP, GDPPC, GDP_CONST]))
    (indicator,) = got.dimensions
    assert [t.term.id for t in indicator.true_positives] == ["GDP", "GDPPC"]
    assert [t.term.id for t in indicator.false_positives] == ["GDP_CONST"]
    assert indicator.false_negatives == ()
    assert indicator.precision == pytest.approx(2 / 3)
    assert indicator.recall == 1.0
    assert (got.macro_precision, got.macro_recall) == (pytest.approx(2 / 3), 1.0)


@pytest.mark.parametrize(
    "target, selected, exp_precision, exp_recall",
    [
        # macro = mean over target dimensions
        (dict(INDICATOR=[GDP], COUNTRY=[MEX]), dict(INDICATOR=[GDP], COUNTRY=[DEU]), 0.5, 0.5),
        # a target dimension with nothing selected scores 0.0 / 0.0
        (dict(INDICATOR=[GDP], COUNTRY=[MEX]), dict(INDICATOR=[GDP]), 0.5, 0.5),
        # a dimension not in target does not enter the macro averages
        (dict(INDICATOR=[GDP]), dict(INDICATOR=[GDP], FREQ=[ANNUAL]), 1.0, 1.0),
        # an empty target dimension is the same as an absent one
        (dict(INDICATOR=[GDP], FREQ=[]), dict(INDICATOR=[GDP], FREQ=[ANNUAL]), 1.0, 1.0),
        (dict(INDICATOR=[GDP], FREQ=[]), dict(INDICATOR=[GDP]), 1.0, 1.0),
        # a target with no dimension: recall 1.0; precision 1.0 if nothing selected, else 0.0
        (dict(), dict(), 1.0, 1.0),
        (dict(FREQ=[]), dict(), 1.0, 1.0),
        (dict(), dict(INDICATOR=[GDP]), 0.0, 1.0),
        # nothing selected at all
        (dict(INDICATOR=[GDP, GDPPC]), dict(), 0.0, 0.0),
    ],
)
def test_macro_precision_and_recall_of_a_turn(target, selected, exp_precision, exp_recall):
    got = score_indicator_selection(selection(**target), selection(**selected))
    assert got.macro_precision == pytest.approx(exp_precision)
    assert got.macro_recall == pytest.approx(exp_recall)


def test_a_selected_dimension_absent_from_the_target_is_all_false_positives_listed_apart():
    got = score_indicator_selection(selection(INDICATOR=[GDP]), selection(INDICATOR=[GDP], FREQ=[ANNUAL]))
    assert [d.dimension_name for d in got.dimensions] == ["INDICATOR"]
    (freq,) = got.not_in_target
    assert freq.dimension_name == "FREQ" and not freq.in_target
    assert [(t.term.id, t.verdict) for t in freq.false_positives] == [("A", "not in target")]


def test_terms_of_all_datasets_are_pooled_per_dimension():
    target = (
        DatasetSelection("IMF.RES:WEO", (DimensionTerms("COUNTRY", (MEX,)),)),
        DatasetSelection("IMF.STA:IFS", (DimensionTerms("COUNTRY", (DEU,)),)),
    )
    got = score_indicator_selection(target, selection(COUNTRY=[MEX, DEU]))
    (country,) = got.dimensions
    assert len(country.true_positives) == 2 and got.macro_recall == 1.0


def test_by_default_a_term_is_its_id_and_name_together():
    relabelled = Term("MEX", "Mexico, United Mexican States")
    got = score_indicator_selection(selection(COUNTRY=[MEX]), selection(COUNTRY=[relabelled]))
    (country,) = got.dimensions
    assert [t.term for t in country.false_negatives] == [MEX]
    assert [t.term for t in country.false_positives] == [relabelled]
    assert got.macro_recall == 0.0


def test_matching_by_id_alone_keeps_the_label_difference():
    relabelled = Term("MEX", "Mexico, United Mexican States")
    got = score_indicator_selection(selection(COUNTRY=[MEX]), selection(COUNTRY=[relabelled]), match_terms_by=TermMatching.ID)
    (country,) = got.dimensions
    (tp,) = country.true_positives
    assert tp.term == MEX and tp.selected_name == "Mexico, United Mexican States" and tp.label_differs
    assert (got.macro_precision, got.macro_recall) == (1.0, 1.0)


def test_dataset_ids_are_shown_and_a_mismatch_flagged_but_do_not_enter_the_metrics():
    got = score_indicator_selection(selection(INDICATOR=[GDP]), selection("IMF.STA:IFS", INDICATOR=[GDP]))
    assert got.target_datasets == ("IMF.RES:WEO",) and got.selected_datasets == ("IMF.STA:IFS",)
    assert got.dataset_mismatch
    assert (got.macro_precision, got.macro_recall) == (1.0, 1.0)


def test_no_selection_at_all_is_the_same_as_an_empty_one():
    assert score_indicator_selection(selection(INDICATOR=[GDP]), None).macro_recall == 0.0
