"""graphrag-eval 6.x configuration files, read as they are: the judge's LLM, the answer metrics and
custom LLM metrics. Reading only; no LLM is called here.

    llm:
      generation: {provider, model, temperature?, max_tokens?, <provider options>: base_url, api_key, ...}
      embedding: {provider, model, <provider options>}          # for answer relevance
    answer_correctness: {enabled?: true, prompt?: "... {question} {reference_answer} {actual_answer} ..."}
    answer_relevance: {enabled?: true}
    custom_evaluations:
      - name: my_metric
        inputs: [question, reference_answer, actual_answer, reference_steps, actual_steps]  # some
        steps_name: sparql_query          # with steps among the inputs: which steps,
        steps_keys: [args, output]        # and which of their keys, the judge sees
        instructions: "..."
        outputs: {my_metric_score: "a number from 0 to 1", my_metric_reason: "why"}

The rules are graphrag-eval 6.6's: the custom evaluations and an enabled answer correctness need
`llm`; answer relevance (on by default when an embedding model is given) needs `llm.embedding`; a
custom prompt may use only the placeholders {question}, {reference_answer} and {actual_answer}
(and {{ }} for a brace); an evaluation's `<name>_error` and its outputs may not take the name of a
key graphrag-eval writes. Every mistake is a `SettingsError` naming the file, the line and the fix.
Top-level keys graphrag-eval does not know are ignored, as it ignores them, and listed in `ignored`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from qareport.describing import describe_value
from qareport.errors import SettingsError

INPUTS = ("question", "reference_answer", "reference_steps", "actual_answer", "actual_steps")
STEPS_KEYS = ("args", "output")
RESERVED_KEYS = frozenset({
    "template_id", "question_id", "actual_answer", "actual_steps", "question_text", "reference_answer",
    "reference_steps", "status", "error", "answer_actual_claims_count", "answer_matching_claims_count",
    "answer_reference_claims_count", "answer_precision", "answer_recall", "answer_f1",
    "answer_correctness_reason", "answer_correctness_error", "answer_relevance", "answer_relevance_error",
    "steps_score", "input_tokens", "output_tokens", "total_tokens", "elapsed_sec",
})
"""Keys graphrag-eval 6.6 writes itself: no custom output may take one."""
TOP_LEVEL_KEYS = ("llm", "custom_evaluations", "answer_correctness", "answer_relevance")
NATIVE_PROVIDERS = ("openai", "custom_openai", "azure")
"""Providers the judge reaches through the openai package; any other goes through litellm."""


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """`llm.generation` or `llm.embedding`: a provider, a model and the provider's options."""

    provider: str
    model: str
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # base_url, api_key, ...
    temperature: float = 0.0
    max_tokens: int | None = None
    where: str = ""  # "file:line" of the section, for messages

    @property
    def native(self) -> bool:
        return self.provider in NATIVE_PROVIDERS

    def option(self, *names: str) -> Any:
        """The first of `names` the provider options give (`base_url` or `api_base`, ...)."""
        for name in names:
            if self.options.get(name) is not None:
                return self.options[name]
        return None

    def describe(self) -> str:
        return f"{self.provider}/{self.model}"


@dataclass(frozen=True, slots=True)
class CustomEvaluation:
    """One custom LLM metric: what the judge sees, what it is told, and the values it gives back."""

    name: str
    inputs: tuple[str, ...]
    instructions: str
    outputs: tuple[tuple[str, str], ...]  # (key, description), in the file's order
    steps_name: str | None = None
    steps_keys: tuple[str, ...] = ()

    @property
    def output_keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.outputs)

    @property
    def error_key(self) -> str:
        return f"{self.name}_error"


