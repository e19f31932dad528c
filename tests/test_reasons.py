"""Each kind says in one line why a case lost points, in the analyst's words."""

from __future__ import annotations

import pytest

from qareport import kinds
from qareport.kinds.answers import ANSWERS
from qareport.kinds.indicator_selection import INDICATOR_SELECTION
from qareport.kinds.selection_scoring import score_indicator_selection
from qareport.kinds.steps import STEPS
from qareport.question_scores import QuestionScores
from qareport.records import (
    CaseResult,
    DatasetSelection,
    DimensionTerms,
    Location,
    Target,
    Term,
    TestCase,
    Turn,
    TurnResult,
)

GDP, GDPPC, GDP_CONST = Term("GDP", "gdp"), Term("GDPPC", "gdp per capita"), Term("GDP_CONST", "gdp constant")
MEX, DEU, ANNUAL = Term("MEX", "Mexico"), Term("DEU", "Germany"), Term("A", "Annual")


def selection(dataset_id="IMF.RES:WEO", **dimensions):
    return (DatasetSelection(dataset_id, tuple(DimensionTerms(k, tuple(v)) for k, v in dimensions.items())),)


def indicator_case(*turns):
    """A case whose turns are (target, selected) pairs, scored as evaluation would."""
    case = TestCase("c1", "conversation", "case", ("imf",),
                    tuple(Turn(i, f"question {i}", Target(parts={"indicator_selection": t})) for i, (t, _) in enumerate(turns, 1)),
                    Location("cases.yaml", 1))
    results = tuple(TurnResult(i, f"question {i}", scores={"indicator_selection": score_indicator_selection(t, s)})
                    for i, (t, s) in enumerate(turns, 1))
    return CaseResult(case, "success", turns=results)


@pytest.mark.parametrize("target, selected, exp", [
    (selection(INDICATOR=[GDP, GDPPC], COUNTRY=[MEX]), selection(INDICATOR=[GDP, GDPPC], COUNTRY=[MEX]), None),
    (selection(INDICATOR=[GDP], COUNTRY=[MEX]), selection(INDICATOR=[GDP, GDP_CONST]),
     "INDICATOR: extra GDP_CONST; COUNTRY: missed MEX"),
    (selection(INDICATOR=[GDP], COUNTRY=[MEX]), selection(INDICATOR=[GDP], COUNTRY=[DEU]),
     "COUNTRY: missed MEX, extra DEU"),
    (selection(INDICATOR=[GDP]), (), "selected nothing"),
    (selection(INDICATOR=[GDP]), selection(INDICATOR=[GDP], FREQ=[ANNUAL]), "FREQ (not in target): A"),
    (selection("IMF.RES:WEO", INDICATOR=[GDP]), selection("IMF.RES:IFS", INDICATOR=[GDP]),
     "dataset IMF.RES:IFS, expected IMF.RES:WEO"),
])
def test_indicator_selection_names_the_lost_and_extra_terms(target, selected, exp):
    assert INDICATOR_SELECTION.explain(indicator_case((target, selected))) == exp


def test_a_multi_turn_case_says_which_turn_lost_points():
    got = INDICATOR_SELECTION.explain(indicator_case(
        (selection(INDICATOR=[GDP]), selection(INDICATOR=[GDP])),
        (selection(COUNTRY=[MEX]), selection(COUNTRY=[DEU])),
    ))
    assert got == "turn 2: COUNTRY: missed MEX, extra DEU"


def qa_case(qa):
    case = TestCase("q1", "qa", "question?", ("template",), (Turn(1, "question?", Target(parts={"reference_answer": "x"})),),
                    Location("qa.yaml", 1))
    return CaseResult(case, "success", turns=(TurnResult(1, "question?", scores={"qa": QuestionScores.from_graphrag_eval(qa)}),))


def test_steps_name_the_reference_steps_no_call_matched():
    qa = {"steps_score": 0.5, "reference_steps": [[{"name": "sparql_query", "matches": "call_1"},
                                                    {"name": "retrieval"}]]}
    assert STEPS.explain(qa_case(qa)) == "no successful call matched retrieval"


def test_steps_that_could_not_be_scored_say_why():
    assert STEPS.explain(qa_case({"steps_error": "'required_columns' must be a list"})) == \
        "steps not scored: 'required_columns' must be a list"


def test_a_full_steps_score_needs_no_reason():
    assert STEPS.explain(qa_case({"steps_score": 1.0, "reference_steps": [[{"name": "x", "matches": "a"}]]})) is None


def test_answers_give_the_f1_and_the_judge_reason():
    qa = {"answer_f1": 0.5, "answer_correctness_reason": "The answer misses OSLO T2.\nMore."}
    assert ANSWERS.explain(qa_case(qa)) == "answer F1 0.50: The answer misses OSLO T2."


def test_a_case_reason_joins_the_reasons_of_its_kinds():
    qa = {"steps_score": 0.0, "reference_steps": [[{"name": "sparql_query"}]], "answer_f1": 0.25}
    assert kinds.catalogue().explain_case(qa_case(qa)) == "no successful call matched sparql_query; answer F1 0.25"
