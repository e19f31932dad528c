"""How a message shows a value it did not expect: its kind, and a short form of it when small.

One describer for every "must be T (got v)" message, so that a wrong value reads the same whether
loading a test case or scoring a step: `mapping`, `list`, `str 'LP'`, `int 7`, `null`.
"""

from __future__ import annotations

from typing import Any

SHOWN_CHARACTERS = 40


def describe_value(value: Any) -> str:
    """`str 'LP'`, `int 7`, `bool True`, `null`, `mapping`, `list` (the kind of anything else)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"bool {value!r}"
    if isinstance(value, str):
        shown = value if len(value) < SHOWN_CHARACTERS else value[:SHOWN_CHARACTERS - 3] + "..."
        return f"str {shown!r}"
    if isinstance(value, (int, float)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__