@dataclass(frozen=True, slots=True)
class Ge6Config:
    """A graphrag-eval 6.x configuration file, checked."""

    path: str | None = None
    generation: ModelEndpoint | None = None
    embedding: ModelEndpoint | None = None
    answer_correctness: bool = False
    correctness_prompt: str | None = None  # a str.format template; None: qareport's prompt
    answer_relevance: bool = False
    custom_evaluations: tuple[CustomEvaluation, ...] = ()
    ignored: tuple[str, ...] = ()  # "file:line: key 'x' ..." for top-level keys graphrag-eval ignores

    @property
    def custom_metric_keys(self) -> tuple[str, ...]:
        """The custom evaluations' output keys, in order: what `compute_aggregates` aggregates."""
        return tuple(key for evaluation in self.custom_evaluations for key in evaluation.output_keys)


NO_CONFIG = Ge6Config()


def read_ge6_config(path: str | Path | None) -> Ge6Config:
    """The configuration in `path` (None: no file, no LLM). Raises SettingsError."""
    if path is None or path == "":
        return NO_CONFIG
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{target}: cannot read the graphrag-eval configuration: {error}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{target}:{mark.line + 1}" if mark is not None else str(target)
        problem = getattr(error, "problem", None) or str(error)
        raise SettingsError(f"{where}: the graphrag-eval configuration is not valid YAML: {problem}") from None
    return parse_ge6_config(data, path=str(target), lines=_lines(root))


def parse_ge6_config(
        data: Any, *, path: str = "the configuration", lines: Mapping[str, int] | None = None) -> Ge6Config:
    """Check a configuration mapping (as `yaml.safe_load` gives it); `lines` maps dotted keys to
    1-based lines for messages."""
    place = _Place(path, lines or {})
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingsError(f"{place('')}: a graphrag-eval configuration is a mapping with "
                            f"{', '.join(TOP_LEVEL_KEYS)} (got {describe_value(data)})")
    ignored = tuple(
        f"{place(str(key))}: '{key}' is not a graphrag-eval 6.x setting and is ignored (known: "
        f"{', '.join(TOP_LEVEL_KEYS)})"
        for key in data if key not in TOP_LEVEL_KEYS
    )
    generation = embedding = None
    llm = data.get("llm")
    if llm is not None:
        llm = _mapping(llm, "llm", place)
        if "generation" not in llm:
            raise SettingsError(f"{place('llm')}: 'llm' needs 'generation' (provider and model)")
        unknown = [key for key in llm if key not in ("generation", "embedding")]
        if unknown:
            raise SettingsError(f"{place('llm.' + str(unknown[0]))}: 'llm.{unknown[0]}' is not a setting; "
                                "'llm' has 'generation' and 'embedding'")
        generation = _endpoint(llm["generation"], "llm.generation", place, generation=True)
        if llm.get("embedding") is not None:
            embedding = _endpoint(llm["embedding"], "llm.embedding", place, generation=False)

    correctness = _section(data, "answer_correctness", ("enabled", "prompt"), place)
    relevance = _section(data, "answer_relevance", ("enabled",), place)
    correctness_on = _flag(correctness.get("enabled", True), "answer_correctness.enabled", place) \
        if "answer_correctness" in data and data["answer_correctness"] is not None else generation is not None
    relevance_on = _flag(relevance.get("enabled", True), "answer_relevance.enabled", place) \
        if "answer_relevance" in data and data["answer_relevance"] is not None else embedding is not None
    prompt = correctness.get("prompt")
    if prompt is not None:
        prompt = _correctness_prompt(prompt, place)

    evaluations = _custom_evaluations(data.get("custom_evaluations"), place)
    if evaluations and generation is None:
        raise SettingsError(f"{place('custom_evaluations')}: custom evaluations need an LLM; add "
                            "'llm: {generation: {provider, model}}'")
    if correctness_on and generation is None:
        raise SettingsError(f"{place('answer_correctness')}: answer correctness needs an LLM; add "
                            "'llm: {generation: {provider, model}}' or set 'answer_correctness: {enabled: false}'")
    if relevance_on and embedding is None:
        raise SettingsError(f"{place('answer_relevance')}: answer relevance needs an embedding model; add "
                            "'llm.embedding: {provider, model}' or set 'answer_relevance: {enabled: false}'")
    return Ge6Config(
        path=path,
        generation=generation,
        embedding=embedding,
        answer_correctness=correctness_on,
        correctness_prompt=prompt,
        answer_relevance=relevance_on,
        custom_evaluations=evaluations,
        ignored=ignored,
    )


