"""The direct judge's chat requests over the standard library's `http.client`, on kept-alive
connections (one per request in flight), with the URL and headers the SDK built once.

Why: among 8-32 worker threads, a chat call through the SDK's `client.post` cost 0.9-1.2 ms of
CPU with no judge around it: the SDK builds each request anew (its options model, URL, headers,
httpx's request and header objects) and httpx shares one connection pool whose lock and
per-request scan of every pooled connection grow with the workers. The same exchange over
`http.client` costs about 0.2 ms (README, "Performance").

What is the SDK's, so that behaviour does not change:

- the URL and headers: `DirectChat.of` asks the SDK client to build one chat request for the
  judge's model (Azure's `/openai/deployments/<deployment>/...?api-version=` route and `api-key`
  header, a custom base URL, the User-Agent and platform headers, the read-timeout header) and
  sends every request with those;
- the retries: the statuses the SDK retries (its `_should_retry`: 408, 409, 429, 5xx and the
  server's `x-should-retry`), its waits (its `_calculate_retry_timeout`: `retry-after-ms` or
  `Retry-After` up to two minutes, else 0.5 s doubling to 8 s with jitter), connection errors and
  timeouts retried, at most `max_retries` times, each attempt numbered in `x-stainless-retry-count`;
- the failures: the SDK's exceptions (`APIStatusError` made by the SDK from the reply,
  `APITimeoutError`, `APIConnectionError`), which `transport.Transport` tells apart as before;
- the reply: JSON when its content type says so (as the SDK's `cast_to=object`), else its text.

Idle connections are kept for the next request, in whichever worker thread; one the server closed
while it was idle is found so before a request is sent on it, and a new one opened, as httpx's pool
does: no retry is counted. `DirectChat.of`
returns None, and the SDK sends the requests, where this path would not be the same exchange: a
proxy from the environment applies to the URL, the client authenticates per request (a key
provider, an Azure AD token, workload identity), or the SDK lacks what is used here.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import openai

RETRY_COUNT_HEADER = "x-stainless-retry-count"
_NOT_SENT_AGAIN = frozenset({"host", "content-length", "accept-encoding", "connection", RETRY_COUNT_HEADER})
"""Headers of the SDK's request that http.client writes itself (Host, Content-Length; identity
encoding: a compressed reply would need decoding), or that differ per attempt."""


class DirectChat:
    """Posts chat requests for one model; safe to share between threads. Use `DirectChat.of`."""

    def __init__(self, sdk: Any, *, model: str, scheme: str, host: str, port: int, target: str,
                 headers: Mapping[str, str], timeout: float | None, options: Any, models: Any,
                 ssl_context: Any, on_attempt: Any):
        self._sdk = sdk
        self.model = model
        self._scheme, self._host, self._port, self._target = scheme, host, port, target
        self._url = f"{scheme}://{host}:{port}{target}"
        self._headers = dict(headers)
        self._timeout = timeout
        self._options = options  # the SDK's request options, for its retry waits
        self._models = models  # the module of the SDK's httpx Request and Response classes
        self._ssl_context = ssl_context
        self._on_attempt = on_attempt
        self._max_retries: int = sdk.max_retries
        self._idempotency_header: str | None = getattr(sdk, "_idempotency_header", None)
        self._lock = threading.Lock()
        self._connections: list[http.client.HTTPConnection] = []  # every one made
        self._idle: list[http.client.HTTPConnection] = []  # not in use now; the last used at the end
        self._closed = False

    @classmethod
    def of(cls, sdk: Any, *, model: str, on_attempt: Any) -> DirectChat | None:
        """The direct path for `sdk`'s chat requests with `model`, or None where the SDK must send
        them (see the module's docstring). `on_attempt(retries_taken)` is told of every attempt."""
        if any(getattr(sdk, name, None) is not None for name in
               ("_api_key_provider", "_azure_ad_token_provider", "_workload_identity_auth", "_provider_runtime")):
            return None
        try:
            from openai._models import FinalRequestOptions

            def chat_options() -> Any:
                return FinalRequestOptions.construct(method="post", url="/chat/completions",
                                                     json_data={"model": model})

            options = chat_options()  # for the retry waits; `_prepare_options` may change what it is given
            prepared = sdk._prepare_options(chat_options())
            request = sdk._build_request(prepared, retries_taken=0)
            sdk._prepare_request(request)
            http_client = sdk._client
            if http_client._transport_for_url(request.url) is not http_client._transport:
                return None  # a proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) applies to this URL
            if sdk._custom_auth(prepared.security) is not None:
                return None
        except (AttributeError, TypeError, ValueError, openai.OpenAIError):
            return None
        url = request.url
        if url.scheme not in ("http", "https") or not url.host:
            return None
        timeout = request.extensions.get("timeout", {})
        read = timeout.get("read") if isinstance(timeout, dict) else None
        ssl_context = None
        if url.scheme == "https":
            ssl_context = _ssl_context(sys.modules[type(request).__module__.split(".")[0]])
            if ssl_context is None:
                return None
        headers = {name: value for name, value in request.headers.multi_items()
                   if name.lower() not in _NOT_SENT_AGAIN}
        return cls(sdk, model=model, scheme=url.scheme, host=url.host,
                   port=url.port or (443 if url.scheme == "https" else 80),
                   target=url.raw_path.decode("ascii"), headers=headers, timeout=read, options=options,
                   models=sys.modules[type(request).__module__], ssl_context=ssl_context, on_attempt=on_attempt)

    def post(self, body: Mapping[str, Any]) -> Any:
        """The reply to one chat request (its JSON, or its text), after the SDK's retries; raises
        the SDK's exceptions."""
        if body.get("model") != self.model:  # another route (an Azure deployment): the SDK's
            return self._sdk.post("/chat/completions", body=body, cast_to=object)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers = dict(self._headers)
        if self._idempotency_header:
            headers[self._idempotency_header] = self._sdk._idempotency_key()
        max_retries = self._max_retries
        for retries_taken in range(max_retries + 1):
            remaining = max_retries - retries_taken
            headers[RETRY_COUNT_HEADER] = str(retries_taken)
            self._on_attempt(retries_taken)
            try:
                status, reply_headers, data = self._exchange(content, headers)
            except TimeoutError as error:
                if remaining > 0:
                    self._wait(remaining, None)
                    continue
                raise openai.APITimeoutError(request=self._request(headers)) from error
            except (OSError, http.client.HTTPException) as error:
                if remaining > 0:
                    self._wait(remaining, None)
                    continue
                raise openai.APIConnectionError(request=self._request(headers)) from error
            if 300 <= status < 400:  # a redirect, which the SDK's client follows
                return self._sdk.post("/chat/completions", body=body, cast_to=object)
            if status >= 400:
                response = self._models.Response(status, headers=reply_headers, content=data,
                                                  request=self._request(headers))
                if remaining > 0 and self._sdk._should_retry(response):
                    self._wait(remaining, response.headers)
                    continue
                raise self._sdk._make_status_error_from_response(response) from None
            return _reply(reply_headers, data)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections, self._idle = self._connections, [], []
        for connection in connections:
            connection.close()

    # -- one exchange on an idle connection, or a new one

    def _exchange(self, content: bytes, headers: Mapping[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = self._take()
        try:
            connection.request("POST", self._target, body=content, headers=dict(headers))
            response = connection.getresponse()
            data = response.read()
            if response.will_close:
                connection.close()  # http.client opens it again for the next request
            return response.status, response.getheaders(), data
        except BaseException:
            connection.close()
            raise
        finally:
            with self._lock:
                if self._closed:
                    connection.close()
                else:
                    self._idle.append(connection)

    def _take(self) -> http.client.HTTPConnection:
        """The connection used last that is still open (its server may close an idle one: then
        the next), or a new one. As many connections as requests at once, at most."""
        while True:
            with self._lock:
                if self._closed:
                    raise openai.APIConnectionError(message="the judge's client is closed",
                                                    request=self._request(self._headers))
                if not self._idle:
                    break
                connection = self._idle.pop()
            if connection.sock is None or not _closed_by_server(connection.sock):
                return connection
            connection.close()
        if self._scheme == "https":
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                                     context=self._ssl_context)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        with self._lock:
            self._connections.append(connection)
        return connection

    def _request(self, headers: Mapping[str, str]) -> Any:
        return self._models.Request("POST", self._url, headers=dict(headers))

    def _wait(self, remaining: int, headers: Any) -> None:
        time.sleep(self._sdk._calculate_retry_timeout(remaining, self._options, headers))


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether an idle connection's socket can be read: the server closed it (or sent what no
    request asked for); as httpx's pool checks a connection before it sends on it again."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)
    except (OSError, ValueError):
        return True


def _reply(headers: list[tuple[str, str]], data: bytes) -> Any:
    """As the SDK reads a reply with `cast_to=object`: JSON when the content type ends in json, else
    the text (which `replies.ChatReply.of_json` reads as a reply without content)."""
    content_type = next((value for name, value in headers if name.lower() == "content-type"), "*")
    text = data.decode("utf-8", errors="replace")
    if content_type.split(";")[0].strip().endswith("json"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _ssl_context(httpx_module: Any) -> Any:
    """The SSL context the SDK's httpx client would make (certificates, SSL_CERT_FILE)."""
    make = getattr(httpx_module, "create_ssl_context", None)
    try:
        return make() if make is not None else None
    except (OSError, ValueError, TypeError):
        return None
