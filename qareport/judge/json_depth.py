"""JSON from the judge read with a bound on its nesting, checked before it is parsed.

`json.loads` recurses once per level of nesting: a reply nested thousands of levels deep (a
broken or hostile server, as its body or inside its message content) would raise RecursionError,
at a depth that differs between Python versions. `load_json` counts the depth first, by a linear
scan that never recurses, and refuses a text nested deeper than MAX_DEPTH with `TooDeep` (a
ValueError, like the text that is not JSON at all), so the caller fails one judgment, not the run.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Levels of arrays and objects a reply may nest; a judge's replies use three or four."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class TooDeep(ValueError):
    """A JSON text nested deeper than allowed; it was not parsed."""


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text`, brackets inside strings not counted."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub('""', text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def load_json(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)`, or TooDeep when `text` nests more than `max_depth` levels."""
    if text.count("[") + text.count("{") > max_depth and nesting_depth(text) > max_depth:
        raise TooDeep(f"the JSON nests more than {max_depth} levels deep")
    return json.loads(text)
