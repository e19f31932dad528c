"""What qareport prints on a terminal: safe text, and progress that shows only where a person looks.

Ids, names and messages come from files a user does not control; printed raw, an escape sequence
in a case id could clear the screen or retitle the window. `visible()` shows every control
character as an escape (`\\x1b`), so the line reads the same and does nothing.

A terminal that is not UTF-8 (`LC_ALL=C` without UTF-8 mode, `PYTHONIOENCODING=ascii`) gets what
it cannot show as escapes (`\\u00e9`): `safe_streams()` makes printing never fail on a character.

Progress goes to stderr and only when stderr is a terminal: a CI log or a cron mail gets the
problems and the closing lines, never a hundred carriage returns.

A reader that goes away (`qareport run ... 2>&1 | head`) must not cost the report: once a write to
stdout or stderr finds the pipe closed, that stream writes to the null device from then on
(`safe_streams`), and the run goes on to write the workbook and exit as it would have.
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from typing import Any, TextIO

from qareport.progress import ProgressEvent
from qareport.redaction import scrub_registered

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def visible(text: object) -> str:
    """The text with control characters shown as escapes (a tab and a newline are kept), and the
    secrets registered with `qareport.redaction` masked."""
    shown = _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), str(text))
    return scrub_registered(shown)


def safe_streams(*streams: object) -> None:
    """Make each text stream write what its encoding cannot hold as a backslash escape, rather
    than raise UnicodeEncodeError (a non-ASCII case id on an ASCII terminal). `sys.stdout` and
    `sys.stderr` among them are also replaced by a `ClosedPipeSafe` of themselves."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot change: left as it is
                pass
    if any(stream is sys.stdout for stream in streams) and not isinstance(sys.stdout, ClosedPipeSafe):
        sys.stdout = ClosedPipeSafe(sys.stdout)
    if any(stream is sys.stderr for stream in streams) and not isinstance(sys.stderr, ClosedPipeSafe):
        sys.stderr = ClosedPipeSafe(sys.stderr)


class ClosedPipeSafe(io.TextIOBase):
    """A text stream whose reader may go away: the first write or flush that finds the pipe closed
    points the stream's file descriptor at the null device (so the interpreter's own last flush
    succeeds too), and everything after is dropped without an error."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._drop()

    def isatty(self) -> bool:
        return not self.gone and self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def _drop(self) -> None:
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        try:
            os.dup2(null, self.stream.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):  # a stream without a descriptor: dropping is enough
            pass
        finally:
            os.close(null)


class ProgressBar:
    """The one progress display: draws what the library tells (`progress.ProgressEvent`) on one
    terminal line, "qareport: judging [######......] 12/40 · 30 calls · 4 cached · $0.0012", and
    says each stage's end with its time when `verbose` ("qareport: evaluated 29 test cases in 2.1 s").

    Draws nothing when the stream is not a terminal (or is None); the ends that are results
    (`always`, the judge's usage line) are said there too.
    """

    WIDTH = 24  # the bar's characters

    def __init__(self, stream: TextIO | None, *, verbose: bool = False):
        self.stream = stream
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.verbose = verbose
        self._stage: str | None = None
        self._drawn = 0.0

    def __call__(self, event: ProgressEvent) -> None:
        if event.finished is not None:
            self._finish(event)
            return
        if not self.tty:
            return
        now = time.monotonic()
        force = event.stage != self._stage or (event.total is not None and event.done >= event.total)
        if force or now - self._drawn > 0.1:
            self._stage, self._drawn = event.stage, now
            self._write("\r\x1b[2K" + f"qareport: {self.text(event)}")

    @classmethod
    def text(cls, event: ProgressEvent) -> str:
        """The bar's words: "evaluating 29 test cases…", or the stage with its bar, count and detail."""
        if event.total is None:
            return f"{event.stage}\u2026"
        filled = int(cls.WIDTH * event.done / event.total) if event.total else cls.WIDTH
        text = f"{event.stage} [{'#' * filled}{'.' * (cls.WIDTH - filled)}] {event.done:,}/{event.total:,}"
        return f"{text} \u00b7 {event.detail}" if event.detail else text

    def _finish(self, event: ProgressEvent) -> None:
        line = (f"qareport: {event.finished} in {event.seconds:.1f} s" if event.seconds is not None
                else str(event.finished))
        shown = self.verbose or event.always
        if self.tty:
            self._write("\r\x1b[2K" + (line + "\n" if shown else ""))
        elif shown:
            self._write(line + "\n")
        self._stage = None

    def _write(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text)
            self.stream.flush()
