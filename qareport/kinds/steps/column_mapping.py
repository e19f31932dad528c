"""Is there a mapping of the reference columns onto actual columns under which two tables of cells
(`sparql_cells`) are equal? Pure; no I/O.

How the search stays small
--------------------------
One required column is compared with each actual column in turn (as a list, a set or a multiset
of cells). The common question's table (up to six actual columns, with at most 48 mappings of
compatible columns) is decided by trying those mappings one by one. Otherwise:
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

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from qareport.kinds.steps.sparql_cells import Cell, Column

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
    for candidate in actual_columns:  # noqa: SIM110 - a loop rather than any() over a generator made for every pair
        if signature(candidate) == wanted:
            return True
    return False


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
