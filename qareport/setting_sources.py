"""Where a setting comes from, and its value checked against the field that declares it.

`Layers` looks a setting up in order of precedence (the option, the environment variable, the
configuration file) and says where it found it; `setting` then validates the value with pydantic
against the annotation of the record's field (its type and constraints: `Annotated[int,
Field(ge=1, le=256)]`, an enum, `Strict()` booleans, non-empty text), and returns the field's
default when nothing gave a value. A value pydantic refuses becomes one message that names its
source and what is expected, derived from the same declaration:

    'judge.concurrency' in qareport.yaml must be an integer between 1 and 256 (got 0)

So each setting's type, bounds and default are written once, on its record's field.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import BaseModel, StringConstraints, TypeAdapter, ValidationError

from qareport.config_file import ConfigFile
from qareport.errors import SettingsError

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A setting that is text: surrounding spaces removed, never empty."""


@dataclass(frozen=True, slots=True)
class Expected:
    """What a field's value must be, in words, where the words derived from its type would not
    say enough (`Annotated[Literal[5, 6], Expected("5 or 6, graphrag-eval's major version")]`)."""

    words: str


COMMAND_LINE_OPTIONS: Mapping[str | None, Mapping[str, str]] = {
    None: {"match_terms_by": "--match-terms-by", "templates": "--templates", "strict": "--strict",
           "steps_semantics": "--steps-semantics", "config_ge6": "--config-ge6", "testcase_cache": "--no-cache",
           "answer_pass_f1": "--answer-pass-f1"},
    "indicator_selection": {"acceptable_extras": "--grade-extras"},
    "judge": {"enabled": "--no-llm", "model": "--judge-model", "embedding_model": "--embedding-model",
              "base_url": "--judge-base-url", "concurrency": "--judge-concurrency", "timeout": "--judge-timeout",
              "max_retries": "--judge-retries", "use_cache": "--no-cache", "cache_path": "--cache-path",
              "budget": "--judge-budget", "batch": "--judge-batch", "batch_wait": "--judge-batch-wait",
              "batch_poll": "--judge-batch-poll", "repeats": "--judge-repeats"},
    "email": {"host": "--smtp-host", "port": "--smtp-port", "security": "--smtp-security", "user": "--smtp-user",
              "timeout": "--smtp-timeout"},
}
"""The command-line option that gives each setting, by section (None: the run's top level): a
message about a value given as an option names the option as it was typed (`--grade-extras`), not
the setting (`acceptable_extras`), which is also the library's argument (the README's options table
gives both)."""


def option_words(section: str | None, name: str) -> str:
    """How a message names the option that gave setting `name`: "option --grade-extras", or
    "option 'name'" for a setting no command-line option gives."""
    typed = COMMAND_LINE_OPTIONS.get(section, {}).get(name)
    return f"option {typed}" if typed else f"option '{name}'"


@dataclass(frozen=True, slots=True)
class Found:
    """A setting's value, where it came from (for messages) and its rank (0 option, 1 environment,
    2 configuration file)."""

    value: Any
    where: str
    rank: int


class Layers:
    """The places one section's settings come from, looked up in order of precedence: the
    options (None counts as not given), the environment (`environment_names`: setting -> variable;
    an empty variable counts as not set), then the configuration file's `config_values` (by
    default the whole file; a section's mapping for `section`)."""

    def __init__(self, *, section: str | None, options: Mapping[str, Any], config: ConfigFile,
                 environ: Mapping[str, str] | None = None, environment_names: Mapping[str, str] | None = None,
                 config_values: Mapping[str, Any] | None = None):
        self.options = {k: v for k, v in options.items() if v is not None}
        self.environ = environ or {}
        self.environment_names = environment_names or {}
        self.config = config
        self.config_values = config.values if config_values is None else config_values
        self.section = section

    def find(self, name: str) -> Found | None:
        if name in self.options:
            return Found(self.options[name], option_words(self.section, name), 0)
        variable = self.environment_names.get(name)
        if variable and self.environ.get(variable):
            return Found(self.environ[variable], f"environment variable {variable}", 1)
        if self.config_values.get(name) is not None:
            key = f"{self.section}.{name}" if self.section else name
            return Found(self.config_values[name], self.config.where(key), 2)
        return None

    def get(self, name: str, default: Any) -> tuple[Any, str]:
        """The raw value (or `default`) and where it came from (the name, for a default)."""
        found = self.find(name)
        return (default, name) if found is None else (found.value, found.where)

    def setting(self, record: type[Any], name: str, *, key: str | None = None,
                error: type[SettingsError] = SettingsError) -> Any:
        """The setting `key` (default: `name`) checked as `record`'s field `name`, or that
        field's default when no layer gives it."""
        found = self.find(key or name)
        return field_default(record, name) if found is None else setting(record, name, found, error=error)


