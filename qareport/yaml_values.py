"""Python values built from YAML with line numbers: `LineDict` and `LineList` remember the line of
each key and item, and the text as written of each value YAML read as something else than a string.

libyaml composes the nodes in C; PyYAML's own constructor then builds the values, with the
constructors below for mappings, sequences and integers. (A hand-written walk over the nodes once
built them about 5 % faster; it was not worth a second constructor to keep in step with PyYAML's.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from qareport.yaml_guards import BaseLoader, YamlProblem


class LineDict(dict[Any, Any]):
    """A mapping read from YAML that remembers its line, the line of each key, and, in `texts`, the
    text as written of each value that YAML read as something else than a string (`010` read as 8,
    `NO` as false, `~` as null), so that ids and names can be taken as written."""

    # the class's empty containers are read-only fallbacks: the reader gives each instance its own
    line: int | None = None
    key_lines: dict[Any, int] = {}  # noqa: RUF012
    texts: dict[Any, str] = {}  # noqa: RUF012


class LineList(list[Any]):
    """A sequence read from YAML that remembers its line, the line of each item, and, in `texts`,
    the text as written of each item read as something else than a string (by index)."""

    line: int | None = None
    item_lines: list[int] = []  # noqa: RUF012 - a read-only fallback, as in LineDict
    texts: dict[int, str] = {}  # noqa: RUF012


def written_text(container: Any, key: Any) -> str | None:
    """The text as written of a plain scalar that YAML read as a number, a boolean, a date or null
    (`container[key]`); None when the value is a string, a collection or not from YAML. An empty
    value (`key:` with nothing after it) has no text."""
    texts = getattr(container, "texts", None)
    return texts.get(key) if texts else None


def _keep_text(texts: dict[Any, str] | None, key: Any, node: Any) -> dict[Any, str] | None:
    """`texts` with the text of `node` under `key` when node is a non-empty plain scalar not read
    as a string (created when first needed)."""
    if node.__class__ is yaml.ScalarNode and node.tag != _STR_TAG and node.value:
        if texts is None:
            texts = {}
        texts[key] = node.value
    return texts



_STR_TAG = "tag:yaml.org,2002:str"


class LineLoader(BaseLoader):  # type: ignore[misc]  # the C loader has no type information
    """libyaml's safe loader, building LineDict / LineList with lines counted in the whole file."""

    def __init__(self, text: str, line_offset: int = 0):
        super().__init__(text)
        self.line_offset = line_offset
        self.problems: list[YamlProblem] = []


def _construct_mapping(loader: LineLoader, node: yaml.MappingNode) -> Iterator[LineDict]:
    data = LineDict()
    offset = loader.line_offset + 1
    data.line = node.start_mark.line + offset
    yield data
    data.update(loader.construct_mapping(node))
    key_lines: dict[Any, int] = {}
    texts: dict[Any, str] | None = None
    for key_node, value_node in node.value:
        if value_node.__class__ is yaml.ScalarNode and value_node.tag != _STR_TAG:
            texts = _keep_text(texts, loader.construct_object(key_node), value_node)
    if texts:
        data.texts = texts
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode):
            line = key.start_mark.line + offset
            if key.value in key_lines:
                loader.problems.append(YamlProblem(line, (
                    f"the key '{key.value}' is given twice in one mapping (lines {key_lines[key.value]} and {line}); "
                    "YAML keeps only the last one: remove one")))
            else:
                key_lines[key.value] = line
    data.key_lines = key_lines


def _construct_sequence(loader: LineLoader, node: yaml.SequenceNode) -> Iterator[LineList]:
    data = LineList()
    offset = loader.line_offset + 1
    data.line = node.start_mark.line + offset
    yield data
    data.extend(loader.construct_sequence(node))
    data.item_lines = [item.start_mark.line + offset for item in node.value]
    texts: dict[Any, str] | None = None
    for index, item in enumerate(node.value):
        texts = _keep_text(texts, index, item)
    if texts:
        data.texts = texts


def _construct_int(loader: LineLoader, node: yaml.ScalarNode) -> int | str:
    try:
        return int(loader.construct_yaml_int(node))
    except ValueError:  # more digits than Python converts: keep the text
        line = node.start_mark.line + loader.line_offset + 1
        loader.problems.append(YamlProblem(line, (
            f"a number with {len(node.value):,} characters is too long to read as a number; it is kept as text")))
        return str(node.value)


LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
LineLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def line_of(value: Any, key: Any = None) -> int | None:
    """The line of a YAML value, or of one of its keys; None for JSON and scalars."""
    if isinstance(value, LineDict):
        if key is not None and key in value.key_lines:
            return value.key_lines[key]
        return value.line
    if isinstance(value, LineList):
        if isinstance(key, int) and 0 <= key < len(value.item_lines):
            return value.item_lines[key]
        return value.line
    return None
