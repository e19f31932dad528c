"""YAML with line numbers, read item by item, refusing what would exhaust memory or the stack.

A test-case file is nearly always one sequence at the top level (`- id: ...` at column 0). Such a
file is split at those lines and each item is parsed on its own, with its line numbers shifted to
where it stands in the file. Three things follow:

- memory: only one item's node graph is alive at a time (a 50,000-case file as one document needs
  gigabytes of nodes; item by item it needs the records alone);
- a syntax error costs only the item it is in: the cases before it and after it are kept;
- the guards below run per item, cheaply.

A file that cannot be split safely (a top-level mapping, several documents, anchors that one item
could share with another) is read whole, as one or more documents, with the same guards.

Guards, each reported as a problem naming the line, never as a crash:

- nesting deeper than `MAX_DEPTH` levels (libyaml's composer recurses in C: a 100,000-level
  nesting would end the process). Only text with many brackets or a deep indentation is checked,
  with libyaml's event parser, which does not recurse. libyaml 0.2.6 (PyYAML 6.0.4's wheels) refuses
  more than 1,000 levels itself, in its scanner, which reads ahead of the events this guard counts:
  its refusal is given as this guard's own, located with PyYAML's pure-Python parser (which does not
  recurse either, and stops at the level that passes the limit), whatever PyYAML is installed;
- aliases expanding to more than `MAX_EXPANDED_NODES` nodes ("billion laughs"), or referring to
  themselves; checked on the composed graph, only where the text has an alias at all;
- a NUL byte, which YAML cannot hold;
- an integer too long for Python's int-to-string limit: kept as text, with a problem;
- a key given twice in one mapping (YAML keeps the last silently; a duplicate `id` renames a case).

Speed: libyaml composes the nodes in C; the Python objects are then built by `_build`, a direct
walk over the nodes for the plain YAML that test cases are (strings, numbers, mappings, lists).
Anything else (anchors, merge keys, other tags, a problem to report) goes through PyYAML's own
constructor, so the result is the same either way.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

import yaml

MAX_DEPTH = 100
"""Levels of nested collections a YAML item may have (test cases need fewer than 15)."""
MAX_EXPANDED_NODES = 1_000_000
"""Nodes an item may have once its aliases are expanded (a large reference table has ~10,000)."""
_DEPTH_SUSPECT_BRACKETS = 4000  # fewer cannot nest deep enough to hurt libyaml (it reads 5,000 levels)
_DEPTH_SUSPECT_INDENT = " " * 2000  # at the start of a line
_BEFORE_MARK = frozenset(" \t\r\n[{,:-")
_NOT_IN_NAME = frozenset(" \t\r\n[]{},")
_ROOT_LINE_START = re.compile(r"\n[^\s#]")  # a line with content at column 0 (after its newline)


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


@dataclass(frozen=True, slots=True)
class YamlProblem:
    """Something wrong in the text; `line` counts from 1 in the whole file. `lost` when data could
    not be read because of it: the whole text, or one item (whose `item_id` is guessed from its
    text, for telling which case was lost)."""

    line: int | None
    message: str
    lost: bool = False
    item_id: str | None = None


_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_NODE = yaml.ScalarNode
_PLAIN_TAGS: dict[str, str] = {}  # the tag of a plain scalar, by its text (for the texts seen most)
_PLAIN_TAGS_KEPT = 10_000


class _LineLoader(_BaseLoader):  # type: ignore[misc]  # the C loader has no type information
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


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> Iterator[LineDict]:
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


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> Iterator[LineList]:
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


def _construct_int(loader: _LineLoader, node: yaml.ScalarNode) -> int | str:
    try:
        return int(loader.construct_yaml_int(node))
    except ValueError:  # more digits than Python converts: keep the text
        line = node.start_mark.line + loader.line_offset + 1
        loader.problems.append(YamlProblem(line, (
            f"a number with {len(node.value):,} characters is too long to read as a number; it is kept as text")))
        return str(node.value)


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
_LineLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


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
    """A node `_build` leaves to PyYAML's constructor."""


