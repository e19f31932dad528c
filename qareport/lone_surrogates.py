"""Lone surrogates in parsed input, replaced so that text always encodes.

JSON (`"\\ud800"`) and YAML (`"\\ud800"` in the pure-Python reader) can spell half of a UTF-16
pair on its own. Python then holds a string that no encoder takes: writing the results file, a
request to the judge or a console line fails on it. Such a code point is replaced by U+FFFD (the
replacement character) where the record is read, and the record's problem says so.

Raw UTF-8 cannot hold a surrogate (the strict decoder refuses it), so only an escape can make one:
`may_hold_surrogates` looks for such an escape in a file's bytes first, and a file without one
(nearly every file) is never walked.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import Any

REPLACEMENT = "\ufffd"
_ESCAPE = re.compile(rb"\\(?:u|U0000)[dD][89a-fA-F]")  # \ud800-\udfff, also as \U0000d800 (YAML)
_SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_surrogates(path: Path) -> bool:
    """Whether the file spells a surrogate code point with an escape (pairs too: they are told
    apart when the parsed values are walked)."""
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return _ESCAPE.search(view) is not None
    except (OSError, ValueError):  # empty (no map of 0 bytes), or unreadable: its reading says why
        return False


def replace_lone_surrogates(value: Any) -> tuple[Any, int]:
    """`value` with every surrogate code point in its strings (mapping keys too) replaced by
    U+FFFD, and how many were replaced. Lists and mappings are changed in place (they are freshly
    parsed); a string is returned anew. Walked without recursion: parsed input may nest deeply."""
    if isinstance(value, str):
        return _SURROGATE.subn(REPLACEMENT, value)
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for index, element in enumerate(item):
                if isinstance(element, str):
                    item[index], found = _SURROGATE.subn(REPLACEMENT, element)
                    count += found
                elif isinstance(element, (list, dict)):
                    stack.append(element)
        elif isinstance(item, dict):
            if any(isinstance(key, str) and _SURROGATE.search(key) for key in item):
                pairs = list(item.items())
                item.clear()  # the same mapping, its keys in their order
                for key, element in pairs:
                    if isinstance(key, str):
                        key, found = _SURROGATE.subn(REPLACEMENT, key)
                        count += found
                    item[key] = element
            for key, element in item.items():
                if isinstance(element, str):
                    item[key], found = _SURROGATE.subn(REPLACEMENT, element)
                    count += found
                elif isinstance(element, (list, dict)):
                    stack.append(element)
    return value, count
