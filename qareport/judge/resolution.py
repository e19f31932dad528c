"""The judge's settings resolved: options > environment > the configuration's `judge:` section > the
defaults declared on `JudgeSettings`' fields, each value checked against its field
(`qareport.setting_sources`), a wrong one named by where it came from. A graphrag-eval 6.x
configuration's `llm` section describes the judge's model and provider instead
(`resolve_ge6_judge_settings`).

Returns (None, why) when the judge cannot or must not run: turned off (`no_llm`, `enabled:
false`), or no API key and no base URL. Every setting is checked all the same, so that a wrong
value in the configuration file is found on the first run, not on the first run with a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from qareport.config_file import ConfigFile
from qareport.errors import JudgeSettingsError
from qareport.files import home_folder
from qareport.ge6_config import Ge6Config, ModelEndpoint
from qareport.judge.prices import ModelPrice, parse_prices
from qareport.judge.settings import (
    CONFIG_KEYS,
    CONTEXT_METRICS,
    DEFAULT_AZURE_API_VERSION,
    DEFAULT_OPENAI_BASE_URL,
    METRICS,
    PLACEHOLDER_API_KEY,
    JudgeSettings,
    LiteLLMRoute,
    default_cache_path,
    public_url,
)
from qareport.setting_sources import Layers, Text, check, setting

JUDGE_ENVIRONMENT = {
    "base_url": "OPENAI_BASE_URL",
    "azure_endpoint": "AZURE_OPENAI_ENDPOINT",
    "api_version": "OPENAI_API_VERSION",
}
"""Judge settings read from the environment; the API key is OPENAI_API_KEY, AZURE_OPENAI_API_KEY
or the variable `api_key_env` names, and the cache lives under XDG_CACHE_HOME or HOME."""
ALIASES = {"use_cache": "cache", "cache_file": "cache_path"}
"""Older names of the `judge:` section's keys."""
NOT_EVALUATED = "answer correctness, answer relevance and the retrieval-answer metrics are not evaluated"
CHECKED = ("model", "embedding_model", "timeout", "max_retries", "concurrency", "relevance_questions",
           "temperature", "response_format", "batch", "batch_poll", "repeats")
"""Settings that are the `JudgeSettings` field of their name, checked as it declares."""
ERROR = JudgeSettingsError


def resolve_judge_settings(
    *, options: Mapping[str, Any], config: Mapping[str, Any] | ConfigFile, environ: Mapping[str, str]
) -> tuple[JudgeSettings | None, str | None]:
    """Settings for the judge, or (None, why) when it cannot or must not run.

    `options` (command line or library call; None counts as not given) are named as the
    JudgeSettings fields, plus `no_llm`, `no_cache`, `enabled` and `budget`; `config` is the whole
    `ConfigFile` or the `judge:` mapping alone. Environment: OPENAI_API_KEY, OPENAI_BASE_URL,
    AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION, XDG_CACHE_HOME and HOME.
    """
    config_file = config if isinstance(config, ConfigFile) else ConfigFile(None, MappingProxyType({"judge": config}))
    section = _judge_section(config_file)
    src = Layers(section="judge", options=options, environ=environ, environment_names=JUDGE_ENVIRONMENT,
                 config=config_file, config_values=section)
    off = _turned_off(src)
    base_url, azure_endpoint = _endpoint(src)
    api_key, no_key = _api_key(src, environ, base_url=base_url, azure_endpoint=azure_endpoint)
    off = off or no_key
    checked = {name: src.setting(JudgeSettings, name, error=ERROR) for name in CHECKED}
    if azure_endpoint:
        checked["api_version"] = src.setting(JudgeSettings, "api_version", error=ERROR) or DEFAULT_AZURE_API_VERSION
        for name, fallback in (("azure_deployment", "model"), ("azure_embedding_deployment", "embedding_model")):
            found = src.find(name)
            checked[name] = checked[fallback] if found is None else setting(JudgeSettings, name, found, error=ERROR)
    budget = src.setting(JudgeSettings, "budget_usd", key="budget", error=ERROR)
    batch_wait = src.setting(JudgeSettings, "batch_wait", error=ERROR)
    use_cache, cache_path = _cache(src, environ, judge_runs=off is None)
    prices, metrics = _prices(src, section, config_file), _metrics(src)
    if off is not None:
        return None, off
    return JudgeSettings(**checked, api_key=api_key, base_url=base_url, azure_endpoint=azure_endpoint,
                         use_cache=use_cache, cache_path=cache_path, prices=MappingProxyType(prices),
                         metrics=metrics, budget_usd=budget, batch_wait=batch_wait), None


