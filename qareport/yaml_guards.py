"""The guards of the YAML reader (`yaml_input`) against hostile input, each reported as a problem
naming the line, never as a crash:

- nesting deeper than `MAX_DEPTH` levels (libyaml's composer recurses in C: a 100,000-level
  nesting would end the process). Only text with many brackets or a deep indentation is checked,
  with libyaml's event parser, which does not recurse. libyaml 0.2.6 (PyYAML 6.0.4's wheels) refuses
  more than 1,000 levels itself, in its scanner, which reads ahead of the events this guard counts:
  its refusal is given as this guard's own, located with PyYAML's pure-Python parser (which does not
  recurse either, and stops at the level that passes the limit), whatever PyYAML is installed;
- aliases expanding to more than `MAX_EXPANDED_NODES` nodes ("billion laughs"), or referring to
  themselves; checked on the composed graph, only where the text has an alias at all;
- a NUL byte, which YAML cannot hold.

The other two problems the reader reports (an integer too long for Python's int-to-string limit,
kept as text; a key given twice in one mapping) are found while values are built (`yaml_values`).
A composed item without aliases is also checked for depth node by node (`nesting_refusal`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypeGuard

import yaml

MAX_DEPTH = 100
"""Levels of nested collections a YAML item may have (test cases need fewer than 15)."""
MAX_EXPANDED_NODES = 1_000_000
"""Nodes an item may have once its aliases are expanded (a large reference table has ~10,000)."""
_DEPTH_SUSPECT_BRACKETS = 4000  # fewer cannot nest deep enough to hurt libyaml (it reads 5,000 levels)
_DEPTH_SUSPECT_INDENT = " " * 2000  # at the start of a line


@dataclass(frozen=True, slots=True)
class YamlProblem:
    """Something wrong in the text; `line` counts from 1 in the whole file. `lost` when data could
    not be read because of it: the whole text, or one item (whose `item_id` is guessed from its
    text, for telling which case was lost)."""

    line: int | None
    message: str
    lost: bool = False
    item_id: str | None = None


BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def refusal(text: str, offset: int) -> YamlProblem | None:
    """A NUL byte or too deep a nesting, found before libyaml builds anything."""
    refused = nul_refusal(text, offset)
    if refused is None and deep_suspect(text):
        return depth_refusal(text, offset)
    return refused


def nul_refusal(text: str, offset: int) -> YamlProblem | None:
    nul = text.find("\x00")
    if nul >= 0:
        return YamlProblem(offset + text.count("\n", 0, nul) + 1,
                           "a NUL byte (\\x00) on this line; YAML cannot hold it: remove it", lost=True)
    return None


def deep_suspect(text: str) -> bool:
    """Whether the text could nest deep enough to hurt libyaml: many brackets (most are inside
    quoted strings, such as JSON outputs, but only a parse can tell), or a deep indentation."""
    deep_indent = text.startswith(_DEPTH_SUSPECT_INDENT) or text.find("\n" + _DEPTH_SUSPECT_INDENT) >= 0
    return deep_indent or text.count("[") + text.count("{") > _DEPTH_SUSPECT_BRACKETS


TOO_DEEP = (f"collections nested more than {MAX_DEPTH} levels deep; qareport refuses such a file "
             "(a limit that keeps a hostile file from exhausting the stack)")


def too_deep(event: yaml.Event, offset: int) -> YamlProblem:
    return YamlProblem(event.start_mark.line + offset + 1 if event.start_mark else None, TOO_DEEP, lost=True)


def depth_refusal(text: str, offset: int, parser_class: Any = BaseLoader) -> YamlProblem | None:
    depth = 0
    parser = parser_class(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    return too_deep(event, offset)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError as error:
        if is_libyaml_nesting_limit(error):
            return located_depth_refusal(text, offset, error)
        return None  # a syntax error: the parse proper reports it with its line
    finally:
        parser.dispose()
    return None


_LIBYAML_NESTING_LIMIT = "exceeded maximum nesting depth"


def is_libyaml_nesting_limit(error: yaml.YAMLError) -> TypeGuard[yaml.MarkedYAMLError]:
    """Whether libyaml refused the text for its own nesting limit (1,000 levels, from 0.2.6 on)."""
    return isinstance(error, yaml.MarkedYAMLError) and _LIBYAML_NESTING_LIMIT in str(error.problem or "")


def located_depth_refusal(text: str, offset: int, error: yaml.MarkedYAMLError) -> YamlProblem:
    """qareport's own refusal of a text that libyaml refused for nesting past its limit (deeper than
    `MAX_DEPTH`, then), at the line where the nesting passes `MAX_DEPTH`: libyaml's scanner stops
    where it reads ahead to (its 1,000th level), so PyYAML's pure-Python parser finds the line; it does
    not recurse, and stops at the level that passes the limit."""
    found = depth_refusal(text, offset, yaml.SafeLoader)
    if found is not None:
        return found
    mark = error.problem_mark or error.context_mark
    return YamlProblem(mark.line + offset + 1 if mark else None, TOO_DEEP, lost=True)




def could_nest_too_deep(text: str) -> bool:
    """Whether the collections of `text` could nest more than `MAX_DEPTH` levels (when not, the
    node-by-node check is skipped): each flow level takes a bracket, and of two nested block
    levels, one at least starts a column further right, after the indentation and the `- `, `? `
    or `: ` indicators that begin its line (a sequence may stand at its key's column, but not twice)."""
    room = (MAX_DEPTH - text.count("[") - text.count("{")) // 2 - 2
    return room <= 0 or re.search(rf"(?m)^[ \t?:-]{{{room},}}", text) is not None


def nesting_refusal(root: yaml.Node, offset: int) -> YamlProblem | None:
    """The first collection, in document order, nested more than `MAX_DEPTH` levels deep in a
    composed node graph without aliases. The text check (`refusal`) only looks at text with many
    brackets or a deep indentation; block collections nest a level per column or two, which
    libyaml composes safely but which must be refused all the same, whatever libyaml's own limit is."""
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        if depth > MAX_DEPTH:
            return YamlProblem(node.start_mark.line + offset + 1, TOO_DEEP, lost=True)
        stack.extend((child, depth + 1) for child in reversed(_children(node)))
    return None


def alias_refusal(root: yaml.Node, offset: int) -> YamlProblem | None:
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
