"""Calls to the judge's model: with `transport` and `judge.batch`, the only modules that import `openai`.

Sending a request, the SDK's retries and failures told apart are `transport`'s (`Transport`, a
part of `JudgeClient`); reading a chat reply is `replies`'. Done here:

- the cache (`JudgeCache`), costs (`PriceTable`) and checking replies, asking once more when a
  reply is unusable (`ask_checked`);
- in a batch run (`batch`), taking replies from the run's batches (`batch_replies`) instead of
  sending requests: a reply from a batch goes through the same checks, costs and cache as a direct
  one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, TypeVar

import openai

from qareport.errors import JudgeError, JudgeOutputError, MetricFailed
from qareport.judge.batch_replies import BatchReplies, read_batch_reply
from qareport.judge.cache import JudgeCache, cache_key
from qareport.judge.checks import SCHEMAS, preview
from qareport.judge.cost import QUESTION_TOKENS, CallGuard, estimate_call
from qareport.judge.prices import PriceTable
from qareport.judge.replies import ChatReply, UsageState
from qareport.judge.settings import JudgeSettings
from qareport.judge.transport import (
    RetryCounter,
    Transport,
    chat_endpoint,
    embedding_endpoint,
    make_openai_client,
)
from qareport.judge.usage import Ledger

T = TypeVar("T")

CORRECTIVE_RETRIES = 1
"""Times a judge whose reply could not be used is asked again, told what was wrong."""


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



def _log_warning(message: str) -> None:
    logging.getLogger("qareport").warning("%s", message)


ADAPTABLE = {
    "temperature": "model's default temperature (temperature {value} left out)",
    "max_tokens": "reply limit sent as max_completion_tokens ({value})",
}
"""Chat parameters some models refuse (reasoning models: any temperature but their default; newer
models: `max_tokens`, renamed `max_completion_tokens`), and what the run sends instead."""
_REFUSAL_WORDS = ("unsupported", "not supported", "does not support", "only the default")


def refused_parameter(error: openai.BadRequestError, request: Mapping[str, Any]) -> str | None:
    """The ADAPTABLE parameter of `request` that a 400 reply refuses (the error's `param`, or its
    message naming it as unsupported), or None."""
    message = error.message.lower()
    for name in ADAPTABLE:
        if name not in request:
            continue
        if error.param == name or (name in message and any(word in message for word in _REFUSAL_WORDS)):
            return name
    return None


def adapt_request(request: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`request` without the refused parameter `name` (max_tokens: under its newer name)."""
    adapted = {key: value for key, value in request.items() if key != name}
    if name == "max_tokens":
        adapted["max_completion_tokens"] = request[name]
    return adapted


def _shown(settings: JudgeSettings, name: str) -> str:
    return f"{settings.temperature:g}" if name == "temperature" else str(settings.max_tokens)



