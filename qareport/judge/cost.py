"""What judging will cost before it is spent: tokens counted from the requests, and the budget.

No tokenizer is downloaded: tokens are counted by a documented rule of thumb (OpenAI's own: about
four characters of English text per token).

- a text's tokens: ceil(characters / CHARS_PER_TOKEN);
- a chat request's input tokens: REPLY_PRIMING_TOKENS, plus, per message, MESSAGE_OVERHEAD_TOKENS and
  the tokens of its content, plus the tokens of the JSON schema sent as `response_format` (the API
  bills the schema as input);
- a chat request's output tokens: the metric's allowance (`output_allowance`), a typical reply's
  length (never more than the request's `max_tokens`);
- an embeddings request: the tokens of each input, no output.

The rule is close for English prose and undercounts text dense in digits, symbols or non-Latin
scripts (a real tokenizer may count up to about twice as many tokens there); replies vary around
their allowance. An estimate is a planning figure, not a bill.

Two guards use the rule, each installed on a `JudgeClient` (`JudgeClient.guard`), which asks the
guard before it sends any request and tells it what the reply cost:

- `Budget`: `--judge-budget DOLLARS` / `judge.budget`. Before a request is sent, its estimated cost is
  reserved (its reply allowed the metric's allowance, or the longest reply of the metric so far in
  the run when that was longer); a request whose reservation would take the spent plus the reserved
  (the requests in flight) past the budget is not sent, and from then on no chat request is sent
  (`BudgetReached`): the judgments left are "not judged: budget reached". Answer relevance's chat
  also holds what its embeddings will cost ((questions + 1) x QUESTION_TOKENS tokens) until they
  are asked; an embeddings request, which completes judgments already paid for, is sent whenever
  it fits. As replies come in, the reservation is replaced by
  the cost the reply reports. Replies from the cache cost nothing and are always used.
- `Recorder`: `--estimate`. Records each request that would be sent and sends none (`NotSent`);
  a request identical to one recorded (the same cache key) is counted as the run will find it: in
  the cache, not sent.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from qareport.errors import BUDGET_REACHED
from qareport.judge.prices import PriceTable

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens the chat format adds around each message (its role and separators)."""
REPLY_PRIMING_TOKENS = 3
"""Tokens the chat format adds to every request (the start of the reply)."""
BATCH_DISCOUNT = 0.5
"""The OpenAI Batch API's prices are half the standard ones, for chat and embeddings alike."""

OUTPUT_ALLOWANCES = {
    "answer_correctness": 120,  # a reason of a sentence or two and three counts
    "retrieval_answer_recall": 200,  # each statement of the reference restated, with a reason
    "retrieval_context_recall": 200,
}
"""Output tokens allowed for one reply, by metric; see `output_allowance` for the others."""
QUESTION_TOKENS = 25
"""Answer relevance: tokens per generated question (its text and flag) in the reply, and the
length assumed for a generated question's embedding input while the question is not known."""
CONTEXT_VERDICT_TOKENS = 40
"""Retrieval precision: tokens per context verdict (a reason and a flag) in the reply."""
REPLY_BASE_TOKENS = 20
"""Retrieval precision and answer relevance: tokens of a reply's frame, beside its items."""
CUSTOM_OUTPUT_TOKENS = 100
"""A custom evaluation's reply (tab-separated values)."""


