"""One typed settings object for a command: run, judge and email options, resolved once, here.

Each setting comes from the first place that has it:

    1. the command-line option (or the library call's argument)
    2. the environment (OPENAI_*, AZURE_OPENAI_*, QAREPORT_SMTP_*: see `JUDGE_ENVIRONMENT` and
       `EMAIL_ENVIRONMENT`)
    3. the configuration file: `--config FILE`, else `./qareport.yaml`, else the `[tool.qareport]`
       table of `./pyproject.toml`
    4. the default

A wrong value raises a `SettingsError` (`JudgeSettingsError`, `EmailSettingsError`) that says
where it came from (the option, the environment variable, or the file and key), what it must be,
and what was found. Secrets (the judge's API key, the SMTP password) never come from a
command-line option and are never shown by repr().

The sections are frozen pydantic models (`RunSettings`, `EmailSettings`) and the judge's frozen
`JudgeSettings`; `resolve_settings` returns them together as `Settings`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from qareport.errors import EmailSettingsError, JudgeSettingsError, SettingsError
from qareport.files import home_folder
from qareport.ge6_config import NO_CONFIG, Ge6Config, read_ge6_config
from qareport.judge.prices import ModelPrice, parse_prices
from qareport.judge.settings import (
    CONFIG_KEYS as JUDGE_CONFIG_KEYS,
)
from qareport.judge.settings import (
    CONTEXT_METRICS,
    DEFAULT_AZURE_API_VERSION,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_MODEL,
    DEFAULT_OPENAI_BASE_URL,
    METRICS,
    PLACEHOLDER_API_KEY,
    RESPONSE_FORMATS,
    JudgeSettings,
    LiteLLMRoute,
    default_cache_path,
    public_url,
)
from qareport.preflight import header_text_problem

DEFAULT_CONFIG_NAME = "qareport.yaml"
PYPROJECT_NAME = "pyproject.toml"
RUN_CONFIG_KEYS = {"match_terms_by": str, "templates": str, "strict": bool, "steps_semantics": int,
                   "config_ge6": str, "testcase_cache": bool}
SECTION_KEYS = {"judge": dict, "email": dict, "indicator_selection": dict}
INDICATOR_SELECTION_KEYS = ("acceptable_extras",)  # the keys of the configuration's indicator_selection section
JUDGE_ENVIRONMENT = {
    "base_url": "OPENAI_BASE_URL",
    "azure_endpoint": "AZURE_OPENAI_ENDPOINT",
    "api_version": "OPENAI_API_VERSION",
}
"""Judge settings read from the environment; the API key is OPENAI_API_KEY, AZURE_OPENAI_API_KEY
or the variable `api_key_env` names, and the cache lives under XDG_CACHE_HOME or HOME."""
EMAIL_ENVIRONMENT = {
    "host": "QAREPORT_SMTP_HOST",
    "port": "QAREPORT_SMTP_PORT",
    "user": "QAREPORT_SMTP_USER",
    "password": "QAREPORT_SMTP_PASSWORD",
    "from": "QAREPORT_SMTP_FROM",
    "security": "QAREPORT_SMTP_SECURITY",
    "timeout": "QAREPORT_SMTP_TIMEOUT",
}
EMAIL_CONFIG_KEYS = ("host", "port", "security", "user", "password", "from", "timeout", "to", "cc", "subject")
SECURITIES = ("starttls", "ssl", "none")
DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
_JUDGE_ALIASES = {"use_cache": "cache", "cache_file": "cache_path"}


# --- the configuration file ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """The qareport mapping of a configuration file; `path` None when there is no file.
    `prefix` is how its keys are named in messages ("" in qareport.yaml, "tool.qareport." in
    pyproject.toml)."""

    path: str | None
    values: Mapping[str, Any]
    prefix: str = ""
    lines: Mapping[str, int] = field(default_factory=dict)  # top-level key -> 1-based line (YAML files)

    def section(self, name: str) -> Mapping[str, Any]:
        return self.values.get(name) or {}

    def where(self, key: str) -> str:
        """How a message names `key` (dotted, e.g. 'judge.model') of this file."""
        place = self.path or "the configuration"
        return f"'{self.prefix}{key}' in {place}"

    def at(self, key: str) -> str:
        """"qareport.yaml:4" for a top-level key (the file alone when the line is not known)."""
        line = self.lines.get(key)
        place = self.path or "the configuration"
        return f"{place}:{line}" if line else place


def find_config_file(config_path: str | None, cwd: str | Path | None = None) -> Path | None:
    """`--config FILE` (which must exist), else `qareport.yaml`, else a `pyproject.toml` with a
    `[tool.qareport]` table, in `cwd` (default: the current directory)."""
    if config_path:
        path = Path(config_path)
        if not path.is_file():
            raise SettingsError(f"{config_path}: no such configuration file; check --config")
        return path
    folder = Path(cwd) if cwd is not None else Path.cwd()
    candidate = folder / DEFAULT_CONFIG_NAME
    if candidate.is_file():
        return candidate
    pyproject = folder / PYPROJECT_NAME
    if pyproject.is_file() and "qareport" in _read_pyproject(pyproject).get("tool", {}):
        return pyproject
    return None


def read_config_file(path: Path | None) -> ConfigFile:
    """The qareport mapping of `path`, its top-level keys and their types checked."""
    if path is None:
        return ConfigFile(None, MappingProxyType({}))
    lines: dict[str, int] = {}
    if path.name == PYPROJECT_NAME or path.suffix == ".toml":
        data = _read_pyproject(path).get("tool", {}).get("qareport")
        prefix = "tool.qareport."
    else:
        data = _read_yaml(path)
        prefix = ""
        lines = _top_level_lines(path)
    config = ConfigFile(str(path), MappingProxyType({}), prefix)
    if data is None:
        return config
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the configuration must be a mapping of option: value "
                            f"(got {type(data).__name__})")
    known = {**RUN_CONFIG_KEYS, **SECTION_KEYS}
    for key, value in data.items():
        expected = known.get(key)
        if expected is None:
            raise SettingsError(f"{path}: unknown key '{prefix}{key}'; known keys: {', '.join(sorted(known))}")
        if not isinstance(value, expected):
            raise SettingsError(
                f"{path}: '{prefix}{key}' must be a {expected.__name__} (got {type(value).__name__})"
            )
    return ConfigFile(str(path), MappingProxyType(dict(data)), prefix, MappingProxyType(lines))


def _top_level_lines(path: Path) -> dict[str, int]:
    """The line of each top-level key of a YAML mapping (for messages); empty when unreadable."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): key.start_mark.line + 1 for key, _ in node.value}


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as error:
        line = getattr(getattr(error, "problem_mark", None), "line", None)
        where = f"{path}:{line + 1}" if line is not None else str(path)
        raise SettingsError(f"{where}: cannot read the configuration: {error}") from error


