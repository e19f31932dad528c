"""The judge's identity: which instrument gave a run's judged values, recorded with the run.

A judged value depends on the model that answered (the snapshot the API names in its replies, which
an alias such as `gpt-4o-mini` hides), on how it was reached, on the prompts it was given and on the
parameters sent with them. `JudgeIdentity` keeps these, `judge_identity` builds it from the settings
and the templates a run used, and `differences` says what differs between two runs' judges, which is
what `qareport.judge_change` reads as "the judge changed".

Stored flat (`pairs`) in the hidden `qareport_run` sheet under `judge.identity.<field>`, and as a
mapping (`to_dict`) in the results file, so a baseline read back has it (`from_mapping`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from qareport.judge.settings import JudgeSettings

PROMPTS_HASH_LENGTH = 16
"""Hex digits of the prompts' SHA-256 kept: enough to tell two sets of templates apart."""
STORED_PREFIX = "judge.identity."

OPENAI = "OpenAI"
AZURE = "Azure OpenAI"
COMPATIBLE = "OpenAI-compatible"
LITELLM = "litellm"

RETRY_TEMPLATES = ("retry", "retry_values")
"""Templates every judge that checks its replies may send, whatever the metrics."""


@dataclass(frozen=True, slots=True)
class JudgeIdentity:
    """What a run's judge was. `served_model`: the model the replies named (the snapshot), None
    when no reply came from the API this run (all from the cache of an older qareport, or none)."""

    model: str  # as configured (for Azure: the model behind the deployment)
    endpoint_kind: str  # OPENAI, AZURE, COMPATIBLE or LITELLM
    prompts_sha256: str  # of the prompt templates the metrics judged use (`prompts_hash`)
    temperature: float
    response_format: str
    embedding_model: str
    relevance_questions: int
    repeats: int
    served_model: str | None = None
    max_tokens: int | None = None
    deployment: str | None = None  # Azure's deployment name

    @property
    def answering_model(self) -> str:
        """The model that answered: the snapshot when the replies named one, else the configured name."""
        return self.served_model or self.model

    def describe(self) -> str:
        """For "What was run": "gpt-4o-mini-2024-07-18 (OpenAI), asked as gpt-4o-mini; temperature 0; ...";
        "; " parts the Summary may put on lines of their own."""
        parts = [f"{self.answering_model} ({self.endpoint_kind})"]
        if self.served_model and self.served_model != self.model:
            parts[0] += f", asked as {self.model}"
        parts.append(f"temperature {self.temperature:g}")
        if self.max_tokens is not None:
            parts.append(f"max tokens {self.max_tokens}")
        parts.append(f"{self.response_format} replies")
        if self.repeats != 1:
            parts.append(f"{self.repeats} repeats")
        parts.append(f"prompts sha256 {self.prompts_sha256}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """For the results file: every field, None included (a reader sees the field exists)."""
        return asdict(self)

    def pairs(self) -> list[tuple[str, Any]]:
        """For the `qareport_run` sheet: `judge.identity.<field>`, the fields that have a value."""
        return [(STORED_PREFIX + name, value) for name, value in self.to_dict().items() if value is not None]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> JudgeIdentity | None:
        """Read back from a results file's mapping or a sheet's pairs (prefix removed); None when
        the stored run records no judge or an edit left a field unreadable."""
        try:
            return cls(
                model=_text(values["model"]),
                endpoint_kind=_text(values["endpoint_kind"]),
                prompts_sha256=_text(values["prompts_sha256"]),
                temperature=float(values["temperature"]),
                response_format=_text(values["response_format"]),
                embedding_model=_text(values["embedding_model"]),
                relevance_questions=_whole(values["relevance_questions"]),
                repeats=_whole(values["repeats"]),
                served_model=_optional_text(values.get("served_model")),
                max_tokens=None if values.get("max_tokens") in (None, "") else _whole(values["max_tokens"]),
                deployment=_optional_text(values.get("deployment")),
            )
        except (KeyError, TypeError, ValueError):
            return None

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> JudgeIdentity | None:
        """From the `qareport_run` sheet's key, value pairs."""
        stored = {key.removeprefix(STORED_PREFIX): value for key, value in metadata.items()
                  if isinstance(key, str) and key.startswith(STORED_PREFIX)}
        return cls.from_mapping(stored) if stored else None


COMPARED = ("endpoint_kind", "prompts_sha256", "temperature", "response_format", "max_tokens", "embedding_model",
            "relevance_questions")
"""The fields besides the model that change what a judge says of the same answer. Repeats are left
out: a mean of several judgments estimates the same value as one judgment, with less noise; the
endpoint's address is left out: the same model behind another address is the same judge."""


def differences(old: JudgeIdentity, new: JudgeIdentity) -> tuple[str, ...]:
    """What differs between two judges, one phrase each ("model gpt-4o-mini-2024-07-18 → gpt-4.1-mini");
    empty when they are the same judge. The models compare by snapshot when both runs' replies named
    one, else by the configured name."""
    found = []
    if old.served_model and new.served_model:
        if old.served_model != new.served_model:
            found.append(f"model {old.served_model} → {new.served_model}")
    elif old.model != new.model:
        found.append(f"model {old.model} → {new.model}")
    for name in COMPARED:
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            label = "prompt templates" if name == "prompts_sha256" else name.replace("_", " ")
            found.append(f"{label} {_shown(before)} → {_shown(after)}")
    return tuple(found)


def endpoint_kind(settings: JudgeSettings) -> str:
    """How the judge is reached: litellm, Azure OpenAI, OpenAI's own API or another server that
    speaks its protocol."""
    if settings.litellm_chat is not None:
        return LITELLM
    if settings.is_azure:
        return AZURE
    host = urlsplit(settings.endpoint).hostname or ""
    return OPENAI if host == "api.openai.com" else COMPATIBLE


def prompts_hash(sources: Iterable[str]) -> str:
    """SHA-256 over the templates' texts, in the order given, each length-prefixed so that no two
    different sets of texts hash alike."""
    digest = hashlib.sha256()
    for source in sources:
        data = source.encode("utf-8")
        digest.update(f"{len(data)}:".encode())
        digest.update(data)
    return digest.hexdigest()[:PROMPTS_HASH_LENGTH]


def used_templates(settings: JudgeSettings) -> tuple[str, ...]:
    """The prompt templates the judged metrics send, in the order hashed."""
    return (*sorted(settings.metrics), *RETRY_TEMPLATES)


def judge_identity(settings: JudgeSettings, *, template_sources: Mapping[str, str],
                   served_models: Iterable[str] = ()) -> JudgeIdentity:
    """The identity of a judge run with `settings`; `template_sources`: template name -> its text as
    loaded (the packaged one or the `--templates` override); `served_models`: the models the replies
    named. A custom correctness prompt and the custom metrics' prompts (graphrag-eval 6.x) are
    hashed with the templates."""
    sources = [template_sources.get(name, "") for name in used_templates(settings)]
    if settings.correctness_prompt is not None:
        sources.append(settings.correctness_prompt)
    sources += [repr(evaluation) for evaluation in settings.custom_evaluations]
    served = sorted(set(served_models))
    return JudgeIdentity(
        model=settings.model,
        endpoint_kind=endpoint_kind(settings),
        prompts_sha256=prompts_hash(sources),
        temperature=settings.temperature,
        response_format=settings.response_format,
        embedding_model=settings.embedding_model,
        relevance_questions=settings.relevance_questions,
        repeats=settings.repeats,
        served_model=", ".join(served) if served else None,
        max_tokens=settings.max_tokens,
        deployment=settings.azure_deployment if settings.is_azure else None,
    )


def _shown(value: Any) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _text(value: Any) -> str:
    if value is None or value == "":
        raise ValueError("empty")
    return str(value)


def _optional_text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _whole(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a bool")
    number = float(value)
    if not number.is_integer():
        raise ValueError("not whole")
    return int(number)
