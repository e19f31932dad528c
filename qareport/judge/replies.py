"""Reading a chat reply: what the judge uses of a completion, from its JSON or from an object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ChatReply:
    """What the judge reads of a chat completion: its model, token usage (`has_usage` False when
    the reply gave none), and the first choice's content, refusal and finish reason."""

    model: str | None
    has_usage: bool
    input_tokens: int
    output_tokens: int
    content: str | None
    refusal: str | None
    finish_reason: str | None

    @classmethod
    def of_json(cls, data: Any) -> ChatReply:
        """From the reply's JSON as sent; what is missing or of another type is read as absent."""
        data = data if isinstance(data, dict) else {}
        usage = data.get("usage")
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        return cls(_text_or_none(data.get("model")), isinstance(usage, dict),
                   _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"),
                   _text_or_none(message.get("content")), _text_or_none(message.get("refusal")),
                   _text_or_none(choice.get("finish_reason")))

    @classmethod
    def of_object(cls, completion: Any) -> ChatReply:
        """From a completion object (litellm's, shaped as the SDK's)."""
        usage = completion.usage
        choice = completion.choices[0] if completion.choices else None
        message = choice.message if choice is not None else None
        return cls(completion.model, usage is not None,
                   (usage.prompt_tokens or 0) if usage is not None else 0,
                   (usage.completion_tokens or 0) if usage is not None else 0,
                   message.content if message is not None else None,
                   getattr(message, "refusal", None) if message is not None else None,
                   choice.finish_reason if choice is not None else None)



def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None



def _tokens(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
