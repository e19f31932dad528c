"""Python values built from YAML with line numbers: `LineDict` and `LineList` remember the line of
each key and item, and the text as written of each value YAML read as something else than a string.

Speed: libyaml composes the nodes in C; the Python objects are then built by `build_value`, a direct
walk over the nodes for the plain YAML that test cases are (strings, numbers, mappings, lists).
Anything else (anchors, merge keys, other tags, a problem to report) goes through PyYAML's own
constructor, so the result is the same either way. `build_checking_depth` builds an item straight
from libyaml's events while checking its depth (see `yaml_guards`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from qareport.yaml_guards import (
    MAX_DEPTH,
    BaseLoader,
    YamlProblem,
    is_libyaml_nesting_limit,
    located_depth_refusal,
    too_deep,
)


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
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_NODE = yaml.ScalarNode
_PLAIN_TAGS: dict[str, str] = {}  # the tag of a plain scalar, by its text (for the texts seen most)
_PLAIN_TAGS_KEPT = 10_000


class LineLoader(BaseLoader):  # type: ignore[misc]  # the C loader has no type information
    """libyaml's safe loader, building LineDict / LineList with lines counted in the whole file."""

    def __init__(self, text: str, line_offset: int = 0):
        super().__init__(text)
        self.line_offset = line_offset
        self.problems: list[YamlProblem] = []
        if self.yaml_path_resolvers:  # tags that depend on where a scalar is: resolve each one
            self.resolve = super().resolve  # type: ignore[method-assign]

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """PyYAML's resolver, remembering the tag of short plain scalars (keys, mostly): libyaml
        asks once per scalar, and the answer depends on the text alone."""
        if kind is _SCALAR_NODE:
            if not implicit[0]:
                return _STR_TAG  # quoted: a string
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_PLAIN_TAGS) < _PLAIN_TAGS_KEPT and len(value) <= 64:
                    _PLAIN_TAGS[value] = tag
            return tag
        return super().resolve(kind, value, implicit)


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


_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}"
                         for name in ("null", "bool", "int", "float", "binary", "timestamp"))


class _Unusual(Exception):
    """A node `build_value` leaves to PyYAML's constructor."""


class TooDeep(Exception):
    """A collection nested more than `MAX_DEPTH` levels deep, met by `build_value` (text with few brackets
    and no deep indentation, which libyaml composes safely but which the guard must refuse all the
    same, whatever libyaml's own limit is)."""

    def __init__(self, node: yaml.Node) -> None:
        super().__init__()
        self.node = node


def build_value(loader: LineLoader, root: yaml.Node, *, max_depth: int | None = None) -> Any:
    """The value of a node graph without anchors, as PyYAML's constructor (with the LineDict and
    LineList constructors above) builds it, several times faster. Anything else it would have to
    reproduce goes to PyYAML's constructor: other tags, merge keys, keys that are not scalars, a
    key given twice, a number too long (the last two are problems, reported in PyYAML's order).
    With `max_depth`, a collection nested deeper raises `TooDeep` (the reading's guard).
    """
    problems_before = len(loader.problems)
    try:
        return _Builder(loader, max_depth).build(root)
    except (_Unusual, RecursionError):
        del loader.problems[problems_before:]
        return loader.construct_document(root)


class _Builder:
    """The walk of `build_value` (methods, not closures: a closure that calls itself is a reference
    cycle, which would keep each item's loader and text alive until the collector runs)."""

    def __init__(self, loader: LineLoader, max_depth: int | None = None) -> None:
        self.loader = loader
        self.offset = loader.line_offset + 1
        self.constructors = loader.yaml_constructors
        self.problems_before = len(loader.problems)
        self.depth = 0
        self.max_depth = sys.maxsize if max_depth is None else max_depth

    def scalar(self, node: yaml.Node) -> Any:
        tag = node.tag
        if tag == _STR_TAG:
            return node.value
        if tag not in _SCALAR_TAGS:
            raise _Unusual
        value = self.constructors[tag](self.loader, node)
        if len(self.loader.problems) != self.problems_before:
            raise _Unusual
        return value

    def build(self, node: yaml.Node) -> Any:
        kind = node.__class__
        if kind is yaml.ScalarNode:
            return self.scalar(node)
        offset = self.offset
        self.depth += 1  # not restored when an exception leaves: it ends the whole walk
        if self.depth > self.max_depth:
            raise TooDeep(node)
        if kind is yaml.MappingNode:
            if node.tag != _MAP_TAG:
                raise _Unusual
            mapping = LineDict()
            mapping.line = node.start_mark.line + offset
            key_lines: dict[Any, int] = {}
            texts: dict[Any, str] | None = None
            for key_node, value_node in node.value:
                if key_node.__class__ is not yaml.ScalarNode:
                    raise _Unusual
                text = key_node.value
                if text in key_lines:
                    raise _Unusual
                key_lines[text] = key_node.start_mark.line + offset
                key = text if key_node.tag == _STR_TAG else self.scalar(key_node)
                mapping[key] = self.build(value_node)
                if value_node.__class__ is _SCALAR_NODE and value_node.tag != _STR_TAG:
                    texts = _keep_text(texts, key, value_node)
            mapping.key_lines = key_lines
            if texts:
                mapping.texts = texts
            self.depth -= 1
            return mapping
        if kind is yaml.SequenceNode:
            if node.tag != _SEQ_TAG:
                raise _Unusual
            items = node.value
            sequence = LineList([self.build(item) for item in items])
            sequence.line = node.start_mark.line + offset
            sequence.item_lines = [item.start_mark.line + offset for item in items]
            texts = None
            for index, item in enumerate(items):
                if item.__class__ is _SCALAR_NODE and item.tag != _STR_TAG:
                    texts = _keep_text(texts, index, item)
            if texts:
                sequence.texts = texts
            self.depth -= 1
            return sequence
        raise _Unusual