class JudgeClient(Transport):
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
        self._on_warning = on_warning or _log_warning
        self._adapted: dict[str, str] = {}  # parameter the model refused -> what is sent instead (`_post_adapting`)
        self._chat_endpoint = chat_endpoint(settings)
        self._embedding_endpoint = embedding_endpoint(settings)
        self._lock = threading.Lock()
        self._fatal: JudgeError | None = None
        self._answered = 0
        self._failed_in_a_row = 0
        self._longest_reply: dict[str, int] = {}  # output tokens of the longest reply so far, per metric
        self.served_models: set[str] = set()
        """The models the replies named (the snapshots behind an alias), for the judge's identity."""
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
        request: dict[str, Any] = {"model": self.chat_model, "messages": messages}
        if "temperature" not in self._adapted:
            request["temperature"] = self.settings.temperature
        if metric in SCHEMAS:  # a custom metric's reply is plain text (tab-separated values)
            if self.settings.response_format == "json_schema":
                request["response_format"] = SCHEMAS[metric]
            else:
                request["response_format"] = {"type": "json_object"}
        if self.settings.max_tokens is not None:
            limit = "max_completion_tokens" if "max_tokens" in self._adapted else "max_tokens"
            request[limit] = self.settings.max_tokens
        return request

    @property
    def adapted_parameters(self) -> dict[str, str]:
        """What the chat requests send otherwise than configured, because the model refused it: by
        parameter, what was done (empty: every request as configured)."""
        with self._lock:
            return dict(self._adapted)

    def _post_adapting(self, request: dict[str, Any]) -> ChatReply:
        """`_post_chat`; when the model refuses one of ADAPTABLE's parameters (HTTP 400 naming it),
        asked again without it (or under its newer name), once per parameter, and from then on every
        request of the run is sent so. Any other refusal is raised as it came."""
        while True:
            try:
                return self._post_chat(request)
            except openai.BadRequestError as error:
                name = refused_parameter(error, request)
                if name is None:
                    raise
                request = adapt_request(request, name)
                with self._lock:
                    first = name not in self._adapted
                    self._adapted.setdefault(name, ADAPTABLE[name].format(value=_shown(self.settings, name)))
                if first:
                    said = " ".join(error.message.split())
                    self._on_warning(
                        f"the judge model {self.chat_model} refused {name} (HTTP 400: {said}); "
                        f"asked again with the {ADAPTABLE[name].format(value=_shown(self.settings, name))}, "
                        "for every request of this run")

    def _post_chat(self, request: dict[str, Any]) -> ChatReply:
        """One chat request through the SDK's public client (`post`, its documented way to send a
        request as a plain body), which retries it as `chat.completions.create` would. The reply is
        taken as its text and read here: its nesting is bounded before it is parsed (`json_depth`),
        and the SDK's typed-parameter transform and reply model (half a call's CPU) are skipped."""
        raw = self._client.post("/chat/completions", body=request, cast_to=openai.HttpxBinaryResponseContent)
        return ChatReply.of_text(raw.text, raw.response.headers.get("content-type"))

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
                    if isinstance(hit.get("model"), str):
                        self.served_models.add(hit["model"])
                    if also_for is not None:
                        self._cache.put(self._chat_key({**request, "messages": also_for}, ledger.attempt), kind="chat",
                                        model=self.chat_model, value=hit)
                    return checked
        reserved = 0.0
        if batched is not None:
            reply = ChatReply.of_object(read_batch_reply(openai.types.chat.ChatCompletion, batched))
        elif self.batch is not None:
            raise self.batch.defer(key, "chat", request)  # asked in the next batch, not sent
        else:
            reserved = self._admit("chat", metric, request, key=key)
            try:
                if self._litellm is not None and self._chat_client is self._litellm:
                    reply = ChatReply.of_object(self._send(
                        lambda: self._chat_client.chat.completions.create(**request), ledger))
                else:
                    reply = self._send(lambda: self._post_adapting(request), ledger)
            except BaseException:
                self._settle(reserved, 0.0)
                raise
        input_tokens, output_tokens = reply.input_tokens, reply.output_tokens
        if reply.model:
            self.served_models.add(reply.model)
        cost = None if not reply.has_usage else self._prices.cost(
            (self.settings.model, reply.model), input_tokens, output_tokens, batch=batched is not None)
        self._settle(reserved, cost)  # a reply without usable counts: the budget keeps the reservation
        with self._lock:
            self._longest_reply[metric] = max(self._longest_reply.get(metric, 0), output_tokens)
        ledger.add_call(input_tokens, output_tokens, cost, self.settings.model, usage=reply.usage)
        if reply.problem is not None:
            raise JudgeOutputError(reply.problem, None)
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
        usage: UsageState = ("missing" if response.usage is None else "reported"
                             if isinstance(tokens, int) and tokens >= 0 else "invalid")
        cost = None if usage != "reported" else self._prices.cost(
            (self.settings.embedding_model, response.model), tokens or 0, batch=batched is not None)
        self._settle(reserved, cost)  # a reply without usable counts: the budget keeps the reservation
        ledger.add_call((tokens or 0) if usage == "reported" else 0, 0, cost, self.settings.embedding_model,
                        usage=usage)
        return list(response.data or []), cost

    # -- the guard: a budget, or the estimate

    def _admit(self, kind: str, metric: str, request: Mapping[str, Any], *, key: str | None = None) -> float:
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
        return self.guard.admit(replace(call, key=key))

    def _settle(self, reserved: float, cost: float | None) -> None:
        if self.guard is not None:
            self.guard.settle(reserved, cost)

    def price_known(self, model: str) -> bool:
        return self._prices.price(model) is not None
