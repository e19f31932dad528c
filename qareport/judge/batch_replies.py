"""The replies a batch run's batches gave, as the judge's client takes them (`JudgeClient.batch`).

In a batch run (`judge.batch`, which runs the rounds) the client asks `BatchReplies` before it
sends anything: a request that has a reply from a batch gets it (`take`, read as the SDK's type
by `read_batch_reply`), one that has none is recorded for the next batch (`defer`, which gives
the `Deferred` the client raises) instead of being sent. This module knows neither the client nor
the rounds: the client reads it, and `judge.batch` fills it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from qareport.errors import JudgeAborted, JudgeCallFailed

if TYPE_CHECKING:
    from qareport.judge.cache import JudgeCache

T = TypeVar("T")

REPLY_KIND = "batch_reply"
REPLY_PREFIX = "batch-reply:"


class Deferred(JudgeAborted):
    """A request a batch is to answer: recorded for the next batch, not sent. Only a collecting
    pass meets it (its outcomes are thrown away)."""

    def __init__(self) -> None:
        super().__init__("asked in the next batch")


def read_batch_reply(model: type[T], body: Any) -> T:
    """A reply body from a batch's output file as the SDK's type for a direct reply (`model` is a
    pydantic model of the openai package); JudgeCallFailed when it is not one."""
    try:
        return model.model_validate(body)  # type: ignore[attr-defined, no-any-return]
    except ValueError as error:
        raise JudgeCallFailed(f"the batch's reply could not be read ({' '.join(str(error).split())[:200]})") from None


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """A request recorded for the next batch."""

    kind: str  # "chat" or "embeddings"
    body: dict[str, Any]


class BatchReplies:
    """The replies this run's batches gave, by request key, and the requests still to ask.

    Installed on the `JudgeClient` (`client.batch`) for a batch run; safe to share between threads.
    Replies live in the judge cache (kind `batch_reply`, so that a stopped run keeps them);
    failures only in memory (a later run asks again, as a direct run does after a failure).
    """

    def __init__(self, cache: JudgeCache):
        self._cache = cache
        self._lock = threading.Lock()
        self.deferred: dict[str, BatchRequest] = {}
        self.failed: dict[str, str] = {}  # key -> why, for the judgments given up in this run
        self.submitted: dict[str, int] = {}  # key -> times submitted in this run
        self.taken: set[str] = set()

    def take(self, key: str) -> Any | None:
        """The reply body a batch gave to the request `key`, or None (not asked yet, or asked again);
        JudgeCallFailed when its batches could not answer it."""
        with self._lock:
            why = self.failed.get(key)
        if why is not None:
            raise JudgeCallFailed(why)
        value = self._cache.get(REPLY_PREFIX + key)
        if not isinstance(value, dict) or "body" not in value:
            return None
        with self._lock:
            self.taken.add(key)
        return value["body"]

    def defer(self, key: str, kind: str, body: Mapping[str, Any]) -> Deferred:
        """Record a request for the next batch; the caller raises what this returns."""
        with self._lock:
            self.deferred.setdefault(key, BatchRequest(kind, dict(body)))
        return Deferred()

    def fail(self, key: str, why: str) -> None:
        """Give the request up for this run: its judgment is not judged, `why` says why."""
        with self._lock:
            self.failed[key] = why

    def store(self, key: str, model: str, body: Any) -> None:
        self._cache.put(REPLY_PREFIX + key, kind=REPLY_KIND, model=model, value={"body": body})

    def forget_taken(self) -> None:
        """Remove the batch replies this run used (the accepted ones are cached as direct replies)."""
        with self._lock:
            keys = sorted(self.taken)
            self.taken.clear()
        self._cache.delete([REPLY_PREFIX + key for key in keys])
