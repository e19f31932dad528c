"""The estimate (`--estimate`): what judging a run will take, counted without sending a request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.judge import answer_relevance
from qareport.judge.answer_relevance import decode_vectors
from qareport.judge.cost import BATCH_DISCOUNT, QUESTION_TOKENS, CallEstimate, NotSent, Recorder, text_tokens
from qareport.judge.planning import Planning
from qareport.judge.prices import PRICES_CHECKED, PriceTable
from qareport.judge.relevance_embeddings import EMBEDDING_BATCH_CHARS, EMBEDDING_BATCH_INPUTS


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """What one judged metric will need (`Judge.estimate_results`). `judgments`: judgments that
    need the judge (a metric of a case or of a retrieval step; for the embeddings row, the cases
    whose generated questions need embeddings); `cached`: those the cache answers; `calls`: the
    requests to send; tokens by `judge.cost`'s rule; `cost_usd` at standard prices (None: no
    known price)."""

    metric: str
    judgments: int = 0
    cached: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0

    @property
    def batch_cost_usd(self) -> float | None:
        return None if self.cost_usd is None else self.cost_usd * BATCH_DISCOUNT

    def describe(self) -> str:
        cost = "cost unknown (no price)" if self.cost_usd is None else (
            f"${self.cost_usd:.4f} direct, ${self.batch_cost_usd:.4f} in batches")
        what = "case(s)" if self.metric.endswith(EMBEDDINGS_ROW) else "judgment(s)"
        return (f"{self.metric}: {self.judgments} {what}, {self.cached} cached; {self.calls} call(s), "
                f"{self.input_tokens:,} input + {self.output_tokens:,} output tokens, {cost}")



EMBEDDINGS_ROW = " embeddings"
"""The estimate's row of answer relevance's embeddings requests: "answer_relevance embeddings"."""



@dataclass(frozen=True, slots=True)
class JudgeEstimate:
    """What judging a run will take, before any request is sent (`--estimate`)."""

    model: str
    embedding_model: str
    metrics: tuple[MetricEstimate, ...]

    @property
    def total(self) -> MetricEstimate:
        costs = [m.cost_usd for m in self.metrics]
        return MetricEstimate(
            "total", sum(m.judgments for m in self.metrics if not m.metric.endswith(EMBEDDINGS_ROW)),
            sum(m.cached for m in self.metrics if not m.metric.endswith(EMBEDDINGS_ROW)),
            sum(m.calls for m in self.metrics), sum(m.input_tokens for m in self.metrics),
            sum(m.output_tokens for m in self.metrics), None if None in costs else sum(c or 0.0 for c in costs))

    def lines(self) -> list[str]:
        """The estimate for the console: one line per metric, then the total."""
        head = (f"judge estimate ({self.model}, embeddings {self.embedding_model}; prices checked "
                f"{PRICES_CHECKED}; tokens counted as characters / 4, replies by a per-metric allowance); "
                "no request was sent")
        return [head, *(f"  {m.describe()}" for m in self.metrics), f"  {self.total.describe()}"]

    def to_dict(self) -> dict[str, Any]:
        rows = [*self.metrics, self.total]
        return {"model": self.model, "embedding_model": self.embedding_model, "metrics": {
            m.metric: {"judgments": m.judgments, "cached": m.cached, "calls": m.calls,
                       "input_tokens": m.input_tokens, "output_tokens": m.output_tokens,
                       "cost_usd": m.cost_usd, "batch_cost_usd": m.batch_cost_usd} for m in rows}}



class Estimating(Planning):
    """The part of `runner.Judge` that estimates a run."""

    # -- the estimate: what judging will take, without sending a request

    def estimate_results(self, results: Sequence[Mapping[str, Any]], *,
                         metrics: Iterable[str] | None = None) -> JudgeEstimate:
        """What `judge_results` would ask for the same results, per metric, without sending a
        request: the same prompts are rendered and looked up in the cache (which is not written),
        and the requests that would be sent are counted (`judge.cost`). Answer relevance's
        embeddings are estimated from the generated questions when the cache holds them, else
        from QUESTION_TOKENS per question; their requests are counted as the runner batches them."""
        chosen = self._chosen(metrics)
        self._client.start_run()
        recorder = Recorder()
        self._client.guard = recorder
        asked = dict.fromkeys(chosen, 0)
        cached = dict.fromkeys(chosen, 0)
        waiting: list[tuple[int, int, int]] = []  # (inputs, characters, tokens) of each case's embeddings
        embeddings_cached = 0
        count = self.settings.relevance_questions
        try:
            for result, item in self._tasks(results, chosen):
                try:
                    outcome = item()
                except NotSent as unsent:
                    if unsent.repeated:  # the run finds the first identical request's reply in the cache
                        cached[item.metric] += 1
                        continue
                    asked[item.metric] += 1
                    if item.metric == answer_relevance.METRIC:
                        question = str(result.get("question_text") or "")
                        waiting.append((1 + count, len(question) + count * QUESTION_TOKENS * 4,
                                        text_tokens(question) + count * QUESTION_TOKENS))
                    continue
                if not outcome.ledger.cached_calls:
                    continue  # nothing to ask (an empty answer, no contexts)
                cached[item.metric] += 1
                generated = outcome.waiting
                if generated is None:
                    continue
                if decode_vectors(self._client.cached_value(generated.key), len(generated.inputs)) is not None:
                    embeddings_cached += 1
                else:
                    waiting.append((len(generated.inputs), sum(len(text) for text in generated.inputs),
                                    sum(text_tokens(text) for text in generated.inputs)))
        finally:
            self._client.guard = None
        prices = PriceTable(self.settings.prices)
        rows = []
        for metric in chosen:
            calls = [call for call in recorder.calls if call.metric == metric]
            rows.append(_metric_estimate(metric, asked[metric] + cached[metric], cached[metric], calls))
            if metric == answer_relevance.METRIC:
                tokens = sum(tokens for _, _, tokens in waiting)
                rows.append(MetricEstimate(
                    metric + EMBEDDINGS_ROW, len(waiting) + embeddings_cached, embeddings_cached,
                    _embedding_batches([(inputs, chars) for inputs, chars, _ in waiting]), tokens, 0,
                    prices.cost((self.settings.embedding_model,), tokens)))
        return JudgeEstimate(self.settings.model, self.settings.embedding_model, tuple(rows))


def _metric_estimate(metric: str, judgments: int, cached: int, calls: Sequence[CallEstimate]) -> MetricEstimate:
    costs = [call.cost_usd for call in calls]
    return MetricEstimate(metric, judgments, cached, len(calls), sum(call.input_tokens for call in calls),
                          sum(call.output_tokens for call in calls),
                          None if None in costs else sum(cost or 0.0 for cost in costs))



def _embedding_batches(sizes: Sequence[tuple[int, int]]) -> int:
    """How many embeddings requests the runner sends for cases waiting with these (inputs,
    characters), in this order: a batch is taken as soon as EMBEDDING_BATCH_INPUTS inputs wait,
    the rest at the end (as `judge_results` and `take_batch` do)."""
    batches = 0
    waiting: list[tuple[int, int]] = []
    for size in sizes:
        waiting.append(size)
        while sum(inputs for inputs, _ in waiting) >= EMBEDDING_BATCH_INPUTS:
            waiting = waiting[_batch_length(waiting):]
            batches += 1
    while waiting:
        waiting = waiting[_batch_length(waiting):]
        batches += 1
    return batches



def _batch_length(waiting: Sequence[tuple[int, int]]) -> int:
    """How many of the waiting cases `take_batch` puts in one batch."""
    inputs = chars = 0
    for position, (size, length) in enumerate(waiting):
        if position and (inputs + size > EMBEDDING_BATCH_INPUTS or chars + length > EMBEDDING_BATCH_CHARS):
            return position
        inputs += size
        chars += length
    return len(waiting)