@dataclass(frozen=True, slots=True)
class _Built:
    value: Any


_COLLECTION_TAGS = {yaml.MappingStartEvent: (_MAP_TAG, yaml.MappingNode),
                    yaml.SequenceStartEvent: (_SEQ_TAG, yaml.SequenceNode)}


def build_checking_depth(text: str, offset: int) -> _Built | YamlProblem | None:
    """The one document of an item, built straight from libyaml's events while checking its depth
    as `depth_refusal` does, in one parse instead of two (a Q&A template with many questions has
    thousands of brackets in its quoted JSON outputs, so its depth must always be checked).

    The same value as `build_value` gives, or the same refusal; None for anything `build_value` would leave to
    PyYAML's constructor, and for a syntax error: the caller then reads the item as before.
    """
    loader = LineLoader(text, offset)
    line_offset = offset + 1
    constructors = loader.yaml_constructors
    # each open collection: [container, lines (key or item lines), key waiting for its value, its text]
    stack: list[list[Any]] = []
    depth = 0
    document: Any = None
    done = False
    try:
        while loader.check_event():
            event = loader.get_event()
            kind = event.__class__
            if kind is yaml.ScalarEvent:
                if done:
                    continue
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                if tag == _STR_TAG:
                    value = event.value
                elif tag in _SCALAR_TAGS:
                    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                    value = constructors[tag](loader, node)
                    if loader.problems:
                        return None
                else:
                    return None
                if stack and stack[-1][2] is _NO_KEY and isinstance(stack[-1][0], dict):
                    key_lines, text_of_key = stack[-1][1], event.value
                    if text_of_key in key_lines:
                        return None  # a key given twice: a problem, told by the usual reading
                    key_lines[text_of_key] = event.start_mark.line + line_offset
                    stack[-1][2] = value
                    continue
                if stack:
                    _add(stack[-1], value, event.start_mark.line + line_offset,
                         event.value if tag != _STR_TAG and event.value else None)
                else:
                    document = value
            elif kind in _COLLECTION_TAGS:
                depth += 1
                if depth > MAX_DEPTH:
                    return too_deep(event, offset)
                if done:
                    continue
                default_tag, node_kind = _COLLECTION_TAGS[kind]
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(node_kind, None, event.implicit)
                if tag != default_tag or (stack and stack[-1][2] is _NO_KEY and isinstance(stack[-1][0], dict)):
                    return None  # another tag, or a key that is not a scalar
                container: Any = LineDict() if kind is yaml.MappingStartEvent else LineList()
                container.line = event.start_mark.line + line_offset
                stack.append([container, {} if kind is yaml.MappingStartEvent else [], _NO_KEY])
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
                if done:
                    continue
                container, lines, _ = stack.pop()
                if isinstance(container, LineDict):
                    container.key_lines = lines
                else:
                    container.item_lines = lines
                if stack:
                    _add(stack[-1], container, container.line)
                else:
                    document = container
            elif kind is yaml.AliasEvent:
                return None
            elif kind is yaml.DocumentEndEvent:
                done = True  # the rest is only checked for depth, as `depth_refusal` checks it
    except yaml.YAMLError as error:
        if is_libyaml_nesting_limit(error):
            return located_depth_refusal(text, offset, error)
        if not done:
            return None
    finally:
        loader.dispose()
    return _Built(document)


_NO_KEY: Any = object()


def _add(parent: list[Any], value: Any, line: int, text: str | None = None) -> None:
    """Put a finished value into the collection open around it (see `build_checking_depth`), with
    its text as written when YAML read it as something else than a string."""
    container = parent[0]
    if isinstance(container, LineDict):
        if text is not None:
            if not container.texts:
                container.texts = {}
            container.texts[parent[2]] = text
        container[parent[2]] = value
        parent[2] = _NO_KEY
    else:
        if text is not None:
            if not container.texts:
                container.texts = {}
            container.texts[len(container)] = text
        container.append(value)
        parent[1].append(line)
