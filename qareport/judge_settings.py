"""The judge's settings, resolved from options, the configuration and the environment.

Precedence: options (command line, library call) > the `judge:` mapping of qareport.yaml >
environment variables > defaults. No API key and no base URL, or `--no-llm`, means no judge:
`resolve_judge_settings` returns (None, reason) and the run goes on without the LLM metrics.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from qareport.errors import JudgeError
from qareport.judge_prices import PRICES_CHECKED, ModelPrice, parse_prices

DEFAULT_MODEL = "gpt-4o-mini"
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
RESPONSE_FORMATS = ("json_schema", "json_object")


@dataclass(frozen=True)
class JudgeSettings:
    """Everything the judge needs; `resolve_judge_settings` builds it from options, config and
    environment. `api_key` is never shown by repr() or `describe()`."""

    model: str = DEFAULT_MODEL
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    azure_embedding_deployment: str | None = None
    api_version: str | None = None
    timeout: float = 60.0
    max_retries: int = 4
    concurrency: int = 8
    relevance_questions: int = 3
    use_cache: bool = True
    cache_path: str | None = None
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: MappingProxyType({}))
    temperature: float = 0.0
    response_format: str = "json_schema"
    retry_base_delay: float = 0.5
    metrics: tuple[str, ...] = METRICS

    @property
    def is_azure(self) -> bool:
        return bool(self.azure_endpoint)

    @property
    def endpoint(self) -> str:
        """Where requests go, without credentials."""
        if self.azure_endpoint:
            return _public_url(self.azure_endpoint)
        return _public_url(self.base_url or DEFAULT_OPENAI_BASE_URL)

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
        if self.prices:
            described["price_overrides"] = {
                model: {"input_per_million": p.input_per_million, "output_per_million": p.output_per_million}
                for model, p in self.prices.items()
            }
        return described


def _public_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=host)
    return urlunsplit(parts)


def default_cache_path(environ: Mapping[str, str]) -> str:
    """`$XDG_CACHE_HOME/qareport/judge.sqlite3`, else `~/.cache/qareport/judge.sqlite3`."""
    base = environ.get("XDG_CACHE_HOME")
    if not base:
        home = environ.get("HOME") or str(Path.home())
        base = os.path.join(home, ".cache")
    return os.path.join(base, "qareport", "judge.sqlite3")


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
    "timeout": "seconds per request (default 60)",
    "max_retries": "retries of a failed request (default 4)",
    "concurrency": "requests in flight at most (default 8)",
    "relevance_questions": "questions generated per answer for answer relevance (default 3)",
    "cache": "cache replies (default true)",
    "cache_path": "cache file (default ~/.cache/qareport/judge.sqlite3)",
    "prices": "{model: {input_per_million, output_per_million}} in US dollars",
    "temperature": "sampling temperature (default 0)",
    "response_format": "json_schema (default) or json_object, for servers without JSON schemas",
    "retry_base_delay": "first backoff delay in seconds (default 0.5)",
    "metrics": f"which LLM metrics to compute (default all: {', '.join(METRICS)})",
}
_CONFIG_ALIASES = {"use_cache": "cache", "cache_file": "cache_path"}


class _Sources:
    """Looks a setting up in options, then config, then environment; remembers where it came from."""

    def __init__(self, options: Mapping[str, Any], config: Mapping[str, Any], environ: Mapping[str, str]):
        self.options = {k: v for k, v in options.items() if v is not None}
        self.config = config
        self.environ = environ

    def get(self, name: str, env: str | None = None) -> tuple[Any, str | None]:
        value, where, _ = self.get_ranked(name, env)
        return value, where

    def get_ranked(self, name: str, env: str | None = None) -> tuple[Any, str | None, int]:
        """The value, where it came from, and its rank (0 options, 1 config, 2 environment)."""
        if name in self.options:
            return self.options[name], f"option '{name}'", 0
        if name in self.config and self.config[name] is not None:
            return self.config[name], f"'judge.{name}' in the configuration", 1
        if env and self.environ.get(env):
            return self.environ[env], f"environment variable {env}", 2
        return None, None, 3


def _number(value: Any, where: str, *, integer: bool, minimum: float, maximum: float | None = None) -> Any:
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            pass
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value < minimum or (maximum is not None and value > maximum):
        kind = "an integer" if integer else "a number"
        bounds = f">= {minimum:g}" if maximum is None else f"between {minimum:g} and {maximum:g}"
        raise JudgeError(f"{where} must be {kind} {bounds} (got {value!r})")
    return value if integer else float(value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise JudgeError(f"{where} must be a non-empty string (got {value!r})")
    return value.strip()


def resolve_judge_settings(
    *, options: Mapping[str, Any], config: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[JudgeSettings | None, str | None]:
    """Settings for the judge, or (None, why) when it cannot or must not run.

    Precedence: `options` (command line or library call; None values count as not given) >
    `config` (the `judge:` mapping of qareport.yaml) > `environ` > defaults. Returns (None, reason)
    when the judge is turned off (`no_llm` option, `enabled: false`) or when neither an API key nor
    a base URL is configured; raises JudgeError for settings that are wrong.

    Option names are the JudgeSettings field names, plus `no_llm`, `no_cache` and `cache` (a bool).
    Environment: OPENAI_API_KEY, OPENAI_BASE_URL, AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT,
    OPENAI_API_VERSION, XDG_CACHE_HOME and HOME.
    """
    config = dict(config or {})
    for alias, name in _CONFIG_ALIASES.items():
        if alias in config and name not in config:
            config[name] = config.pop(alias)
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise JudgeError(
            f"unknown key {unknown[0]!r} in the configuration's judge section; "
            f"known keys: {', '.join(sorted(CONFIG_KEYS))}"
        )
    src = _Sources(options, config, environ)
    what = "answer correctness, answer relevance and the retrieval-answer metrics are not evaluated"

    enabled, _ = src.get("enabled")
    if src.options.get("no_llm") or enabled is False or src.options.get("llm") is False:
        return None, f"The LLM judge is turned off, so {what}."

    base_url, base_src, base_rank = src.get_ranked("base_url", "OPENAI_BASE_URL")
    azure_endpoint, azure_src, azure_rank = src.get_ranked("azure_endpoint", "AZURE_OPENAI_ENDPOINT")
    if base_url and azure_endpoint:
        if base_rank == azure_rank:
            raise JudgeError(
                f"both a base URL ({base_src}) and an Azure endpoint ({azure_src}) are given; "
                "give one of them"
            )
        if base_rank < azure_rank:
            azure_endpoint = None
        else:
            base_url = None
    if base_url is not None:
        base_url = _text(base_url, base_src)
    if azure_endpoint is not None:
        azure_endpoint = _text(azure_endpoint, azure_src)

    # the key
    api_key, _ = src.get("api_key")
    if api_key is None:
        key_env, key_env_src = src.get("api_key_env")
        if key_env is not None:
            key_env = _text(key_env, key_env_src)
            api_key = environ.get(key_env) or None
            if api_key is None and not base_url:
                return None, (
                    f"No API key for the LLM judge: {key_env_src} names {key_env}, which is not set, "
                    f"so {what}."
                )
        elif azure_endpoint:
            api_key = environ.get("AZURE_OPENAI_API_KEY") or None
        else:
            api_key = environ.get("OPENAI_API_KEY") or None
    if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
        api_key = None
    if azure_endpoint and api_key is None:
        return None, (
            f"No API key for the Azure OpenAI judge at {_public_url(azure_endpoint)}: set "
            f"AZURE_OPENAI_API_KEY, so {what}."
        )
    if api_key is None and not base_url:
        return None, (
            f"No LLM judge configured (set OPENAI_API_KEY, or a base URL for a local server), so {what}."
        )
    if api_key is None:
        api_key = PLACEHOLDER_API_KEY

    def pick(name: str, default: Any, env: str | None = None) -> tuple[Any, str]:
        value, where = src.get(name, env)
        return (default, name) if value is None else (value, where or name)

    model, where = pick("model", DEFAULT_MODEL)
    model = _text(model, where)
    embedding_model, where = pick("embedding_model", DEFAULT_EMBEDDING_MODEL)
    embedding_model = _text(embedding_model, where)

    api_version = azure_deployment = azure_embedding_deployment = None
    if azure_endpoint:
        api_version, where = pick("api_version", DEFAULT_AZURE_API_VERSION, "OPENAI_API_VERSION")
        api_version = _text(api_version, where)
        azure_deployment, where = pick("azure_deployment", model)
        azure_deployment = _text(azure_deployment, where)
        azure_embedding_deployment, where = pick("azure_embedding_deployment", embedding_model)
        azure_embedding_deployment = _text(azure_embedding_deployment, where)

    timeout, where = pick("timeout", 60.0)
    timeout = _number(timeout, where, integer=False, minimum=0.001)
    max_retries, where = pick("max_retries", 4)
    max_retries = _number(max_retries, where, integer=True, minimum=0, maximum=20)
    concurrency, where = pick("concurrency", 8)
    concurrency = _number(concurrency, where, integer=True, minimum=1, maximum=256)
    questions, where = pick("relevance_questions", 3)
    questions = _number(questions, where, integer=True, minimum=1, maximum=20)
    temperature, where = pick("temperature", 0.0)
    temperature = _number(temperature, where, integer=False, minimum=0.0, maximum=2.0)
    retry_base_delay, where = pick("retry_base_delay", 0.5)
    retry_base_delay = _number(retry_base_delay, where, integer=False, minimum=0.0, maximum=60.0)
    response_format, where = pick("response_format", "json_schema")
    if response_format not in RESPONSE_FORMATS:
        raise JudgeError(f"{where} must be one of {', '.join(RESPONSE_FORMATS)} (got {response_format!r})")

    metrics_value, where = pick("metrics", METRICS)
    if isinstance(metrics_value, str):
        metrics_value = [m.strip() for m in metrics_value.split(",") if m.strip()]
    if not isinstance(metrics_value, (list, tuple)) or any(m not in METRICS for m in metrics_value):
        raise JudgeError(f"{where} must list some of {', '.join(METRICS)} (got {metrics_value!r})")
    metrics = tuple(m for m in METRICS if m in metrics_value)

    if src.options.get("no_cache"):
        use_cache = False
    else:
        use_cache, where = pick("use_cache", None)
        if use_cache is None:
            use_cache, where = pick("cache", True)
        if not isinstance(use_cache, bool):
            raise JudgeError(f"{where} must be true or false (got {use_cache!r})")
    cache_path, where = pick("cache_path", None)
    if cache_path is None:
        cache_path = default_cache_path(environ)
    else:
        cache_path = _text(str(cache_path), where)
        if cache_path.startswith("~"):
            home = environ.get("HOME") or str(Path.home())
            cache_path = home + cache_path[1:]

    prices: dict[str, ModelPrice] = {}
    for source in (config.get("prices"), src.options.get("prices")):
        try:
            prices.update(parse_prices(source))
        except ValueError as error:
            raise JudgeError(str(error)) from None

    return (
        JudgeSettings(
            model=model,
            embedding_model=embedding_model,
            api_key=api_key,
            base_url=base_url,
            azure_endpoint=azure_endpoint,
            azure_deployment=azure_deployment,
            azure_embedding_deployment=azure_embedding_deployment,
            api_version=api_version,
            timeout=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
            relevance_questions=questions,
            use_cache=use_cache,
            cache_path=cache_path,
            prices=MappingProxyType(prices),
            temperature=temperature,
            response_format=response_format,
            retry_base_delay=retry_base_delay,
            metrics=metrics,
        ),
        None,
    )