def _read_pyproject(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as error:
        raise SettingsError(f"{path}: cannot read the configuration: {error}") from error


# --- layers: option > environment > configuration file > default --------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """A setting's value, where it came from (for messages) and its rank (0 option, 1 environment,
    2 configuration file)."""

    value: Any
    where: str
    rank: int


class Layers:
    """The places one section's settings come from, looked up in order of precedence."""

    def __init__(self, *, section: str | None, options: Mapping[str, Any], environ: Mapping[str, str],
                 environment_names: Mapping[str, str], config: ConfigFile,
                 config_values: Mapping[str, Any] | None = None):
        self.options = {k: v for k, v in options.items() if v is not None}
        self.environ = environ
        self.environment_names = environment_names
        self.config = config
        self.config_values = config.values if config_values is None else config_values
        self.section = section

    def find(self, name: str) -> Found | None:
        if name in self.options:
            return Found(self.options[name], f"option '{name}'", 0)
        variable = self.environment_names.get(name)
        if variable and self.environ.get(variable):
            return Found(self.environ[variable], f"environment variable {variable}", 1)
        if self.config_values.get(name) is not None:
            key = f"{self.section}.{name}" if self.section else name
            return Found(self.config_values[name], self.config.where(key), 2)
        return None

    def get(self, name: str, default: Any) -> tuple[Any, str]:
        """The value (or `default`) and where it came from (the name, for a default)."""
        found = self.find(name)
        return (default, name) if found is None else (found.value, found.where)


