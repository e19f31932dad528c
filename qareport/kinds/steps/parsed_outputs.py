"""Each output of a question parsed once, and each SPARQL column read once, while it is scored.

A reference step is compared with every call of its question, a call with every reference step,
and the verdicts compare a pair again to say why it lost points; the outputs are the same texts
each time. Within `question_scope()` (opened by the steps matching, the verdicts and the
evaluation of one question) an output text is parsed once (`parsed_json`) and a column of a
parsed SPARQL result read once (`column_once`); the values are shared, so they are only read.
Everything kept is dropped when the outermost scope ends: memory holds one question's outputs at a
time. Outside a scope nothing is kept. The scope is a context variable, so threads that score
questions at the same time keep apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from contextvars import ContextVar, Token
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


class _Kept:
    """What one question's scope keeps."""

    __slots__ = ("columns", "texts")

    def __init__(self) -> None:
        self.texts: dict[str, Any] = {}  # output text -> its parsed JSON
        # (id of a bindings list, variable) -> (that list, its column); the list is held, so no
        # other list can take its id while the scope lasts
        self.columns: dict[tuple[int, Hashable], tuple[Any, Any]] = {}


_scope: ContextVar[_Kept | None] = ContextVar("qareport_question_outputs", default=None)


class question_scope:
    """Parse each output text once, and read each column once, within the block (a block within
    another shares the outer one's). A class rather than a generator: it is entered for every
    question and every verdict, where a generator's set-up was a measurable share of scoring."""

    __slots__ = ("_token",)

    def __init__(self) -> None:
        self._token: Token[_Kept | None] | None = None

    def __enter__(self) -> None:
        self._token = open_scope()

    def __exit__(self, *exception: object) -> None:
        close_scope(self._token)
        self._token = None


def open_scope() -> Token[_Kept | None] | None:
    """`question_scope()`'s entry, for a caller that closes it with `close_scope` (in a `finally`):
    what the scoring of every question opens, without a context manager's calls."""
    return _scope.set(_Kept()) if _scope.get() is None else None


def close_scope(token: Token[_Kept | None] | None) -> None:
    if token is not None:
        _scope.reset(token)


def parsed_json(output: Any) -> Any:
    """The parsed JSON of an output text (parsed once within a question's scope). Raises
    TypeError or ValueError as `json.loads` does."""
    if not isinstance(output, str):
        return json.loads(output)
    kept = _scope.get()
    if kept is None:
        return _loads_text(output)
    value = kept.texts.get(output, _NOT_PARSED)  # not a KeyError caught: most texts are parsed once
    if value is _NOT_PARSED:
        value = kept.texts[output] = _loads_text(output)
    return value


_NOT_PARSED = object()


def _loads_text(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # what orjson refuses and json reads (NaN, integers beyond 64 bits, lone surrogates),
        # or the error message json gives
        return json.loads(text)


def column_once(bindings: Any, variable: Any, read: Callable[[Any, Any], T]) -> T:
    """`read(variable, bindings)`, read once within a question's scope for the same bindings
    list and variable. An exception is raised each time, never kept."""
    kept = _scope.get()
    if kept is None:
        return read(variable, bindings)
    try:
        key = (id(bindings), variable)
        found = kept.columns.get(key)
    except TypeError:  # a variable that cannot be a key (the reading says what is wrong with it)
        return read(variable, bindings)
    if found is not None and found[0] is bindings:
        column: T = found[1]
        return column
    column = read(variable, bindings)
    kept.columns[key] = (bindings, column)
    return column


def columns_once(bindings: Any, variables: Any, read: Callable[[Any, Any], T]) -> list[T]:
    """`column_once` for each of `variables` of the same bindings (one look-up of the scope for all)."""
    kept = _scope.get()
    if kept is None:
        return [read(variable, bindings) for variable in variables]
    columns = kept.columns
    list_id = id(bindings)
    found_columns = []
    for variable in variables:
        try:
            key = (list_id, variable)
            found = columns.get(key)
        except TypeError:  # a variable that cannot be a key (the reading says what is wrong with it)
            found_columns.append(read(variable, bindings))
            continue
        if found is not None and found[0] is bindings:
            found_columns.append(found[1])
            continue
        column = read(variable, bindings)
        columns[key] = (bindings, column)
        found_columns.append(column)
    return found_columns
