"""Ids and names as text: what cannot be meant differently is made the same, and what stays
different but looks the same is shown.

Ids and names (case ids, question and template ids, tags, dataset ids, dimension names, term ids and
names) are compared as text. Two spellings that no one can mean differently are made one before any
comparison: Unicode NFC (a letter with its accent as one code point or as two) and white space around
the text. Every other difference counts; where it cannot be seen (a zero-width space, a no-break
space inside a name), `visible` writes it as its code point, so a reason never shows two strings
that look identical.
"""

from __future__ import annotations

import re
import unicodedata

_SHOWN_AS_IS = frozenset(" \n\t")
_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[object, ...]:
    """How a reader orders ids: the numbers in them by their value ("db25-2" before "db25-10"), the
    rest as text; the text itself last, so that "01" and "1" keep one order. Text and numbers
    alternate in the key, so two keys always compare."""
    parts = _DIGITS.split(text)
    return (*(int(part) if index % 2 else part for index, part in enumerate(parts)), text)


def normalise_id(text: str) -> str:
    """An id or a name as compared: NFC, without white space around it."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return text.strip()


def _invisible(char: str) -> bool:
    if char in _SHOWN_AS_IS:
        return False
    category = unicodedata.category(char)
    # format (zero-width, direction marks), separators other than the space (no-break space), controls,
    # and combining marks that stand alone
    return category in ("Cf", "Zs", "Zl", "Zp", "Cc", "Co", "Cn") or char == "\u3164" or char == "\u115f"


def visible(text: str) -> str:
    """`text` with each character that cannot be seen (or looks like a plain space) written as
    `⟨U+200B⟩`; the text itself when it has none (the common case, checked quickly)."""
    if text.isascii() and text.isprintable():
        return text
    if not any(_invisible(char) for char in text):
        return text
    return "".join(f"\u27e8U+{ord(char):04X}\u27e9" if _invisible(char) else char for char in text)
