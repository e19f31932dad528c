"""Does an actual SPARQL result hold the reference result? Pure; no I/O.

`compare_sparql_results` gives the verdict graphrag-eval 5.2 (and 6.6, whose SPARQL comparison is
the same) gives (1.0 or 0.0), without trying
every ordered choice of actual columns as graphrag-eval does (factorial in the number of columns).

How a result is read, as graphrag-eval reads it
-----------------------------------------------
* A term of type `literal` / `typed-literal` with an xsd integer datatype becomes an `int`; with
  xsd decimal, double or float a `float` truncated (not rounded) to 5 decimals; with xsd boolean
  `True` when its text is "true" or "1" (any case), else `False`. A value that does not parse keeps
  its text. Any other term (URI, blank node, plain or language-tagged literal) is its `value` text.
* Cells are then compared by their *text*, `str(value)`, as graphrag-eval does. So a typed value
  equals the plain literal that prints the same: xsd:integer "01" equals the plain literal "1"
  (both print `1`); xsd:decimal "1" prints `1.0` and so equals neither the integer 1 nor the plain
  literal "1"; xsd:double "2.718281828" and "2.71828" are equal (`2.71828`); xsd:boolean "1"
  equals the plain literal "True".
* A variable missing from a binding (unbound), a term that is JSON null and a term without a
  `value` are all *unbound*.

The verdict
-----------
The reference table is its bindings projected on `required_columns`. The actual result matches
when some one-to-one mapping of the required columns onto actual columns makes the actual table,
projected and reordered that way, equal to the reference table: as lists of rows when `ordered`,
else as sets of rows (`ignore_duplicates`, the default) or as multisets of rows. Special cases, in
the order they are decided: an actual result that is a string (DESCRIBE / CONSTRUCT output in
Turtle, not JSON) never matches; an ASK reference (`boolean`) matches an actual result with an
equal `boolean`; both results without bindings match when the actual result has at least as many
variables as there are required columns; one without bindings does not match; more required
columns than actual variables do not match; no required column matches.

Deliberate differences from graphrag-eval 5.2
---------------------------------------------
1. Rows are compared as tuples of cells. graphrag-eval joins the cell texts of a row into one
   string, so there the row ("ab", "c") equals the row ("a", "bc").
2. An unbound cell never equals the literal text "None" (graphrag-eval prints it as `None`).

An actual result that is not shaped like a SPARQL JSON result (where graphrag-eval would raise)
does not match. A malformed *reference* raises `SparqlResultError`: that is a test-case problem,
to be reported, not scored.

How the search stays small
--------------------------
The common question's table (up to six actual columns, with at most 48 mappings of compatible
columns) is decided by trying those mappings one by one. Otherwise:
A mapped column pair must agree on its own: equal sequences (ordered), equal sets of cells (set)
or equal cell counts (multiset). Identical actual columns are interchangeable and are searched
once, with their multiplicity; in set mode duplicate actual rows are dropped first. After a check
that a one-to-one assignment exists at all, a backtracking search assigns the most constrained
required column first and, after each step, compares the tables projected on the columns assigned
so far: a projection of equal row sets (or multisets) is equal, so a failing prefix prunes all of
its extensions, and an actual row with no reference counterpart stops a branch at once. In ordered
mode the column check alone decides. Six required columns out of ten on a thousand rows take a few
milliseconds on realistic data (identifiers, names, numbers); the worst case is still exponential,
reached when many columns have the same few values (set mode, no match: ten random 3-valued columns
take some tenths of a second).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import product, repeat
from typing import Any

from qareport.kinds.steps.parsed_outputs import column_once, columns_once

_XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER_TYPES = frozenset(
    _XSD + name
    for name in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)
XSD_DECIMAL_TYPES = frozenset(_XSD + name for name in ("decimal", "double", "float"))
XSD_BOOLEAN = _XSD + "boolean"
DECIMAL_PLACES = 5  # graphrag-eval 5.x truncates to 5 decimals (its README says 1e-8)


class SparqlResultError(ValueError):
    """The reference result, or its required columns, cannot be read as a SPARQL JSON result."""


class _Unbound:
    """The cell of a variable that has no value in a row."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNBOUND"


UNBOUND = _Unbound()
_MISSING = object()  # an ASK result without "boolean" equals no reference value


