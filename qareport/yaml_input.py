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

A broken file costs only what it must (`split_broken_sequence`): a top-level sequence with a
merge-conflict marker (`<<<<<<<`, `=======`, `>>>>>>>` at column 0) loses the items the conflict
touches (those inside it, and the one a marker interrupts), said as "merge-conflict marker" with its
line; a stray line at column 0 between items, which makes the whole text invalid, loses only the item
it follows. A file of several `---` documents that cannot be read whole loses only the documents with
a conflict marker or a syntax error in them. A file with a conflict and neither shape is lost whole,
and says so the same way.

Guards against hostile input (`yaml_guards`), each reported as a problem naming the line, never as
a crash: nesting deeper than `MAX_DEPTH` levels, aliases expanding to more than `MAX_EXPANDED_NODES`
nodes, a NUL byte; and, while values are built (`yaml_values`), an integer too long to read as a
number (kept as text) and a key given twice in one mapping.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import yaml

from qareport.yaml_guards import (
    MAX_DEPTH,
    YamlProblem,
    alias_refusal,
    could_nest_too_deep,
    is_libyaml_nesting_limit,
    located_depth_refusal,
    nesting_refusal,
    refusal,
)
from qareport.yaml_values import LineList, LineLoader

__all__ = ["split_broken_sequence", "split_documents", "split_root_sequence", "yaml_documents"]

_BEFORE_MARK = frozenset(" \t\r\n[{,:-")
_NOT_IN_NAME = frozenset(" \t\r\n[]{},")
_ROOT_LINE_START = re.compile(r"\n[^\s#]")  # a line with content at column 0 (after its newline)


def yaml_documents(text: str) -> Iterator[Any | YamlProblem]:
    """The documents of a YAML text, or, for a top-level sequence, one single-item LineList per item
    (which reads the same to a caller that iterates over a document's items). Problems come in the
    stream, in file order; whatever is valid is still given."""
    items = split_root_sequence(text)
    if items is not None:
        for offset, start, end in items:
            yield from _parse(text[start:end], offset, several=False, may_alias=False)
        return
    markers = conflict_markers(text)
    broken = split_broken_sequence(text, markers) if markers else None
    if broken is None:
        whole = list(_parse(text, 0, several=True, may_alias=_has_mark(text, "*")))
        if not any(isinstance(part, YamlProblem) and part.lost and part.item_id is None
                   and part.message.startswith("invalid YAML") for part in whole):  # a syntax error, not a refusal
            yield from whole
            return
        broken = split_broken_sequence(text, markers)
        documents = split_documents(text, markers) if broken is None else None
        if documents is not None:  # several documents: a break costs only the document it is in
            yield from _parse_broken(text, (documents, []))
            return
        if broken is None:  # not a sequence of items: the whole text is lost, and a conflict is named
            yield from (_conflict_named(part, markers) for part in whole)
            return
    yield from _parse_broken(text, broken)


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


_CONFLICT_MARKER = re.compile(r"^(<{7}|={7}|>{7})(?=[ \t\r]|$)", re.M)


def conflict_markers(text: str) -> dict[int, str]:
    """Line (from 1) -> marker, of each merge-conflict marker line (`<<<<<<< HEAD`, `=======`,
    `>>>>>>> branch`): seven characters at column 0, alone or followed by a space."""
    if "<<<<<<<" not in text and "=======" not in text and ">>>>>>>" not in text:
        return {}  # the usual file: no regex pass over megabytes
    return {text.count("\n", 0, match.start()) + 1: match.group(1) for match in _CONFLICT_MARKER.finditer(text)}


def _conflict_words(line: int, marker: str) -> str:
    return (f"merge-conflict marker '{marker}' on line {line}: the file was committed in the middle of a "
            "merge; keep one side of the conflict, remove the marker lines and run again")


def _conflict_named(part: Any | YamlProblem, markers: dict[int, str]) -> Any | YamlProblem:
    if not markers or not isinstance(part, YamlProblem) or not part.lost:
        return part
    line, marker = min(markers.items())
    return YamlProblem(line, _conflict_words(line, marker), lost=True, item_id=part.item_id)


@dataclass(frozen=True, slots=True)
class BrokenItem:
    """One item of a top-level sequence read around breaks: its span, and the merge-conflict marker
    line that costs it (None: it is parsed on its own, and a syntax error in it costs only it)."""

    offset: int  # lines before it in the file
    start: int
    end: int
    conflict_line: int | None = None


