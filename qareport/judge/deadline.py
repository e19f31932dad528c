"""A deadline on each attempt of a judge request, the reading of its reply included.

The SDK's `timeout` is httpx's: it bounds each wait on the socket, not an attempt. A server that
sends one byte every half second never times out, and its worker is held for as long as it likes.
`AttemptDeadline` is a pair of event hooks for the SDK's httpx client (a public way to take part in
every request): the request hook notes when an attempt starts; the response hook refuses a reply
whose headers came after the deadline, and wraps the reply's body so that reading it past the
deadline raises httpx's `ReadTimeout`. The SDK retries that and reports it (`APITimeoutError`) as
any other timeout, so an attempt ends at most about one socket wait after `seconds`.

Only chat and embeddings requests are bounded: a batch's output file may take longer to download.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

try:  # the HTTP library the SDK is built on: httpx2 from openai 3 on, httpx before
    import httpx2 as httpx
except ModuleNotFoundError:  # pragma: no cover - an older openai
    import httpx  # type: ignore[no-redef, import-not-found, unused-ignore]

_STARTED = "qareport_attempt_started"
"""A request extension (httpx passes extensions it does not know through untouched)."""
BOUNDED_PATHS = ("/chat/completions", "/embeddings")


class AttemptDeadline:
    """Event hooks that end an attempt `seconds` after it started, its reply read or not."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_request(self, request: Any) -> None:
        request.extensions[_STARTED] = time.monotonic()

    def on_response(self, response: Any) -> None:
        request = response.request
        started = request.extensions.get(_STARTED)
        if started is None or not request.url.path.endswith(BOUNDED_PATHS):
            return
        deadline = started + self.seconds
        if time.monotonic() > deadline:
            response.close()
            raise self._late(request)
        response.stream = _BodyBefore(response.stream, deadline, lambda: self._late(request))

    def _late(self, request: Any) -> Exception:
        return httpx.ReadTimeout(f"the reply took longer than {self.seconds:g} s", request=request)


class _BodyBefore(httpx.SyncByteStream):
    """A reply's body, read chunk by chunk until the deadline; after it, `late()` is raised."""

    def __init__(self, inner: Any, deadline: float, late: Any):
        self._inner = inner
        self._deadline = deadline
        self._late = late

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise self._late()
            yield chunk

    def close(self) -> None:
        self._inner.close()