class _Place:
    """Says where a dotted key is: "file:line"."""

    def __init__(self, path: str, lines: Mapping[str, int]):
        self.path = path
        self.lines = lines

    def __call__(self, key: str) -> str:
        probe = key
        while probe and probe not in self.lines:
            probe = probe.rsplit(".", 1)[0] if "." in probe else ""
        line = self.lines.get(probe) if probe else None
        return f"{self.path}:{line}" if line else self.path


def _lines(node: Any, prefix: str = "") -> dict[str, int]:
    """Dotted key ("custom_evaluations.0.outputs") -> 1-based line, from `yaml.compose`'s nodes."""
    found: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = f"{prefix}{key_node.value}"
            found[key] = key_node.start_mark.line + 1
            found.update(_lines(value_node, key + "."))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = f"{prefix}{index}"
            found[key] = item.start_mark.line + 1
            found.update(_lines(item, key + "."))
    return found


def _mapping(value: Any, key: str, place: _Place) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SettingsError(f"{place(key)}: '{key}' must be a mapping (got {describe_value(value)})")
    return value


def _text(value: Any, key: str, place: _Place) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{place(key)}: '{key}' must be a non-empty string (got {describe_value(value)})")
    return value


def _flag(value: Any, key: str, place: _Place) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{place(key)}: '{key}' must be true or false (got {describe_value(value)})")
    return value


def _section(data: Mapping[str, Any], name: str, keys: tuple[str, ...], place: _Place) -> Mapping[str, Any]:
    value = data.get(name)
    if value is None:
        return {}
    section = _mapping(value, name, place)
    for key in section:
        if key not in keys:
            raise SettingsError(f"{place(f'{name}.{key}')}: '{name}.{key}' is not a setting; "
                                f"'{name}' has {', '.join(repr(k) for k in keys)}")
    return section


def _endpoint(value: Any, key: str, place: _Place, *, generation: bool) -> ModelEndpoint:
    section = _mapping(value, key, place)
    for required in ("provider", "model"):
        if required not in section:
            raise SettingsError(f"{place(key)}: '{key}' needs '{required}'")
    provider = _text(section["provider"], f"{key}.provider", place).strip()
    model = _text(section["model"], f"{key}.model", place).strip()
    temperature = 0.0
    max_tokens = None
    if generation:
        raw = section.get("temperature", 0.0)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0.0 <= raw <= 2.0:
            raise SettingsError(f"{place(key + '.temperature')}: '{key}.temperature' must be a number from 0 to 2 "
                                f"(got {describe_value(raw)})")
        temperature = float(raw)
        raw = section.get("max_tokens")
        if raw is not None and (isinstance(raw, bool) or not isinstance(raw, int) or raw < 1):
            raise SettingsError(f"{place(key + '.max_tokens')}: '{key}.max_tokens' must be a whole number of at "
                                f"least 1 (got {describe_value(raw)})")
        max_tokens = raw
    options = {k: v for k, v in section.items() if k not in ("provider", "model", "temperature", "max_tokens")}
    return ModelEndpoint(provider, model, MappingProxyType(options), temperature, max_tokens, place(key))


def _correctness_prompt(prompt: Any, place: _Place) -> str:
    key = "answer_correctness.prompt"
    text = _text(prompt, key, place)
    try:
        text.format(question="Q?", reference_answer="R", actual_answer="A")
    except (KeyError, IndexError, ValueError) as error:
        raise SettingsError(
            f"{place(key)}: the answer correctness prompt may use only the placeholders {{question}}, "
            f"{{reference_answer}} and {{actual_answer}} (write {{{{ and }}}} for a brace): {error!r}"
        ) from None
    return text