def _number(value: Any, where: str, *, integer: bool, minimum: float, maximum: float | None = None,
            error: type[SettingsError] = SettingsError) -> Any:
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            pass
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or value < minimum or (maximum is not None and value > maximum):
        kind = "an integer" if integer else "a number"
        bounds = f">= {minimum:g}" if maximum is None else f"between {minimum:g} and {maximum:g}"
        raise error(f"{where} must be {kind} {bounds} (got {value!r})")
    return value if integer else float(value)


def _text(value: Any, where: str, *, error: type[SettingsError] = SettingsError) -> str:
    if not isinstance(value, str) or not value.strip():
        raise error(f"{where} must be a non-empty string (got {value!r})")
    return value.strip()


def _choice(value: Any, where: str, choices: tuple[str, ...], *,
            error: type[SettingsError] = SettingsError) -> str:
    if value not in choices:
        raise error(f"{where} must be one of {', '.join(choices)} (got {value!r})")
    return str(value)


def _flag(value: Any, where: str, *, error: type[SettingsError] = SettingsError) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    if not isinstance(value, bool):
        raise error(f"{where} must be true or false (got {value!r})")
    return value


# --- run -----------------------------------------------------------------------------------------


class RunSettings(BaseModel):
    """How cases are evaluated and where templates come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    match_terms_by: Literal["id_and_name", "id"] = "id_and_name"
    templates: str | None = None
    strict: bool = False
    steps_semantics: Literal[5, 6] = 5  # graphrag-eval's steps rules: 5.x (the default) or 6.x
    config_ge6: str | None = None  # a graphrag-eval 6.x configuration file (LLM, custom metrics)
    testcase_cache: bool = True  # keep large test-case files parsed between runs (`parse_cache`)
    acceptable_extras: int = 2  # extra terms an `acceptable` grade allows (`kinds.indicator_selection.GRADES`)


def resolve_run_settings(options: Mapping[str, Any], config: ConfigFile) -> RunSettings:
    """Options `match_terms_by`, `templates`, `strict`, `steps_semantics`, `config_ge6`,
    `testcase_cache`, `acceptable_extras` (`indicator_selection.acceptable_extras` in the
    configuration); no environment variables."""
    layers = Layers(section=None, options=options, environ={}, environment_names={}, config=config,
                    config_values={k: v for k, v in config.values.items() if k in RUN_CONFIG_KEYS})
    match_by, where = layers.get("match_terms_by", "id_and_name")
    templates, templates_where = layers.get("templates", None)
    strict, strict_where = layers.get("strict", False)
    ge6, ge6_where = layers.get("config_ge6", None)
    testcase_cache, cache_where = layers.get("testcase_cache", True)
    grading = config.section("indicator_selection")
    unknown = sorted(set(grading) - set(INDICATOR_SELECTION_KEYS))
    if unknown:
        raise SettingsError(f"{config.at('indicator_selection')}: unknown key '{config.prefix}indicator_selection."
                            f"{unknown[0]}'; known keys: {', '.join(INDICATOR_SELECTION_KEYS)}")
    extras = Layers(section="indicator_selection", options={"acceptable_extras": options.get("acceptable_extras")},
                    environ={}, environment_names={}, config=config, config_values=grading)
    return RunSettings(
        match_terms_by=_choice(match_by, where, ("id_and_name", "id")),  # type: ignore[arg-type]
        templates=None if templates is None else _text(templates, templates_where),
        strict=_flag(strict, strict_where),
        steps_semantics=_semantics(layers, config),
        config_ge6=None if ge6 is None else _text(ge6, ge6_where),
        testcase_cache=_flag(testcase_cache, cache_where),
        acceptable_extras=_number(*extras.get("acceptable_extras", 2), integer=True, minimum=0),
    )


def _semantics(layers: Layers, config: ConfigFile) -> Literal[5, 6]:
    found = layers.find("steps_semantics")
    if found is None:
        return 5
    value = found.value
    if isinstance(value, str) and value.strip() in ("5", "6"):
        value = int(value.strip())
    if value not in (5, 6) or isinstance(value, bool):
        where = f"{config.at('steps_semantics')}: 'steps_semantics'" if found.rank == 2 else found.where
        raise SettingsError(f"{where} must be 5 or 6, graphrag-eval's major version whose steps rules apply "
                            f"(got {value!r})")
    return 6 if value == 6 else 5


# --- judge ---------------------------------------------------------------------------------------


def resolve_judge_settings(
    *, options: Mapping[str, Any], config: Mapping[str, Any] | ConfigFile, environ: Mapping[str, str]
) -> tuple[JudgeSettings | None, str | None]:
    """Settings for the judge, or (None, why) when it cannot or must not run.

    Precedence: `options` (command line or library call; None values count as not given) >
    `environ` > `config` (the `judge:` mapping of the configuration, or the whole `ConfigFile`) >
    defaults. Returns (None, reason) when the judge is turned off (`no_llm` option, `enabled:
    false`) or when neither an API key nor a base URL is configured; raises JudgeSettingsError
    for settings that are wrong.

    Option names are the JudgeSettings field names, plus `no_llm`, `no_cache` and `cache` (a bool).
    Environment: OPENAI_API_KEY, OPENAI_BASE_URL, AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT,
    OPENAI_API_VERSION, XDG_CACHE_HOME and HOME.
    """
    config_file = config if isinstance(config, ConfigFile) else ConfigFile(None, MappingProxyType({"judge": config}))
    section = dict(config_file.section("judge"))
    for alias, name in _JUDGE_ALIASES.items():
        if alias in section and name not in section:
            section[name] = section.pop(alias)
    unknown = sorted(set(section) - set(JUDGE_CONFIG_KEYS))
    if unknown:
        place = f"{config_file.path}: " if config_file.path else ""
        raise JudgeSettingsError(
            f"{place}unknown key '{unknown[0]}' in the configuration's {config_file.prefix}judge section; "
            f"known keys: {', '.join(sorted(JUDGE_CONFIG_KEYS))}"
        )
    src = Layers(section="judge", options=options, environ=environ, environment_names=JUDGE_ENVIRONMENT,
                 config=config_file, config_values=section)
    what = "answer correctness, answer relevance and the retrieval-answer metrics are not evaluated"
    error = JudgeSettingsError

    # a judge that is off (turned off, or no key) still has every setting checked, so that a wrong
    # value in the configuration file is found on the first run, not on the first run with a key
    off: str | None = None
    enabled = src.find("enabled")
    if src.options.get("no_llm") or (enabled is not None and enabled.value is False) \
            or src.options.get("llm") is False:
        off = f"The LLM judge is turned off, so {what}."

    base = src.find("base_url")
    azure = src.find("azure_endpoint")
    if base is not None and azure is not None:
        if base.rank == azure.rank:
            raise error(
                f"both a base URL ({base.where}) and an Azure endpoint ({azure.where}) are given; "
                "give one of them"
            )
        if base.rank < azure.rank:
            azure = None
        else:
            base = None
    base_url = _text(base.value, base.where, error=error) if base is not None else None
    azure_endpoint = _text(azure.value, azure.where, error=error) if azure is not None else None

    # the key: never an option on the command line, so it comes from the environment
    api_key = src.options.get("api_key")
    if api_key is None:
        key_env = src.find("api_key_env")
        if key_env is not None:
            variable = _text(key_env.value, key_env.where, error=error)
            api_key = environ.get(variable) or None
            if api_key is None and not base_url:
                off = off or (
                    f"No API key for the LLM judge: {key_env.where} names {variable}, which is not set, "
                    f"so {what}."
                )
        elif azure_endpoint:
            api_key = environ.get("AZURE_OPENAI_API_KEY") or None
        else:
            api_key = environ.get("OPENAI_API_KEY") or None
    if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
        api_key = None
    if azure_endpoint and api_key is None:
        off = off or (
            f"No API key for the Azure OpenAI judge at {public_url(azure_endpoint)}: set "
            f"AZURE_OPENAI_API_KEY, so {what}."
        )
    if api_key is None and not base_url:
        off = off or (
            f"No LLM judge configured (set OPENAI_API_KEY, or a base URL for a local server), so {what}."
        )
    if api_key is None:
        api_key = PLACEHOLDER_API_KEY

    model = _text(*src.get("model", DEFAULT_MODEL), error=error)
    embedding_model = _text(*src.get("embedding_model", DEFAULT_EMBEDDING_MODEL), error=error)
    api_version = azure_deployment = azure_embedding_deployment = None
    if azure_endpoint:
        api_version = _text(*src.get("api_version", DEFAULT_AZURE_API_VERSION), error=error)
        azure_deployment = _text(*src.get("azure_deployment", model), error=error)
        azure_embedding_deployment = _text(*src.get("azure_embedding_deployment", embedding_model), error=error)

    timeout = _number(*src.get("timeout", 60.0), integer=False, minimum=0.001, error=error)
    max_retries = _number(*src.get("max_retries", 4), integer=True, minimum=0, maximum=20, error=error)
    concurrency = _number(*src.get("concurrency", 8), integer=True, minimum=1, maximum=256, error=error)
    questions = _number(*src.get("relevance_questions", 3), integer=True, minimum=1, maximum=20, error=error)
    temperature = _number(*src.get("temperature", 0.0), integer=False, minimum=0.0, maximum=2.0, error=error)
    response_format = _choice(*src.get("response_format", "json_schema"), RESPONSE_FORMATS, error=error)
    budget, where = src.get("budget", None)
    if budget is not None:
        budget = _number(budget, where, integer=False, minimum=0.0, error=error)
    repeats = _number(*src.get("repeats", 1), integer=True, minimum=1, maximum=20, error=error)

    metrics_value, where = src.get("metrics", METRICS)
    if isinstance(metrics_value, str):
        metrics_value = [m.strip() for m in metrics_value.split(",") if m.strip()]
    if not isinstance(metrics_value, (list, tuple)) or any(m not in METRICS for m in metrics_value):
        raise error(f"{where} must list some of {', '.join(METRICS)} (got {metrics_value!r})")
    metrics = tuple(m for m in METRICS if m in metrics_value)

    if src.options.get("no_cache"):
        use_cache = False
    else:
        use_cache, where = src.get("use_cache", None)
        if use_cache is None:
            use_cache, where = src.get("cache", True)
        if not isinstance(use_cache, bool):
            raise error(f"{where} must be true or false (got {use_cache!r})")
    cache_path, where = src.get("cache_path", None)
    if cache_path is None:
        # a judge that is off needs no cache: its home is not looked up (there may be none)
        cache_path = default_cache_path(environ) if off is None else ""
    else:
        cache_path = _text(str(cache_path), where, error=error)
        if cache_path.startswith("~") and off is None:
            home = home_folder(environ)
            if home is None:
                raise error(f"{where}: {cache_path!r} starts with '~', but there is no home folder (HOME is "
                            "unset and the user has no passwd entry); give the full path")
            cache_path = home + cache_path[1:]

    prices: dict[str, ModelPrice] = {}
    for source, prefix in ((section.get("prices"), f"{config_file.prefix}judge.prices"),
                           (src.options.get("prices"), "prices")):
        try:
            prices.update(parse_prices(source, where=prefix))
        except ValueError as problem:
            place = f" in {config_file.path}" if config_file.path and source is section.get("prices") else ""
            raise error(f"{problem}{place}") from None

    if off is not None:
        return None, off
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
            metrics=metrics,
            budget_usd=budget,
            repeats=repeats,
        ),
        None,
    )


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
    from qareport.judge.litellm_transport import require_litellm

    generation = ge6.generation
    if generation is None:
        return None, f"{ge6.path} configures no LLM ('llm'), so no LLM metric is evaluated."
    given = dict(options)
    given["temperature"] = generation.temperature
    where = f"{generation.where}: llm.generation"
    litellm_chat = litellm_embedding = None
    embedding_base_url = embedding_api_key = None
    if generation.provider == "azure":
        endpoint = generation.option("base_url", "api_base", "azure_endpoint") or environ.get("AZURE_API_BASE")
        given.update(model=generation.model, azure_endpoint=endpoint, azure_deployment=generation.model,
                     api_version=generation.option("api_version") or environ.get("AZURE_API_VERSION"))
        key = generation.option("api_key") or environ.get("AZURE_API_KEY")
        if key:
            given["api_key"] = key
    elif generation.native:
        given.update(model=generation.model, base_url=generation.option("base_url", "api_base"))
        if generation.option("api_key"):
            given["api_key"] = generation.option("api_key")
    else:
        require_litellm(generation.provider, where)
        litellm_chat = LiteLLMRoute(f"{generation.provider}/{generation.model}",
                                    MappingProxyType(dict(generation.options)))
        given.update(model=generation.model, api_key=PLACEHOLDER_API_KEY, base_url=None)
    embedding = ge6.embedding
    if embedding is not None:
        given["embedding_model"] = embedding.model
        if not embedding.native:
            require_litellm(embedding.provider, f"{embedding.where}: llm.embedding")
            litellm_embedding = LiteLLMRoute(f"{embedding.provider}/{embedding.model}",
                                             MappingProxyType(dict(embedding.options)))
        elif embedding.option("base_url", "api_base") or embedding.option("api_key"):
            embedding_base_url = embedding.option("base_url", "api_base")
            embedding_api_key = embedding.option("api_key")
            if embedding_base_url is None and generation.provider != "azure":
                embedding_base_url = given.get("base_url") or environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
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


# --- email ---------------------------------------------------------------------------------------


class EmailSettings(BaseModel):
    """Who gets the report and through which SMTP server. `host` None means no server is
    configured (fine when the message is written to a file); `port` None means the security's
    default port. The password is never an option and never shown by repr()."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    subject: str | None = None
    sender: str | None = None
    host: str | None = None
    port: int | None = None
    security: Literal["starttls", "ssl", "none"] = "starttls"
    user: str | None = None
    password: str | None = Field(default=None, repr=False)
    timeout: float = 30.0


