"""JSON and JSON Lines read in chunks, one record at a time, giving what reading the whole text gives.

A responses file is often one large JSON array (hundreds of megabytes for ten thousand questions
with their retrieved tables). Reading it whole holds its bytes, its text and every parsed object at
once. `stream_json` reads it a megabyte at a time instead: each item of a top-level array (or each
value of a top-level mapping) is parsed as soon as its text is complete, and the text is then
dropped, so only the parsed values stay. `stream_json_lines` gives the lines of a JSON Lines file
one at a time, as its caller asks for them: only the records already turned into responses stay.

Both return None when the file needs the whole-text reading (`parse_json` over the decoded text) to
be described exactly: text that is not UTF-8, is empty or only whitespace, is not an array or a
mapping, has a syntax error anywhere, a number too long to read, or nests deeper than `MAX_DEPTH`. The
caller then reads it whole, and the problem is reported as before, with its line. A well-formed
file is thus read once; a malformed one twice.

Lines are those of the whole text: `id_lines` gives the line of the first id field holding each
value, exactly as a search over the whole text would.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from qareport.id_text import normalise_id

MAX_INT_DIGITS = 4000  # below Python's int-to-string limit (4,300 digits)
MAX_DEPTH = 100
"""Levels of nested arrays and objects a JSON value may have (a response needs fewer than 15), as for
YAML (`yaml_guards.MAX_DEPTH`). A deeper value is refused whether or not the parser managed to read
it, so the outcome is the same on every Python version: the parser's and the readers' recursion
limits differ between them (3.12 and later parse 5,000 levels that 3.11 refuses, and the readers
then recurse past theirs)."""
CHUNK_BYTES = 1 << 20
_WHITESPACE = " \t\n\r"  # JSON's whitespace (str.isspace would allow more than json.loads does)
_ID_FIELD = re.compile(r'"(?:question_id|test_case_id|id)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')
_ID_KEY_ENDS = ((1, '"'), (10, '"question_'), (11, '"test_case_'))  # what stands before 'id"' in each


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


class Unreadable:
    """The value of a JSON text that could not be parsed (see `parse_json`)."""


UNREADABLE = Unreadable()


class WrittenFloat(float):
    """A JSON number whose text a float does not give back (`1.10`, `1e3`), with that text in
    `written`: an id given as a number is its text as written. Other numbers stay plain floats."""

    written: str


def parse_float(text: str) -> float:
    """A JSON number with a fraction or an exponent: a plain float, or a `WrittenFloat` when the
    float would not give its text back."""
    value = float(text)
    if repr(value) == text:
        return value
    kept = WrittenFloat(text)
    kept.written = text
    return kept


class _Oversized(Exception):
    """An integer too long to read as a number: the whole-text reading keeps it as text."""


_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def nests_too_deeply(value: Any) -> bool:
    """Whether a parsed JSON value has arrays and objects nested deeper than `MAX_DEPTH` levels (the
    outermost one is level 1). Looks at the arrays and objects only (a step's output is a string,
    never looked into), one level at a time: no recursion, whatever the depth."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        inner: list[Any] = []
        for container in level:
            inner.extend([item for item in (container.values() if isinstance(container, dict) else container)
                          if isinstance(item, (dict, list))])
        level = inner
    return False


def deep_nesting_at(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Where the JSON text `text[start:end]` first nests deeper than `MAX_DEPTH` levels (the offset
    of the opening bracket that passes it), or None when it never does; brackets inside strings do
    not count. A scan of every string and bracket: for a text being refused, to say its line."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text, start, len(text) if end is None else end):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif token in ("]", "}"):
            depth -= 1
    return None


TOO_DEEP = (f"the JSON nests too deeply (more than {MAX_DEPTH} levels of arrays and objects; a response needs "
            "fewer than 15); qareport refuses it")


