"""`python -m qareport`, held inside one stage until a signal stops it.

    python tests/held_run.py STAGE OPENS qareport-arguments...

A test that stops a run in a stage must not race the stage's end: on a loaded machine a stage can
finish between the moment its name shows and the moment the signal arrives. This runs the command
as `python -m qareport` does, and holds it at a point that is inside STAGE whatever the machine's
load: once the progress display has shown STAGE's name and the run has then opened OPENS more files
in TMPDIR (0: at once), it writes `HELD` on stderr and waits there. The test sends its signal on
seeing `HELD`; the command's own handler raises where the run waits, inside the stage, and the
command's clean-up and exit status are what is tested. Nothing of qareport is replaced: the wait is
in the stream the progress display writes to and in an audit hook (`sys.addaudithook`).
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from typing import Any

HELD = "HELD"
"""What the child writes on stderr when it waits, on a line of its own."""


class _Hold:
    """Counts down to the hold point and waits there."""

    def __init__(self, stage: str, opens: int):
        self.stage = stage
        self.opens_left = opens
        self.seen = False
        self.done = False
        self.tmpdir = os.path.realpath(tempfile.gettempdir())

    def saw_text(self, text: str) -> None:
        if not self.seen and self.stage in text:
            self.seen = True
            self.maybe_wait()

    def saw_open(self, path: Any) -> None:
        if self.seen and not self.done and isinstance(path, str) and \
                os.path.realpath(path).startswith(self.tmpdir + os.sep):
            self.opens_left -= 1
            self.maybe_wait()

    def maybe_wait(self) -> None:
        if self.done or self.opens_left > 0:
            return
        self.done = True
        sys.__stderr__.flush()
        os.write(2, f"\n{HELD}\n".encode())
        while True:  # the signal's handler raises here; a sleep is cut short by it, so no wake-up is missed
            time.sleep(1)


class _WatchedStream:
    """A text stream passed through unchanged, whose written text the hold looks at."""

    def __init__(self, stream: Any, hold: _Hold):
        self._stream = stream
        self._hold = hold

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._stream.flush()
        self._hold.saw_text(text)
        return int(written)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _run() -> int:
    stage, opens, arguments = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    # Ctrl-C raises KeyboardInterrupt at a terminal; a parent that ignores SIGINT (pytest-xdist's
    # workers do) would pass that on, and the run would sleep through the test's signal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    hold = _Hold(stage, opens)

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and not hold.done:
            hold.saw_open(args[0])

    sys.addaudithook(audit)
    sys.stderr = _WatchedStream(sys.stderr, hold)
    from qareport.cli import main

    return main(arguments)


if __name__ == "__main__":
    sys.exit(_run())
