"""Calls to the judge's model: the only module that imports `openai`, with `judge.batch` (batches).

Transport retries are the openai SDK's own: the client is built with `max_retries` = the judge's
`max_retries` setting and its `timeout`, and the SDK retries 408, 409, 429, 5xx, connection
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
- scrubbing the API key from every message it builds;
- the cache (`JudgeCache`), costs (`PriceTable`) and checking replies, asking once more when a
  reply is unusable (`ask_checked`);
- in a batch run (`batch`), taking replies from the run's batches instead of sending requests: a
  reply from a batch goes through the same checks, costs and cache as a direct one.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import openai

from qareport.errors import JudgeAborted, JudgeCallFailed, JudgeError, JudgeOutputError, MetricFailed
from qareport.judge.batch import BatchReplies, read_batch_reply
from qareport.judge.cache import JudgeCache, cache_key
from qareport.judge.checks import SCHEMAS, preview
from qareport.judge.cost import QUESTION_TOKENS, CallGuard, estimate_call
from qareport.judge.prices import PriceTable
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
CORRECTIVE_RETRIES = 1
"""Times a judge whose reply could not be used is asked again, told what was wrong."""
FAILURES_IN_A_ROW_TO_STOP = 10
"""Calls failed in a row (each after the SDK's retries), with no answer between them, after which
the judge is taken to be down: the calls not yet sent are not sent."""
REFUSED_REQUEST = frozenset({400, 413, 422})
"""HTTP statuses by which a server that works refuses one request (too long, filtered, malformed): that
case's metric failed, as with a reply that cannot be used; the judge did not fail, and other calls go on."""


_REPEAT: ContextVar[int] = ContextVar("qareport_judge_repeat", default=0)


@contextmanager
def asking_repeat(number: int) -> Iterator[None]:
    """Within the block, in this thread, chat judgments are repeat `number` of a judgment asked
    several times (0: the first): each repeat has its own cache entries (`cache.cache_key`).
    Embeddings are keyed by their inputs alone: the same texts have the same vectors."""
    token = _REPEAT.set(number)
    try:
        yield
    finally:
        _REPEAT.reset(token)


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
    http_client = openai.DefaultHttpxClient(event_hooks={"request": [counter.on_request]})
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


def _log_warning(message: str) -> None:
    logging.getLogger("qareport").warning("%s", message)


def scrub(text: str, settings: JudgeSettings) -> str:
    """`text` with the API key masked."""
    key = settings.api_key
    if key and key != PLACEHOLDER_API_KEY:
        text = text.replace(key, "***")
    return text


@dataclass(frozen=True, slots=True)
class _ChatReply:
    """What the judge reads of a chat completion: its model, token usage (`has_usage` False when
    the reply gave none), and the first choice's content, refusal and finish reason."""

    model: str | None
    has_usage: bool
    input_tokens: int
    output_tokens: int
    content: str | None
    refusal: str | None
    finish_reason: str | None

    @classmethod
    def of_json(cls, data: Any) -> _ChatReply:
        """From the reply's JSON as sent; what is missing or of another type is read as absent."""
        data = data if isinstance(data, dict) else {}
        usage = data.get("usage")
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        return cls(_text_or_none(data.get("model")), isinstance(usage, dict),
                   _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"),
                   _text_or_none(message.get("content")), _text_or_none(message.get("refusal")),
                   _text_or_none(choice.get("finish_reason")))

    @classmethod
    def of_object(cls, completion: Any) -> _ChatReply:
        """From a completion object (litellm's, shaped as the SDK's)."""
        usage = completion.usage
        choice = completion.choices[0] if completion.choices else None
        message = choice.message if choice is not None else None
        return cls(completion.model, usage is not None,
                   (usage.prompt_tokens or 0) if usage is not None else 0,
                   (usage.completion_tokens or 0) if usage is not None else 0,
                   message.content if message is not None else None,
                   getattr(message, "refusal", None) if message is not None else None,
                   choice.finish_reason if choice is not None else None)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _tokens(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class JudgeClient:
    """The judge's model behind the cache: chat replies checked, embeddings, costs in ledgers.

    Safe to share between the runner's threads. Use as a context manager, or call `close()`.
    """

    def __init__(self, settings: JudgeSettings, *, on_warning: Callable[[str], None] | None = None):
        self.settings = settings
        self._prices = PriceTable(settings.prices)
        self._retries = RetryCounter()
        self._client: Any = None
        self._embedding_client: Any = None
        self._litellm: Any = None
        if settings.litellm_chat is not None or settings.litellm_embedding is not None:
            from qareport.judge.litellm_transport import LiteLLMClient

            chat, embedding = settings.litellm_chat, settings.litellm_embedding
            self._litellm = LiteLLMClient(
                chat_model=chat.model if chat else None, chat_options=chat.options if chat else {},
                embedding_model=embedding.model if embedding else None,
                embedding_options=embedding.options if embedding else {},
                timeout=settings.timeout, max_retries=settings.max_retries)
        if settings.litellm_chat is None or (
                settings.litellm_embedding is None and settings.embedding_base_url is None):
            self._client = make_openai_client(settings, self._retries)
        if settings.litellm_embedding is not None:
            self._embedding_client = self._litellm
        elif settings.embedding_base_url is not None:
            self._embedding_client = make_openai_client(settings, self._retries, base_url=settings.embedding_base_url,
                                                        api_key=settings.embedding_api_key)
        else:
            self._embedding_client = self._client
        self._chat_client = self._litellm if settings.litellm_chat is not None else self._client
        self._cache: JudgeCache | None = None
        if settings.use_cache and settings.cache_path:
            self._cache = JudgeCache(settings.cache_path, on_warning=on_warning or _log_warning)
        self._chat_endpoint = chat_endpoint(settings)
        self._embedding_endpoint = embedding_endpoint(settings)
        self._lock = threading.Lock()
        self._fatal: JudgeError | None = None
        self._answered = 0
        self._failed_in_a_row = 0
        self._longest_reply: dict[str, int] = {}  # output tokens of the longest reply so far, per metric
        self.guard: CallGuard | None = None
        """Asked before each request is sent (`cost.Budget`, `cost.Recorder`); None: every request is sent."""
        self.batch: BatchReplies | None = None
        """While a batch run judges (`judge.batch`): replies come from its batches, and a request
        with none is recorded for the next batch (`Deferred`) instead of being sent."""

    def _close_clients(self) -> None:
        for client in {id(c): c for c in (self._client, self._embedding_client, self._chat_client) if c}.values():
            client.close()

    @property
    def cache(self) -> JudgeCache | None:
        return self._cache

    def batch_sdk(self, kind: str) -> Any:
        """The SDK client that sends `kind` ("chat" or "embeddings") requests: batches go through it."""
        return self._embedding_client if kind == "embeddings" else self._chat_client

    def close(self) -> None:
        self._close_clients()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def chat_model(self) -> str:
        """The model name sent with chat requests (the deployment, on Azure)."""
        return self.settings.azure_deployment or self.settings.model

    @property
    def embedding_request_model(self) -> str:
        return self.settings.azure_embedding_deployment or self.settings.embedding_model

    @property
    def fatal(self) -> JudgeError | None:
        """The configuration problem that stopped the run, if any."""
        return self._fatal

    def start_run(self) -> None:
        self._fatal = None
        self._failed_in_a_row = 0

    # -- chat

    def ask_checked(self, metric: str, prompt: str, check: Callable[[str | None], T], ledger: Ledger,
                    *, retry_prompt: Callable[[str], str]) -> T:
        """Ask, check the reply; on a bad reply ask again saying what was wrong
        (`retry_prompt(problem)`), up to `CORRECTIVE_RETRIES` times. The accepted reply is cached
        under the first request as well, so a rerun of the same inputs asks nothing. Raises
        MetricFailed or JudgeAborted."""
        messages = [{"role": "user", "content": prompt}]
        try:
            return self._chat(metric, messages, check, ledger)
        except JudgeOutputError as first:
            problem = first
        except MetricFailed as error:
            self._remember_failure(metric, messages, str(error), ledger.attempt)
            raise
        for _ in range(CORRECTIVE_RETRIES):
            conversation = [*messages, {"role": "assistant", "content": problem.content or ""},
                            {"role": "user", "content": retry_prompt(problem.problem)}]
            try:
                return self._chat(metric, conversation, check, ledger, also_for=messages)
            except JudgeOutputError as again:
                problem = again
        retries = "one retry" if CORRECTIVE_RETRIES == 1 else f"{CORRECTIVE_RETRIES} retries"
        message = f"the judge's reply could not be used, also after {retries}: {problem.problem}"
        self._remember_failure(metric, messages, message, ledger.attempt)
        raise MetricFailed(message)

    def _chat_request(self, metric: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.chat_model, "messages": messages,
                                   "temperature": self.settings.temperature}
        if metric in SCHEMAS:  # a custom metric's reply is plain text (tab-separated values)
            if self.settings.response_format == "json_schema":
                request["response_format"] = SCHEMAS[metric]
            else:
                request["response_format"] = {"type": "json_object"}
        if self.settings.max_tokens is not None:
            request["max_tokens"] = self.settings.max_tokens
        return request

    def _chat_key(self, request: Mapping[str, Any], attempt: int | None) -> str:
        return cache_key("chat", request, endpoint=self._chat_endpoint, attempt=attempt, repeat=_REPEAT.get())

    def _remember_failure(self, metric: str, messages: list[dict[str, str]], message: str,
                          attempt: int | None) -> None:
        """Mark a judgment that failed, so that the next run asks again and says it did."""
        if self._cache is not None:
            key = self._chat_key(self._chat_request(metric, messages), attempt)
            self._cache.put(key, kind="failed", model=self.chat_model, value={"failed": message})

    def _chat(self, metric: str, messages: list[dict[str, str]], check: Callable[[str | None], T],
              ledger: Ledger, *, also_for: list[dict[str, str]] | None = None) -> T:
        """One chat request, from the cache when it holds an acceptable reply. `also_for`: the
        first request of a corrective retry, under which an accepted reply is cached too."""
        request = self._chat_request(metric, messages)
        key = self._chat_key(request, ledger.attempt)
        batched = self.batch.take(key) if self.batch is not None else None  # this run's batch reply
        if batched is None and self._cache is not None:
            hit = self._cache.get(key)
            if also_for is None and isinstance(hit, dict) and "failed" in hit:
                ledger.tried_again += 1
            if isinstance(hit, dict) and isinstance(hit.get("content"), str):
                try:
                    checked = check(hit["content"])
                except JudgeOutputError:
                    pass  # a template's checks changed: ask again
                else:
                    ledger.cached_calls += 1
                    if also_for is not None:
                        self._cache.put(self._chat_key({**request, "messages": also_for}, ledger.attempt), kind="chat",
                                        model=self.chat_model, value=hit)
                    return checked
        reserved = 0.0
        if batched is not None:
            reply = _ChatReply.of_object(read_batch_reply(openai.types.chat.ChatCompletion, batched))
        elif self.batch is not None:
            raise self.batch.defer(key, "chat", request)  # asked in the next batch, not sent
        else:
            reserved = self._admit("chat", metric, request)
            try:
                if self._litellm is not None and self._chat_client is self._litellm:
                    reply = _ChatReply.of_object(self._send(
                        lambda: self._chat_client.chat.completions.create(**request), ledger))
                else:
                    # the request dict as the JSON body and the reply's JSON as a dict: the same HTTP
                    # exchange, retries and errors as `chat.completions.create`, without the SDK's
                    # typed-parameter transform and reply model, which were a third of a call's CPU time
                    reply = _ChatReply.of_json(self._send(
                        lambda: self._client.post("/chat/completions", body=request, cast_to=object), ledger))
            except BaseException:
                self._settle(reserved, 0.0)
                raise
        input_tokens, output_tokens = reply.input_tokens, reply.output_tokens
        cost = None if not reply.has_usage else self._prices.cost(
            (self.settings.model, reply.model), input_tokens, output_tokens, batch=batched is not None)
        self._settle(reserved, cost)
        with self._lock:
            self._longest_reply[metric] = max(self._longest_reply.get(metric, 0), output_tokens)
        ledger.add_call(input_tokens, output_tokens, cost, self.settings.model)
        content = reply.content
        if reply.refusal and not content:
            raise JudgeOutputError(f"the judge refused: {preview(reply.refusal)}", None)
        if reply.finish_reason == "length":
            raise JudgeOutputError("the reply was cut off at the token limit", content)
        checked = check(content)
        if self._cache is not None:
            value = {
                "content": content,
                "model": reply.model,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
            self._cache.put(key, kind="chat", model=self.chat_model, value=value)
            if also_for is not None:
                self._cache.put(self._chat_key({**request, "messages": also_for}, ledger.attempt), kind="chat",
                                model=self.chat_model, value=value)
        return checked

    # -- embeddings

    def embeddings_key(self, inputs: list[str]) -> str:
        return cache_key("embeddings", {"model": self.embedding_request_model, "input": inputs,
                                        "encoding_format": "float"}, endpoint=self._embedding_endpoint)

    def cached_value(self, key: str) -> Any | None:
        return None if self._cache is None else self._cache.get(key)

    def store_embeddings(self, key: str, value: Mapping[str, Any]) -> None:
        if self._cache is not None:
            self._cache.put(key, kind="embeddings", model=self.embedding_request_model, value=dict(value))

    def embed(self, inputs: list[str], ledger: Ledger) -> tuple[list[Any], float | None]:
        """The embedding items of one request, as the reply lists them (`checks.check_embeddings`
        says whether they can be used), and its cost (None: unpriced)."""
        request: dict[str, Any] = {"model": self.embedding_request_model, "input": inputs,
                                   "encoding_format": "float"}
        reserved = 0.0
        batched = self.batch.take(self.embeddings_key(inputs)) if self.batch is not None else None
        if batched is not None:
            response = read_batch_reply(openai.types.CreateEmbeddingResponse, batched)
        elif self.batch is not None:
            raise self.batch.defer(self.embeddings_key(inputs), "embeddings", request)
        else:
            reserved = self._admit("embeddings", "answer_relevance", request)
            try:
                response = self._send(lambda: self._embedding_client.embeddings.create(**request), ledger)
            except BaseException:
                self._settle(reserved, 0.0)
                raise
        tokens = response.usage.prompt_tokens if response.usage is not None else None
        cost = None if tokens is None else self._prices.cost(
            (self.settings.embedding_model, response.model), tokens, batch=batched is not None)
        self._settle(reserved, cost)
        ledger.add_call(tokens or 0, 0, cost, self.settings.embedding_model)
        return list(response.data or []), cost

    # -- the guard: a budget, or the estimate

    def _admit(self, kind: str, metric: str, request: Mapping[str, Any]) -> float:
        """What the guard reserves for a request about to be sent (it may refuse: BudgetReached, NotSent)."""
        if self.guard is None:
            return 0.0
        model = self.settings.embedding_model if kind == "embeddings" else self.settings.model
        with self._lock:
            longest = self._longest_reply.get(metric, 0) if kind == "chat" else 0
        call = estimate_call(kind, metric, request, prices=self._prices, models=(model,),
                             questions=self.settings.relevance_questions, longest_reply=longest)
        if kind == "chat" and metric == "answer_relevance":  # its embeddings come later, in a batch
            embedded = (self.settings.relevance_questions + 1) * QUESTION_TOKENS
            call = replace(call, hold_usd=self._prices.cost((self.settings.embedding_model,), embedded) or 0.0)
        return self.guard.admit(call)

    def _settle(self, reserved: float, cost: float | None) -> None:
        if self.guard is not None:
            self.guard.settle(reserved, cost)

    def price_known(self, model: str) -> bool:
        return self._prices.price(model) is not None

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
                raise self._abort(
                    f"cannot reach the judge at {self.settings.endpoint} "
                    f"({self._describe(error)}); check the base URL and the network"
                ) from None
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
