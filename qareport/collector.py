"""Keeping Python's cyclic garbage collector from walking a large run's data again and again.

A run holds millions of objects (test cases, responses, results) that live until it ends and form
no reference cycles (scoring makes none either: `tests/test_fast_paths.py` checks it). The
collector's passes would walk all of them again and again and find nothing: at 10,000 Q&A
questions about two seconds over the run. So:

* while a stage builds such data (loading, evaluation, the report model), the automatic
  collector rests (`collector_paused`);
* while the workbook is written, it rests too (`collector_paused(set_aside=False)`): that stage's
  objects do not live on, and the cyclic garbage it leaves (XlsxWriter's objects refer to each
  other) is collected once when it ends;
* within a run (`run_scope`, which the pipeline opens), what those stages built is then set aside
  (`gc.freeze`), so that the collections of the later stages (the report, the workbook) walk only
  their own objects; the run's end puts it back (`gc.unfreeze`), and the next full collection
  frees whatever of it has become cyclic garbage. Outside a run (the library's stage functions
  called on their own) nothing is set aside.

Objects are freed by reference counting as usual throughout; the collector's state is restored
when a stage ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_open_runs = 0  # `run_scope` blocks open now (a run within a run puts things back once, at the end)


@contextmanager
def run_scope() -> Iterator[None]:
    """A run: within it, what `collector_paused` stages build is set aside until the run ends."""
    global _open_runs
    _open_runs += 1
    try:
        yield
    finally:
        _open_runs -= 1
        if not _open_runs:
            gc.unfreeze()


@contextmanager
def collector_paused(*, set_aside: bool = True) -> Iterator[None]:
    """No automatic collection in the block; the collector is as it was afterwards. Within a run,
    everything tracked when the block ends is set aside for the rest of the run (`set_aside`);
    otherwise the block's cyclic garbage is collected when it ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not set_aside:
            gc.collect()
        elif _open_runs:
            gc.freeze()
        if was_enabled:
            gc.enable()
