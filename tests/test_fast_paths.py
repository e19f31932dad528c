"""Work done once, or skipped, for speed gives what the plain way gives.

Each shortcut of the evaluation and the report is checked here against the plain computation it
replaces, on generated suites (`benchmarks/synthetic_suite.py`, `benchmarks/ge6_suite.py`) and on
values drawn by hypothesis.
"""

from __future__ import annotations

import gc
import json
import sys
from dataclasses import replace

import pytest
from conftest import REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qareport import aggregates
from qareport.collector import run_scope
from qareport.evaluation import evaluate_suite
from qareport.evaluation_options import EvaluationOptions
from qareport.kinds.steps import KIND_NAME, column_mapping, sparql_cells, step_shapes, turn_verdicts
from qareport.kinds.steps.outcome import StepsOutcome
from qareport.kinds.steps.parsed_outputs import question_scope
from qareport.loading import load_suite
from qareport.workbook import cells, styles

sys.path.insert(0, str(REPO / "benchmarks"))
import ge6_suite
import synthetic_suite


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Two generated Q&A suites on disk: graphrag-eval 5.x's shapes and 6.x's step kinds."""
    folder = tmp_path_factory.mktemp("generated")
    synthetic_suite.write_suite(folder / "qa5", 150, 4)
    ge6_suite.write_suite(folder / "qa6", 150, 12)
    return folder


@pytest.mark.parametrize(("suite", "semantics"), [("qa5", 5), ("qa5", 6), ("qa6", 5), ("qa6", 6)])
def test_the_verdicts_kept_with_an_evaluation_are_those_worked_out_on_demand(generated, suite, semantics):
    loaded = load_suite([generated / suite / "testcases"], [generated / suite / "responses"])
    results = evaluate_suite(loaded, options=EvaluationOptions(steps_semantics=semantics)).results
    kept = 0
    for result in results:
        for turn in result.turns:
            outcome = turn.scores.get(KIND_NAME)
            if not isinstance(outcome, StepsOutcome):
                continue
            on_demand = turn_verdicts(replace(turn, scores={**turn.scores, KIND_NAME: replace(outcome, verdicts=None)}))
            assert outcome.verdicts == on_demand
            kept += outcome.verdicts is not None
    assert kept > 100


@pytest.mark.parametrize(("suite", "semantics"), [("qa5", 5), ("qa6", 6)])
def test_scoring_makes_no_reference_cycles_so_the_collector_can_rest(generated, suite, semantics):
    loaded = load_suite([generated / suite / "testcases"], [generated / suite / "responses"])
    gc.collect()
    gc.disable()
    try:
        evaluation = evaluate_suite(loaded, options=EvaluationOptions(steps_semantics=semantics))
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert any(turn.qa.value("steps_score") is not None for r in evaluation.results for turn in r.turns if turn.qa)


def test_a_run_sets_its_loaded_data_aside_from_the_collector_until_it_ends(generated):
    paths = ([generated / "qa5" / "testcases"], [generated / "qa5" / "responses"])
    at_start = gc.get_freeze_count()  # not 0 on every interpreter: 3.12.1 starts with a few hundred
    load_suite(*paths)
    assert gc.get_freeze_count() == at_start  # outside a run, nothing is set aside
    with run_scope():
        suite = load_suite(*paths)
        assert gc.get_freeze_count() > at_start + len(suite.cases)
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # the end of the run puts everything back


# --- SPARQL columns -------------------------------------------------------------------------------

XSD = "http://www.w3.org/2001/XMLSchema#"
_texts = st.sampled_from(["1", "01", "-0", "2.5", "2.718281828", "1e400", "-INF", "NaN", "true", "TRUE", "0",
                          "x", "", " 7 ", "١٢"])
_terms = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=3),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["uri", "literal", "typed-literal", "bnode", None]) | st.just(["literal"]),
            "datatype": st.sampled_from([XSD + "integer", XSD + "double", XSD + "decimal", XSD + "boolean",
                                         XSD + "date", "", None]) | st.integers(),
            "value": _texts | st.none() | st.integers() | st.floats(allow_nan=False),
        },
    ),
)
_bindings = st.lists(
    st.one_of(st.dictionaries(st.sampled_from(["a", "b"]), _terms, max_size=2), st.lists(st.just("a"), max_size=1)),
    max_size=6,
)
_uniform = st.lists(  # columns of one kind of term, as nearly all are, some cells unbound
    st.fixed_dictionaries({"a": st.fixed_dictionaries({"type": st.just("literal"), "datatype": st.just(XSD + "double"),
                                                       "value": _texts})}) | st.just({}),
    max_size=6,
)


def _cells_or_error(read, var, bindings):
    try:
        return [(type(cell), cell) for cell in read(var, bindings)]
    except Exception as error:  # noqa: BLE001 - the error itself is what is compared
        return (type(error), str(error))


@settings(max_examples=400, deadline=None)
@given(bindings=_bindings | _uniform, var=st.sampled_from(["a", "b"]))
def test_a_column_read_whole_is_the_column_read_cell_by_cell(bindings, var):
    assert _cells_or_error(sparql_cells._read_column, var, bindings) == _cells_or_error(sparql_cells._read_cells, var, bindings)
    whole = sparql_cells._read_uniform_column(var, bindings)  # short columns are read cell by cell: ask it directly
    if whole is not None:
        assert _cells_or_error(lambda *_: whole, var, bindings) == _cells_or_error(sparql_cells._read_cells, var, bindings)


@settings(max_examples=100, deadline=None)
@given(bindings=_uniform, var=st.just("a"), copies=st.integers(min_value=2, max_value=4))
def test_a_long_column_read_whole_is_the_column_read_cell_by_cell(bindings, var, copies):
    longer = bindings * copies  # beyond SHORT_COLUMN rows, where `_read_column` reads the whole column
    assert _cells_or_error(sparql_cells._read_column, var, longer) == _cells_or_error(sparql_cells._read_cells, var, longer)


def test_a_column_kept_for_a_question_is_never_another_lists():
    with question_scope():
        first = [{"a": {"type": "uri", "value": "u1"}}]
        assert sparql_cells._column("a", first) == ("u1",)
        del first  # the scope still holds it: no new list can take its id
        second = [{"a": {"type": "uri", "value": "u2"}}]
        assert sparql_cells._column("a", second) == ("u2",)
        assert sparql_cells._column("a", second) is sparql_cells._column("a", second)
    assert sparql_cells._column("a", second) is not sparql_cells._column("a", second)  # outside a scope: read again


def test_the_columns_of_a_result_read_together_are_those_read_one_by_one():
    bindings = [{"a": {"type": "uri", "value": f"u{i}"}, "b": {"type": "literal", "value": str(i)}} for i in range(12)]
    short = bindings[:3]
    for rows in (bindings, short):
        with question_scope():
            together = sparql_cells._columns(["a", "b", "c"], rows)
            assert together == [sparql_cells._read_cells(var, rows) for var in ("a", "b", "c")]
            assert all(column is sparql_cells._column(var, rows) for column, var in zip(together, "abc", strict=True))
        assert sparql_cells._columns(["b", "a"], rows) == [sparql_cells._column("b", rows), sparql_cells._column("a", rows)]


# --- aggregates -----------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, -0, 0.0, -0.0, 0.5, 1, -3, 1e-9]) | st.text(max_size=3)
    | st.sampled_from(["bindings", '"bindings": []', "é"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["bindings", "results", "x"]), inner,
                                                                 max_size=3),
    max_leaves=8,
)
_outputs = st.builds(
    lambda bindings, extra, indent, ascii_only, compact: json.dumps(
        {"head": {"vars": ["s"]}, "results": {"bindings": bindings, **extra}}, indent=indent,
        ensure_ascii=ascii_only, separators=(",", ":") if compact else None),
    _json_values, st.dictionaries(st.sampled_from(["bindings", "x"]), _json_values, max_size=1),
    st.sampled_from([None, 0, 2]), st.booleans(), st.booleans(),
)
_fragments = st.lists(st.sampled_from(['"bindings"', ":", " ", "\n", "[", "]", "{", "}", '"', "0", "-0", "0.0", "1",
                                       "null", "false", "true", ",", '"results"', "\\u0062", "\\"]), max_size=14).map("".join)
_duplicates = st.sampled_from([  # the last of two equal keys counts
    '{"results": {"bindings": [], "bindings": [1]}}', '{"results": {"bindings": [1], "bindings": []}}',
    '{"results": {"bindings": [1]}, "results": {"bindings": {}}}', '{"results": {"\\u0062indings": []}}',
])


@settings(max_examples=600, deadline=None)
@given(text=_outputs | _fragments | _duplicates)
def test_an_output_read_for_empty_bindings_without_parsing_counts_as_one_parsed(text):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aggregates, "_may_have_empty_bindings", lambda text: True)
        parsed_each_time = aggregates._has_empty_bindings({"output": text})
    assert aggregates._has_empty_bindings({"output": text}) == parsed_each_time


# --- the Overview's cells ---------------------------------------------------------------------------

_lines = st.lists(st.sampled_from(["a", "bb", "word", "longerword", "x" * 23, "", " "]), max_size=14).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(line=_lines, per_line=st.integers(1, 40))
def test_a_line_no_longer_than_the_cell_is_wide_takes_one_line(line, per_line):
    if len(line) <= per_line:
        assert styles.wrapped_lines(line, per_line) == 1


@settings(max_examples=400, deadline=None)
@given(kind=st.sampled_from(["literal", "typed-literal", "uri", "bnode", None, 3]),
       datatype=st.sampled_from([XSD + "integer", XSD + "int", XSD + "double", XSD + "float", XSD + "decimal",
                                 XSD + "boolean", XSD + "date", ""]),
       value=_texts | st.text(max_size=6) | st.from_regex(r"-?[0-9]{0,3}(\.[0-9]{0,8})?([eE][+-]?[0-9]{1,3})?", fullmatch=True))
def test_a_typed_value_converted_for_a_whole_column_is_the_cell_of_its_term(kind, datatype, value):
    got = sparql_cells.typed_text_converter(kind, datatype)(value)
    exp = sparql_cells.cell_key({"type": kind, "datatype": datatype, "value": value})
    assert (type(got), got) == (type(exp), exp)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=8) | st.sampled_from(["\ud800", "\ufffe", "\uffff", "a\x0bb", "\x1f", "\t\n"]))
def test_a_printable_text_needs_no_cleaning(text):
    assert cells.clean_text(text) == cells._UNWRITABLE.sub(cells.REPLACEMENT, text)


@pytest.mark.parametrize("semantics", [5, 6])
@pytest.mark.parametrize("make_suite", [lambda: synthetic_suite.generate_suite(150, 4, widths="ordinary"),
                                        lambda: ge6_suite.generate_ge6_suite(150, 12)])
def test_the_step_kind_kept_for_a_pair_is_the_one_the_kinds_choose_when_asked(make_suite, semantics):
    from qareport.kinds.steps import registry

    reference_qas, responses = make_suite()
    records = responses.values() if isinstance(responses, dict) else responses
    actual_steps = [step for response in records for step in response.get("actual_steps") or []]
    references = [step for template in reference_qas for question in template["questions"]
                  for group in question.get("reference_steps") or [] for step in group]
    # a step each kind applies to, with and without an output, whatever the suites hold
    references += [{"name": name, "output_media_type": media, **output} for name in
                   ("sparql_query", "retrieval", "retrieve_time_series", "retrieve_data_points", "iri_discovery", "x")
                   for media in (None, "application/json", "application/sparql-results+json")
                   for output in ({}, {"output": "[]"})]
    registry._CHOSEN.clear()
    asked = 0
    for reference in references[:400]:
        for actual in actual_steps[:60]:
            kept = registry.step_kind_for(reference, actual, semantics=semantics)
            assert kept is registry.ask_step_kinds(reference, actual, semantics=semantics)
            assert registry.step_kind_for(reference, actual, semantics=semantics) is kept  # now from _CHOSEN
            asked += 1
    assert asked > 1000 and len(registry._CHOSEN) > 5


_mixed_terms = st.fixed_dictionaries({
    "type": st.sampled_from(["literal", "typed-literal", "uri"]),
    "datatype": st.sampled_from([XSD + "integer", XSD + "double", XSD + "boolean", XSD + "date"]),
    "value": st.sampled_from(["1", "1.0", "true", "2.123456789", "1e999", "x"]),
})


_true = {"type": "literal", "datatype": XSD + "boolean", "value": "true"}


@settings(max_examples=300, deadline=None)
@given(terms=st.lists(_mixed_terms | st.just(None), max_size=8))
@example(terms=[_true, _true, {**_true, "type": "uri"}, {**_true, "datatype": XSD + "date"}])
def test_the_cells_of_a_column_of_mixed_datatypes_are_each_terms_cell(terms):
    """Cells read one by one reuse the typed values of the previous cell's datatype: a column whose
    datatypes change from row to row still gets each term's own cell."""
    sparql_cells._typed_keys.clear()
    bindings = [{} if term is None else {"a": term} for term in terms]
    got = [(type(cell), cell) for cell in sparql_cells._read_cells("a", bindings)]
    expected = [(type(cell), cell) for cell in (sparql_cells.UNBOUND if term is None else sparql_cells.cell_key(term)
                                                for term in terms)]
    assert got == expected