def parse_sparql_term(term: Any) -> Any:
    """The Python value graphrag-eval makes of one SPARQL JSON term (see the module docstring).

    Returns None for a term without a value; a non-object term is returned as it is.
    """
    if not isinstance(term, dict):
        return term
    value: Any = term.get("value")
    if term.get("type") not in ("literal", "typed-literal"):
        return value
    datatype = term.get("datatype")
    if not datatype:
        return value
    if datatype in XSD_INTEGER_TYPES:
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError):  # graphrag-eval raises on overflow
            return value
    if datatype in XSD_DECIMAL_TYPES:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return value
        return _truncate(number)
    if datatype == XSD_BOOLEAN:
        # graphrag-eval raises on a non-string boolean; reading its text is the kinder choice
        text = value if isinstance(value, str) else str(value)
        return text.lower() in ("true", "1")
    return value


def _truncate(number: float) -> float:
    """Cut `number` to DECIMAL_PLACES decimals, with the same float arithmetic as graphrag-eval."""
    scaled = number * 10.0**DECIMAL_PLACES
    if not math.isfinite(scaled):
        return number  # graphrag-eval keeps NaN and raises on overflow; keep the number
    return math.trunc(scaled) / 10.0**DECIMAL_PLACES


class _Infinite(str):
    """The text of an infinite typed number: equal to "inf" / "-inf", but known to be one (for the
    note that graphrag-eval would have stopped)."""

    __slots__ = ()
    made = False  # whether one was ever made: until then no column holds one, and no note is looked for

    def __new__(cls, text: str) -> _Infinite:
        _Infinite.made = True
        return super().__new__(cls, text)


_INFINITY, _MINUS_INFINITY = "inf", "-inf"


def cell_key(term: Any) -> Hashable:
    """What a cell is compared by: the text of its value, or UNBOUND."""
    value = parse_sparql_term(term)
    if value is None:
        return UNBOUND
    if type(value) is float and math.isinf(value):
        return _Infinite(str(value))
    return str(value)


def compare_sparql_results(
    reference: dict[str, Any],
    actual: dict[str, Any] | str,
    required_columns: Sequence[str],
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
) -> float:
    """1.0 when `actual` holds the `reference` result on `required_columns`, else 0.0.

    `reference` and `actual` are parsed SPARQL JSON results; `actual` may also be the raw text of a
    non-JSON result (DESCRIBE / CONSTRUCT), which never matches. Raises `SparqlResultError` when
    `reference` or `required_columns` is malformed.
    """
    verdict = compare_tables(reference, actual, required_columns, ordered=ordered,
                             ignore_duplicates=ignore_duplicates)
    return float(verdict.matched)


@dataclass(frozen=True, slots=True)
class TableVerdict:
    """Whether an actual result holds the reference result; why not (when asked); and a note when
    graphrag-eval would have stopped on this input instead of scoring it."""

    matched: bool
    reason: str | None = None
    note: str | None = None