def _judge_section(config: ConfigFile) -> dict[str, Any]:
    """The configuration's `judge:` mapping, older key names read as today's, unknown keys refused."""
    section = dict(config.section("judge"))
    for alias, name in ALIASES.items():
        if alias in section and name not in section:
            section[name] = section.pop(alias)
    unknown = sorted(set(section) - set(CONFIG_KEYS))
    if unknown:
        place = f"{config.path}: " if config.path else ""
        raise ERROR(f"{place}unknown key '{unknown[0]}' in the configuration's {config.prefix}judge section; "
                    f"known keys: {', '.join(sorted(CONFIG_KEYS))}")
    return section


def _turned_off(src: Layers) -> str | None:
    enabled = src.find("enabled")
    if src.options.get("no_llm") or (enabled is not None and enabled.value is False) or src.options.get("llm") is False:
        return f"The LLM judge is turned off, so {NOT_EVALUATED}."
    return None


def _endpoint(src: Layers) -> tuple[str | None, str | None]:
    """(base URL, Azure endpoint): one of them at most, the one from the higher layer."""
    base, azure = src.find("base_url"), src.find("azure_endpoint")
    if base is not None and azure is not None:
        if base.rank == azure.rank:
            raise ERROR(f"both a base URL ({base.where}) and an Azure endpoint ({azure.where}) are given; "
                        "give one of them")
        if base.rank < azure.rank:
            azure = None
        else:
            base = None
    return (None if base is None else setting(JudgeSettings, "base_url", base, error=ERROR),
            None if azure is None else setting(JudgeSettings, "azure_endpoint", azure, error=ERROR))


def _api_key(src: Layers, environ: Mapping[str, str], *, base_url: str | None,
             azure_endpoint: str | None) -> tuple[str, str | None]:
    """The key (never a command-line option: it comes from the environment) and, when there is
    none the judge could run without, why the judge does not run."""
    api_key = src.options.get("api_key")
    off = None
    if api_key is None:
        key_env = src.find("api_key_env")
        if key_env is not None:
            variable = str(check(Text, key_env, error=ERROR))
            api_key = environ.get(variable) or None
            if api_key is None and not base_url:
                off = (f"No API key for the LLM judge: {key_env.where} names {variable}, which is not set, "
                       f"so {NOT_EVALUATED}.")
        else:
            api_key = environ.get("AZURE_OPENAI_API_KEY" if azure_endpoint else "OPENAI_API_KEY") or None
    if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
        api_key = None
    if azure_endpoint and api_key is None:
        off = off or (f"No API key for the Azure OpenAI judge at {public_url(azure_endpoint)}: set "
                      f"AZURE_OPENAI_API_KEY, so {NOT_EVALUATED}.")
    if api_key is None and not base_url:
        off = off or (f"No LLM judge configured (set OPENAI_API_KEY, or a base URL for a local server), so "
                      f"{NOT_EVALUATED}.")
    return api_key or PLACEHOLDER_API_KEY, off


def _metrics(src: Layers) -> tuple[str, ...]:
    value, where = src.get("metrics", METRICS)
    if isinstance(value, str):
        value = [metric.strip() for metric in value.split(",") if metric.strip()]
    if not isinstance(value, (list, tuple)) or any(metric not in METRICS for metric in value):
        raise ERROR(f"{where} must list some of {', '.join(METRICS)} (got {value!r})")
    return tuple(metric for metric in METRICS if metric in value)


def _cache(src: Layers, environ: Mapping[str, str], *, judge_runs: bool) -> tuple[bool, str]:
    """Whether replies are cached, and where (a judge that does not run needs no cache: its home
    is not looked up, there may be none)."""
    use_cache = False
    if not src.options.get("no_cache"):  # the option's name, or the configuration's `cache`
        key = "use_cache" if src.find("use_cache") is not None else "cache"
        use_cache = src.setting(JudgeSettings, "use_cache", key=key, error=ERROR)
    found = src.find("cache_path")
    if found is None:
        return use_cache, default_cache_path(environ) if judge_runs else ""
    cache_path = str(check(Text, replace(found, value=str(found.value)), error=ERROR))
    if cache_path.startswith("~") and judge_runs:
        home = home_folder(environ)
        if home is None:
            raise ERROR(f"{found.where}: {cache_path!r} starts with '~', but there is no home folder (HOME is "
                        "unset and the user has no passwd entry); give the full path")
        cache_path = home + cache_path[1:]
    return use_cache, cache_path


def _prices(src: Layers, section: Mapping[str, Any], config: ConfigFile) -> dict[str, ModelPrice]:
    """The configuration's `judge.prices`, then the option's, over the bundled table."""
    prices: dict[str, ModelPrice] = {}
    given = ((section.get("prices"), f"{config.prefix}judge.prices"), (src.options.get("prices"), "prices"))
    for source, prefix in given:
        try:
            prices.update(parse_prices(source, where=prefix))
        except ValueError as problem:
            place = f" in {config.path}" if config.path and source is section.get("prices") else ""
            raise ERROR(f"{problem}{place}") from None
    return prices


