"""The judge's settings: the record, its defaults and constraints (declared once, on its fields),
and its configuration keys.

`qareport.judge.resolution.resolve_judge_settings` builds them from options, the environment and
the configuration file (in that order), each value checked as its field declares. No API key and
no base URL, or `--no-llm`, means no judge: the run goes on without the LLM metrics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, Strict

from qareport.files import cache_home
from qareport.ge6_config import CustomEvaluation
from qareport.judge.models import DEFAULT_MODEL
from qareport.judge.prices import PRICES_CHECKED, ModelPrice
from qareport.setting_sources import Text

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
PLACEHOLDER_API_KEY = "no-key-needed"
"""Sent to a server configured by base URL alone (local servers ignore it)."""

METRICS = (
    "answer_correctness",
    "answer_relevance",
    "retrieval_answer_recall",
    "retrieval_answer_precision",
)
"""The LLM-judged metrics, each with its own prompt template `templates/judge/<metric>.txt`."""
CONTEXT_METRICS = ("retrieval_context_recall", "retrieval_context_precision")
"""Judged under graphrag-eval 6.x rules only: the retrieved contexts against the reference step's
contexts, by the LLM (under 5.x these metrics are string similarities and need no LLM)."""
ALL_METRICS = (*METRICS, *CONTEXT_METRICS)
ResponseFormat = Literal["json_schema", "json_object"]
RESPONSE_FORMATS: tuple[str, ...] = get_args(ResponseFormat)


@dataclass(frozen=True)
class LiteLLMRoute:
    """A model reached through litellm (a provider the openai package does not speak):
    `model` is litellm's "provider/model", `options` its keyword arguments (api_base, ...)."""

    model: str
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)


@dataclass(frozen=True)
class JudgeSettings:
    """Everything the judge needs; `resolve_judge_settings` builds it from options, config and
    environment. `api_key` is never shown by repr() or `describe()`."""

    model: Text = DEFAULT_MODEL
    embedding_model: Text = DEFAULT_EMBEDDING_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: Text | None = None
    azure_endpoint: Text | None = None
    azure_deployment: Text | None = None  # default: the model's name
    azure_embedding_deployment: Text | None = None  # default: the embedding model's name
    api_version: Text | None = None  # Azure's (default DEFAULT_AZURE_API_VERSION)
    timeout: Annotated[float, Field(ge=0.001)] = 60.0  # seconds per request
    max_retries: Annotated[int, Field(ge=0, le=20)] = 4
    concurrency: Annotated[int, Field(ge=1, le=256)] = 8
    relevance_questions: Annotated[int, Field(ge=1, le=20)] = 3
    use_cache: Annotated[bool, Strict()] = True
    cache_path: str | None = None
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: MappingProxyType({}))
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.0
    response_format: ResponseFormat = "json_schema"
    metrics: tuple[str, ...] = METRICS
    max_tokens: int | None = None  # a limit on each reply (graphrag-eval 6.x's llm.generation.max_tokens)
    correctness_prompt: str | None = None  # 6.x's answer_correctness.prompt: a str.format template
    custom_evaluations: tuple[CustomEvaluation, ...] = ()  # 6.x's custom LLM metrics
    steps_semantics: int = 5  # 6: retrieval precision needs a reference answer, as in 6.x
    embedding_base_url: str | None = None  # when embeddings come from another endpoint
    embedding_api_key: str | None = field(default=None, repr=False)
    litellm_chat: LiteLLMRoute | None = None  # chat through litellm instead of the openai package
    litellm_embedding: LiteLLMRoute | None = None
    source: str | None = None  # the configuration file the model came from, for messages
    budget_usd: Annotated[float, Field(ge=0)] | None = None  # stop judging before spending more (judge.cost.Budget)
    batch: Annotated[bool, Strict()] = False  # judge through the Batch API (judge.batch)
    batch_wait: Annotated[float, Field(ge=0)] | None = None  # seconds to wait for batches (None: to the end; 0: submit)
    batch_poll: Annotated[float, Field(ge=0.01)] = 60.0  # the longest interval between two looks at a batch, in seconds
    repeats: Annotated[int, Field(ge=1, le=20)] = 1  # times each judgment is asked; the value is the mean (judge_noise)

    @property
    def is_azure(self) -> bool:
        return bool(self.azure_endpoint)

    @property
    def endpoint(self) -> str:
        """Where requests go, without credentials."""
        if self.azure_endpoint:
            return public_url(self.azure_endpoint)
        return public_url(self.base_url or DEFAULT_OPENAI_BASE_URL)

    def describe(self) -> dict[str, Any]:
        """The settings for a report's provenance: no API key, no credentials in URLs."""
        described: dict[str, Any] = {
            "model": self.model,
            "embedding_model": self.embedding_model,
            "endpoint": self.endpoint,
            "azure": self.is_azure,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "relevance_questions": self.relevance_questions,
            "temperature": self.temperature,
            "response_format": self.response_format,
            "cache": self.cache_path if self.use_cache else None,
            "prices_checked": PRICES_CHECKED,
        }
        if self.is_azure:
            described["azure_deployment"] = self.azure_deployment
            described["azure_embedding_deployment"] = self.azure_embedding_deployment
            described["api_version"] = self.api_version
        if self.max_tokens is not None:
            described["max_tokens"] = self.max_tokens
        if self.budget_usd is not None:
            described["budget_usd"] = self.budget_usd
        if self.batch:
            described["batch"] = True
        if self.repeats != 1:
            described["repeats"] = self.repeats
        if self.custom_evaluations:
            described["custom_evaluations"] = [evaluation.name for evaluation in self.custom_evaluations]
        if self.correctness_prompt is not None:
            described["correctness_prompt"] = "custom"
        if self.litellm_chat is not None:
            described["litellm"] = self.litellm_chat.model
        if self.embedding_base_url:
            described["embedding_endpoint"] = public_url(self.embedding_base_url)
        if self.source:
            described["configured_in"] = self.source
        if self.prices:
            described["price_overrides"] = {
                model: {"input_per_million": p.input_per_million, "output_per_million": p.output_per_million}
                for model, p in self.prices.items()
            }
        return described


