"""Does an actual SPARQL result hold the reference result? Pure; no I/O.

`compare_sparql_results` gives the verdict graphrag-eval 5.2 (and 6.6, whose SPARQL comparison is
the same) gives (1.0 or 0.0), without trying
every ordered choice of actual columns as graphrag-eval does (factorial in the number of columns).

How a result is read (`sparql_cells`) and how the mapping of columns is searched (`column_mapping`)
are told in their modules.

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qareport.kinds.steps.column_mapping import tables_match
from qareport.kinds.steps.sparql_cells import _INFINITY, _MINUS_INFINITY, Column, _columns, _Infinite


class SparqlResultError(ValueError):
    """The reference result, or its required columns, cannot be read as a SPARQL JSON result."""


_MISSING = object()  # an ASK result without "boolean" equals no reference value
_NOTHING: dict[str, Any] = {}  # read only
_NO_ROWS: list[Any] = []  # read only


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


MATCHED = TableVerdict(True)
UNMATCHED = TableVerdict(False)  # without a reason or note: one object for every such verdict


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
            return MATCHED
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
            return MATCHED
        return TableVerdict(False, f"returned {_count(len(actual_vars), 'column')}, {len(required)} required")
    if not actual_bindings:
        return TableVerdict(False, f"returned no rows ({_count(len(reference_bindings), 'row')} required)")
    if not reference_bindings:
        return TableVerdict(False, f"returned {_count(len(actual_bindings), 'row')}, none expected")
    if len(required) > len(actual_vars):
        return TableVerdict(False, f"returned {_count(len(actual_vars), 'column')}, {len(required)} required")
    if not required:
        return MATCHED

    try:
        reference_columns = _columns(required, reference_bindings)
    except (TypeError, KeyError, IndexError, AttributeError) as error:
        raise SparqlResultError(f"the reference bindings are not SPARQL JSON terms ({error})") from None
    try:
        actual_columns = _columns(actual_vars, actual_bindings)
    except (TypeError, KeyError, IndexError, AttributeError):
        # graphrag-eval raises here; an unreadable actual result does not match
        return TableVerdict(False, "returned bindings that are not SPARQL JSON terms")
    note = _infinity_note(reference_columns, actual_columns) if _Infinite.made else None
    mode = "ordered" if ordered else "set" if ignore_duplicates else "multiset"
    if tables_match(reference_columns, actual_columns, mode=mode):
        return MATCHED if note is None else TableVerdict(True, None, note)
    if not explain:
        return UNMATCHED if note is None else TableVerdict(False, None, note)
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


SHOWN_CELL_CHARS = 60


def _shown_cell(cell: Any) -> str:
    """A cell as a reason shows it: a whole number with thousands separators ("2,892"), other text
    quoted and cut, an unbound cell as "nothing"."""
    if not isinstance(cell, str):
        return "nothing (unbound)"
    if cell.lstrip("-").isdigit() and len(cell) < 30:
        return f"{int(cell):,}"
    shown = cell if len(cell) <= SHOWN_CELL_CHARS else cell[:SHOWN_CELL_CHARS] + "…"
    return f'"{shown}"'


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
    results = actual.get("results", _NOTHING)  # shared empty defaults: nothing made for each result read
    head = actual.get("head")
    if not isinstance(results, dict) or not isinstance(head, dict):
        return None
    bindings = results.get("bindings") or _NO_ROWS
    variables = head.get("vars", _NO_ROWS)
    if not isinstance(bindings, list) or not isinstance(variables, (list, tuple)):
        return None
    return variables if type(variables) is list else list(variables), bindings


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
    if len(required) == 1 and len(actual_columns) == 1 and len(reference_columns[0]) == len(actual_columns[0]) == 1:
        # a one-value answer (a count, a name): the two values say more than any row count
        return f"returned {_shown_cell(actual_columns[0][0])}, required {_shown_cell(reference_columns[0][0])}"
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