def text_tokens(text: str) -> int:
    """Tokens of a text by the rule of thumb: ceil(characters / CHARS_PER_TOKEN)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def chat_input_tokens(request: Mapping[str, Any]) -> int:
    """Input tokens of a chat request (see the module's docstring)."""
    tokens = REPLY_PRIMING_TOKENS
    for message in request.get("messages") or ():
        tokens += MESSAGE_OVERHEAD_TOKENS + text_tokens(str(message.get("content") or ""))
    response_format = request.get("response_format")
    if isinstance(response_format, Mapping) and "json_schema" in response_format:
        tokens += text_tokens(json.dumps(response_format["json_schema"], separators=(",", ":")))
    return tokens


def output_allowance(metric: str, request: Mapping[str, Any], *, questions: int = 3) -> int:
    """Output tokens allowed for a reply to `request` (capped by its `max_tokens` or
    `max_completion_tokens`).

    answer correctness 120; retrieval answer / context recall 200; answer relevance 20 + 25 per
    generated question; retrieval answer / context precision 20 + 40 per context in the prompt
    (`<context number=...>`, at least one); a custom evaluation 100.
    """
    if metric in OUTPUT_ALLOWANCES:
        allowance = OUTPUT_ALLOWANCES[metric]
    elif metric == "answer_relevance":
        allowance = REPLY_BASE_TOKENS + QUESTION_TOKENS * questions
    elif metric.endswith("_precision"):
        prompt = "".join(str(m.get("content") or "") for m in request.get("messages") or ())
        allowance = REPLY_BASE_TOKENS + CONTEXT_VERDICT_TOKENS * max(1, prompt.count("<context number="))
    else:
        allowance = CUSTOM_OUTPUT_TOKENS
    limit = request.get("max_tokens", request.get("max_completion_tokens"))
    return min(allowance, limit) if isinstance(limit, int) and limit > 0 else allowance


def embedding_input_tokens(inputs: Sequence[str]) -> int:
    return sum(text_tokens(text) for text in inputs)


@dataclass(frozen=True, slots=True)
class CallEstimate:
    """One request as the estimate sees it: its kind ("chat" or "embeddings"), metric, tokens and
    cost at standard prices (None: no known price)."""

    kind: str
    metric: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    hold_usd: float = 0.0
    """Answer relevance's chat: what its embeddings will cost (held by a budget until they are asked)."""
    key: str | None = None
    """The request's cache key: requests with one key are sent once in a run (`Recorder`)."""


def estimate_call(kind: str, metric: str, request: Mapping[str, Any], *, prices: PriceTable,
                  models: tuple[str | None, ...], questions: int = 3, longest_reply: int = 0) -> CallEstimate:
    """The tokens and the cost of one request before it is sent. `longest_reply`: the most output
    tokens a reply for this metric used so far in the run; a reply is allowed at least that many."""
    if kind == "embeddings":
        inputs = request.get("input") or ()
        input_tokens = embedding_input_tokens([str(text) for text in inputs])
        output_tokens = 0
    else:
        input_tokens = chat_input_tokens(request)
        output_tokens = max(output_allowance(metric, request, questions=questions), longest_reply)
    return CallEstimate(kind, metric, input_tokens, output_tokens,
                        prices.cost(models, input_tokens, output_tokens))


class CallGuard(Protocol):
    """Asked by the client before each request it would send, and told what the reply cost."""

    def admit(self, call: CallEstimate) -> float:
        """The amount reserved for the call; raises BudgetReached or NotSent instead of sending."""

    def settle(self, reserved: float, cost: float | None) -> None:
        """The call is over: `cost` is what its reply reported (0.0 when it failed, None: unknown)."""


class BudgetReached(Exception):
    """A request was not sent: its estimated cost would take the spend past the budget."""


class NotSent(Exception):
    """A request was not sent: the run only estimates (`--estimate`). `repeated`: the run would not
    send it either, an identical request of the run having been recorded already (its reply is in
    the cache by then)."""

    def __init__(self, *, repeated: bool = False):
        super().__init__()
        self.repeated = repeated


BUDGET_WORDS = BUDGET_REACHED


class Budget:
    """The judge's spending limit in US dollars, shared by the runner's threads (see the module's
    docstring). `spent` is what the replies reported; `reached` whether a request was refused."""

    def __init__(self, limit_usd: float):
        self.limit_usd = limit_usd
        self.spent = 0.0
        self.reserved = 0.0
        self.held = 0.0  # for the embeddings of answer relevance's chats already admitted
        self.reached = False
        self.refused = 0
        self._lock = threading.Lock()

    def admit(self, call: CallEstimate) -> float:
        amount = call.cost_usd or 0.0
        with self._lock:
            if call.kind == "embeddings":  # completes judgments already paid for: sent while it fits
                release = min(self.held, amount)
                refused = self.spent + self.reserved + self.held - release + amount > self.limit_usd
            else:
                release = 0.0
                refused = self.reached or (self.spent + self.reserved + self.held + amount + call.hold_usd
                                           > self.limit_usd)
            if refused:
                self.reached = True
                self.refused += 1
                raise BudgetReached(self.describe_locked())
            self.held += call.hold_usd - release
            self.reserved += amount
        return amount

    def settle(self, reserved: float, cost: float | None) -> None:
        with self._lock:
            self.reserved -= reserved
            self.spent += reserved if cost is None else cost

    def describe(self) -> str:
        with self._lock:
            return self.describe_locked()

    def describe_locked(self) -> str:
        return f"${self.spent:.4f} of the ${self.limit_usd:.4f} judge budget spent"


@dataclass
class Recorder:
    """Records the requests a run would send (`--estimate`), sending none."""

    calls: list[CallEstimate] = field(default_factory=list)
    _keys: set[str] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def admit(self, call: CallEstimate) -> float:
        """Record the call, once per cache key: a run sends identical requests once, the later
        ones finding the first's reply in the cache."""
        with self._lock:
            if call.key is not None and call.key in self._keys:
                raise NotSent(repeated=True)
            if call.key is not None:
                self._keys.add(call.key)
            self.calls.append(call)
        raise NotSent()

    def settle(self, reserved: float, cost: float | None) -> None:  # never called: nothing is sent
        pass
