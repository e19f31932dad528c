"""Reading an indicator selection (`[{dataset_id, dimensions: [{dimension_name, values: [{id,
name}]}]}]`) into records, every problem with its line, and the ids and names YAML 1.1 read as
something else put back as written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.input_shapes import ShapeErrors, keys_as_written, require_str
from qareport.records import DatasetSelection, DimensionTerms, Term
from qareport.yaml_values import LineDict, line_of


def parse_indicator_selection(value: Any, *, line: int | None) -> tuple[DatasetSelection, ...]:
    """`[{dataset_id, dimensions: [{dimension_name, values: [{id, name}]}]}]` into records."""
    if isinstance(value, dict):  # one dataset given without the list around it
        value = [value]
    empty: list[tuple[str, int | None]] = []  # (dimension, line) of each value without id and name
    datasets = []
    for _, dataset in _mappings(value, "'indicator_selection'", "each 'indicator_selection' entry",
                                "{dataset_id, dimensions}", line, item_line=line):
        dataset_id = require_str(dataset, "dataset_id", "dataset", optional=True) or ""
        dimensions = []
        raw_dimensions = dataset.get("dimensions") or []
        for _, dimension in _mappings(raw_dimensions, "'dimensions'", "each dimension", "{dimension_name, values}",
                                      line_of(dataset, "dimensions")):
            name = require_str(dimension, "dimension_name", "dimension") or ""
            terms = []
            raw_values = dimension.get("values")
            raw_values = [] if raw_values is None else raw_values
            for v_index, term in _mappings(raw_values, f"dimension '{name}': 'values'",
                                           f"dimension '{name}': each value", "{id, name}",
                                           line_of(dimension, "values")):
                term_id = require_str(term, "id", f"a value of dimension '{name}'", optional=True) or ""
                term_name = require_str(term, "name", f"value '{term_id}'", optional=True) or ""
                if not term_id and not term_name:
                    empty.append((name, line_of(raw_values, v_index) or line_of(term)))
                    continue
                terms.append(Term(term_id, term_name))
            dimensions.append(DimensionTerms(name, tuple(terms)))
        datasets.append(DatasetSelection(dataset_id, tuple(dimensions)))
    if empty:
        raise _ValuesWithoutIdOrName(empty, line)
    return tuple(datasets)


def _mappings(value: Any, what: str, each: str, shape: str, line: int | None, *,
              item_line: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The items of a list that must hold mappings of `shape`, with their indexes, each checked as
    it is reached; a ShapeError naming `what` (the list) or `each` (an item) and the line otherwise
    (`item_line` where an item has none of its own)."""
    if not isinstance(value, list):
        raise ShapeError(f"{what} must be a list of {shape} (got {describe_value(value)})", line)
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ShapeError(f"{each} must be a mapping {shape} (got {describe_value(item)})",
                             line_of(value, index) or item_line)
        yield index, item


class _ValuesWithoutIdOrName(ShapeErrors):
    """Values of an indicator selection that give neither an id nor a name (the only invalid
    values: one may give a name alone or an id alone): every one of them, each with its line."""

    def __init__(self, found: list[tuple[str, int | None]], line: int | None) -> None:
        each = [(where, f"a value of dimension '{dimension}' has neither 'id' nor 'name'; "
                        "give it an id, a name or both")
                for dimension, where in found]
        lines = [str(where) for _, where in found if where is not None]
        where_all = f" (lines {', '.join(lines)})" if len(found) > 1 and lines else ""
        super().__init__(f"{len(found)} value(s) with neither 'id' nor 'name'{where_all}: "
                         + "; ".join(message for _, message in each[:1]),
                         found[0][1] if found[0][1] is not None else line, each)



def selection_as_written(value: Any) -> None:
    """Put back, in a YAML indicator selection, the ids and names YAML 1.1 read as something else."""
    for dataset in value if isinstance(value, list) else [value]:
        if not isinstance(dataset, LineDict):
            continue
        keys_as_written(dataset, ("dataset_id",))
        for dimension in dataset.get("dimensions") or ():
            if isinstance(dimension, LineDict):
                keys_as_written(dimension, ("dimension_name",))
                for term in dimension.get("values") or ():
                    if isinstance(term, LineDict):
                        keys_as_written(term, ("id", "name"))
