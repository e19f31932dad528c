"""Reading values out of parsed input (YAML with its lines, JSON): shared by the loader and the kinds.

A YAML 1.1 reader turns some ids and names into numbers or booleans (`010`, `1.10`, `NO`); these
helpers give them back as written. `plain` drops the line-tracking types before a value is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.id_text import normalise_id
from qareport.yaml_values import LineDict, line_of, written_text


def written(container: Any, key: Any) -> Any:
    """`container[key]` as written when it is an id or a name: a YAML scalar that YAML 1.1 would
    read as a number or a boolean (`010`, `1:20`, `1.10`, `NO`) is its text, and so is a JSON number
    whose float would not give its text back (`1.10`). A null (`~`, `null`) is no value, in YAML as in
    JSON. Other values as they are."""
    value = container.get(key)
    if isinstance(value, str) or value is None:  # null (`~`, `null`, nothing) means no value, as in JSON
        return value
    text = written_text(container, key)
    if text is not None:
        return text
    return getattr(value, "written", value)


def as_id(value: Any) -> str | None:
    """An id or a name read from a value (see `written`), normalised (see `id_text`); None when
    the value is not one."""
    if isinstance(value, str):
        return normalise_id(value)
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    return normalise_id(str(getattr(value, "written", value)))


def require_str(container: Any, key: str, what: str, *, optional: bool = False,
                identifier: bool = True) -> str | None:
    """A text field: an id or a name (as written, normalised: see `written`), or, with
    `identifier=False`, a text kept as written."""
    value = written(container, key)
    if value is None:
        if optional:
            return None
        raise ShapeError(f"{what} has no '{key}'; add it", line_of(container))
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ShapeError(
            f"'{key}' must be a string (got {describe_value(value)})", line_of(container, key)
        )
    return normalise_id(str(value)) if identifier else str(value)


def optional_text(container: dict[str, Any], key: str) -> str | None:
    """A text (a message, a reference answer) as written: `NO` stays NO (see `written`)."""
    value = written(container, key)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ShapeError(f"'{key}' must be text (got {describe_value(value)})", line_of(container, key))
    return str(value)


def plain(value: Any) -> Any:
    """Drop the line-tracking types, so records hold ordinary dicts and lists."""
    if isinstance(value, dict):
        return {key: plain(item) if isinstance(item, (dict, list)) else item for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def keys_as_written(mapping: LineDict, keys: Sequence[str]) -> None:
    """Put back the texts of `keys` that YAML read as something else (a null stays no value)."""
    for key in keys:
        text = written_text(mapping, key)
        if text is not None and mapping.get(key) is not None:
            mapping[key] = text


class ShapeErrors(ShapeError):
    """Several faults of one value, each with its line (`each`), told as one error too: the loader
    reports each of them as a problem of its own."""

    def __init__(self, message: str, line: int | None, each: Sequence[tuple[int | None, str]]) -> None:
        super().__init__(message, line)
        self.each = list(each)