def parse_json(text: str, *, line: int | None) -> tuple[Any, list[tuple[int | None, str]]]:
    """The value of one JSON text (a whole file, or one line of JSON Lines when `line` is given),
    with its problems as (line, message). The value is `UNREADABLE` when the text is not JSON or
    nests deeper than `MAX_DEPTH`; an integer too long to be a number is kept as text, with a problem."""
    oversized: list[str] = []

    def parse_int(digits: str) -> int | str:
        if len(digits) > MAX_INT_DIGITS:
            oversized.append(digits)
            return digits
        return int(digits)

    try:
        value = json.loads(text, parse_int=parse_int, parse_float=parse_float)
    except json.JSONDecodeError as error:
        found = _leading_zero(text, error.pos)
        if found is not None:
            start, zero = found
            why = (f"the number {zero} starts with 0, which JSON does not allow; write it in quotes (\"{zero}\") "
                   "to keep it as written, or without the leading zeros")
            if line is not None:
                return UNREADABLE, [(line, f"invalid JSON on this line: {why}")]
            return UNREADABLE, [(error.lineno, f"invalid JSON: {why} (column {error.colno - (error.pos - start)})")]
        if line is not None:
            return UNREADABLE, [(line, f"invalid JSON on this line: {error.msg}; fix or remove the line")]
        return UNREADABLE, [(error.lineno, f"invalid JSON: {error.msg} (column {error.colno}); fix the syntax")]
    except RecursionError:  # deeper than this interpreter parses: deeper than MAX_DEPTH too
        return UNREADABLE, [(_refusal_line(text, line), TOO_DEEP)]
    if nests_too_deeply(value):
        return UNREADABLE, [(_refusal_line(text, line), TOO_DEEP)]
    problems: list[tuple[int | None, str]] = []
    for digits in oversized:
        where = line if line is not None else text.count("\n", 0, max(0, text.find(digits))) + 1
        problems.append((where, f"a number with {len(digits):,} digits is too long to read as a number; "
                                "it is kept as text"))
    return value, problems


def _refusal_line(text: str, line: int | None) -> int | None:
    """The line to name when a text nests too deeply: the given one (a JSON Lines line), else the
    line of the bracket that passes `MAX_DEPTH`."""
    if line is not None:
        return line
    at = deep_nesting_at(text)
    return None if at is None else text.count("\n", 0, at) + 1


_LEADING_ZERO = re.compile(r"-?0\d+")


def _leading_zero(text: str, position: int) -> tuple[int, str] | None:
    """Where the number written with a leading zero (`007`) that ends JSON's reading at `position`
    starts, and its text (the decoder reads `0` and then stops at the next digit); or None."""
    if not (0 < position < len(text) and text[position].isdigit() and text[position - 1] == "0"):
        return None
    start = position - 1
    if start > 0 and text[start - 1] == "-":
        start -= 1
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in ".+-"):
        return None
    match = _LEADING_ZERO.match(text, start)
    return (start, match.group()) if match is not None else None


class IdLines:
    """The line of the first id field (`question_id`, `test_case_id` or `id` with a string or
    integer value) holding each value, over a text fed in consecutive pieces."""

    def __init__(self) -> None:
        self.lines: dict[str, int] = {}
        self._line = 1

    def feed(self, text: str, start: int = 0, end: int | None = None) -> None:
        """Scan `text[start:end]`, the piece that follows the last one fed. A field never spans two
        pieces when they are cut between JSON values."""
        end = len(text) if end is None else end
        position = start  # where self._line holds
        searched = start  # id fields start at or after this (no overlaps, as in a regex search)
        one_line = text.find("\n", start, end) < 0  # then no line needs counting
        found = text.find('id"', start, end)
        while found >= 0:  # 'id"' is rare and str.find is fast: 3x quicker than the regex alone
            for back, before in _ID_KEY_ENDS:
                begin = found - back
                if begin >= searched and text.startswith(before, begin, found):
                    match = _ID_FIELD.match(text, begin, end)
                    if match is not None:
                        if not one_line:
                            self._line += text.count("\n", position, begin)
                            position = begin
                        value = _id_value(match.group(1))
                        if value is not None:
                            self.lines.setdefault(normalise_id(value), self._line)
                        searched = match.end()
                    break
            found = text.find('id"', max(found + 3, searched), end)
        if not one_line:
            self._line += text.count("\n", position, end)