class _TooDeep(Exception):
    """A collection nested more than `MAX_DEPTH` levels deep, met by `_build` (text with few brackets
    and no deep indentation, which libyaml composes safely but which the guard must refuse all the
    same, whatever libyaml's own limit is)."""

    def __init__(self, node: yaml.Node) -> None:
        super().__init__()
        self.node = node


def _build(loader: _LineLoader, root: yaml.Node, *, max_depth: int | None = None) -> Any:
    """The value of a node graph without anchors, as PyYAML's constructor (with the LineDict and
    LineList constructors above) builds it, several times faster. Anything else it would have to
    reproduce goes to PyYAML's constructor: other tags, merge keys, keys that are not scalars, a
    key given twice, a number too long (the last two are problems, reported in PyYAML's order).
    With `max_depth`, a collection nested deeper raises `_TooDeep` (the reading's guard).
    """
    problems_before = len(loader.problems)
    try:
        return _Builder(loader, max_depth).build(root)
    except (_Unusual, RecursionError):
        del loader.problems[problems_before:]
        return loader.construct_document(root)


class _Builder:
    """The walk of `_build` (methods, not closures: a closure that calls itself is a reference
    cycle, which would keep each item's loader and text alive until the collector runs)."""

    def __init__(self, loader: _LineLoader, max_depth: int | None = None) -> None:
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
            raise _TooDeep(node)
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


# --- reading -------------------------------------------------------------------------------------


def yaml_documents(text: str) -> Iterator[Any | YamlProblem]:
    """The documents of a YAML text, or, for a top-level sequence, one single-item LineList per item
    (which reads the same to a caller that iterates over a document's items). Problems come in the
    stream, in file order; whatever is valid is still given."""
    items = split_root_sequence(text)
    if items is None:
        yield from _parse(text, 0, several=True, may_alias=_has_mark(text, "*"))
        return
    for offset, start, end in items:
        yield from _parse(text[start:end], offset, several=False, may_alias=False)


def _has_mark(text: str, marks: str) -> bool:
    """Whether the text may hold an anchor (`&name`) or alias (`*name`), for the marks asked: a
    mark at the start of a token, followed by a name. (str.find, not a regex: ten times faster on
    a 20 MB file.)"""
    for mark in marks:
        at = text.find(mark)
        while at >= 0:
            before = text[at - 1] if at else "\n"
            after = text[at + 1] if at + 1 < len(text) else " "
            if before in _BEFORE_MARK and after not in _NOT_IN_NAME:
                return True
            at = text.find(mark, at + 1)
    return False


def split_root_sequence(text: str) -> list[tuple[int, int, int]] | None:
    """(line offset, start, end) of each item of a top-level block sequence in `text`; None when the
    text is not one, or when items could share anchors (then it is read whole)."""
    if _has_mark(text, "&*"):
        return None
    starts: list[int] = []
    line_starts = (match.start() + 1 for match in _ROOT_LINE_START.finditer(text))
    first = [0] if text and not text[0].isspace() and text[0] != "#" else []
    for start in (*first, *line_starts):  # a regex with a leading newline, not ^ and re.M: 10x faster
        end = text.find("\n", start)
        line = text[start:end if end >= 0 else len(text)]
        if line == "-" or line.startswith(("- ", "-\t")):
            starts.append(start)
        elif line.rstrip() == "---" and not starts:
            continue  # an explicit start of the one document
        else:
            return None  # a mapping key, a second document, a directive, a flow collection: read whole
    if not starts:
        return None
    items = []
    offset = text.count("\n", 0, starts[0])
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        items.append((offset, start, end))
        offset += text.count("\n", start, end)
    return items


_ITEM_ID = re.compile(r"""^[-\s]*(?:id|question_id|template_id):[ \t]*['"]?([^'"\s#]+)""", re.M)


def _lost(problem: YamlProblem, text: str, *, item: bool) -> YamlProblem:
    found = _ITEM_ID.search(text) if item else None
    return YamlProblem(problem.line, problem.message, lost=True, item_id=found.group(1) if found else None)


