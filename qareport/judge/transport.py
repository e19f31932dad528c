"""The judge's transport: the openai SDK clients, their retries, and failures told apart.

Transport retries are the openai SDK's own: the client is built with `max_retries` = the judge's
`max_retries` setting and its `timeout` (which also bounds each attempt as a whole, the reading of
a trickled reply included: `deadline`), and the SDK retries 408, 409, 429, 5xx, connection
errors and timeouts with exponential backoff (0.5 s doubling to 8 s, with jitter), honouring
`retry-after-ms` and `Retry-After` up to two minutes (a server asking for longer is not retried).
What the SDK does not do is done here:

- counting retries: the SDK numbers each attempt in its `x-stainless-retry-count` request header,
  which an httpx event hook reads (`RetryCounter`);
- stopping every worker on 401, 403 and 404 (a rejected key, no access, an unknown model or
  deployment), on a server that cannot be reached at all, and after FAILURES_IN_A_ROW_TO_STOP
  calls failed in a row: the first such failure is kept as the run's `JudgeError` (`fatal`), and
  every later call returns at once (`JudgeAborted`) instead of being sent;
- telling a call that failed (`JudgeCallFailed`: the judgment could not be obtained) from a reply
  that could not be used (`MetricFailed`);
- scrubbing the API key from every message it builds.

`Transport` is the part of `client.JudgeClient` that sends one request; it declares the client's
state it uses (set by `JudgeClient.__init__`).
"""

from __future__ import annotations

import math
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import openai

from qareport.errors import JudgeAborted, JudgeCallFailed, JudgeError, MetricFailed
from qareport.judge.deadline import AttemptDeadline
from qareport.judge.settings import (
    DEFAULT_AZURE_API_VERSION,
    DEFAULT_OPENAI_BASE_URL,
    PLACEHOLDER_API_KEY,
    JudgeSettings,
    public_url,
)
from qareport.judge.usage import Ledger

T = TypeVar("T")

MAX_RETRY_AFTER = 120.0
"""Seconds; the SDK does not wait for a server asking for longer (and neither did qareport)."""

RETRY_COUNT_HEADER = "x-stainless-retry-count"

FAILURES_IN_A_ROW_TO_STOP = 10
"""Calls failed in a row (each after the SDK's retries), with no answer between them, after which
the judge is taken to be down: the calls not yet sent are not sent."""

REFUSED_REQUEST = frozenset({400, 413, 422})
"""HTTP statuses by which a server that works refuses one request (too long, filtered, malformed): that
case's metric failed, as with a reply that cannot be used; the judge did not fail, and other calls go on."""


class RetryCounter:
    """Remembers, per thread, how many retries the SDK made for the request it last sent.

    The SDK sends `x-stainless-retry-count: N` with its N-th retry of a request; the request event
    hook of the client's httpx client sees every attempt, in the thread that makes the call.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def on_request(self, request: Any) -> None:
        try:
            self._local.retries = int(request.headers.get(RETRY_COUNT_HEADER, "0"))
        except ValueError:
            self._local.retries = 0

    def reset(self) -> None:
        self._local.retries = 0

    @property
    def retries(self) -> int:
        """Retries of this thread's last call (0 before any request was sent)."""
        return getattr(self._local, "retries", 0)



def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a reply asks to wait: `retry-after-ms`, else `Retry-After` in seconds or as an HTTP
    date (as the SDK reads them); None when there is neither or they cannot be read."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            seconds = float(value) / 1000
            if math.isfinite(seconds) and seconds >= 0:
                return seconds
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)



def make_openai_client(settings: JudgeSettings, counter: RetryCounter, *, base_url: str | None = None,
                       api_key: str | None = None) -> openai.OpenAI:
    """The SDK client, retrying by itself `settings.max_retries` times; JudgeError without the key
    when the settings cannot make one. `base_url` / `api_key` replace the settings' (embeddings
    from another endpoint)."""
    deadline = AttemptDeadline(settings.timeout)
    http_client = openai.DefaultHttpxClient(event_hooks={"request": [counter.on_request, deadline.on_request],
                                                         "response": [deadline.on_response]})
    try:
        if settings.azure_endpoint:
            return openai.AzureOpenAI(
                api_key=settings.api_key,
                azure_endpoint=settings.azure_endpoint,
                api_version=settings.api_version or DEFAULT_AZURE_API_VERSION,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                http_client=http_client,
            )
        return openai.OpenAI(
            api_key=api_key or settings.api_key or PLACEHOLDER_API_KEY,
            base_url=base_url or settings.base_url or DEFAULT_OPENAI_BASE_URL,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            http_client=http_client,
        )
    except (openai.OpenAIError, ValueError) as error:
        http_client.close()
        raise JudgeError(f"cannot set up the judge's OpenAI client: {scrub(str(error), settings)}") from None