def _id_value(literal: str) -> str | None:
    """The id a matched JSON string or integer stands for; None when it is not valid JSON."""
    if literal[0] == '"' and "\\" not in literal and literal.isprintable():
        return literal[1:-1]  # nothing to unescape (the common case, 20x faster than json.loads)
    if literal[0] != '"':
        digits = literal.lstrip("-")
        if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
            return None  # a leading zero (007) is not JSON: the file's reading reports it
        return literal  # a number: the id is its text as written
    try:
        return str(json.loads(literal))
    except json.JSONDecodeError:
        return None


def id_lines(text: str) -> dict[str, int]:
    """The line of the first id field holding each value, in a whole JSON text."""
    lines = IdLines()
    lines.feed(text)
    return lines.lines


@dataclass(frozen=True, slots=True)
class StreamedJson:
    """A JSON file's value, and the line of the first id field holding each id."""

    value: Any
    id_lines: dict[str, int]


class _Chunks:
    """The decoded text of a binary file, a chunk at a time; the bytes go to `digest` as read."""

    def __init__(self, handle: BinaryIO, digest: _Digest) -> None:
        self.handle = handle
        self.digest = digest
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()  # strict: not UTF-8 raises
        self.ended = False

    def read(self, size: int | None = None) -> str:
        data = self.handle.read(size or CHUNK_BYTES)
        self.digest.update(data)
        self.ended = not data
        return self.decoder.decode(data, final=self.ended)


class _NeedsWholeText(Exception):
    """The file must be read whole for its problems to be told as before."""


class _Cursor:
    """A position in a file's text, with only the text not yet consumed in memory."""

    def __init__(self, chunks: _Chunks, lines: IdLines) -> None:
        self.chunks = chunks
        self.lines = lines
        self.text = ""
        self.position = 0
        self.scanned = 0  # self.text[:scanned] has been fed to `lines`, and can be dropped
        self.read_size = CHUNK_BYTES

    def more(self) -> bool:
        """Read another chunk (a larger one each time a value does not end in the text held, so
        a huge value costs linear time); False at the end of the file."""
        if self.chunks.ended:
            return False
        added = self.chunks.read(self.read_size)
        self.text = self.text[self.scanned:] + added
        self.position -= self.scanned
        self.scanned = 0
        self.read_size *= 2
        return True

    def mark(self) -> None:
        """Everything before the position is done with: scan it for id fields and let it go.
        Called between values only, so that no id field is cut in two."""
        self.lines.feed(self.text, self.scanned, self.position)
        self.scanned = self.position

    def skip_whitespace(self) -> str:
        """The next character that is not whitespace ('' at the end of the file)."""
        while True:
            text, position = self.text, self.position
            while position < len(text) and text[position] in _WHITESPACE:
                position += 1
            self.position = position
            if position < len(text):
                return text[position]
            if not self.more():
                return ""

    def value(self, scan: Callable[[str, int], tuple[Any, int]]) -> Any:
        """The JSON value starting here; it must be followed by something (a comma, a bracket)."""
        while True:
            try:
                value, end = scan(self.text, self.position)
            except json.JSONDecodeError:
                if self.more():
                    continue  # most likely cut at the end of the text held
                raise _NeedsWholeText from None
            except (_Oversized, RecursionError):
                raise _NeedsWholeText from None
            if nests_too_deeply(value):
                raise _NeedsWholeText  # the whole-text reading refuses it and says where
            if end < len(self.text) or not self.more():
                self.position = end
                self.read_size = CHUNK_BYTES
                return value

    def expect(self, allowed: str) -> str:
        found = self.skip_whitespace()
        if not found or found not in allowed:
            raise _NeedsWholeText
        self.position += 1
        return found