def split_broken_sequence(text: str, markers: dict[int, str]) -> tuple[list[BrokenItem], list[YamlProblem]] | None:
    """The items of a top-level block sequence broken by merge-conflict markers or stray lines at
    column 0, and the problems of markers before the first item; None when the text is no such
    sequence (content before the first item, as a top-level mapping has; several documents; anchors),
    to be read whole."""
    if _has_mark(text, "&*"):
        return None
    line_starts = (match.start() + 1 for match in _ROOT_LINE_START.finditer(text))
    first = [0] if text and not text[0].isspace() and text[0] != "#" else []
    items: list[BrokenItem] = []
    problems: list[YamlProblem] = []
    open_conflict: int | None = None  # the line of the `<<<<<<<` whose conflict is open
    breaks: list[int] = []  # where marker lines start: an item untouched by a conflict ends there
    for start in (*first, *line_starts):
        end = text.find("\n", start)
        line_text = text[start:end if end >= 0 else len(text)]
        number = text.count("\n", 0, start) + 1
        marker = markers.get(number)
        if marker is not None:
            open_conflict = number if marker == "<<<<<<<" else None if marker == ">>>>>>>" else open_conflict
            breaks.append(start)
            if items and _continues_item(text, end) and items[-1].conflict_line is None:
                items[-1] = replace(items[-1], conflict_line=number)  # a marker inside an item touches it
            elif not items:
                problems.append(YamlProblem(number, _conflict_words(number, marker)))
        elif line_text == "-" or line_text.startswith(("- ", "-\t")):
            items.append(BrokenItem(number - 1, start, start, open_conflict))
        elif line_text.rstrip() in ("---", "...") or line_text.startswith("%"):
            return None  # several documents: read whole
        elif not items:
            return None  # a mapping at the top (`conversation:` then `- role: ...`): no items to save
        # any other line at column 0 stays in the item before it, whose parse then reports it
    if not items:
        return None
    ends = sorted([*(item.start for item in items[1:]), *breaks, len(text)])
    spans = [replace(item, end=ends[bisect.bisect_right(ends, item.start)]) for item in items]
    return spans, problems


_DOCUMENT_START = re.compile(r"^---[ \t]*$", re.M)
_DOCUMENT_END_OR_DIRECTIVE = re.compile(r"^(?:\.\.\.|%)", re.M)


def split_documents(text: str, markers: dict[int, str]) -> list[BrokenItem] | None:
    """The documents of a text of several `---` documents, each span with the first merge-conflict
    marker line inside it; None when the text is no such stream (one document, anchors that one
    document could share with another, directives or `...` ends), to be read whole."""
    starts = [match.start() for match in _DOCUMENT_START.finditer(text)]
    if not starts or _has_mark(text, "&*") or _DOCUMENT_END_OR_DIRECTIVE.search(text):
        return None
    bounds = sorted({0, *starts, len(text)})
    documents = []
    first = 1
    for start, end in itertools.pairwise(bounds):
        last = first + text.count("\n", start, end) - 1  # counted span by span: linear in the file
        conflict = min((line for line in markers if first <= line <= last), default=None)
        documents.append(BrokenItem(first - 1, start, end, conflict))
        first = last + 1
    return documents


def _continues_item(text: str, end: int) -> bool:
    """Whether the line after a marker line (ending at `end`) is indented content: the marker then
    stands inside an item, not between two."""
    if end < 0:
        return False
    following = text[end + 1:text.find("\n", end + 1) if text.find("\n", end + 1) >= 0 else len(text)]
    stripped = following.lstrip()
    return bool(stripped) and following != stripped and not stripped.startswith("#")


def _parse_broken(text: str, broken: tuple[list[BrokenItem], list[YamlProblem]]) -> Iterator[Any | YamlProblem]:
    items, problems = broken
    yield from problems
    markers = conflict_markers(text)
    for item in items:
        if item.conflict_line is None:
            yield from _parse(text[item.start:item.end], item.offset, several=False, may_alias=False)
            continue
        found = _ITEM_ID.search(text, item.start, item.end)
        words = _conflict_words(item.conflict_line, markers.get(item.conflict_line, "<<<<<<<"))
        yield YamlProblem(item.conflict_line, f"{words} (the item on line {item.offset + 1} is not read)",
                          lost=True, item_id=found.group(1) if found else None)


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
    refused = refusal(text, offset)
    if refused is not None:
        yield refused
        return
    loader = LineLoader(text, offset)
    deep: bool | None = None  # whether the text could nest too deep: looked at once, not per document
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
                refused = alias_refusal(node, offset)
            else:
                deep = could_nest_too_deep(text) if deep is None else deep
                refused = nesting_refusal(node, offset) if deep else None
            if refused is not None:
                yield refused
                if not several:
                    break
                continue
            yield from loader.problems
            loader.problems.clear()
            document = loader.construct_document(node)
            yield from loader.problems
            loader.problems.clear()
            if document is not None:
                yield document
            if not several:
                break
    except yaml.MarkedYAMLError as error:
        if is_libyaml_nesting_limit(error):
            yield located_depth_refusal(text, offset, error)
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


def _items_one_by_one(loader: LineLoader, root: yaml.SequenceNode, offset: int) -> Iterator[Any | YamlProblem]:
    """The items of a top-level sequence, each checked and built on its own (see `yaml_documents`)."""
    for item in root.value:
        refused = alias_refusal(item, offset)
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