def public_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=host)
    return urlunsplit(parts)


def default_cache_path(environ: Mapping[str, str]) -> str:
    """`judge.sqlite3` in qareport's cache folder (`files.cache_home`)."""
    return os.path.join(cache_home(environ), "judge.sqlite3")


CONFIG_KEYS = {
    "enabled": "whether to run the judge at all (default true)",
    "model": f"chat model (default {DEFAULT_MODEL})",
    "embedding_model": f"embedding model for answer relevance (default {DEFAULT_EMBEDDING_MODEL})",
    "base_url": "OpenAI-compatible server, e.g. http://localhost:11434/v1 (env OPENAI_BASE_URL)",
    "api_key_env": "name of the environment variable holding the API key",
    "azure_endpoint": "Azure OpenAI endpoint (env AZURE_OPENAI_ENDPOINT)",
    "azure_deployment": "Azure deployment of the chat model (default: the model name)",
    "azure_embedding_deployment": "Azure deployment of the embedding model (default: its name)",
    "api_version": f"Azure API version (env OPENAI_API_VERSION, default {DEFAULT_AZURE_API_VERSION})",
    "timeout": f"seconds per request (default {JudgeSettings.timeout:g})",
    "max_retries": f"retries of a failed request (default {JudgeSettings.max_retries})",
    "concurrency": f"requests in flight at most (default {JudgeSettings.concurrency})",
    "relevance_questions": f"questions generated per answer for answer relevance (default "
                           f"{JudgeSettings.relevance_questions})",
    "cache": "cache replies (default true)",
    "cache_path": "cache file (default ~/.cache/qareport/judge.sqlite3)",
    "prices": "{model: {input_per_million, output_per_million}} in US dollars",
    "temperature": f"sampling temperature (default {JudgeSettings.temperature:g})",
    "response_format": f"{' or '.join(RESPONSE_FORMATS)} (default {JudgeSettings.response_format}), for servers "
                       "without JSON schemas",
    "retry_base_delay": "no longer used: the openai SDK's backoff applies (0.5 s doubling to 8 s)",
    "metrics": f"which LLM metrics to compute (default all: {', '.join(METRICS)})",
    "budget": "US dollars the judge may spend in a run at most (default: no limit; --judge-budget)",
    "batch": "judge through the OpenAI Batch API, at batch prices (default false; --judge-batch)",
    "batch_wait": "seconds to wait for batches, 0 to submit and stop (default: until they end; --judge-batch-wait)",
    "batch_poll": "longest interval between two looks at a batch, in seconds (default 60; --judge-batch-poll)",
    "repeats": "times each judgment is asked, 1 to 20; a metric's value is the mean (default 1; --judge-repeats)",
}