def resolve_ge6_judge_settings(
    ge6: Ge6Config,
    *,
    options: Mapping[str, Any],
    config: Mapping[str, Any] | ConfigFile,
    environ: Mapping[str, str],
    semantics: int = 5,
) -> tuple[JudgeSettings | None, str | None]:
    """The judge a graphrag-eval 6.x configuration describes (its `llm` section), or (None, why).

    The model, provider, endpoint, key, temperature and reply limit come from the 6.x file; how the
    judge runs (cache, concurrency, timeouts, retries, prices) from the options, the environment and
    qareport's own configuration, as for any run. OpenAI and OpenAI-compatible endpoints (provider
    `openai` with a `base_url`) and Azure OpenAI (`azure`) are spoken natively; another provider
    needs litellm (`pip install 'qareport[litellm]'`): without it one clear JudgeSettingsError.
    """
    generation = ge6.generation
    if generation is None:
        return None, f"{ge6.path} configures no LLM ('llm'), so no LLM metric is evaluated."
    given = dict(options)
    given["temperature"] = generation.temperature
    litellm_chat = _ge6_chat(generation, environ, given)
    litellm_embedding, embedding_base_url, embedding_api_key = _ge6_embedding(ge6, environ, given)
    metrics = [m for m, on in (("answer_correctness", ge6.answer_correctness),
                               ("answer_relevance", ge6.answer_relevance)) if on]
    metrics += ["retrieval_answer_recall", "retrieval_answer_precision"]
    given["metrics"] = metrics
    settings, reason = resolve_judge_settings(options=given, config=config, environ=environ)
    if settings is None:
        return None, reason
    if semantics == 6:
        metrics += list(CONTEXT_METRICS)
    return replace(
        settings,
        metrics=tuple(metrics),
        max_tokens=generation.max_tokens,
        correctness_prompt=ge6.correctness_prompt,
        custom_evaluations=ge6.custom_evaluations,
        steps_semantics=semantics,
        embedding_base_url=embedding_base_url,
        embedding_api_key=embedding_api_key,
        litellm_chat=litellm_chat,
        litellm_embedding=litellm_embedding,
        source=ge6.path,
    ), None


def _ge6_chat(generation: ModelEndpoint, environ: Mapping[str, str], given: dict[str, Any]) -> LiteLLMRoute | None:
    """The chat model of a 6.x `llm.generation` as options in `given`; the litellm route when the
    openai package does not speak its provider."""
    from qareport.judge.litellm_transport import require_litellm

    if generation.provider == "azure":
        endpoint = generation.option("base_url", "api_base", "azure_endpoint") or environ.get("AZURE_API_BASE")
        given.update(model=generation.model, azure_endpoint=endpoint, azure_deployment=generation.model,
                     api_version=generation.option("api_version") or environ.get("AZURE_API_VERSION"))
        key = generation.option("api_key") or environ.get("AZURE_API_KEY")
        if key:
            given["api_key"] = key
        return None
    if generation.native:
        given.update(model=generation.model, base_url=generation.option("base_url", "api_base"))
        if generation.option("api_key"):
            given["api_key"] = generation.option("api_key")
        return None
    require_litellm(generation.provider, f"{generation.where}: llm.generation")
    given.update(model=generation.model, api_key=PLACEHOLDER_API_KEY, base_url=None)
    return LiteLLMRoute(f"{generation.provider}/{generation.model}", MappingProxyType(dict(generation.options)))


def _ge6_embedding(ge6: Ge6Config, environ: Mapping[str, str],
                   given: dict[str, Any]) -> tuple[LiteLLMRoute | None, str | None, str | None]:
    """The embedding model of a 6.x `llm.embedding` as an option in `given`: (its litellm route,
    or its own endpoint and key when it has them)."""
    from qareport.judge.litellm_transport import require_litellm

    embedding = ge6.embedding
    if embedding is None:
        return None, None, None
    given["embedding_model"] = embedding.model
    if not embedding.native:
        require_litellm(embedding.provider, f"{embedding.where}: llm.embedding")
        return LiteLLMRoute(f"{embedding.provider}/{embedding.model}", MappingProxyType(dict(embedding.options))), \
            None, None
    base_url, api_key = embedding.option("base_url", "api_base"), embedding.option("api_key")
    if not (base_url or api_key):
        return None, None, None
    if base_url is None and (ge6.generation is None or ge6.generation.provider != "azure"):
        base_url = given.get("base_url") or environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    return None, base_url, api_key
