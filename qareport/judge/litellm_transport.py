"""Chat and embeddings through litellm, for providers the openai package does not speak.

Optional: `pip install 'qareport[litellm]'`. The object looks like the part of an `openai.OpenAI`
client the judge uses (`chat.completions.create`, `embeddings.create`, `close`), so the rest of the
judge (cache, checks, costs, retry counting) stays the same. litellm raises the openai package's
exception classes (its errors derive from them), which the client already handles; its own
retries are asked for with `num_retries`, as the openai SDK's `max_retries`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from qareport.errors import JudgeSettingsError

INSTALL_HINT = "pip install 'qareport[litellm]'"


def litellm_installed() -> bool:
    return importlib.util.find_spec("litellm") is not None


def require_litellm(provider: str, where: str) -> None:
    """One clear line when a configuration names a provider that needs litellm and it is missing."""
    if not litellm_installed():
        raise JudgeSettingsError(
            f"{where}: provider '{provider}' is reached through litellm, which is not installed; "
            f"{INSTALL_HINT} (OpenAI and OpenAI-compatible endpoints work without it: provider 'openai' "
            "with a base_url)"
        )


class LiteLLMClient:
    """`chat.completions.create(**request)` and `embeddings.create(**request)` through litellm."""

    def __init__(self, *, chat_model: str | None, chat_options: Mapping[str, Any],
                 embedding_model: str | None, embedding_options: Mapping[str, Any],
                 timeout: float, max_retries: int):
        import litellm  # the optional extra; checked when the settings were read

        litellm.drop_params = True  # a provider that lacks a parameter (response_format) ignores it
        self._litellm = litellm
        self._chat = (chat_model, dict(chat_options))
        self._embedding = (embedding_model, dict(embedding_options))
        self._common = {"timeout": timeout, "num_retries": max_retries}
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._complete))
        self.embeddings = SimpleNamespace(create=self._embed)

    def _complete(self, **request: Any) -> Any:
        model, options = self._chat
        return self._litellm.completion(**{**request, "model": model or request["model"]}, **options,
                                        **self._common)

    def _embed(self, **request: Any) -> Any:
        model, options = self._embedding
        request.pop("encoding_format", None)
        response = self._litellm.embedding(**{**request, "model": model or request["model"]}, **options,
                                           **self._common)
        data = [item if hasattr(item, "embedding") else SimpleNamespace(**item) for item in response.data]
        return SimpleNamespace(data=data, usage=getattr(response, "usage", None),
                               model=getattr(response, "model", None))

    def close(self) -> None:
        """Nothing to close: litellm keeps its own connections."""