def _custom_evaluations(value: Any, place: _Place) -> tuple[CustomEvaluation, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise SettingsError(f"{place('custom_evaluations')}: 'custom_evaluations' must be a non-empty list of "
                            f"evaluations (got {describe_value(value)})")
    evaluations = []
    seen: dict[str, str] = {}
    for index, item in enumerate(value):
        key = f"custom_evaluations.{index}"
        evaluation = _custom_evaluation(item, key, place)
        for output in (evaluation.error_key, *evaluation.output_keys):
            if output in seen:
                raise SettingsError(f"{place(key)}: '{output}' is also written by custom evaluation "
                                    f"'{seen[output]}'; give every evaluation and output its own name")
            seen[output] = evaluation.name
        evaluations.append(evaluation)
    return tuple(evaluations)


def _custom_evaluation(item: Any, key: str, place: _Place) -> CustomEvaluation:
    section = _mapping(item, key, place)
    known = ("name", "inputs", "instructions", "outputs", "steps_name", "steps_keys")
    for name in section:
        if name not in known:
            raise SettingsError(f"{place(f'{key}.{name}')}: '{name}' is not a key of a custom evaluation; "
                                f"known: {', '.join(known)}")
    for name in ("name", "inputs", "instructions", "outputs"):
        if name not in section:
            raise SettingsError(f"{place(key)}: custom evaluation {index_of(key)} needs '{name}'")
    name = _text(section["name"], f"{key}.name", place)
    if f"{name}_error" in RESERVED_KEYS:
        raise SettingsError(f"{place(key + '.name')}: the name '{name}' is reserved ('{name}_error' is a key "
                            "graphrag-eval writes); choose another")
    inputs = section["inputs"]
    if not isinstance(inputs, list) or not inputs or any(i not in INPUTS for i in inputs):
        raise SettingsError(f"{place(key + '.inputs')}: '{key}.inputs' must list some of {', '.join(INPUTS)} "
                            f"(got {inputs!r})")
    instructions = section["instructions"]
    if not isinstance(instructions, str):
        raise SettingsError(f"{place(key + '.instructions')}: 'instructions' must be text "
                            f"(got {describe_value(instructions)})")
    outputs = section["outputs"]
    if not isinstance(outputs, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in outputs.items()):
        raise SettingsError(f"{place(key + '.outputs')}: 'outputs' must map each output's name to its "
                            f"description (got {describe_value(outputs)})")
    reserved = sorted(set(outputs) & RESERVED_KEYS)
    if reserved:
        raise SettingsError(f"{place(key + '.outputs')}: the outputs {', '.join(reserved)} are reserved (keys "
                            "graphrag-eval writes); choose other names")
    steps_name = section.get("steps_name")
    steps_keys = section.get("steps_keys")
    if steps_name is not None:
        steps_name = _text(steps_name, f"{key}.steps_name", place)
    if steps_keys is not None:
        if not isinstance(steps_keys, list) or not steps_keys or any(k not in STEPS_KEYS for k in steps_keys):
            raise SettingsError(f"{place(key + '.steps_keys')}: 'steps_keys' must list 'args', 'output' or both "
                                f"(got {steps_keys!r})")
        steps_keys = list(dict.fromkeys(steps_keys))
    if set(inputs) & {"reference_steps", "actual_steps"}:
        for needed, given in (("steps_name", steps_name), ("steps_keys", steps_keys)):
            if given is None:
                raise SettingsError(f"{place(key)}: custom evaluation '{name}' has steps among its inputs, so it "
                                    f"needs '{needed}'")
    return CustomEvaluation(
        name=name,
        inputs=tuple(dict.fromkeys(inputs)),
        instructions=instructions,
        outputs=tuple(outputs.items()),
        steps_name=steps_name,
        steps_keys=tuple(steps_keys or ()),
    )


def index_of(key: str) -> str:
    return str(int(key.rsplit(".", 1)[1]) + 1)