def compare_tables(
    reference: Any,
    actual: Any,
    required_columns: Sequence[str],
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
    explain: bool = False,
) -> TableVerdict:
    """`compare_sparql_results` as a `TableVerdict`: with `explain`, a mismatch says in a few words
    how the actual result differs ("returned other rows (3 of 5 required rows)"); otherwise the reason is
    None. Raises `SparqlResultError` when `reference` or `required_columns` is malformed.
    """
    if isinstance(actual, str):
        return TableVerdict(False, "returned no SPARQL JSON result (not JSON: a DESCRIBE or CONSTRUCT result?)")
    if isinstance(reference, dict) and "boolean" in reference:
        expected = reference["boolean"]
        got = actual.get("boolean", _MISSING) if isinstance(actual, dict) else _MISSING
        if got == expected:
            return TableVerdict(True)
        if got is _MISSING:
            return TableVerdict(False, f"returned no yes/no answer, expected {_json_text(expected)} (an ASK query)")
        return TableVerdict(False, f"answered {_json_text(got)}, expected {_json_text(expected)}")

    reference_bindings = _reference_bindings(reference)
    required = _required_columns(required_columns)
    actual_table = _read_actual(actual)
    if actual_table is None:
        note = None
        if isinstance(actual, dict) and not isinstance(actual.get("head"), dict):
            what = "an ASK answer" if "boolean" in actual else "a result"
            note = (f"the actual output is {what} without a 'head' object, on which graphrag-eval stops; "
                    "scored as no match")
        return TableVerdict(False, "returned something that is not a SPARQL JSON result of rows", note)
    actual_vars, actual_bindings = actual_table

    if not actual_bindings and not reference_bindings:
        if len(actual_vars) >= len(required):
            return TableVerdict(True)
        return TableVerdict(False, f"returned {_count(len(actual_vars), 'column')}, {len(required)} required")
    if not actual_bindings:
        return TableVerdict(False, f"returned no rows ({_count(len(reference_bindings), 'row')} required)")
    if not reference_bindings:
        return TableVerdict(False, f"returned {_count(len(actual_bindings), 'row')}, none expected")
    if len(required) > len(actual_vars):
        return TableVerdict(False, f"returned {_count(len(actual_vars), 'column')}, {len(required)} required")
    if not required:
        return TableVerdict(True)

    try:
        reference_columns = _columns(required, reference_bindings)
    except (TypeError, KeyError, IndexError, AttributeError) as error:
        raise SparqlResultError(f"the reference bindings are not SPARQL JSON terms ({error})") from None
    try:
        actual_columns = _columns(actual_vars, actual_bindings)
    except (TypeError, KeyError, IndexError, AttributeError):
        # graphrag-eval raises here; an unreadable actual result does not match
        return TableVerdict(False, "returned bindings that are not SPARQL JSON terms")
    note = _infinity_note(reference_columns, actual_columns)
    mode = "ordered" if ordered else "set" if ignore_duplicates else "multiset"
    if tables_match(reference_columns, actual_columns, mode=mode):
        return TableVerdict(True, None, note)
    if not explain:
        return TableVerdict(False, None, note)
    why = describe_difference(required, reference_columns, actual_columns, mode=mode, actual_names=actual_vars)
    return TableVerdict(False, why, note)


def _infinity_note(*tables: Sequence[Column]) -> str | None:
    """A note when a typed number is infinite: graphrag-eval stops on it (it cannot truncate it)."""
    if not _Infinite.made:
        return None
    for columns in tables:
        for column in columns:
            if (_INFINITY in column or _MINUS_INFINITY in column) and any(type(c) is _Infinite for c in column):
                return ("a SPARQL result holds an infinite xsd number (INF), on which graphrag-eval stops; "
                        "compared here as the text 'inf'")
    return None


def _json_text(value: Any) -> str:
    return "true" if value is True else "false" if value is False else repr(value)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _reference_bindings(reference: Any) -> list[Any]:
    try:
        bindings = reference["results"]["bindings"]
    except (TypeError, KeyError, IndexError) as error:
        raise SparqlResultError(
            f"the reference output is not a SPARQL JSON result: it has no results.bindings ({error!r})"
        ) from None
    if not bindings:
        return []
    if not isinstance(bindings, list):
        raise SparqlResultError(
            f"the reference results.bindings must be a list (got {type(bindings).__name__})"
        )
    return bindings


def _required_columns(required_columns: Any) -> list[Any]:
    if type(required_columns) is list:
        return required_columns
    if isinstance(required_columns, (str, bytes)) or not isinstance(required_columns, Sequence):
        raise SparqlResultError(
            f"'required_columns' must be a list of column names (got {type(required_columns).__name__}"
            f" {required_columns!r})"
        )
    return list(required_columns)


def _read_actual(actual: Any) -> tuple[list[Any], list[Any]] | None:
    """(variables, bindings) of an actual result, or None when it is not shaped like one."""
    if not isinstance(actual, dict):
        return None
    results = actual.get("results", {})
    head = actual.get("head")
    if not isinstance(results, dict) or not isinstance(head, dict):
        return None
    bindings = results.get("bindings", [])
    variables = head.get("vars", [])
    if not bindings:
        bindings = []
    if not isinstance(bindings, list) or not isinstance(variables, (list, tuple)):
        return None
    return list(variables), bindings


# --- columns ------------------------------------------------------------------------------------------

Cell = Hashable
Column = tuple[Cell, ...]


def _columns(variables: Sequence[Any], bindings: list[Any]) -> list[Column]:
    """`_column` of each of `variables` (a short column read cell by cell without further ado)."""
    return columns_once(bindings, variables, _read_cells if len(bindings) <= SHORT_COLUMN else _read_column)