def _parse(text: str, offset: int, *, several: bool, may_alias: bool) -> Iterator[Any | YamlProblem]:
    for part in _parse_guarded(text, offset, several=several, may_alias=may_alias):
        if isinstance(part, YamlProblem) and part.lost and part.item_id is None:
            yield _lost(part, text, item=not several)
        else:
            yield part


def _parse_guarded(text: str, offset: int, *, several: bool, may_alias: bool) -> Iterator[Any | YamlProblem]:
    if not several and not may_alias and _nul_refusal(text, offset) is None and _deep_suspect(text):
        # one item whose depth must be checked: read once, checking as it is built
        built = _build_checking_depth(text, offset)
        if isinstance(built, YamlProblem):
            yield built
            return
        if built is not None:
            if built.value is not None:
                yield built.value
            return
    refused = _refusal(text, offset)
    if refused is not None:
        yield refused
        return
    loader = _LineLoader(text, offset)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if several and isinstance(node, yaml.SequenceNode) and may_alias:
                # a file read whole because of anchors: its items are still kept or refused one by one
                yield from _items_one_by_one(loader, node, offset)
                continue
            if may_alias:
                refused = _alias_refusal(node, offset)
                if refused is not None:
                    yield refused
                    if not several:
                        break
                    continue
            yield from loader.problems
            loader.problems.clear()
            document = loader.construct_document(node) if may_alias else _build(loader, node, max_depth=MAX_DEPTH)
            yield from loader.problems
            loader.problems.clear()
            if document is not None:
                yield document
            if not several:
                break
    except _TooDeep as deep:
        yield YamlProblem(deep.node.start_mark.line + offset + 1, _TOO_DEEP, lost=True)
    except yaml.MarkedYAMLError as error:
        if _is_libyaml_nesting_limit(error):
            yield _located_depth_refusal(text, offset, error)
            return
        mark = error.problem_mark or error.context_mark
        yield YamlProblem(mark.line + offset + 1 if mark else None,
                          f"invalid YAML: {error.problem or error}; fix the syntax", lost=True)
    except yaml.YAMLError as error:
        yield YamlProblem(None if offset == 0 else offset + 1, f"invalid YAML: {error}", lost=True)
    except RecursionError:
        yield YamlProblem(offset + 1, f"the YAML nests too deeply to read (more than {MAX_DEPTH} levels); "
                                      "qareport refuses it", lost=True)
    finally:
        loader.dispose()


def _items_one_by_one(loader: _LineLoader, root: yaml.SequenceNode, offset: int) -> Iterator[Any | YamlProblem]:
    """The items of a top-level sequence, each checked and built on its own (see `yaml_documents`)."""
    for item in root.value:
        refused = _alias_refusal(item, offset)
        if refused is not None:
            yield YamlProblem(refused.line, refused.message, lost=True, item_id=_node_id(item))
            continue
        value = loader.construct_document(item)
        yield from loader.problems
        loader.problems.clear()
        wrapped = LineList([value])
        wrapped.line = item.start_mark.line + offset + 1
        wrapped.item_lines = [wrapped.line]
        yield wrapped


def _node_id(node: yaml.Node) -> str | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value in ("id", "question_id", "template_id") \
                    and isinstance(value, yaml.ScalarNode):
                return str(value.value)
    return None


def _refusal(text: str, offset: int) -> YamlProblem | None:
    """A NUL byte or too deep a nesting, found before libyaml builds anything."""
    refused = _nul_refusal(text, offset)
    if refused is None and _deep_suspect(text):
        return _depth_refusal(text, offset)
    return refused


def _nul_refusal(text: str, offset: int) -> YamlProblem | None:
    nul = text.find("\x00")
    if nul >= 0:
        return YamlProblem(offset + text.count("\n", 0, nul) + 1,
                           "a NUL byte (\\x00) on this line; YAML cannot hold it: remove it", lost=True)
    return None


def _deep_suspect(text: str) -> bool:
    """Whether the text could nest deep enough to hurt libyaml: many brackets (most are inside
    quoted strings, such as JSON outputs, but only a parse can tell), or a deep indentation."""
    deep_indent = text.startswith(_DEPTH_SUSPECT_INDENT) or text.find("\n" + _DEPTH_SUSPECT_INDENT) >= 0
    return deep_indent or text.count("[") + text.count("{") > _DEPTH_SUSPECT_BRACKETS


