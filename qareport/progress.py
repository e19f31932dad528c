"""Progress, told and never drawn: the library tells an `on_progress` callback where a run is; what
a person sees of it is the CLI's choice (`console.ProgressBar` draws one bar on a terminal).

Every stage that takes a while tells its start, how far it got (`done` of `total`, with a short
`detail` such as the judge's calls and cost) and its end (`finished`: what it did, with its time).
An end that is a result every reader should see, not only a verbose one (the judge's usage line),
is `always`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Where a stage of a run is."""

    stage: str  # "evaluating 29 test cases", "judging"
    done: int = 0
    total: int | None = None  # None: a stage that is not counted
    detail: str = ""  # "12 calls · 3 cached · $0.0012"
    finished: str | None = None  # at the stage's end: what it did ("loaded 29 test cases and 28 responses")
    seconds: float | None = None  # at a timed stage's end: how long it took
    always: bool = False  # an end that is a result to say to every reader (the judge's usage line)


OnProgress = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:
    """The callback of a caller who does not follow progress."""


class Stages:
    """Tells the stages of a run, one after the other, each with its time."""

    def __init__(self, on_progress: OnProgress | None):
        self._tell = on_progress or no_progress
        self._stage = ""
        self._started = 0.0

    def start(self, stage: str) -> None:
        self._stage, self._started = stage, time.monotonic()
        self._tell(ProgressEvent(stage))

    def finish(self, summary: str) -> None:
        self._tell(ProgressEvent(self._stage, finished=summary, seconds=time.monotonic() - self._started))