def setting(record: type[Any], name: str, found: Found, *, error: type[SettingsError] = SettingsError) -> Any:
    """`found.value` validated as `record`'s field `name`; `error` names where it came from."""
    return check(field_annotation(record, name), found, error=error)


def check(annotation: Any, found: Found, *, error: type[SettingsError] = SettingsError) -> Any:
    """`found.value` validated as `annotation` (e.g. `Text`), or `error` naming where it came from."""
    value = found.value
    try:
        if isinstance(value, bool) and not _allows_bool(annotation):  # pydantic would read True as 1
            raise ValueError(value)
        return _adapter(annotation).validate_python(value.strip() if isinstance(value, str) else value)
    except (ValidationError, ValueError):
        raise error(f"{found.where} must be {expected(annotation)} (got {value!r})") from None


def field_default(record: type[Any], name: str) -> Any:
    """The default declared on `record`'s field `name` (a pydantic model or a dataclass)."""
    if isinstance(record, type) and issubclass(record, BaseModel):
        return record.model_fields[name].get_default(call_default_factory=True)
    for item in dataclasses.fields(record):
        if item.name == name:
            if item.default_factory is not dataclasses.MISSING:
                return item.default_factory()
            return None if item.default is dataclasses.MISSING else item.default
    raise KeyError(name)


def field_annotation(record: type[Any], name: str) -> Any:
    """The field's annotation with its constraints (`Annotated[...]`)."""
    if isinstance(record, type) and issubclass(record, BaseModel):
        info = record.model_fields[name]
        return Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    return typing.get_type_hints(record, include_extras=True)[name]


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(annotation: Any) -> TypeAdapter[Any]:
    """The validator of `annotation`, built once (the annotations' metadata is not hashable: they
    are told apart by their text, which names the type and every constraint)."""
    key = repr(annotation)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(annotation)
    return _ADAPTERS[key]


def expected(annotation: Any) -> str:
    """What a value of `annotation` must be, in the words of the messages."""
    annotation, metadata = _unwrapped(annotation)
    words = next((item.words for item in metadata if isinstance(item, Expected)), None)
    if words is not None:
        return words
    if _is_optional(annotation):
        return expected(Annotated[_without_none(annotation), *metadata] if metadata else _without_none(annotation))
    if annotation is bool:
        return "true or false"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(str(member.value) for member in annotation)
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(str(choice) for choice in typing.get_args(annotation))
    if annotation is str:
        return "a non-empty string"
    kind = "an integer" if annotation is int else "a number"
    low = next((item.ge for item in metadata if isinstance(item, annotated_types.Ge)), None)
    high = next((item.le for item in metadata if isinstance(item, annotated_types.Le)), None)
    if low is not None and high is not None:
        return f"{kind} between {low:g} and {high:g}"
    return f"{kind} >= {low:g}" if low is not None else kind


def _unwrapped(annotation: Any) -> tuple[Any, list[Any]]:
    """The annotation without `Annotated`, and its metadata (a `Field(...)`'s constraints included)."""
    metadata: list[Any] = []
    while typing.get_origin(annotation) is Annotated:
        annotation, *extra = typing.get_args(annotation)
        for item in extra:
            metadata += getattr(item, "metadata", None) or [item]
    return annotation, metadata


def _is_optional(annotation: Any) -> bool:
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return union and type(None) in typing.get_args(annotation)


def _without_none(annotation: Any) -> Any:
    rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return rest[0] if len(rest) == 1 else annotation


def _allows_bool(annotation: Any) -> bool:
    annotation, _ = _unwrapped(annotation)
    if _is_optional(annotation):
        return _allows_bool(_without_none(annotation))
    return annotation is bool or annotation is Any