_one_column = st.lists(st.sampled_from(["1", "2", "3"]), min_size=1, max_size=5).map(tuple)


@settings(max_examples=400, deadline=None)
@given(reference=_one_column, actual=st.lists(_one_column, min_size=1, max_size=4),
       mode=st.sampled_from(["ordered", "set", "multiset"]))
def test_one_required_column_matches_as_the_mapping_search_finds(reference, actual, mode):
    width = min(len(column) for column in actual)
    actual = [column[:width] for column in actual]  # the columns of a table are as long as each other
    searched = column_mapping._small_tables_match([reference], actual, mode=mode)
    assert column_mapping.tables_match([reference], actual, mode=mode) is searched


_actual_steps = st.lists(
    st.fixed_dictionaries({}, optional={"name": st.sampled_from(["sparql_query", "now"]) | st.integers() | st.just([]),
                                        "status": st.sampled_from(["success", "error", None, 1])})
    | st.just("a step") | st.just(None),
    max_size=5,
) | st.just("steps") | st.just(None) | st.just(("tuple",))


def _outcome_or_error(function, *arguments):
    try:
        return function(*arguments)
    except Exception as error:  # noqa: BLE001 - the error itself is what is compared
        return (type(error), str(error))


@settings(max_examples=400, deadline=None)
@given(steps=_actual_steps)
def test_the_successful_calls_found_in_one_pass_are_those_the_checks_and_statuses_give(steps):
    def checked_then_listed(steps):
        step_shapes.check_actual_steps(steps)
        return [index for index, step in enumerate(steps) if step["status"] == "success"]

    assert _outcome_or_error(step_shapes.successful_calls, steps) == _outcome_or_error(checked_then_listed, steps)


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.lists(st.fixed_dictionaries({}, optional={"name": st.just("now") | st.integers()})
                                | st.just("step"), max_size=2) | st.just("group"), max_size=3))
def test_reference_groups_accepted_as_they_are_are_those_each_group_check_accepts(groups):
    def each_checked(groups):
        return [step_shapes.checked_group(group, f"group {number}", f"of group {number}")
                for number, group in enumerate(step_shapes.groups_list(groups), start=1)]

    assert _outcome_or_error(step_shapes.all_groups, groups) == _outcome_or_error(each_checked, groups)
