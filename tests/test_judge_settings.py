"""Resolving the judge's settings: options > config > environment > defaults, and the no-key path."""

from __future__ import annotations

import pytest

from qareport.errors import JudgeError
from qareport.judge.models import DEFAULT_MODEL
from qareport.judge.settings import (
    DEFAULT_AZURE_API_VERSION,
    PLACEHOLDER_API_KEY,
    JudgeSettings,
    default_cache_path,
)
from qareport.settings import resolve_judge_settings

KEY = "sk-test-settings-0123456789"


def resolve(options=None, config=None, environ=None):
    return resolve_judge_settings(options=options or {}, config=config or {}, environ=environ or {"HOME": "/home/u"})


def test_no_key_and_no_base_url_gives_none_and_one_sentence():
    settings, reason = resolve()
    assert settings is None
    assert reason.startswith("No LLM judge configured")
    assert "OPENAI_API_KEY" in reason
    assert reason.endswith(".") and reason.count(". ") == 0


def test_no_llm_turns_the_judge_off_even_with_a_key():
    settings, reason = resolve({"no_llm": True}, environ={"OPENAI_API_KEY": KEY})
    assert settings is None
    assert "turned off" in reason
    settings, reason = resolve(config={"enabled": False}, environ={"OPENAI_API_KEY": KEY})
    assert settings is None


def test_key_from_environment_and_defaults():
    settings, reason = resolve(environ={"OPENAI_API_KEY": KEY, "HOME": "/home/u"})
    assert reason is None
    assert settings.api_key == KEY
    assert settings.model == DEFAULT_MODEL
    assert settings.embedding_model == "text-embedding-3-small"
    assert (settings.timeout, settings.max_retries, settings.concurrency) == (60.0, 4, 8)
    assert settings.relevance_questions == 3
    assert settings.temperature == 0.0
    assert settings.use_cache is True
    assert settings.cache_path == "/home/u/.cache/qareport/judge.sqlite3"
    assert settings.base_url is None and settings.endpoint == "https://api.openai.com/v1"


def test_a_base_url_alone_is_enough_for_a_local_server():
    settings, reason = resolve(config={"base_url": "http://localhost:11434/v1"})
    assert reason is None
    assert settings.api_key == PLACEHOLDER_API_KEY
    settings, _ = resolve(environ={"OPENAI_BASE_URL": "http://localhost:8000/v1"})
    assert settings.base_url == "http://localhost:8000/v1"


def test_precedence_options_over_environment_over_config():
    # the order changed with the one settings object: the environment now overrides the file
    environ = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://env/v1"}
    config = {"model": "gpt-4.1-mini", "base_url": "http://config/v1", "concurrency": 3}
    settings, _ = resolve({"model": "gpt-4o", "concurrency": None}, config, environ)
    assert settings.model == "gpt-4o"  # option
    assert settings.concurrency == 3  # None option = not given: config
    assert settings.base_url == "http://env/v1"  # environment over config
    settings, _ = resolve({}, config, {"OPENAI_API_KEY": KEY})
    assert settings.base_url == "http://config/v1"  # config when the environment has nothing
    settings, _ = resolve({"base_url": "http://option/v1"}, config, environ)
    assert settings.base_url == "http://option/v1"  # option over both


def test_config_may_name_the_key_variable():
    settings, _ = resolve(config={"api_key_env": "MY_KEY"}, environ={"MY_KEY": KEY})
    assert settings.api_key == KEY
    settings, reason = resolve(config={"api_key_env": "MY_KEY"}, environ={"OPENAI_API_KEY": KEY})
    assert settings is None and "MY_KEY" in reason


def test_azure_from_environment():
    environ = {
        "AZURE_OPENAI_API_KEY": KEY,
        "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/",
        "OPENAI_API_VERSION": "2025-01-01-preview",
    }
    settings, reason = resolve({"azure_deployment": "chat-dep"}, {}, environ)
    assert reason is None
    assert settings.is_azure
    assert settings.api_key == KEY
    assert settings.api_version == "2025-01-01-preview"
    assert settings.azure_deployment == "chat-dep"
    assert settings.azure_embedding_deployment == "text-embedding-3-small"