def _decoder() -> json.JSONDecoder:
    def parse_int(digits: str) -> int:
        if len(digits) > MAX_INT_DIGITS:
            raise _Oversized
        return int(digits)

    return json.JSONDecoder(parse_int=parse_int, parse_float=parse_float)


def stream_json(path: Path, digest: _Digest) -> StreamedJson | None:
    """A JSON file whose value is an array or a mapping, read item by item (see the module's
    docstring); None when it must be read whole. Raises OSError when it cannot be read."""
    lines = IdLines()
    scan = _decoder().raw_decode
    with open(path, "rb") as handle:
        cursor = _Cursor(_Chunks(handle, digest), lines)
        try:
            opening = cursor.expect("[{")
            value: Any
            if opening == "[":
                value = []
                if cursor.skip_whitespace() == "]":
                    cursor.position += 1
                else:
                    while True:
                        cursor.skip_whitespace()
                        value.append(cursor.value(scan))
                        cursor.mark()
                        if cursor.expect(",]") == "]":
                            break
            else:
                value = {}
                if cursor.skip_whitespace() == "}":
                    cursor.position += 1
                else:
                    while True:
                        if cursor.skip_whitespace() != '"':
                            raise _NeedsWholeText
                        key = cursor.value(scan)
                        cursor.expect(":")
                        cursor.skip_whitespace()
                        value[key] = cursor.value(scan)
                        cursor.mark()  # after the value: an id field is a key and its value
                        if cursor.expect(",}") == "}":
                            break
            if cursor.skip_whitespace():
                raise _NeedsWholeText  # something after the value
            cursor.mark()
        except (_NeedsWholeText, UnicodeDecodeError):
            return None
    return StreamedJson(value, lines.lines)


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One non-blank line of a JSON Lines file: its number, its value (`UNREADABLE` when it is not
    JSON) and its problems as (line, message)."""

    number: int
    value: Any
    problems: list[tuple[int | None, str]]


def stream_json_lines(path: Path, digest: _Digest) -> Iterator[JsonLine] | None:
    """The lines of a JSON Lines file, parsed one at a time as they are asked for, numbered as
    `str.splitlines` numbers them; None when the file must be read whole (not UTF-8, or nothing but
    whitespace). A first reading checks that and feeds `digest`, before any line is given: a line
    given cannot be taken back, and the whole reading would give it again. Raises OSError when the
    file cannot be read."""
    with open(path, "rb") as handle:
        chunks = _Chunks(handle, digest)
        has_content = False
        try:
            while not chunks.ended:
                text = chunks.read()
                has_content = has_content or (bool(text) and not text.isspace())
        except UnicodeDecodeError:
            return None
    return _json_lines(open(path, "rb")) if has_content else None  # opened here: a failure is the caller's OSError


def _json_lines(handle: BinaryIO) -> Iterator[JsonLine]:
    number = 0
    pieces: list[str] = []  # text after the last line break read
    with handle:
        chunks = _Chunks(handle, _NO_DIGEST)
        try:
            while not chunks.ended:
                text = chunks.read()
                cut = len(text) if chunks.ended else text.rfind("\n") + 1
                if not cut and not chunks.ended:
                    pieces.append(text)  # a line longer than a chunk
                    continue
                # cut after a line break, never inside one: lines number as in the whole text
                for line in "".join((*pieces, text[:cut])).splitlines():
                    number += 1
                    if line.strip():
                        value, problems = parse_json(line, line=number)
                        yield JsonLine(number, value, problems)
                pieces = [text[cut:]]
        except UnicodeDecodeError:  # it was UTF-8 when checked: the file changed since
            yield JsonLine(number + 1, UNREADABLE, [(number + 1, "the file changed while it was read (it is no "
                                                    "longer UTF-8 here); the rest of it is left out: run again")])
        except OSError as error:
            yield JsonLine(number + 1, UNREADABLE, [(number + 1, f"the file could not be read on from here "
                                                    f"({error.strerror or error}); the rest of it is left out")])


class _NoDigest:
    def update(self, data: bytes, /) -> None:
        pass


_NO_DIGEST = _NoDigest()
