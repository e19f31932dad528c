"""Reading a chat reply: what the judge uses of a completion, from its text or from an object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from qareport.judge.json_depth import MAX_DEPTH, TooDeep, load_json

UsageState = Literal["reported", "missing", "invalid"]
"""Whether a reply gave its token usage: as counts that can be priced, not at all, or as counts that
cannot be true (negative, not integers): the last two are counted apart, never priced at $0."""


@dataclass(frozen=True, slots=True)
class ChatReply:
    """What the judge reads of a chat completion: its model, token usage (`usage` says whether the
    counts can be priced), and the first choice's content, refusal and finish reason. `problem`:
    why the reply could not be read at all (its JSON nests too deep), when it could not."""

    model: str | None
    usage: UsageState
    input_tokens: int
    output_tokens: int
    content: str | None
    refusal: str | None
    finish_reason: str | None
    problem: str | None = None

    @property
    def has_usage(self) -> bool:
        return self.usage == "reported"

    @classmethod
    def of_text(cls, text: str, content_type: str | None) -> ChatReply:
        """From the reply's body as sent: JSON when its content type says so (as the SDK reads a
        reply), else a reply without content; nesting past MAX_DEPTH is a `problem`, not parsed."""
        if not (content_type or "*").split(";")[0].strip().endswith("json"):
            return cls.of_json(None)
        try:
            return cls.of_json(load_json(text))
        except TooDeep:
            return cls(None, "missing", 0, 0, None, None, None,
                       problem=f"the reply's JSON nests more than {MAX_DEPTH} levels deep")
        except ValueError:
            return cls.of_json(None)

    @classmethod
    def of_json(cls, data: Any) -> ChatReply:
        """From the reply's parsed JSON; what is missing or of another type is read as absent."""
        data = data if isinstance(data, dict) else {}
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        usage = data.get("usage")
        counts = (usage.get("prompt_tokens"), usage.get("completion_tokens")) if isinstance(usage, dict) else None
        state, input_tokens, output_tokens = _usage(counts)
        return cls(_text_or_none(data.get("model")), state, input_tokens, output_tokens,
                   _text_or_none(message.get("content")), _text_or_none(message.get("refusal")),
                   _text_or_none(choice.get("finish_reason")))

    @classmethod
    def of_object(cls, completion: Any) -> ChatReply:
        """From a completion object (the SDK's, or litellm's shaped as the SDK's)."""
        usage = completion.usage
        choice = completion.choices[0] if completion.choices else None
        message = choice.message if choice is not None else None
        counts = None if usage is None else (usage.prompt_tokens, usage.completion_tokens)
        state, input_tokens, output_tokens = _usage(counts)
        return cls(completion.model, state, input_tokens, output_tokens,
                   message.content if message is not None else None,
                   getattr(message, "refusal", None) if message is not None else None,
                   choice.finish_reason if choice is not None else None)



def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None



def _usage(counts: tuple[Any, Any] | None) -> tuple[UsageState, int, int]:
    """The usage state and the (input, output) tokens of a reply's counts (None: no usage block).
    An absent count is 0; a negative or non-integer one makes the usage invalid (tokens 0)."""
    if counts is None:
        return "missing", 0, 0
    tokens = []
    for value in counts:
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return "invalid", 0, 0
        tokens.append(value)
    return "reported", tokens[0], tokens[1]