def resolve_email_settings(options: Mapping[str, Any], config: ConfigFile,
                           environ: Mapping[str, str]) -> EmailSettings:
    """Options: to, cc, subject, from, host, port, security, user, timeout (None: not given)."""
    section = config.section("email")
    unknown = sorted(set(section) - set(EMAIL_CONFIG_KEYS))
    if unknown:
        place = f"{config.path}: " if config.path else ""
        raise EmailSettingsError(
            f"{place}unknown key '{config.prefix}email.{unknown[0]}'; known keys: {', '.join(EMAIL_CONFIG_KEYS)}"
        )
    given = {k: v for k, v in options.items() if k != "password"}  # never from a command line
    src = Layers(section="email", options=given, environ=environ, environment_names=EMAIL_ENVIRONMENT,
                 config=config, config_values=section)
    error = EmailSettingsError
    for name in ("to", "cc", "subject", "from"):  # the command line's values are checked by the command
        found = src.find(name)
        if found is not None and found.rank > 0:
            values = [found.value] if isinstance(found.value, str) else found.value
            for value in values if isinstance(values, (list, tuple)) else ():
                problem = header_text_problem(value) if isinstance(value, str) else None
                if problem is not None:
                    raise error(f"{found.where}: {problem}")
    port, where = src.get("port", None)
    if port is not None:
        port = _number(port, where, integer=True, minimum=1, maximum=65535, error=error)
    security, where = src.get("security", None)
    security = "ssl" if security is None and port == 465 else (security or "starttls")
    security = _choice(security, where, SECURITIES, error=error)
    timeout = _number(*src.get("timeout", 30.0), integer=False, minimum=0.001, error=error)

    def text(name: str) -> str | None:
        value, where = src.get(name, None)
        return None if value in (None, "") else _text(str(value), where, error=error)

    return EmailSettings(
        to=addresses(src.get("to", None)[0]),
        cc=addresses(src.get("cc", None)[0]),
        subject=text("subject"),
        sender=text("from"),
        host=text("host"),
        port=port,
        security=security,  # type: ignore[arg-type]
        user=text("user"),
        password=text("password"),
        timeout=timeout,
    )


