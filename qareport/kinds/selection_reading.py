"""Reading an indicator selection (`[{dataset_id, dimensions: [{dimension_name, values: [{id,
name}]}]}]`) into records, every problem with its line, and the ids and names YAML 1.1 read as
something else put back as written."""

from __future__ import annotations

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
    if not isinstance(value, list):
        raise ShapeError(
            "'indicator_selection' must be a list of {dataset_id, dimensions} "
            f"(got {describe_value(value)})",
            line,
        )
    empty: list[tuple[str, int | None]] = []  # (dimension, line) of each value without id and name
    datasets = []
    for index, dataset in enumerate(value):
        if not isinstance(dataset, dict):
            raise ShapeError(
                "each 'indicator_selection' entry must be a mapping {dataset_id, dimensions} "
                f"(got {describe_value(dataset)})",
                line_of(value, index) or line,
            )
        dataset_id = require_str(dataset, "dataset_id", "dataset", optional=True) or ""
        raw_dimensions = dataset.get("dimensions") or []
        if not isinstance(raw_dimensions, list):
            raise ShapeError(
                "'dimensions' must be a list of {dimension_name, values} "
                f"(got {describe_value(raw_dimensions)})",
                line_of(dataset, "dimensions"),
            )
        dimensions = []
        for d_index, dimension in enumerate(raw_dimensions):
            if not isinstance(dimension, dict):
                raise ShapeError(
                    "each dimension must be a mapping {dimension_name, values} "
                    f"(got {describe_value(dimension)})",
                    line_of(raw_dimensions, d_index),
                )
            name = require_str(dimension, "dimension_name", "dimension") or ""
            raw_values = dimension.get("values")
            if raw_values is None:
                raw_values = []
            if not isinstance(raw_values, list):
                raise ShapeError(
                    f"dimension '{name}': 'values' must be a list of {{id, name}} "
                    f"(got {describe_value(raw_values)})",
                    line_of(dimension, "values"),
                )
            terms = []
            for v_index, term in enumerate(raw_values):
                if not isinstance(term, dict):
                    raise ShapeError(
                        f"dimension '{name}': each value must be a mapping {{id, name}} "
                        f"(got {describe_value(term)})",
                        line_of(raw_values, v_index),
                    )
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