def _column(var: Any, bindings: list[Any]) -> Column:
    """The cells of `var` down the rows (see `cell_key`), read once per question: a reference
    result is compared with each call, an actual result with each reference step
    (`parsed_outputs.column_once`)."""
    return column_once(bindings, var, _read_column)


SHORT_COLUMN = 8
"""Columns of at most this many rows are read cell by cell: the whole-column reading's passes cost
more than they save on a few cells (the common question's result has one to five rows)."""


def _read_column(var: Any, bindings: list[Any]) -> Column:
    """The cells of `var` down the rows. A longer column of one kind of term, as nearly all are, is
    read a whole column at a time (`_read_uniform_column`); any other cell by cell, with the same cells."""
    if len(bindings) <= SHORT_COLUMN:
        return _read_cells(var, bindings)
    column = _read_uniform_column(var, bindings)
    return _read_cells(var, bindings) if column is None else column


_item, _get = dict.__getitem__, dict.get


def _read_uniform_column(var: Any, bindings: list[Any]) -> Column | None:
    """The column, read by the built-in `map` (a few passes in C instead of a Python loop over the
    cells), when every binding is an object and every term of `var` in them is either unbound
    (missing, or null) or an object with a text `value` and either no datatype or the same text
    datatype and type as every other; else None, for `_read_cells`. `tests/test_fast_paths.py`
    checks that both read the same cells."""
    try:
        terms = list(map(_get, bindings, repeat(var)))  # TypeError: a binding that is not an object
    except TypeError:
        return None
    if None not in terms:
        keys = _uniform_keys(terms)
        return None if keys is None else tuple(keys)
    keys = _uniform_keys([term for term in terms if term is not None])
    if keys is None:
        return None
    bound = iter(keys)
    return tuple([UNBOUND if term is None else next(bound) for term in terms])


def _uniform_keys(terms: list[Any]) -> list[Cell] | None:
    """The cells of bound terms of one kind (see `_read_uniform_column`), else None."""
    try:
        datatypes = set(map(_get, terms, repeat("datatype")))  # TypeError: a term that is not an object
        values = list(map(_item, terms, repeat("value")))  # KeyError: a term without a value
        if set(map(type, values)) != {str}:
            return None
        if datatypes == {None}:
            return values  # URIs and plain literals (a null datatype is none): the cell is the value
        if len(datatypes) != 1:
            return None
        (datatype,) = datatypes
        kinds = set(map(_get, terms, repeat("type")))
    except (TypeError, KeyError):
        return None
    if len(kinds) != 1 or type(datatype) is not str:
        return None
    (kind,) = kinds
    return _typed_keys.keys(kind, datatype, values)


def _read_cells(var: Any, bindings: list[Any]) -> Column:
    """The cells of `var` down the rows, one by one, whatever the bindings hold (see `cell_key`)."""
    cells: list[Cell] = []
    append = cells.append
    typed = _typed_keys.tables
    last_kind: Any = _ABSENT
    last_datatype: Any = _ABSENT
    last_table: dict[str, Hashable] = {}
    for binding in bindings:
        term = binding.get(var, _ABSENT) if type(binding) is dict else (binding[var] if var in binding else _ABSENT)  # noqa: SIM401 - a mapping may have no get()
        if type(term) is dict:
            if "datatype" not in term:  # the common term (a URI, or a plain literal) is its value: no conversion
                value = term.get("value")
                append(value if type(value) is str else UNBOUND if value is None else str(value))
                continue
            datatype = term["datatype"]
            value = term.get("value")
            if type(value) is str and type(datatype) is str:  # typed values repeat: convert each once
                kind = term.get("type")
                if datatype == last_datatype and kind == last_kind:  # a column's cells share them
                    known = last_table.get(value)
                else:
                    try:
                        last_table = typed[(kind, datatype)]
                        last_kind, last_datatype = kind, datatype
                        known = last_table.get(value)
                    except (KeyError, TypeError):  # a kind not met yet, or one that cannot be a key
                        last_kind = last_datatype = _ABSENT
                        known = None
                append(_typed_keys.key(kind, datatype, value) if known is None else known)
                continue
        elif term is _ABSENT:
            append(UNBOUND)
            continue
        append(cell_key(term))
    return tuple(cells)