_TOO_DEEP = (f"collections nested more than {MAX_DEPTH} levels deep; qareport refuses such a file "
             "(a limit that keeps a hostile file from exhausting the stack)")


def _too_deep(event: yaml.Event, offset: int) -> YamlProblem:
    return YamlProblem(event.start_mark.line + offset + 1 if event.start_mark else None, _TOO_DEEP, lost=True)


def _depth_refusal(text: str, offset: int, parser_class: Any = _BaseLoader) -> YamlProblem | None:
    depth = 0
    parser = parser_class(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    return _too_deep(event, offset)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError as error:
        if _is_libyaml_nesting_limit(error):
            return _located_depth_refusal(text, offset, error)
        return None  # a syntax error: the parse proper reports it with its line
    finally:
        parser.dispose()
    return None


_LIBYAML_NESTING_LIMIT = "exceeded maximum nesting depth"


def _is_libyaml_nesting_limit(error: yaml.YAMLError) -> TypeGuard[yaml.MarkedYAMLError]:
    """Whether libyaml refused the text for its own nesting limit (1,000 levels, from 0.2.6 on)."""
    return isinstance(error, yaml.MarkedYAMLError) and _LIBYAML_NESTING_LIMIT in str(error.problem or "")


def _located_depth_refusal(text: str, offset: int, error: yaml.MarkedYAMLError) -> YamlProblem:
    """qareport's own refusal of a text that libyaml refused for nesting past its limit (deeper than
    `MAX_DEPTH`, then), at the line where the nesting passes `MAX_DEPTH`: libyaml's scanner stops
    where it reads ahead to (its 1,000th level), so PyYAML's pure-Python parser finds the line; it does
    not recurse, and stops at the level that passes the limit."""
    found = _depth_refusal(text, offset, yaml.SafeLoader)
    if found is not None:
        return found
    mark = error.problem_mark or error.context_mark
    return YamlProblem(mark.line + offset + 1 if mark else None, _TOO_DEEP, lost=True)


@dataclass(frozen=True, slots=True)
class _Built:
    value: Any


_COLLECTION_TAGS = {yaml.MappingStartEvent: (_MAP_TAG, yaml.MappingNode),
                    yaml.SequenceStartEvent: (_SEQ_TAG, yaml.SequenceNode)}


def _build_checking_depth(text: str, offset: int) -> _Built | YamlProblem | None:
    """The one document of an item, built straight from libyaml's events while checking its depth
    as `_depth_refusal` does, in one parse instead of two (a Q&A template with many questions has
    thousands of brackets in its quoted JSON outputs, so its depth must always be checked).

    The same value as `_build` gives, or the same refusal; None for anything `_build` would leave to
    PyYAML's constructor, and for a syntax error: the caller then reads the item as before.
    """
    loader = _LineLoader(text, offset)
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
                    return _too_deep(event, offset)
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
                done = True  # the rest is only checked for depth, as `_depth_refusal` checks it
    except yaml.YAMLError as error:
        if _is_libyaml_nesting_limit(error):
            return _located_depth_refusal(text, offset, error)
        if not done:
            return None
    finally:
        loader.dispose()
    return _Built(document)


_NO_KEY: Any = object()


def _add(parent: list[Any], value: Any, line: int, text: str | None = None) -> None:
    """Put a finished value into the collection open around it (see `_build_checking_depth`), with
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


def _alias_refusal(root: yaml.Node, offset: int) -> YamlProblem | None:
    """Count the nodes `root` stands for with its aliases expanded, without expanding them."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] > MAX_EXPANDED_NODES:
                return YamlProblem(root.start_mark.line + offset + 1, (
                    f"aliases here expand to more than {MAX_EXPANDED_NODES:,} values (a 'billion laughs' file); "
                    "qareport refuses it: write the values out or share fewer"), lost=True)
            continue
        if key in open_nodes:
            return YamlProblem(node.start_mark.line + offset + 1,
                               "an alias refers to the collection it is in; qareport cannot read a value "
                               "that contains itself", lost=True)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
