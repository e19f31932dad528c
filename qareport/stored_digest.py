"""The digest as a stored run keeps it: JSON text, and the typed `Digest` built back from that text, so
that `qareport email REPORT.xlsx` tells what the Summary told, long after the run. An edited digest
that no longer fits its types is refused (ValueError or TypeError), and the reader makes it again."""

from __future__ import annotations

import json
import types
import typing
from dataclasses import fields, is_dataclass
from typing import Any, cast

from qareport.digest import Digest


def digest_to_json(digest: Digest) -> str:
    return json.dumps(_plain(digest), ensure_ascii=False, sort_keys=False)


def digest_from_json(text: str) -> Digest:
    """The digest a workbook stored; ValueError when the text is not one."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the stored digest is not an object")
    return cast(Digest, _build(Digest, data))


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in fields(value)
                if not (field.metadata.get("omitted_when_default") and getattr(value, field.name) == field.default)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def _build(kind: Any, data: Any) -> Any:
    """A value of type `kind` from its plain form (dataclasses, tuples, dicts, optionals, scalars)."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(kind) if option is not type(None)]
        return None if data is None else _build(options[0], data)
    if origin is tuple:
        items = typing.get_args(kind)
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(_build(items[0], item) for item in data or ())
        return tuple(_build(item_kind, item) for item_kind, item in zip(items, data))
    if origin is dict:
        return dict(data or {})
    if is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        given = data if isinstance(data, dict) else {}
        made: Any = kind  # a dataclass type, called to make one
        return made(**{field.name: _build(hints[field.name], given[field.name])
                       for field in fields(kind) if field.name in given})
    return _checked(kind, data)


def _checked(kind: Any, data: Any) -> Any:
    """A scalar of the type the digest holds there; TypeError for anything else (an edited digest
    is then made again from the stored run rather than laid out with a word where a number was)."""
    wanted = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}.get(kind)
    if wanted is None or data is None:
        return data
    if not isinstance(data, wanted) or (kind is not bool and isinstance(data, bool)):
        raise TypeError(f"the stored digest holds {type(data).__name__} where {kind.__name__} belongs")
    return data