class _TypedKeys:
    """The cell key of each typed value met, by the term's type and datatype and the value's text:
    the same numbers, dates and booleans recur across rows and outputs, so each is converted once
    per run. At most `KEPT` are kept (all are dropped when that many are)."""

    KEPT = 65536

    def __init__(self) -> None:
        self.tables: dict[tuple[Any, str], dict[str, Hashable]] = {}  # read directly by `_read_cells`
        self._count = 0

    def keys(self, kind: Any, datatype: str, values: list[str]) -> list[Cell]:
        """The keys of text values of terms of this type and datatype, as `cell_key` makes them
        (TypeError when the type cannot be a key)."""
        table = self.tables.get((kind, datatype))
        if table is None:
            table = self.tables[(kind, datatype)] = {}
        keys = list(map(table.get, values))
        if None in keys:  # values not converted yet (a key is never None)
            convert = typed_text_converter(kind, datatype)
            for index, key in enumerate(keys):
                if key is None:
                    if self._count >= self.KEPT:
                        self.clear()
                        self.tables[(kind, datatype)] = table = {}
                    keys[index] = table[values[index]] = convert(values[index])
                    self._count += 1
        return keys

    def key(self, kind: Any, datatype: str, value: str) -> Cell:
        """`keys` of one value (TypeError when the type cannot be a key)."""
        table = self.tables.get((kind, datatype))
        if table is None:
            table = self.tables[(kind, datatype)] = {}
        key = table.get(value)
        if key is None:
            if self._count >= self.KEPT:
                self.clear()
                self.tables[(kind, datatype)] = table = {}
            key = table[value] = typed_text_converter(kind, datatype)(value)
            self._count += 1
        return key

    def clear(self) -> None:
        self.tables.clear()
        self._count = 0


def typed_text_converter(kind: Any, datatype: str) -> Callable[[str], Cell]:
    """What `cell_key` makes of a term of this type and datatype whose value is text, as one
    function chosen once for a whole column (`tests/test_fast_paths.py` checks they agree)."""
    if kind not in ("literal", "typed-literal") or not datatype:
        return _same_text
    if datatype in XSD_INTEGER_TYPES:
        return _integer_text
    if datatype in XSD_DECIMAL_TYPES:
        return _decimal_text
    if datatype == XSD_BOOLEAN:
        return _boolean_text
    return _same_text


def _same_text(value: str) -> Cell:
    return value


def _integer_text(value: str) -> Cell:
    try:
        return str(int(value))
    except (ValueError, OverflowError):  # as `parse_sparql_term`: a value that does not parse stays text
        return value


def _decimal_text(value: str) -> Cell:
    try:
        number = _truncate(float(value))
    except (ValueError, OverflowError):
        return value
    return _Infinite(str(number)) if math.isinf(number) else str(number)


def _boolean_text(value: str) -> Cell:
    return str(value.lower() in ("true", "1"))


_typed_keys = _TypedKeys()
_ABSENT = object()


# --- how two tables differ ----------------------------------------------------------------------


def describe_difference(required: Sequence[Any], reference_columns: Sequence[Column],
                        actual_columns: Sequence[Column], *, mode: str, actual_names: Sequence[Any] = ()) -> str:
    """Why tables that do not match differ, in a few words, for an analyst.

    Each required column is paired with the unused actual column that shares most of its values
    (the columns with most distinct values first); a required column whose values appear in no
    actual column is missing (unless a column of its name holds other values: then no required row is
    there). Under that pairing the rows are counted: how many required rows the
    actual result holds, how many it adds, or, when the rows are the same, that their order or
    their repetitions differ.
    """
    order = sorted(range(len(required)), key=lambda i: -len(set(reference_columns[i])))
    used: set[int] = set()
    chosen: dict[int, int] = {}
    actual_sets = [set(column) for column in actual_columns]
    for position in order:
        values = set(reference_columns[position])
        best, best_overlap = None, 0
        for index, candidate in enumerate(actual_sets):
            if index in used:
                continue
            overlap = len(values & candidate)
            if overlap > best_overlap:
                best, best_overlap = index, overlap
        if best is None:
            if required[position] in actual_names:
                return f"returned other rows (0 of {_count(len(set(zip(*reference_columns))), 'required row')})"
            return f"result lacks required column ?{required[position]}"
        used.add(best)
        chosen[position] = best
    reference_rows = list(zip(*reference_columns))
    actual_rows = list(zip(*(actual_columns[chosen[i]] for i in range(len(required)))))
    wanted, got = set(reference_rows), set(actual_rows)
    found = len(wanted & got)
    if found < len(wanted):
        return f"returned other rows ({found} of {_count(len(wanted), 'required row')})"
    extra = len(got - wanted)
    if extra:
        return f"returned {_count(extra, 'row')} beyond the {_count(len(wanted), 'required row')}"
    if mode == "ordered" and Counter(reference_rows) == Counter(actual_rows):
        return "returned the required rows in another order (the reference is ordered)"
    return (f"returned the required rows, repeated otherwise ({len(actual_rows)} rows, {len(reference_rows)} "
            "required counting repetitions)")


