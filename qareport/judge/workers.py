"""The judge's worker threads: a pool that a stopped run does not wait for.

`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, so a run
stopped by SIGTERM or Ctrl-C waited for every judge call in flight, however long its server took
to answer (one that never finishes its reply held the process for good). The workers here are
daemon threads: `shutdown(wait=False)` cancels the work not started and returns at once, and the
process can exit while a call is still waiting on its server. What was judged is already kept: each
accepted reply is written to the cache as it comes.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_STOP = None


class DaemonPool:
    """`workers` daemon threads running submitted callables, each with its `Future`."""

    def __init__(self, workers: int, *, name: str):
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._pending: list[Future[Any]] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._serve, name=f"{name}_{n}", daemon=True)
                         for n in range(max(1, workers))]
        for thread in self._threads:
            thread.start()

    def submit(self, work: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            self._pending.append(future)
        self._work.put((future, work))
        return future

    def _serve(self) -> None:
        while (item := self._work.get()) is not _STOP:
            future, work = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = work()
            except BaseException as error:  # noqa: BLE001 - the future carries it to the caller
                future.set_exception(error)
            else:
                future.set_result(result)

    def shutdown(self, *, wait: bool) -> None:
        """Stop the workers: with `wait`, after the work submitted is done; without, cancel the work
        not started and return at once (a call in flight finishes, or not, on its own)."""
        if not wait:
            with self._lock:
                for future in self._pending:
                    future.cancel()
        for _ in self._threads:
            self._work.put(_STOP)
        if wait:
            for thread in self._threads:
                thread.join()
