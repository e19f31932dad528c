"""The cells of a SPARQL JSON result, read as graphrag-eval reads them. Pure; no I/O.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from itertools import repeat
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


class _Unbound:
    """The cell of a variable that has no value in a row."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNBOUND"


UNBOUND = _Unbound()

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
