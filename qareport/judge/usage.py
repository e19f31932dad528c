"""What the judge used: calls, tokens, retries and cost, per unit of work and over a run.

A `Ledger` counts one unit of work (one metric of one case, or one embeddings batch) while it
runs; `summarize_usage` adds the ledgers of a run into one `JudgeUsage`, the record reports show.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from qareport.judge.prices import BATCH_PRICES_CHECKED, PRICES_CHECKED
from qareport.judge.replies import UsageState


@dataclass(frozen=True, slots=True)
class MetricUsage:
    """Calls and cost of one metric over a run. `failed_calls`: requests that failed after the SDK's
    retries; `errors` counts judgments (a metric of a case, or of a retrieval step) that ended in an
    error key, whatever the cause (how many *cases* were judged, failed or not judged is
    `qareport.judged_metrics`'s to say); `cost_usd` is None when a call used a model without a known
    price."""

    calls: int = 0
    cached_calls: int = 0
    errors: int = 0
    cost_usd: float | None = 0.0
    failed_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "errors": self.errors,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """What a `judge_results` run used.

    `cases`: the result dicts (questions, conversation turns) the judge had work for, whatever
    became of it; how many test cases were judged, failed or not judged is `qareport.judged_metrics`'s
    to say, once. `calls`: requests the API answered (each is billed); `cached_calls`: requests answered from the
    cache (free); `failed_calls`: requests that failed after all retries; `retries`: extra attempts
    the openai client made. `cost_usd` is None when some call used a model without a known price
    (`unpriced_models`).
    """

    model: str
    embedding_model: str
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    tried_again: int = 0  # judgments that failed in an earlier run and were asked again
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    by_metric: dict[str, MetricUsage] = field(default_factory=dict)
    cases: int = 0
    elapsed_sec: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)
    prices_checked: str = PRICES_CHECKED
    batches: int = 0  # batches the run submitted or collected (`judge.batch`); 0: judged directly
    batch: bool = False  # judged in batches: replies at the Batch API's prices
    adapted_parameters: dict[str, str] = field(default_factory=dict)
    """Chat parameters the model refused, each with what the run sent instead (`JudgeClient._post_adapting`)."""
    no_usage: int = 0  # replies that reported no token usage: their cost is not in `cost_usd`
    invalid_usage: int = 0  # replies whose token counts cannot be true (negative, not whole): not costed

    @property
    def usage_note(self) -> str | None:
        """What `cost_usd` leaves out because replies did not say what they used; None: nothing."""
        notes = []
        if self.no_usage:
            notes.append(f"{self.no_usage} {'reply' if self.no_usage == 1 else 'replies'} reported no token "
                         "usage: their cost is not included")
        if self.invalid_usage:
            notes.append(f"{self.invalid_usage} {'reply' if self.invalid_usage == 1 else 'replies'} reported "
                         "token counts that cannot be true (negative or not whole numbers): their cost is not "
                         "included")
        return "; ".join(notes) or None

    @property
    def cost_note(self) -> str | None:
        if not self.unpriced_models:
            return None
        names = ", ".join(self.unpriced_models)
        return (
            f"cost unknown: no price for {names}; add judge.prices.<model>.input_per_million and "
            "output_per_million to the configuration"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "embedding_model": self.embedding_model,
            "results_judged": self.cases,  # result dicts with work for the judge; cases: judged_metrics
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "retries": self.retries,
            "tried_again": self.tried_again,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cost_note": self.cost_note,
            "prices_checked": self.prices_checked,
            "elapsed_sec": self.elapsed_sec,
            "by_metric": {name: usage.to_dict() for name, usage in self.by_metric.items()},
            **({"parameters_adapted": dict(self.adapted_parameters)} if self.adapted_parameters else {}),
            **({"replies_without_usage": self.no_usage} if self.no_usage else {}),
            **({"replies_with_invalid_usage": self.invalid_usage} if self.invalid_usage else {}),
            **({"batch": {"batches": self.batches, "prices": f"Batch API, checked {BATCH_PRICES_CHECKED}"}}
               if self.batch else {}),
        }

    def summary(self) -> str:
        """One line for stderr: requests and cost (how many cases were judged is the judge line's
        to say, from `qareport.judged_metrics`, so that one figure has one source)."""
        cost = (self.cost_note or "cost unknown") if self.cost_usd is None else f"${self.cost_usd:.4f}"
        return (
            f"judge {self.model}: {self.calls} API calls "
            f"({self.cached_calls} cached, {self.failed_calls} calls failed, {self.retries} retried), "
            f"{self.input_tokens:,} input + {self.output_tokens:,} output tokens, {cost}, "
            f"{self.elapsed_sec:.1f} s"
            + (f"; judged in batches ({self.batches} batch(es), at batch prices)" if self.batch and self.batches
               else "; judged in batches (no batch needed)" if self.batch else "")
            + (f"; {self.tried_again} judgment(s) that failed in an earlier run tried again"
               if self.tried_again else "")
            + "".join(f"; {name} refused by the model: sent with the {what}"
                      for name, what in self.adapted_parameters.items())
            + (f"; {self.usage_note}" if self.usage_note else "")
        )


class Ledger:
    """Counters of one unit of work, filled in by the thread doing it (never shared while open)."""

    __slots__ = (
        "attempt",
        "cached_calls",
        "calls",
        "cost",
        "failed_calls",
        "input_tokens",
        "invalid_usage",
        "no_usage",
        "output_tokens",
        "retries",
        "share",
        "share_unpriced",
        "tried_again",
        "unpriced",
    )

    def __init__(self) -> None:
        self.calls = self.cached_calls = self.failed_calls = self.retries = self.tried_again = 0
        self.input_tokens = self.output_tokens = 0
        self.cost = 0.0  # of the calls this ledger made
        self.unpriced: set[str] = set()
        self.share = 0.0  # of calls made for several cases (embedding batches), counted elsewhere
        self.share_unpriced = False
        self.attempt: int | None = None  # the attempt judged: part of the chat cache keys (`JudgeClient`)
        self.no_usage = self.invalid_usage = 0  # replies whose usage was missing / impossible: not costed

    def add_call(self, input_tokens: int, output_tokens: int, cost: float | None, model: str,
                 *, usage: UsageState = "reported") -> None:
        """A call the API answered. `cost` None with usage "reported": the model has no known
        price; a reply without usable counts is counted apart, and never blames the price table."""
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if usage == "missing":
            self.no_usage += 1
        elif usage == "invalid":
            self.invalid_usage += 1
        elif cost is None:
            self.unpriced.add(model)
        else:
            self.cost += cost

    def merge(self, other: Ledger) -> None:
        """Add the calls another ledger made (a batch asked again in parts)."""
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.failed_calls += other.failed_calls
        self.retries += other.retries
        self.tried_again += other.tried_again
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost += other.cost
        self.unpriced |= other.unpriced
        self.no_usage += other.no_usage
        self.invalid_usage += other.invalid_usage

    def add_share(self, cost: float | None, share: float) -> None:
        """This unit's part of a shared call's cost (None: the shared call has no known price)."""
        if cost is None:
            self.share_unpriced = True
        else:
            self.share += cost * share

    @property
    def cost_usd(self) -> float | None:
        """This unit's cost, its share of shared calls included; None when a price is unknown or a
        reply did not report usable token counts (its cost is not zero, only not known)."""
        unknown = self.unpriced or self.share_unpriced or self.no_usage or self.invalid_usage
        return None if unknown else self.cost + self.share


def summarize_usage(
    ledgers: Iterable[tuple[str, Ledger]],
    *,
    model: str,
    embedding_model: str,
    metrics: Iterable[str],
    errors: dict[str, int],
    cases: int,
    elapsed_sec: float,
    adapted_parameters: dict[str, str] | None = None,
) -> JudgeUsage:
    """One run's usage from its (metric, ledger) pairs; each call is counted once, in the ledger
    that made it (shares of batch costs are not added again)."""
    total = Ledger()
    calls = dict.fromkeys(metrics, 0)
    cached = dict.fromkeys(metrics, 0)
    failed = dict.fromkeys(metrics, 0)
    costs: dict[str, float | None] = dict.fromkeys(metrics, 0.0)
    for metric, ledger in ledgers:
        total.merge(ledger)
        calls[metric] += ledger.calls
        cached[metric] += ledger.cached_calls
        failed[metric] += ledger.failed_calls
        cost = costs[metric]
        costs[metric] = None if cost is None or ledger.unpriced else cost + ledger.cost
    return JudgeUsage(
        model=model,
        embedding_model=embedding_model,
        calls=total.calls,
        cached_calls=total.cached_calls,
        failed_calls=total.failed_calls,
        retries=total.retries,
        tried_again=total.tried_again,
        input_tokens=total.input_tokens,
        output_tokens=total.output_tokens,
        cost_usd=None if total.unpriced else total.cost,
        by_metric={
            metric: MetricUsage(calls=calls[metric], cached_calls=cached[metric],
                                errors=errors.get(metric, 0), cost_usd=costs[metric], failed_calls=failed[metric])
            for metric in calls
        },
        cases=cases,
        elapsed_sec=elapsed_sec,
        unpriced_models=sorted(total.unpriced),
        adapted_parameters=dict(adapted_parameters or {}),
        no_usage=total.no_usage,
        invalid_usage=total.invalid_usage,
    )
