"""graphrag-eval 6.x configuration files: taken as they are, wrong ones refused with file and line."""

from __future__ import annotations

import pytest

from qareport.errors import SettingsError
from qareport.ge6_config import read_ge6_config
from qareport.judge.litellm_transport import litellm_installed
from qareport.settings import resolve_ge6_judge_settings

LLM = """\
llm:
  generation:
    provider: openai
    model: gpt-4o-mini
    temperature: 0.2
    max_tokens: 512
    base_url: http://127.0.0.1:9/v1
  embedding:
    provider: openai
    model: text-embedding-3-small
"""
CUSTOM = """\
custom_evaluations:
  - name: my_relevance
    inputs: [question, actual_answer]
    instructions: Rate it.
    outputs:
      my_relevance_score: a fraction from 0 to 1
      my_relevance_reason: why
  - name: sparql_check
    inputs: [reference_answer, actual_steps]
    steps_name: sparql_query
    steps_keys: [output, args]
    instructions: Compare.
    outputs: {sparql_recall: a fraction from 0 to 1}
"""


def config(tmp_path, text):
    path = tmp_path / "graphrag-eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_full_configuration_is_read_as_graphrag_eval_reads_it(tmp_path):
    got = read_ge6_config(config(tmp_path, LLM + CUSTOM + "answer_correctness:\n  prompt: 'Q {question} R "
                                                          "{reference_answer} A {actual_answer} {{json}}'\n"))
    assert got.generation.describe() == "openai/gpt-4o-mini" and got.generation.max_tokens == 512
    assert got.generation.temperature == 0.2 and got.generation.option("base_url", "api_base") == "http://127.0.0.1:9/v1"
    assert got.answer_correctness and got.answer_relevance  # on by default with an LLM and embeddings
    assert got.custom_metric_keys == ("my_relevance_score", "my_relevance_reason", "sparql_recall")
    assert got.custom_evaluations[1].steps_keys == ("output", "args")  # the file's order
    assert "{question}" in got.correctness_prompt


def test_without_an_llm_nothing_is_judged(tmp_path):
    got = read_ge6_config(config(tmp_path, "answer_relevance: {enabled: false}\n"))
    assert got.generation is None and not got.answer_correctness and not got.answer_relevance


def test_top_level_keys_graphrag_eval_ignores_are_listed_not_refused(tmp_path):
    got = read_ge6_config(config(tmp_path, LLM + "custom_evaluation:\n  - name: x\n"))
    assert got.ignored == (f"{tmp_path / 'graphrag-eval.yaml'}:11: 'custom_evaluation' is not a graphrag-eval "
                           "6.x setting and is ignored (known: llm, custom_evaluations, answer_correctness, "
                           "answer_relevance)",)


@pytest.mark.parametrize(("text", "line", "fragment"), [
    (CUSTOM, 1, "custom evaluations need an LLM"),
    ("answer_correctness: {enabled: true}\n", 1, "answer correctness needs an LLM"),
    (LLM.replace("  embedding:\n    provider: openai\n    model: text-embedding-3-small\n", "")
     + "answer_relevance: {enabled: true}\n", 8, "answer relevance needs an embedding model"),
    (LLM.replace("temperature: 0.2", "temperature: 3"), 5, "'llm.generation.temperature' must be a number from 0 to 2"),
    (LLM.replace("max_tokens: 512", "max_tokens: 0"), 6, "must be a whole number of at least 1"),
    (LLM.replace("    model: gpt-4o-mini\n", ""), 2, "'llm.generation' needs 'model'"),
    (LLM + "answer_correctness:\n  prompt: 'Q {query}'\n", 12, "may use only the placeholders"),
    (LLM + CUSTOM.replace("    steps_name: sparql_query\n", ""), 18, "has steps among its inputs, so it needs 'steps_name'"),
    (LLM + CUSTOM.replace("inputs: [question, actual_answer]", "inputs: [question, answer]"), 13,
     "'custom_evaluations.0.inputs' must list some of question"),
    (LLM + CUSTOM.replace("my_relevance_reason: why", "steps_score: why"), 15, "the outputs steps_score are reserved"),
    (LLM + CUSTOM.replace("name: my_relevance", "name: answer_relevance"), 12, "the name 'answer_relevance' is reserved"),
    (LLM + CUSTOM.replace("instructions: Rate it.", "instructions: Rate it.\n    prompt: x"), 15,
     "'prompt' is not a key of a custom evaluation"),
    (LLM + CUSTOM.replace("sparql_recall", "my_relevance_score"), 18, "is also written by custom evaluation"),
    ("llm: [openai]\n", 1, "'llm' must be a mapping"),
    ("llm:\n  generation: {provider: openai, model: m\n", 3, "is not valid YAML"),
])
def test_a_wrong_configuration_names_the_file_the_line_and_the_fix(tmp_path, text, line, fragment):
    path = config(tmp_path, text)
    with pytest.raises(SettingsError) as info:
        read_ge6_config(path)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert fragment in str(info.value)


def test_an_openai_compatible_endpoint_configures_the_judge_natively(tmp_path):
    ge6 = read_ge6_config(config(tmp_path, LLM + CUSTOM))
    settings, reason = resolve_ge6_judge_settings(ge6, options={}, config={}, environ={"OPENAI_API_KEY": "k"},
                                                  semantics=6)
    assert reason is None
    assert (settings.model, settings.base_url, settings.temperature, settings.max_tokens) == (
        "gpt-4o-mini", "http://127.0.0.1:9/v1", 0.2, 512)
    assert settings.metrics == ("answer_correctness", "answer_relevance", "retrieval_answer_recall",
                                "retrieval_answer_precision", "retrieval_context_recall",
                                "retrieval_context_precision")
    assert [e.name for e in settings.custom_evaluations] == ["my_relevance", "sparql_check"]
    assert settings.litellm_chat is None and settings.source == str(tmp_path / "graphrag-eval.yaml")


def test_the_api_key_in_the_file_is_used_and_never_shown(tmp_path):
    ge6 = read_ge6_config(config(tmp_path, LLM.replace("    max_tokens: 512\n", "    max_tokens: 512\n"
                                                                                 "    api_key: sk-in-file-123\n")))
    settings, _ = resolve_ge6_judge_settings(ge6, options={}, config={}, environ={})
    assert settings.api_key == "sk-in-file-123"
    assert "sk-in-file-123" not in repr(settings) and "sk-in-file-123" not in str(settings.describe())


@pytest.mark.skipif(litellm_installed(), reason="litellm is installed here: the message is for when it is not")
def test_another_provider_without_litellm_is_one_clear_line(tmp_path):
    path = config(tmp_path, LLM.replace("provider: openai\n    model: gpt-4o-mini", "provider: anthropic\n"
                                                                                     "    model: claude-x", 1))
    ge6 = read_ge6_config(path)
    with pytest.raises(SettingsError) as info:
        resolve_ge6_judge_settings(ge6, options={}, config={}, environ={})
    message = str(info.value)
    assert message.startswith(f"{path}:2: llm.generation: provider 'anthropic' is reached through litellm")
    assert "pip install 'qareport[litellm]'" in message and "\n" not in message