def chat_endpoint(settings: JudgeSettings) -> str:
    """Who answers chat requests, for the cache key: the base URL (without credentials), or the
    litellm route and its base URL. The same model name elsewhere is another judge."""
    if settings.litellm_chat is not None:
        return _litellm_endpoint(settings.litellm_chat.model, settings.litellm_chat.options)
    return settings.endpoint.rstrip("/")



def embedding_endpoint(settings: JudgeSettings) -> str:
    """Who answers embedding requests, for the cache key (see `chat_endpoint`)."""
    if settings.litellm_embedding is not None:
        return _litellm_endpoint(settings.litellm_embedding.model, settings.litellm_embedding.options)
    if settings.embedding_base_url:
        return public_url(settings.embedding_base_url).rstrip("/")
    return settings.endpoint.rstrip("/")



def _litellm_endpoint(model: str, options: Mapping[str, Any]) -> str:
    base = options.get("api_base") or options.get("base_url")
    return f"litellm:{model}" + (f"@{public_url(str(base)).rstrip('/')}" if base else "")



def scrub(text: str, settings: JudgeSettings) -> str:
    """`text` with the API key masked."""
    key = settings.api_key
    if key and key != PLACEHOLDER_API_KEY:
        text = text.replace(key, "***")
    return text



MODEL_GONE_CODES = frozenset({"model_not_found", "model_deprecated", "deprecated_model", "DeploymentNotFound"})
_MODEL_GONE_WORDS = ("deprecated", "retired", "decommissioned", "no longer available", "no longer supported",
                     "does not exist", "not found")


def model_gone(error: openai.APIStatusError) -> bool:
    """Whether a refusal says the model itself is gone or unknown (404, 410, or a 400 with a
    model_not_found or deprecation code or message), not that one request was wrong."""
    if error.status_code not in (400, 404, 410):
        return False
    if error.code in MODEL_GONE_CODES or error.status_code == 410:
        return True
    message = error.message.lower()
    return "model" in message and any(word in message for word in _MODEL_GONE_WORDS)


def _unreachable(endpoint: str, described: str, error: BaseException) -> str:
    """Why the judge cannot be reached, with what to do: for a certificate this machine does not
    trust (a company's own authority, a proxy that inspects TLS), SSL_CERT_FILE, which both the
    SDK's client and the direct path read."""
    refused = certificate_problem(error)
    if refused is None:
        return f"cannot reach the judge at {endpoint} ({described}); check the base URL and the network"
    return (f"cannot reach the judge at {endpoint}: its TLS certificate is not trusted ({refused}); if it is "
            "signed by your organisation's own authority, set SSL_CERT_FILE to that authority's certificate "
            "file (PEM), or check the base URL")


