"""The text a cell may hold: nothing a workbook cannot store gets in (`sheet.write` puts values
into cells with these rules, and stores a string as a string, never as a formula).

- Characters XML 1.0 cannot carry (control characters, lone surrogates) become U+FFFD, visibly.
- A cell holds at most 32,767 characters and 253 line breaks; longer text is cut with a marker
  saying how much is missing and where the full text is.
"""

from __future__ import annotations

import re

MAX_CELL_CHARS = 32_767
MAX_LINE_BREAKS = 253
REPLACEMENT = "\ufffd"
_UNWRITABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean_text(text: str) -> str:
    """Replace characters a workbook cannot store with U+FFFD."""
    if text.isprintable():  # most texts: none of those characters is printable, so none is here
        return text
    return _UNWRITABLE.sub(REPLACEMENT, text)


def fit_text(text: str, *, where_full: str = "") -> str:
    """Cut text to what one cell holds, ending with a visible marker when anything was cut."""
    text = clean_text(text)
    if len(text) <= MAX_CELL_CHARS and text.count("\n") <= MAX_LINE_BREAKS:
        return text  # nearly every cell: nothing to cut
    suffix = f"; full text: {where_full}" if where_full else ""
    lines = text.split("\n")
    if len(lines) > MAX_LINE_BREAKS + 1:
        kept = lines[:MAX_LINE_BREAKS]  # leaves room for the marker line
        marker = f"[… {len(lines) - len(kept)} more lines cut{suffix}]"
        text = "\n".join([*kept, marker])
    if len(text) > MAX_CELL_CHARS:
        cut_at = MAX_CELL_CHARS - 80
        marker = f"\n[… {len(text) - cut_at:,} more characters cut{suffix}]"
        text = text[:cut_at] + marker
    return text