def test_azure_without_a_key_is_skipped_with_a_reason():
    settings, reason = resolve(config={"azure_endpoint": "https://res.openai.azure.com"},
                               environ={"OPENAI_API_KEY": KEY})
    assert settings is None
    assert "AZURE_OPENAI_API_KEY" in reason


def test_azure_defaults():
    settings, _ = resolve(config={"azure_endpoint": "https://res.openai.azure.com"},
                          environ={"AZURE_OPENAI_API_KEY": KEY})
    assert settings.api_version == DEFAULT_AZURE_API_VERSION
    assert settings.azure_deployment == DEFAULT_MODEL  # the deployment is named after the model by default


def test_base_url_option_wins_over_azure_environment():
    environ = {"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", "OPENAI_API_KEY": KEY}
    settings, _ = resolve({"base_url": "http://localhost:1/v1"}, {}, environ)
    assert not settings.is_azure


def test_base_url_and_azure_endpoint_at_the_same_level_conflict():
    with pytest.raises(JudgeError, match="give one of them"):
        resolve(config={"base_url": "http://x/v1", "azure_endpoint": "https://y"},
                environ={"OPENAI_API_KEY": KEY})


def test_unknown_config_key_is_an_error():
    with pytest.raises(JudgeError, match=r"unknown key 'modle'.*known keys: .*model"):
        resolve(config={"modle": "gpt-4o"}, environ={"OPENAI_API_KEY": KEY})


@pytest.mark.parametrize(
    "config, message",
    [
        ({"concurrency": 0}, "'judge.concurrency' in the configuration must be an integer between 1 and 256 (got 0)"),
        ({"timeout": "soon"}, "must be a number >= 0.001 (got 'soon')"),
        ({"max_retries": 1.5}, "must be an integer"),
        ({"temperature": 3}, "between 0 and 2"),
        ({"response_format": "xml"}, "json_schema, json_object"),
        ({"cache": "yes"}, "must be true or false"),
        ({"metrics": ["answer_vibes"]}, "must list some of"),
        ({"prices": {"m": {"input_per_million": "cheap"}}}, "'judge.prices.m.input_per_million'"),
        ({"model": ""}, "must be a non-empty string"),
    ],
)
def test_bad_settings_say_where_and_what(config, message):
    with pytest.raises(JudgeError) as info:
        resolve(config=config, environ={"OPENAI_API_KEY": KEY})
    assert message in str(info.value)


def test_cache_settings():
    environ = {"OPENAI_API_KEY": KEY, "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}
    settings, _ = resolve({}, {}, environ)
    assert settings.cache_path == "/xdg/qareport/judge.sqlite3"
    settings, _ = resolve({"no_cache": True}, {}, environ)
    assert settings.use_cache is False
    settings, _ = resolve({}, {"cache": False, "cache_path": "~/c.sqlite3"}, environ)
    assert settings.use_cache is False
    assert settings.cache_path == "/home/u/c.sqlite3"
    assert default_cache_path({"HOME": "/h"}) == "/h/.cache/qareport/judge.sqlite3"


def test_prices_from_config_and_metrics_subset():
    settings, _ = resolve(
        {"metrics": "answer_correctness"},
        {"prices": {"llama3": {"input_per_million": 0.1, "output_per_million": 0.2}}},
        {"OPENAI_API_KEY": KEY},
    )
    assert settings.prices["llama3"].output_per_million == 0.2
    assert settings.metrics == ("answer_correctness",)
    assert settings.describe()["price_overrides"]["llama3"]["input_per_million"] == 0.1


def test_the_key_is_never_shown():
    settings = JudgeSettings(api_key=KEY, base_url="http://user:secret@localhost:1/v1")
    assert KEY not in repr(settings)
    described = str(settings.describe())
    assert KEY not in described
    assert "secret" not in described
    assert settings.endpoint == "http://localhost:1/v1"