def certificate_problem(error: BaseException) -> str | None:
    """The reason a server's certificate was refused, when that is what `error` (or an error that
    caused it) is; None otherwise."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return str(current.verify_message or current.reason or current)
        current = current.__cause__ or current.__context__
    return None


class Transport:
    """Sends one request through the SDK, which retries it; tells what a failure means."""

    settings: JudgeSettings
    _retries: RetryCounter
    _lock: threading.Lock
    _fatal: JudgeError | None
    _answered: int
    _failed_in_a_row: int

    # -- one request, retried by the SDK

    def _send(self, call: Callable[[], T], ledger: Ledger) -> T:
        """One request (the SDK retries it); raises JudgeCallFailed, or JudgeAborted for a fatal problem."""
        if self._fatal is not None:
            raise JudgeAborted()
        self._retries.reset()
        try:
            response = call()
        except openai.APIStatusError as error:
            ledger.retries += self._retries.retries
            ledger.failed_calls += 1
            if model_gone(error):
                raise self._abort(self._model_gone_message(error)) from None
            if error.status_code in (401, 403, 404):
                raise self._abort(self._fatal_status_message(error)) from None
            if error.status_code in REFUSED_REQUEST:  # the judge answered: this request, not the judge, is at fault
                raise MetricFailed(f"the judge refused this request ({self._describe(error)})") from None
            raise self._call_failed(f"judge call failed{self._attempts()}: {self._describe(error)}"
                                    f"{self._too_long_note(error)}") from None
        except openai.APIConnectionError as error:
            ledger.retries += self._retries.retries
            ledger.failed_calls += 1
            timeout = isinstance(error, openai.APITimeoutError)
            if not timeout and self._answered == 0:
                raise self._abort(_unreachable(self.settings.endpoint, self._describe(error), error)) from None
            what = f"timed out after {self.settings.timeout:g} s" if timeout else self._describe(error)
            raise self._call_failed(f"judge call failed{self._attempts()}: {what}") from None
        except openai.OpenAIError as error:
            ledger.retries += self._retries.retries
            ledger.failed_calls += 1
            raise self._call_failed(f"judge call failed: {self._describe(error)}") from None
        ledger.retries += self._retries.retries
        with self._lock:
            self._answered += 1
            self._failed_in_a_row = 0
        return response

    def _call_failed(self, message: str) -> JudgeCallFailed | JudgeAborted:
        """A failed call; the one that makes FAILURES_IN_A_ROW_TO_STOP in a row stops the judge."""
        with self._lock:
            self._failed_in_a_row += 1
            stop = self._failed_in_a_row >= FAILURES_IN_A_ROW_TO_STOP
        if stop:
            return self._abort(f"the judge at {self.settings.endpoint} failed {FAILURES_IN_A_ROW_TO_STOP} calls "
                               f"in a row, each after the SDK's retries (the last: {message}); "
                               "the calls not yet sent were not sent")
        return JudgeCallFailed(message)

    def _attempts(self) -> str:
        retries = self._retries.retries
        return f" after {retries + 1} attempts" if retries else ""

    @staticmethod
    def _too_long_note(error: openai.APIStatusError) -> str:
        asked = retry_after(error.response.headers)
        if asked is not None and asked > MAX_RETRY_AFTER:
            return f" (the server asked to wait {asked:g} s, longer than {MAX_RETRY_AFTER:g} s)"
        return ""

    def _abort(self, message: str) -> JudgeAborted:
        with self._lock:
            if self._fatal is None:
                self._fatal = JudgeError(scrub(message, self.settings))
        return JudgeAborted()

    def _describe(self, error: Exception) -> str:
        if isinstance(error, openai.APIStatusError):
            text = f"HTTP {error.status_code}: {error.message}"
        else:
            text = str(error) or type(error).__name__
        return scrub(" ".join(text.split()), self.settings)

    def _model_gone_message(self, error: openai.APIStatusError) -> str:
        settings = self.settings
        if settings.is_azure:
            fix = ("deploy a current model and name its deployment with judge.azure_deployment "
                   "(embeddings: judge.azure_embedding_deployment)")
        else:
            fix = "choose another with --judge-model MODEL or judge.model (embeddings: --embedding-model)"
        return (f"the judge at {settings.endpoint} does not know this model, or no longer offers it (retired): "
                f"{settings.model} (embeddings {settings.embedding_model}) (HTTP {error.status_code}: "
                f"{error.message}); the judging stopped; {fix}")

    def _fatal_status_message(self, error: openai.APIStatusError) -> str:
        settings = self.settings
        where = settings.endpoint
        if error.status_code == 401:
            env = "AZURE_OPENAI_API_KEY" if settings.is_azure else "OPENAI_API_KEY"
            return f"the judge at {where} rejected the API key (HTTP 401: {error.message}); check {env}"
        if error.status_code == 403:
            return f"the judge at {where} refused access (HTTP 403: {error.message})"
        what = "deployment" if settings.is_azure else "model or endpoint"
        return (
            f"the judge at {where} does not know this {what} (HTTP 404: {error.message}); "
            f"check the model ({settings.model}, embeddings {settings.embedding_model}) and the base URL"
        )