def addresses(values: Any) -> tuple[str, ...]:
    """Addresses from options or configuration: lists, or comma-separated text."""
    from email.utils import getaddresses

    if not values:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    return tuple(address for _, address in getaddresses([str(item) for item in items]) if address)


# --- everything ----------------------------------------------------------------------------------


class Settings(BaseModel):
    """A command's settings, resolved once. `judge` is None when the judge does not run, and
    `judge_off_reason` says why; `email` is None when nothing is emailed; `config_file` is the
    file read, if any."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    run: RunSettings
    judge: JudgeSettings | None
    judge_off_reason: str | None
    email: EmailSettings | None
    config_file: str | None
    ge6: Ge6Config = NO_CONFIG  # the graphrag-eval 6.x configuration file, when one was given


def resolve_settings(
    *,
    run_options: Mapping[str, Any] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    email_options: Mapping[str, Any] | None = None,
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    with_judge: bool = True,
    with_email: bool = False,
) -> Settings:
    """Every setting of a command from its options, the environment and the configuration file.

    `with_judge=False` leaves the judge out (a command that never judges); `with_email=True`
    resolves the email settings (only then can a wrong QAREPORT_SMTP_* variable stop a command).
    """
    environ = os.environ if environ is None else environ
    config = read_config_file(find_config_file(config_path, cwd))
    run = resolve_run_settings(run_options or {}, config)
    ge6 = read_ge6_config(run.config_ge6) if run.config_ge6 and with_judge else NO_CONFIG
    judge: JudgeSettings | None = None
    reason: str | None = None
    if with_judge and ge6.generation is not None:
        judge, reason = resolve_ge6_judge_settings(ge6, options=judge_options or {}, config=config, environ=environ,
                                                   semantics=run.steps_semantics)
    elif with_judge:
        judge, reason = resolve_judge_settings(options=judge_options or {}, config=config, environ=environ)
        if judge is not None and run.steps_semantics == 6:  # 6.x judges the retrieval contexts too
            judge = replace(judge, steps_semantics=6,
                            metrics=(*judge.metrics, *(m for m in CONTEXT_METRICS if m not in judge.metrics)))
    return Settings(
        run=run,
        judge=judge,
        judge_off_reason=reason,
        email=resolve_email_settings(email_options or {}, config, environ) if with_email else None,
        config_file=config.path,
        ge6=ge6,
    )

