"""What qareport prints on a terminal: safe text, and progress that shows only where a person looks.

Ids, names and messages come from files a user does not control; printed raw, an escape sequence
in a case id could clear the screen or retitle the window. `visible()` shows every control
character as an escape (`\\x1b`), so the line reads the same and does nothing.

A terminal that is not UTF-8 (`LC_ALL=C` without UTF-8 mode, `PYTHONIOENCODING=ascii`) gets what
it cannot show as escapes (`\\u00e9`): `safe_streams()` makes printing never fail on a character.

Progress goes to stderr and only when stderr is a terminal: a CI log or a cron mail gets the
problems and the closing lines, never a hundred carriage returns.
"""

from __future__ import annotations

import re
import time
from typing import TextIO

from qareport.redaction import scrub_registered

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def visible(text: object) -> str:
    """The text with control characters shown as escapes (a tab and a newline are kept), and the
    secrets registered with `qareport.redaction` masked."""
    shown = _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), str(text))
    return scrub_registered(shown)


def safe_streams(*streams: object) -> None:
    """Make each text stream write what its encoding cannot hold as a backslash escape, rather
    than raise UnicodeEncodeError (a non-ASCII case id on an ASCII terminal)."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # a stream that cannot change: left as it is
            pass


class Progress:
    """Stages of a run on one terminal line: "evaluating 4,512/10,000", then "evaluated … in 2.1 s".

    Silent when the stream is not a terminal (or is None); `verbose` also prints each finished
    stage with its time when it is not.
    """

    def __init__(self, stream: TextIO | None, *, verbose: bool = False):
        self.stream = stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.verbose = verbose
        self._stage = ""
        self._started = 0.0
        self._drawn = 0.0

    def start(self, stage: str) -> None:
        self._stage, self._started = stage, time.monotonic()
        self._draw(f"{stage}…", force=True)

    def advance(self, done: int, total: int) -> None:
        self._draw(f"{self._stage} {done:,}/{total:,}", force=done >= total)

    def finish(self, summary: str) -> None:
        seconds = time.monotonic() - self._started
        line = f"qareport: {summary} in {seconds:.1f} s"
        if self.tty and self.stream is not None:
            self.stream.write("\r\x1b[2K" + line + "\n" if self.verbose else "\r\x1b[2K")
            self.stream.flush()
        elif self.verbose and self.stream is not None:
            self.stream.write(line + "\n")
            self.stream.flush()

    def _draw(self, text: str, *, force: bool = False) -> None:
        if not self.tty or self.stream is None:
            return
        now = time.monotonic()
        if force or now - self._drawn > 0.1:
            self._drawn = now
            self.stream.write("\r\x1b[2K" + f"qareport: {text}")
            self.stream.flush()
