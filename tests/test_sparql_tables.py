"""SPARQL result comparison: graphrag-eval 5.2's verdicts, without its factorial search.

The rules are tables of (reference, actual, required columns, options) -> verdict. A property test
checks the fast search against the plain search over every ordered choice of actual columns that
graphrag-eval does, written below with rows as tuples (qareport's two deliberate differences).
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qareport.kinds.steps.sparql_cells import UNBOUND, parse_sparql_term
from qareport.kinds.steps.tables import SparqlResultError, compare_sparql_results

XSD = "http://www.w3.org/2001/XMLSchema#"


def lit(value, datatype=None):
    term = {"type": "literal", "value": value}
    if datatype:
        term["datatype"] = XSD + datatype
    return term


def uri(value):
    return {"type": "uri", "value": value}


def table(variables, *rows):
    """A SPARQL JSON result; a row is a tuple of terms (None: unbound) in `variables` order."""
    bindings = [
        {var: term for var, term in zip(variables, row) if term is not None} for row in rows
    ]
    return {"head": {"vars": list(variables)}, "results": {"bindings": bindings}}


def verdict(reference, actual, required, **options):
    return compare_sparql_results(reference, actual, required, **options)


# --- reading terms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "exp"),
    [
        pytest.param(lit("42", "integer"), 42, id="xsd:integer -> int"),
        pytest.param(lit("007", "int"), 7, id="xsd:int with leading zeros"),
        pytest.param(lit("-3", "long"), -3, id="xsd:long"),
        pytest.param(lit("5", "unsignedByte"), 5, id="xsd:unsignedByte"),
        pytest.param(lit("4.2", "integer"), "4.2", id="integer that does not parse keeps its text"),
        pytest.param(lit("2.718281828", "double"), 2.71828, id="xsd:double truncated to 5 decimals"),
        pytest.param(lit("0.999999", "decimal"), 0.99999, id="truncated, not rounded"),
        pytest.param(lit("-1.234567", "float"), -1.23456, id="truncation goes towards zero"),
        pytest.param(lit("1", "decimal"), 1.0, id="xsd:decimal -> float"),
        pytest.param(lit("abc", "double"), "abc", id="double that does not parse keeps its text"),
        pytest.param(lit("true", "boolean"), True, id="boolean true"),
        pytest.param(lit("TRUE", "boolean"), True, id="boolean is case-insensitive"),
        pytest.param(lit("1", "boolean"), True, id="boolean 1"),
        pytest.param(lit("false", "boolean"), False, id="boolean false"),
        pytest.param(lit("yes", "boolean"), False, id="boolean other text"),
        pytest.param(lit("2024-05-21", "date"), "2024-05-21", id="other datatypes keep their text"),
        pytest.param({"type": "typed-literal", "datatype": XSD + "integer", "value": "3"}, 3, id="typed-literal"),
        pytest.param({"type": "literal", "value": "Oslo", "xml:lang": "no"}, "Oslo", id="language-tagged literal"),
        pytest.param(uri("urn:x"), "urn:x", id="uri"),
        pytest.param({"type": "bnode", "value": "b0"}, "b0", id="blank node"),
        pytest.param({"type": "literal"}, None, id="term without value"),
        pytest.param("plain", "plain", id="a non-object term is itself"),
    ],
)
def test_parse_sparql_term(term, exp):
    got = parse_sparql_term(term)
    assert got == exp and type(got) is type(exp)


@pytest.mark.parametrize(
    ("reference_term", "actual_term", "exp"),
    [
        pytest.param(lit("1", "integer"), lit("01", "integer"), 1.0, id="integers by value"),
        pytest.param(lit("1", "integer"), lit("1"), 1.0, id="integer 1 prints as the plain literal 1"),
        pytest.param(lit("1", "integer"), lit("1.0", "decimal"), 0.0, id="integer 1 is not decimal 1.0"),
        pytest.param(lit("1", "decimal"), lit("1.0"), 1.0, id="decimal 1 prints as the plain literal 1.0"),
        pytest.param(lit("1", "decimal"), lit("1.000001", "double"), 1.0, id="equal after truncation"),
        pytest.param(lit("2.71828", "double"), lit("2.718281828", "double"), 1.0, id="5 decimals"),
        pytest.param(lit("2.71828", "double"), lit("2.71829", "double"), 0.0, id="differ in the 5th decimal"),
        pytest.param(lit("0.1", "float"), lit("0.1", "double"), 1.0, id="float and double alike"),
        pytest.param(lit("true", "boolean"), lit("1", "boolean"), 1.0, id="booleans by value"),
        pytest.param(lit("true", "boolean"), lit("True"), 1.0, id="boolean true prints as True"),
        pytest.param(lit("true", "boolean"), lit("true"), 0.0, id="but not as true"),
        pytest.param(uri("urn:a"), lit("urn:a"), 1.0, id="a uri equals a literal with the same text"),
        pytest.param(lit("a"), lit("A"), 0.0, id="case matters"),
        pytest.param(lit("OSLO    T1"), lit("OSLO T1"), 0.0, id="spaces matter"),
    ],
)
def test_cells_compare_by_the_text_graphrag_eval_prints(reference_term, actual_term, exp):
    reference = table(["x"], (reference_term,))
    actual = table(["y"], (actual_term,))
    assert verdict(reference, actual, ["x"]) == exp


# --- the rules -----------------------------------------------------------------------------------

A, B, C, D = lit("a"), lit("b"), lit("c"), lit("d")
REFERENCE = table(["s", "n"], (uri("u1"), A), (uri("u2"), B))


@pytest.mark.parametrize(
    ("reference", "actual", "required", "options", "exp"),
    [
        pytest.param(REFERENCE, REFERENCE, ["s", "n"], {}, 1.0, id="identical"),
        pytest.param(REFERENCE, table(["n", "s"], (A, uri("u1")), (B, uri("u2"))), ["s", "n"], {}, 1.0,
                     id="columns permuted"),
        pytest.param(REFERENCE, table(["x", "y"], (uri("u1"), A), (uri("u2"), B)), ["s", "n"], {}, 1.0,
                     id="columns renamed"),
        pytest.param(REFERENCE, table(["z", "y", "w", "x"], (C, A, D, uri("u1")), (D, B, C, uri("u2"))),
                     ["s", "n"], {}, 1.0, id="extra actual columns"),
        pytest.param(REFERENCE, table(["s"], (uri("u1"),), (uri("u2"),)), ["s", "n"], {}, 0.0,
                     id="a required column missing"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), A)), ["s", "n"], {}, 0.0, id="a row missing"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), A), (uri("u2"), B), (uri("u3"), C)),
                     ["s", "n"], {}, 0.0, id="an extra row"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), B), (uri("u2"), A)), ["s", "n"], {}, 0.0,
                     id="same columns as sets, rows paired differently"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), A), (uri("u2"), B)), ["s"], {}, 1.0,
                     id="only the required columns count"),
        pytest.param(table(["s", "n"], (uri("u1"), A), (uri("u2"), B)), table(["s"], (uri("u1"),), (uri("u2"),)),
                     ["s"], {}, 1.0, id="reference columns that are not required are ignored"),
        # order
        pytest.param(REFERENCE, table(["s", "n"], (uri("u2"), B), (uri("u1"), A)), ["s", "n"], {}, 1.0,
                     id="unordered: row order does not matter"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u2"), B), (uri("u1"), A)), ["s", "n"],
                     {"ordered": True}, 0.0, id="ordered: row order matters"),
        pytest.param(REFERENCE, table(["n", "s"], (A, uri("u1")), (B, uri("u2"))), ["s", "n"],
                     {"ordered": True}, 1.0, id="ordered: columns may still be permuted"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), A), (uri("u2"), B), (uri("u2"), B)), ["s", "n"],
                     {"ordered": True}, 0.0, id="ordered: duplicates count"),
        # duplicates
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), A), (uri("u2"), B), (uri("u2"), B)), ["s", "n"],
                     {}, 1.0, id="set: a duplicate row does not matter"),
        pytest.param(REFERENCE, table(["s", "n"], (uri("u1"), A), (uri("u2"), B), (uri("u2"), B)), ["s", "n"],
                     {"ignore_duplicates": False}, 0.0, id="multiset: a duplicate row matters"),
        pytest.param(table(["s"], (A,), (A,), (B,)), table(["s"], (B,), (A,), (A,)), ["s"],
                     {"ignore_duplicates": False}, 1.0, id="multiset: same counts in another order"),
        pytest.param(table(["s"], (A,), (A,), (B,)), table(["s"], (B,), (B,), (A,)), ["s"],
                     {"ignore_duplicates": False}, 0.0, id="multiset: other counts"),
        pytest.param(table(["s"], (A,), (A,), (B,)), table(["s"], (B,), (B,), (A,)), ["s"], {}, 1.0,
                     id="set: counts do not matter"),
        # unbound
        pytest.param(table(["s", "o"], (A, None), (B, C)), table(["o", "s"], (None, A), (C, B)), ["s", "o"], {}, 1.0,
                     id="unbound equals unbound"),
        pytest.param(table(["s", "o"], (A, None)), table(["s", "o"], (A, C)), ["s", "o"], {}, 0.0,
                     id="unbound is not a value"),
        pytest.param(table(["s"], (A,)), table(["s"], (A,)), ["s", "s"], {}, 0.0,
                     id="a column required twice needs two actual columns"),
        pytest.param(table(["s"], (A,)), {"head": {"vars": ["x", "y"]}, "results": {"bindings": [{"x": A, "y": A}]}},
                     ["s", "s"], {}, 1.0, id="a column required twice, two equal actual columns"),
    ],
)
def test_select_results(reference, actual, required, options, exp):
    assert verdict(reference, actual, required, **options) == exp


EMPTY = table(["s", "n"])


@pytest.mark.parametrize(
    ("reference", "actual", "required", "exp"),
    [
        pytest.param({"head": {}, "boolean": True}, {"head": {}, "boolean": True}, [], 1.0, id="ASK equal"),
        pytest.param({"head": {}, "boolean": True}, {"head": {}, "boolean": False}, [], 0.0, id="ASK differs"),
        pytest.param({"boolean": False}, {"boolean": False}, ["ignored"], 1.0, id="ASK ignores required columns"),
        pytest.param({"boolean": True}, {"boolean": 1}, [], 1.0, id="ASK compares like Python (True == 1)"),
        pytest.param({"boolean": True}, REFERENCE, [], 0.0, id="ASK against a SELECT result"),
        pytest.param(REFERENCE, "@prefix ex: <http://example.com/> .\nex:a ex:b ex:c .", ["s"], 0.0,
                     id="Turtle (DESCRIBE / CONSTRUCT) never matches"),
        pytest.param({"boolean": True}, "true", [], 0.0, id="a string never matches, even for ASK"),
        pytest.param(EMPTY, EMPTY, ["s", "n"], 1.0, id="both empty, enough actual variables"),
        pytest.param(EMPTY, table(["s"]), ["s", "n"], 0.0, id="both empty, too few actual variables"),
        pytest.param(EMPTY, {"head": {"vars": ["a", "b"]}}, ["s", "n"], 1.0, id="actual without results is empty"),
        pytest.param(EMPTY, REFERENCE, ["s"], 0.0, id="reference empty, actual not"),
        pytest.param(REFERENCE, EMPTY, ["s"], 0.0, id="actual empty, reference not"),
        pytest.param(REFERENCE, table(["s"], (uri("u1"),), (uri("u2"),)), ["s", "n"], 0.0,
                     id="more required columns than actual variables"),
        pytest.param(REFERENCE, table(["x"], (C,)), [], 1.0, id="no required column"),
        pytest.param(REFERENCE, {"results": {"bindings": []}}, ["s"], 0.0, id="actual without head"),
        pytest.param(REFERENCE, ["not", "a", "result"], ["s"], 0.0, id="actual not an object"),
        pytest.param(REFERENCE, {"head": {"vars": ["s"]}, "results": {"bindings": [["u1"]]}}, ["s"], 0.0,
                     id="actual bindings not objects"),
    ],
)
def test_special_cases(reference, actual, required, exp):
    assert verdict(reference, actual, required) == exp


@pytest.mark.parametrize(
    ("reference", "required"),
    [
        pytest.param({"head": {"vars": ["s"]}}, ["s"], id="reference without results"),
        pytest.param({"head": {}, "results": {}}, ["s"], id="reference without bindings"),
        pytest.param([1, 2], ["s"], id="reference not an object"),
        pytest.param(REFERENCE, "sn", id="required columns as one string"),
        pytest.param(REFERENCE, None, id="required columns missing"),
        pytest.param({"head": {}, "results": {"bindings": ["s"]}}, ["s"], id="reference bindings not objects"),
    ],
)
def test_malformed_reference_raises(reference, required):
    with pytest.raises(SparqlResultError):
        verdict(reference, REFERENCE, required)


# --- the deliberate differences from graphrag-eval ---------------------------------------------------


def test_rows_compare_as_tuples_not_as_joined_text():
    # graphrag-eval joins "ab" + "c" and "a" + "bc" into the same "abc" and calls these equal
    reference = table(["x", "y"], (lit("ab"), lit("c")))
    actual = table(["x", "y"], (lit("a"), lit("bc")))
    assert verdict(reference, actual, ["x", "y"]) == 0.0


def test_unbound_never_equals_the_text_none():
    # graphrag-eval prints an unbound cell as "None", equal to the literal "None"
    reference = table(["x"], (None,))
    actual = table(["x"], (lit("None"),))
    assert verdict(reference, actual, ["x"]) == 0.0
    assert verdict(actual, reference, ["x"]) == 0.0


# --- the fast search against the plain one ---------------------------------------------------------

# (term, text): the text a cell is compared by, written out independently of the module
POOL = [
    (lit("a"), "a"),
    (uri("a"), "a"),
    (lit("b"), "b"),
    (lit("1"), "1"),
    (lit("01", "integer"), "1"),
    (lit("1", "decimal"), "1.0"),
    (lit("1.0000001", "double"), "1.0"),
    (lit("1", "boolean"), "True"),
    (lit("True"), "True"),
    (lit("None"), "None"),
    (None, UNBOUND),
]


def brute_force(reference_rows, actual_rows, n_required, n_actual, *, ordered, ignore_duplicates):
    """graphrag-eval's search over every ordered choice of actual columns, with tuple rows.
    Rows are lists of POOL indices; the special cases are those of the module docstring."""
    if not actual_rows and not reference_rows:
        return float(n_actual >= n_required)
    if not actual_rows or not reference_rows:
        return 0.0
    if n_required > n_actual:
        return 0.0
    if n_required == 0:
        return 1.0

    def text(index):
        return POOL[index][1]

    expected = [tuple(text(row[i]) for i in range(n_required)) for row in reference_rows]
    for columns in itertools.permutations(range(n_actual), n_required):
        got = [tuple(text(row[j]) for j in columns) for row in actual_rows]
        if ordered:
            same = got == expected
        elif ignore_duplicates:
            same = set(got) == set(expected)
        else:
            same = Counter(got) == Counter(expected)
        if same:
            return 1.0
    return 0.0


def as_result(prefix, n_columns, rows):
    variables = [f"{prefix}{i}" for i in range(n_columns)]
    bindings = [
        {var: dict(POOL[index][0]) for var, index in zip(variables, row) if POOL[index][0] is not None}
        for row in rows
    ]
    return variables, {"head": {"vars": variables}, "results": {"bindings": bindings}}


@st.composite
def table_pairs(draw):
    """A reference table and an actual table that often hold the same rows under some mapping."""
    pool = draw(st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=4, unique=True))
    cell = st.sampled_from(pool)
    n_required = draw(st.integers(0, 3))
    n_actual = draw(st.integers(0, 5))
    reference_rows = draw(st.lists(st.lists(cell, min_size=n_required, max_size=n_required), max_size=5))
    if n_actual >= n_required and draw(st.booleans()):
        mapping = draw(st.permutations(range(n_actual)))[:n_required]
        actual_rows = []
        for row in reference_rows:
            new = [draw(cell) for _ in range(n_actual)]
            for i, j in enumerate(mapping):
                new[j] = row[i]
            actual_rows.append(new)
        edit = draw(st.sampled_from(["none", "shuffle", "duplicate", "drop", "change"]))
        if edit == "shuffle":
            actual_rows = draw(st.permutations(actual_rows))
        elif edit == "duplicate" and actual_rows:
            actual_rows.append(list(draw(st.sampled_from(actual_rows))))
        elif edit == "drop" and actual_rows:
            actual_rows.pop(draw(st.integers(0, len(actual_rows) - 1)))
        elif edit == "change" and actual_rows and n_actual:
            row = draw(st.sampled_from(actual_rows))
            row[draw(st.integers(0, n_actual - 1))] = draw(st.integers(0, len(POOL) - 1))
    else:
        actual_rows = draw(st.lists(st.lists(cell, min_size=n_actual, max_size=n_actual), max_size=5))
    return n_required, n_actual, reference_rows, actual_rows


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table_pairs(), st.booleans(), st.booleans())
def test_fast_search_agrees_with_brute_force(tables, ordered, ignore_duplicates):
    n_required, n_actual, reference_rows, actual_rows = tables
    required, reference = as_result("r", n_required, reference_rows)
    _, actual = as_result("a", n_actual, actual_rows)
    exp = brute_force(
        reference_rows, actual_rows, n_required, n_actual, ordered=ordered, ignore_duplicates=ignore_duplicates
    )
    got = verdict(reference, actual, required, ordered=ordered, ignore_duplicates=ignore_duplicates)
    assert got == exp


@settings(max_examples=100, deadline=None)
@given(table_pairs(), st.randoms(use_true_random=False))
def test_verdict_does_not_depend_on_actual_column_order_or_names(tables, rnd):
    n_required, n_actual, reference_rows, actual_rows = tables
    required, reference = as_result("r", n_required, reference_rows)
    _, actual = as_result("a", n_actual, actual_rows)
    shuffled = dict(actual, head={"vars": rnd.sample(actual["head"]["vars"], n_actual)})
    renamed_vars = {var: f"z{var}" for var in actual["head"]["vars"]}
    renamed = {
        "head": {"vars": [renamed_vars[v] for v in actual["head"]["vars"]]},
        "results": {"bindings": [{renamed_vars[k]: v for k, v in b.items()} for b in actual["results"]["bindings"]]},
    }
    exp = verdict(reference, actual, required)
    assert verdict(reference, shuffled, required) == exp
    assert verdict(reference, renamed, required) == exp


# --- no factorial blow-up ---------------------------------------------------------------------------


def realistic_table(rng, rows):
    """Ten columns like a knowledge-graph query returns: IRIs, names, numbers, flags, codes."""
    kinds = ["uri", "name", "int", "double", "bool", "code", "uri", "name", "int", "code"]
    columns = []
    for kind in kinds:
        if kind == "uri":
            columns.append([uri(f"urn:uuid:{rng.getrandbits(64):016x}") for _ in range(rows)])
        elif kind == "name":
            columns.append([lit(f"SUBSTATION {rng.randrange(400)}") for _ in range(rows)])
        elif kind == "int":
            columns.append([lit(str(rng.randrange(50)), "integer") for _ in range(rows)])
        elif kind == "double":
            columns.append([lit(f"{rng.random():.7f}", "double") for _ in range(rows)])
        elif kind == "bool":
            columns.append([lit(rng.choice(["true", "false"]), "boolean") for _ in range(rows)])
        else:
            columns.append([lit(rng.choice("ABCDE")) for _ in range(rows)])
    return columns


@pytest.mark.parametrize("options", [{}, {"ignore_duplicates": False}, {"ordered": True}])
@pytest.mark.parametrize("spoil", [False, True], ids=["matching", "one cell changed"])
def test_six_of_ten_columns_on_a_thousand_rows_well_under_a_second(options, spoil):
    rng = random.Random(11)
    columns = realistic_table(rng, 1000)
    reference = table([f"c{i}" for i in range(10)], *zip(*columns))
    required = [f"c{i}" for i in (9, 4, 5, 0, 3, 7)]  # codes, flags and numbers among them
    order = list(range(10))
    rng.shuffle(order)
    rows = list(zip(*[columns[i] for i in order]))
    if not options.get("ordered"):
        rng.shuffle(rows)
    if spoil:
        rows[500] = (lit("spoiled"), *rows[500][1:])
    actual = table([f"a{i}" for i in range(10)], *rows)
    start = time.perf_counter()
    got = verdict(reference, actual, required, **options)
    elapsed = time.perf_counter() - start
    spoiled_column = order[0]
    exp = 0.0 if spoil and f"c{spoiled_column}" in required else 1.0
    assert got == exp
    assert elapsed < 0.5