# --- the search ----------------------------------------------------------------------------------


def tables_match(reference_columns: Sequence[Column], actual_columns: Sequence[Column], *, mode: str) -> bool:
    """Is there a one-to-one mapping of reference columns onto actual columns under which the
    tables are equal? `mode` is "ordered" (row lists), "set" (row sets) or "multiset"."""
    if len(reference_columns) == 1:
        return _one_column_match(reference_columns[0], actual_columns, mode=mode)
    if len(actual_columns) <= SMALL_TABLE_COLUMNS:
        found = _small_tables_match(reference_columns, actual_columns, mode=mode)
        if found is not None:
            return found
    signature = _SIGNATURES[mode]
    if mode == "set":
        actual_columns = _without_duplicate_rows(actual_columns)  # duplicates cannot matter
    capacity = Counter(actual_columns)  # identical actual columns are interchangeable
    classes = list(capacity)
    classes_by_signature: dict[Hashable, list[int]] = {}
    for index, column in enumerate(classes):
        classes_by_signature.setdefault(signature(column), []).append(index)

    candidates = []
    for column in reference_columns:
        compatible = classes_by_signature.get(signature(column))
        if not compatible:
            return False
        candidates.append(compatible)
    counts = [capacity[column] for column in classes]
    if not _assignment_exists(candidates, counts):
        return False
    if mode == "ordered":
        return True  # equal row lists <=> every mapped column pair is equal

    # Most constrained column first; among equals, the one with most distinct cells prunes best.
    order = sorted(
        range(len(reference_columns)),
        key=lambda i: (len(candidates[i]), -len(set(reference_columns[i]))),
    )
    multiset = mode == "multiset"
    search = _Search(
        [candidates[position] for position in order],
        _reference_levels([reference_columns[i] for i in order], multiset=multiset),
        classes,
        counts,
        multiset,
    )
    return _extend(search, 0, [0] * len(classes[0]))


@dataclass(frozen=True, slots=True)
class _Search:
    """The state of one search: for each depth, the actual column classes to try and what the
    rows projected so far must reproduce; how many columns of each class are still free."""

    candidates: list[list[int]]  # by depth
    levels: list[tuple[dict[tuple[int, Cell], int], Any]]  # by depth (see `_reference_levels`)
    classes: list[Column]
    counts: list[int]  # free columns by class, changed while searching
    multiset: bool


def _extend(search: _Search, depth: int, actual_rows: list[int]) -> bool:
    """Can the mapping chosen for the first `depth` columns be extended to all of them?
    (A module function rather than a closure calling itself, which would be a reference cycle
    left for the garbage collector after every search.)"""
    if depth == len(search.levels):
        return True
    pair_ids, expected = search.levels[depth]
    counts = search.counts
    for class_index in search.candidates[depth]:
        if not counts[class_index]:
            continue
        next_rows = _project(actual_rows, search.classes[class_index], pair_ids)
        if next_rows is None:
            continue
        if search.multiset:
            if Counter(next_rows) != expected:
                continue
        elif len(set(next_rows)) != expected:
            continue
        counts[class_index] -= 1
        found = _extend(search, depth + 1, next_rows)
        counts[class_index] += 1
        if found:
            return True
    return False


SMALL_TABLE_COLUMNS = 6
SMALL_SEARCH = 48  # mappings tried one by one at most; beyond, the search below


def _small_tables_match(reference_columns: Sequence[Column], actual_columns: Sequence[Column], *,
                        mode: str) -> bool | None:
    """The common question's table (a few columns): try each mapping of compatible columns in
    turn, without the search's set-up. None when there are too many mappings to try."""
    signature = _SIGNATURES[mode]
    actual_signatures = [signature(column) for column in actual_columns]
    candidates = []
    mappings = 1
    for column in reference_columns:
        wanted = signature(column)
        compatible = [index for index, found in enumerate(actual_signatures) if found == wanted]
        if not compatible:
            return False
        candidates.append(compatible)
        mappings *= len(compatible)
    if mappings > SMALL_SEARCH:
        return None
    if mode == "set":
        expected: Any = set(zip(*reference_columns))
    elif mode == "multiset":
        expected = Counter(zip(*reference_columns))
    for mapping in product(*candidates):
        if len(set(mapping)) != len(mapping):
            continue  # one actual column for two reference columns
        if mode == "ordered":
            return True  # every mapped column pair is equal: so are the row lists
        rows = zip(*(actual_columns[index] for index in mapping))
        if (set(rows) if mode == "set" else Counter(rows)) == expected:
            return True
    return False


def _one_column_match(column: Column, actual_columns: Sequence[Column], *, mode: str) -> bool:
    """One required column (the common question's): the tables are equal under a mapping exactly
    when the column equals the actual column mapped to, as a list, a set or a multiset of cells;
    so each actual column is compared with it once, without the mappings' set-up."""
    if mode == "ordered":
        return column in actual_columns
    signature = _SIGNATURES[mode]
    wanted = signature(column)
    return any(signature(candidate) == wanted for candidate in actual_columns)


def _without_duplicate_rows(columns: Sequence[Column]) -> list[Column]:
    rows = dict.fromkeys(zip(*columns))  # keeps first-seen order, so the search is deterministic
    return [tuple(column) for column in zip(*rows)]


def _reference_levels(columns: list[Column], *, multiset: bool) -> list[tuple[dict[tuple[int, Cell], int], Any]]:
    """For each depth of the search: ids of the reference rows projected on the columns assigned
    so far, keyed by (row id at the previous depth, cell), and what the actual rows must reproduce
    (every id once for sets, since all actual ids are reference ids; the same counts for multisets)."""
    levels = []
    rows = [0] * len(columns[0])
    for column in columns:
        pair_ids: dict[tuple[int, Cell], int] = {}
        rows = [pair_ids.setdefault(pair, len(pair_ids)) for pair in zip(rows, column)]
        levels.append((pair_ids, Counter(rows) if multiset else len(pair_ids)))
    return levels


def _project(rows: list[int], column: Column, pair_ids: dict[tuple[int, Cell], int]) -> list[int] | None:
    """The actual rows extended by `column`, as reference row ids; None as soon as one actual row
    has no reference row with the same projection (then the tables cannot be equal)."""
    projected = []
    for pair in zip(rows, column):
        row_id = pair_ids.get(pair)
        if row_id is None:
            return None
        projected.append(row_id)
    return projected


_SIGNATURES: dict[str, Callable[[Any], Hashable]] = {
    "ordered": lambda column: column,
    "set": frozenset,
    "multiset": lambda column: frozenset(Counter(column).items()),
}


def _assignment_exists(candidates: list[list[int]], capacity: list[int]) -> bool:
    """Can every reference column get its own actual column? (bipartite matching with capacities,
    by augmenting paths; a cheap test that stops hopeless searches before they start)"""
    holders: list[list[int]] = [[] for _ in capacity]  # class -> reference columns assigned to it
    return all(_place(reference, set(), candidates, capacity, holders) for reference in range(len(candidates)))


def _place(reference: int, visited: set[int], candidates: list[list[int]], capacity: list[int],
           holders: list[list[int]]) -> bool:
    """Give `reference` a class, moving the columns already placed along an augmenting path.
    (A module function, not a closure calling itself: no reference cycle per search.)"""
    for class_index in candidates[reference]:
        if class_index in visited:
            continue
        visited.add(class_index)
        if len(holders[class_index]) < capacity[class_index]:
            holders[class_index].append(reference)
            return True
        for index, other in enumerate(holders[class_index]):
            if _place(other, visited, candidates, capacity, holders):
                holders[class_index][index] = reference
                return True
    return False
