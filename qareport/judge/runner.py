"""Running the judge over a run's results: a thread pool, embeddings batched over cases, progress.

`Judge.judge_results(results)` returns a `JudgeRun`: judged copies of the graphrag-eval-shaped
result dicts, in the same order, the usage, and `failure` when the judge failed. The input dicts
are never changed. A per-case failure becomes that metric's `*_error` key: a reply that could not
be used says why; a judgment that could not be obtained (the API failed after the SDK's retries, or
the judge was stopped: a rejected key, an unknown model, a server that cannot be reached, too many
failures in a row) starts with NOT_JUDGED, and makes the run's `failure`. Only settings that cannot
work at all (an unknown metric) raise `JudgeError`.
"""

from __future__ import annotations

import concurrent.futures as futures
import queue
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from functools import partial
from statistics import fmean
from typing import Any

import jinja2

from qareport.errors import NOT_JUDGED, JudgeAborted, JudgeCallFailed, JudgeError, MetricFailed
from qareport.judge import answer_correctness, answer_relevance, custom_metric, retrieval_answer
from qareport.judge.answer_relevance import GeneratedQuestions, decode_vectors, encode_vectors
from qareport.judge.batch import BatchJudging, batch_problem
from qareport.judge.checks import check_embeddings
from qareport.judge.client import JudgeClient, asking_repeat
from qareport.judge.cost import (
    BATCH_DISCOUNT,
    BUDGET_WORDS,
    QUESTION_TOKENS,
    Budget,
    BudgetReached,
    CallEstimate,
    NotSent,
    Recorder,
    text_tokens,
)
from qareport.judge.prices import PRICES_CHECKED, PriceTable
from qareport.judge.prompts import Prompts
from qareport.judge.settings import ALL_METRICS, JudgeSettings
from qareport.judge.usage import JudgeUsage, Ledger, summarize_usage
from qareport.judged_metrics import JUDGED_METRICS, REPEATS_SUFFIX
from qareport.kinds.answers import answer_text
from qareport.progress import OnProgress, ProgressEvent, no_progress
from qareport.qa import order_result_keys
from qareport.retrieval_context import parse_contexts

ERROR_KEYS = {
    answer_correctness.METRIC: answer_correctness.ERROR_KEY,
    answer_relevance.METRIC: answer_relevance.ERROR_KEY,
    **retrieval_answer.ERROR_KEYS,
}
COST_KEYS = {metric: f"{metric}_cost" for metric in ALL_METRICS}
REPEATED_VALUES = frozenset(spec.key for spec in JUDGED_METRICS)
"""The judged values whose repeats are listed beside them (`<key>_repeats`) when judgments are repeated."""

EMBEDDING_BATCH_INPUTS = 256
EMBEDDING_BATCH_CHARS = 400_000


@dataclass(frozen=True, slots=True)
class JudgeRun:
    """What `judge_results` returns: the judged copies of the results, in their order, and the usage."""

    results: list[dict[str, Any]]
    usage: JudgeUsage
    failure: str | None = None
    """Why judgments could not be obtained (the API refused, could not be reached or failed after
    its retries), when any could not; None when every judgment was obtained or the reply used."""
    not_judged: int = 0  # judgments (a metric of a case or of a retrieval step) not obtained
    budget_reached: str | None = None
    """How the budget ended the judging (`failure` says it too), when it did; None otherwise."""


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


@dataclass
class _Outcome:
    """What one metric of one case produced (filled in by one worker, then read by the runner):
    keys for the result (`step` None) or for its actual step number `step`, and what it used."""

    case: int
    metric: str
    step: int | None
    ledger: Ledger = field(default_factory=Ledger)
    repeat: int = 0  # which repeat of the judgment (--judge-repeats)
    updates: dict[str, Any] = field(default_factory=dict)
    error: bool = False
    not_judged: bool = False  # the error is that the judgment could not be obtained
    waiting: GeneratedQuestions | None = None  # answer relevance waiting for its embeddings
    retry_waiting: GeneratedQuestions | None = None  # kept while its embeddings may be asked again


@dataclass(frozen=True, slots=True)
class _Task:
    """One metric of one case (one repeat of it), to be run by a worker."""

    case: int
    metric: str
    run: Callable[[int], _Outcome]
    repeat: int = 0

    def __call__(self) -> _Outcome:
        return self.run(self.repeat)


class _Progress:
    """Tells `on_progress` how far the judging is: cases done, calls, cache hits and cost so far;
    and, at the end, the usage line."""

    def __init__(self, on_progress: OnProgress | None, total: int):
        self._tell = on_progress or no_progress
        self.total = total
        self.done = 0
        self.calls = 0
        self.cached = 0
        self.cost: float | None = 0.0

    def advance(self, ledger: Ledger, *, finished: int = 1) -> None:
        self.done += finished
        self.calls += ledger.calls
        self.cached += ledger.cached_calls
        if self.cost is not None:
            self.cost = None if ledger.unpriced else self.cost + ledger.cost
        self._tell(ProgressEvent("judging", self.done, self.total, self._detail()))

    def _detail(self) -> str:
        cost = "cost ?" if self.cost is None else f"${self.cost:.4f}"
        return f"{self.calls} calls \u00b7 {self.cached} cached \u00b7 {cost}"

    def finish(self, usage: JudgeUsage) -> None:
        self._tell(ProgressEvent("judging", self.done, self.total, self._detail(), finished=usage.summary(),
                                 always=True))


class Judge:
    """Judges result dicts with an OpenAI-compatible model. Use as a context manager, or call
    `close()`."""

    def __init__(self, settings: JudgeSettings, *, templates_dir: str | None = None,
                 on_warning: Callable[[str], None] | None = None):
        """`on_warning` is told of what does not stop the judge (a cache that is not used); by
        default the `qareport` logger says it."""
        self.settings = settings
        self._prompts = Prompts(templates_dir)
        self._client = JudgeClient(settings, on_warning=on_warning)
        self._custom: dict[str, Any] = {}
        if settings.batch:
            problem = batch_problem(settings, self._client.cache)
            if problem is not None:
                self._client.close()
                raise JudgeError(problem)
        if settings.budget_usd is not None:
            models = [settings.model]
            if answer_relevance.METRIC in settings.metrics:
                models.append(settings.embedding_model)
            unpriced = [model for model in models if not self._client.price_known(model)]
            if unpriced:
                self._client.close()
                raise JudgeError(f"a judge budget needs the price of {unpriced[0]}, which qareport does not know; "
                                 f"add judge.prices.{unpriced[0]}.input_per_million and output_per_million to "
                                 "the configuration")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def judge_results(
        self,
        results: Sequence[Mapping[str, Any]],
        *,
        on_progress: OnProgress | None = None,
        metrics: Iterable[str] | None = None,
        on_result: Callable[[dict[str, Any]], None] | None = None,
    ) -> JudgeRun:
        """Judge every result with status "success"; return the judged copies and the usage.

        `on_progress` is told how far the judging is, and its usage line at the end (`qareport.progress`).
        `metrics`: a subset of METRICS (default: the settings'). `on_result`
        is called, in this thread, with each judged copy as soon as all of its metrics are done.
        Raises JudgeError only for a configuration that cannot work.
        """
        started = time.monotonic()
        chosen = self._chosen(metrics)
        self._client.start_run()
        batches = self._run_batches(results, chosen, on_progress) if self.settings.batch else None
        budget = None if self.settings.budget_usd is None else Budget(self.settings.budget_usd)
        self._client.guard = budget
        judged: list[dict[str, Any]] = [dict(result) for result in results]

        ready: list[_Outcome] = []
        tasks: list[Callable[[], _Outcome]] = []
        pending_by_case: dict[int, int] = {}
        for index, result in enumerate(results):
            if result.get("status") != "success":
                continue
            for item in self._repeated(self._plan(index, result, chosen)):
                if isinstance(item, _Outcome):
                    ready.append(item)
                else:
                    tasks.append(item)
                pending_by_case[index] = pending_by_case.get(index, 0) + 1

        progress_bar = _Progress(on_progress, len(tasks) + len(ready))
        ledgers: list[tuple[str, Ledger]] = []
        errors: dict[str, int] = {}
        outcomes_by_case: dict[int, list[_Outcome]] = {}
        not_judged: list[str] = []  # the error of each judgment not obtained

        def settle(outcome: _Outcome) -> None:
            """A metric (a repeat of it) of a case is complete: count it, and finish the case if it
            was the last."""
            progress_bar.advance(outcome.ledger)
            ledgers.append((outcome.metric, outcome.ledger))
            outcomes_by_case.setdefault(outcome.case, []).append(outcome)
            pending_by_case[outcome.case] -= 1
            if pending_by_case[outcome.case] == 0:
                complete = _combine_repeats(outcomes_by_case.pop(outcome.case))
                for done in complete:
                    if done.error:
                        errors[done.metric] = errors.get(done.metric, 0) + 1
                    if done.not_judged:
                        not_judged.append(next((value for value in done.updates.values()
                                                if isinstance(value, str) and value.startswith(NOT_JUDGED)),
                                               NOT_JUDGED))
                judged[outcome.case] = _judged_copy(results[outcome.case], complete, order=chosen)
                if on_result is not None:
                    on_result(judged[outcome.case])

        executor = futures.ThreadPoolExecutor(
            max_workers=self.settings.concurrency, thread_name_prefix="qareport-judge"
        )
        try:
            for outcome in ready:
                settle(outcome)
            # each future puts itself in `completed` when done: waiting on the queue costs the same
            # however many futures are pending (futures.wait over all of them grew with the run)
            completed: queue.SimpleQueue[futures.Future[Any]] = queue.SimpleQueue()
            running: dict[futures.Future[Any], str] = {}

            def submit(work: Callable[[], Any], kind: str) -> None:
                future = executor.submit(work)
                running[future] = kind
                future.add_done_callback(completed.put)

            for task in tasks:
                submit(task, "task")
            waiting: list[_Outcome] = []
            waiting_inputs = 0
            tasks_left = len(tasks)
            while running:
                done = [completed.get()]
                while not completed.empty():
                    done.append(completed.get())
                for future in done:
                    if running.pop(future) == "task":
                        tasks_left -= 1
                        outcome = future.result()
                        if outcome.waiting is None or self._embeddings_from_cache(outcome):
                            settle(outcome)
                        else:
                            waiting.append(outcome)
                            waiting_inputs += len(outcome.waiting.inputs)
                    else:
                        batch_ledger, finished = future.result()
                        ledgers.append((answer_relevance.METRIC, batch_ledger))
                        progress_bar.advance(batch_ledger, finished=0)
                        for outcome in finished:
                            settle(outcome)
                if self._client.fatal is not None:
                    # the judge is stopped: tasks not yet run return at once, without a call
                    for outcome in waiting:
                        _fail_relevance(outcome, self._stopped(), not_judged=True)
                        settle(outcome)
                    waiting = []
                    continue
                while waiting and (waiting_inputs >= EMBEDDING_BATCH_INPUTS or tasks_left == 0):
                    # in a batch run, one request per case: the request its batch answered
                    batch, waiting = (waiting[:1], waiting[1:]) if batches is not None else _take_batch(waiting)
                    waiting_inputs -= sum(len(o.waiting.inputs) for o in batch if o.waiting)
                    tries = 1 if batches is None else 0  # a batch's reply is the same when asked again
                    submit(partial(self._embed_batch, batch, tries_left=tries), "embeddings")
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        if batches is not None:  # the batch replies used are in the cache now, as direct replies are
            batches.replies.forget_taken()
            self._client.batch = None

        self._client.guard = None
        failure = budget_reached = None
        over_budget = sum(1 for text in not_judged if text.startswith(NOT_JUDGED + BUDGET_WORDS))
        if budget is not None and budget.reached:
            budget_reached = f"{BUDGET_WORDS}: {budget.describe()}; {over_budget} judgment(s) not made"
        if self._client.fatal is not None:
            failure = str(self._client.fatal)
        elif budget_reached and over_budget == len(not_judged):
            failure = budget_reached
        elif not_judged:
            lost = [text for text in not_judged if not text.startswith(NOT_JUDGED + BUDGET_WORDS)]
            first = lost[0].removeprefix(NOT_JUDGED)
            failure = (f"{len(lost)} judgment(s) could not be obtained: the API failed after its retries "
                       f"(the first: {first})" + (f"; {budget_reached}" if budget_reached else ""))
        usage = summarize_usage(
            ledgers, model=self.settings.model, embedding_model=self.settings.embedding_model,
            metrics=chosen, errors=errors, cases=len(pending_by_case),
            elapsed_sec=round(time.monotonic() - started, 3),
        )
        if batches is not None:
            usage = replace(usage, batch=True, batches=len(batches.batch_ids))
        progress_bar.finish(usage)
        return JudgeRun(judged, usage, failure, len(not_judged), budget_reached)

    # -- judging in batches (`judge.batch`)

    def _run_batches(self, results: Sequence[Mapping[str, Any]], chosen: Sequence[str],
                     on_progress: OnProgress | None) -> BatchJudging:
        """Ask the Batch API for every reply the judgments need, in rounds (`judge.batch`); the
        client then takes them from the batches while `judge_results` judges as usual."""
        batches = BatchJudging(self._client, on_progress=on_progress)
        self._client.batch = batches.replies
        try:
            batches.run(partial(self._collecting_pass, results, chosen))
        except BaseException:
            self._client.batch = None
            raise
        return batches

    def _collecting_pass(self, results: Sequence[Mapping[str, Any]], chosen: Sequence[str]) -> None:
        """Every judgment run once, each request without a reply recorded for a batch, not sent
        (`batch.Deferred`); the outcomes are thrown away. Answer relevance's embeddings are one
        request per case in a batch run."""
        for index, result in enumerate(results):
            if result.get("status") != "success":
                continue
            for item in self._repeated(self._plan(index, result, chosen)):
                if not isinstance(item, _Task):
                    continue
                outcome = item()
                generated = outcome.waiting
                if generated is not None and decode_vectors(self._client.cached_value(generated.key),
                                                            len(generated.inputs)) is None:
                    with suppress(JudgeAborted, MetricFailed):
                        self._client.embed(list(generated.inputs), Ledger())

    def _chosen(self, metrics: Iterable[str] | None) -> tuple[str, ...]:
        """The metrics to judge (the settings' by default), custom evaluations last."""
        chosen = tuple(self.settings.metrics if metrics is None else metrics)
        unknown = [m for m in chosen if m not in ALL_METRICS]
        if unknown:
            raise JudgeError(f"unknown judge metric {unknown[0]!r}; known: {', '.join(ALL_METRICS)}")
        customs = self.settings.custom_evaluations if metrics is None else ()
        self._custom = {custom_metric.metric_name(evaluation): evaluation for evaluation in customs}
        return (*chosen, *self._custom)

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
            for index, result in enumerate(results):
                if result.get("status") != "success":
                    continue
                for item in self._repeated(self._plan(index, result, chosen)):
                    if not isinstance(item, _Task):
                        continue
                    try:
                        outcome = item()
                    except NotSent:
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

    def _over_budget(self, error: BudgetReached) -> str:
        """The error text of a judgment the budget stopped."""
        return f"{NOT_JUDGED}{BUDGET_WORDS} ({error})"

    def _stopped(self) -> str:
        """The error text of a judgment not asked because the judge was stopped."""
        return f"{NOT_JUDGED}the judge was stopped: {self._client.fatal}"

    # -- planning: which metrics each case gets

    def _plan(self, index: int, result: Mapping[str, Any],
              metrics: Sequence[str]) -> Iterator[_Outcome | Callable[[], _Outcome]]:
        client, prompts = self._client, self._prompts
        attempt = attempt_of(result)
        question = result.get("question_text") or ""
        reference = result.get("reference_answer")
        actual = answer_text(result.get("actual_answer"))  # content parts: the judge reads their text
        if answer_correctness.METRIC in metrics and reference is not None and actual is not None:
            custom_prompt = self.settings.correctness_prompt
            yield self._task(attempt, index, answer_correctness.METRIC, None, lambda ledger: (
                answer_correctness.judge_answer_correctness(
                    client, prompts, ledger, question=question, reference=reference, actual=actual,
                    prompt_template=custom_prompt)))
        if answer_relevance.METRIC in metrics and actual is not None:
            count = self.settings.relevance_questions
            yield self._task(attempt, index, answer_relevance.METRIC, None, lambda ledger: (
                answer_relevance.ask_questions(
                    client, prompts, ledger, question=question, actual=actual, count=count)))
        for name, evaluation in self._custom.items():
            yield self._task(attempt, index, name, None, partial(
                custom_metric.judge_custom, client, prompts, evaluation=evaluation, result=result))
        yield from self._plan_contexts(index, result, metrics)
        wants_recall = retrieval_answer.RECALL in metrics and bool(reference)
        wants_precision = retrieval_answer.PRECISION in metrics
        if self.settings.steps_semantics == 6:  # graphrag-eval 6.x judges them against a reference only
            wants_precision = wants_precision and "reference_answer" in result
        if not (wants_recall or wants_precision) or (not reference and not actual):
            return
        for number, step in enumerate(result.get("actual_steps") or []):
            if not isinstance(step, dict) or step.get("name") != "retrieval" or step.get("status") != "success":
                continue
            try:
                contexts = [c["text"] for c in parse_contexts(step.get("output"))]
            except ValueError as error:
                for metric, wanted in ((retrieval_answer.RECALL, wants_recall),
                                       (retrieval_answer.PRECISION, wants_precision)):
                    if wanted:
                        yield _Outcome(index, metric, number, updates={ERROR_KEYS[metric]: str(error)}, error=True)
                continue
            if wants_recall:
                yield self._task(attempt, index, retrieval_answer.RECALL, number, partial(
                    retrieval_answer.judge_retrieval_recall, client, prompts,
                    question=question, reference=reference, contexts=contexts))
            if wants_precision:
                yield self._task(attempt, index, retrieval_answer.PRECISION, number, partial(
                    retrieval_answer.judge_retrieval_precision, client, prompts,
                    question=question, reference=reference, actual=actual, contexts=contexts))

    def _plan_contexts(self, index: int, result: Mapping[str, Any],
                       metrics: Sequence[str]) -> Iterator[_Outcome | Callable[[], _Outcome]]:
        """graphrag-eval 6.x's LLM context recall and precision, on each matched retrieval step."""
        wanted = [m for m in (retrieval_answer.CONTEXT_RECALL, retrieval_answer.CONTEXT_PRECISION) if m in metrics]
        if not wanted:
            return
        question = result.get("question_text") or ""
        attempt = attempt_of(result)
        for number, reference_step, actual_step in matched_retrieval_steps(result):
            try:
                reference_texts = [c["text"] for c in parse_contexts(reference_step.get("output"))]
                contexts = [c["text"] for c in parse_contexts(actual_step.get("output"))]
            except ValueError as error:
                for metric in wanted:
                    yield _Outcome(index, metric, number, updates={ERROR_KEYS[metric]: str(error)}, error=True)
                continue
            judges = {retrieval_answer.CONTEXT_RECALL: retrieval_answer.judge_context_recall,
                      retrieval_answer.CONTEXT_PRECISION: retrieval_answer.judge_context_precision}
            for metric in wanted:
                yield self._task(attempt, index, metric, number, partial(
                    judges[metric], self._client, self._prompts, question=question,
                    reference_contexts=reference_texts, contexts=contexts))

    def _failed(self, metric: str, message: str) -> dict[str, Any]:
        evaluation = self._custom.get(metric)
        if evaluation is not None:
            return custom_metric.failed_keys(evaluation, message)
        return {ERROR_KEYS[metric]: message}

    def _cost_key(self, metric: str) -> str:
        evaluation = self._custom.get(metric)
        return f"{evaluation.name}_cost" if evaluation is not None else COST_KEYS[metric]

    def _repeated(self, planned: Iterable[_Outcome | Callable[[], _Outcome]],
                  ) -> Iterator[_Outcome | Callable[[], _Outcome]]:
        """The planned work with each task asked `settings.repeats` times (repeat 0 as planned)."""
        for item in planned:
            yield item
            if isinstance(item, _Task):
                for number in range(1, self.settings.repeats):
                    yield replace(item, repeat=number)

    def _task(self, attempt: int | None, index: int, metric: str, step: int | None,
              compute: Callable[[Ledger], dict[str, Any] | GeneratedQuestions]) -> _Task:
        """One metric of one result; its chat requests are cached under the result's `attempt` too
        (see `attempt_of`) and, asked again (`settings.repeats`), under each repeat's number."""
        def work(repeat: int) -> _Outcome:
            outcome = _Outcome(index, metric, step, repeat=repeat)
            outcome.ledger.attempt = attempt
            try:
                with asking_repeat(repeat):
                    produced = compute(outcome.ledger)
            except JudgeCallFailed as error:
                outcome.updates = self._failed(metric, NOT_JUDGED + str(error))
                outcome.error = outcome.not_judged = True
            except MetricFailed as error:
                outcome.updates = self._failed(metric, str(error))
                outcome.error = True
            except (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError) as error:
                # a per-case failure must not stop the run; say what it was so it can be reported
                outcome.updates = self._failed(metric, f"judge failed: {type(error).__name__}: {error}")
                outcome.error = True
            except JudgeAborted:
                outcome.updates = self._failed(metric, self._stopped())
                outcome.error = outcome.not_judged = True
            except BudgetReached as error:
                outcome.updates = self._failed(metric, self._over_budget(error))
                outcome.error = outcome.not_judged = True
            else:
                if isinstance(produced, GeneratedQuestions):
                    outcome.waiting = produced
                    return outcome
                outcome.updates = produced
            outcome.updates[self._cost_key(metric)] = outcome.ledger.cost_usd
            return outcome

        return _Task(index, metric, work)

    # -- answer relevance's embeddings

    def _embeddings_from_cache(self, outcome: _Outcome) -> bool:
        assert outcome.waiting is not None
        vectors = decode_vectors(self._client.cached_value(outcome.waiting.key), len(outcome.waiting.inputs))
        if vectors is None:
            return False
        outcome.ledger.cached_calls += 1
        _complete_relevance(outcome, vectors)
        return True

    def _embed_batch(self, batch: list[_Outcome], *, tries_left: int = 1) -> tuple[Ledger, list[_Outcome]]:
        """One embeddings request for the inputs of several cases (each case's inputs together).

        A failed or unusable reply does not fail the whole batch: the batch is split in two and
        each half asked again, down to single cases, and a single case is asked `tries_left` more
        times; only then does its relevance fail. One garbage reply costs one case at most.
        """
        ledger, finished = self._embed_once(batch)
        failed = [outcome for outcome in finished if outcome.error]
        if not failed or self._client.fatal is not None or (isinstance(self._client.guard, Budget) and \
                self._client.guard.reached):
            return ledger, finished
        if len(batch) == 1 and tries_left <= 0:
            return ledger, finished
        for outcome in failed:  # asked again: the failure is not final yet
            outcome.error, outcome.not_judged, outcome.updates = False, False, {}
            outcome.waiting = outcome.retry_waiting
        halves = [batch] if len(batch) == 1 else [batch[:len(batch) // 2], batch[len(batch) // 2:]]
        done: list[_Outcome] = []
        for half in halves:
            half_ledger, half_finished = self._embed_batch(half, tries_left=tries_left - (len(batch) == 1))
            ledger.merge(half_ledger)
            done.extend(half_finished)
        return ledger, done

    def _embed_once(self, batch: list[_Outcome]) -> tuple[Ledger, list[_Outcome]]:
        ledger = Ledger()
        for outcome in batch:
            outcome.retry_waiting = outcome.waiting
        waiting = [outcome.waiting for outcome in batch]
        assert all(w is not None for w in waiting)
        inputs = [text for w in waiting for text in w.inputs]  # type: ignore[union-attr]
        try:
            items, total_cost = self._client.embed(inputs, ledger)
            vectors = check_embeddings(items, len(inputs))
        except MetricFailed as error:
            called = isinstance(error, JudgeCallFailed)
            for outcome in batch:
                if ledger.calls:  # the failed reply was billed: share it like a good one
                    outcome.ledger.add_share(ledger.cost_usd, 1 / len(batch))
                _fail_relevance(outcome, f"{NOT_JUDGED if called else ''}embeddings: {error}", not_judged=called)
            return ledger, batch
        except JudgeAborted:
            for outcome in batch:
                _fail_relevance(outcome, self._stopped(), not_judged=True)
            return ledger, batch
        except BudgetReached as error:
            for outcome in batch:
                _fail_relevance(outcome, self._over_budget(error), not_judged=True)
            return ledger, batch
        except (ArithmeticError, LookupError, TypeError, ValueError) as error:  # a malformed reply
            for outcome in batch:
                _fail_relevance(outcome, f"embeddings: unusable reply ({type(error).__name__}: {error})")
            return ledger, batch
        total_chars = sum(len(text) for text in inputs) or 1
        position = 0
        for outcome in batch:
            generated = outcome.waiting
            assert generated is not None
            case_vectors = vectors[position: position + len(generated.inputs)]
            position += len(generated.inputs)
            outcome.ledger.add_share(total_cost, sum(len(text) for text in generated.inputs) / total_chars)
            self._client.store_embeddings(generated.key, encode_vectors(case_vectors))
            _complete_relevance(outcome, case_vectors)
        return ledger, batch


def _combine_repeats(outcomes: list[_Outcome]) -> list[_Outcome]:
    """One outcome per judgment (a metric of the case, or of one of its steps) from the outcomes
    of its repeats. Without repeats, the outcomes as they are. With them: when no repeat gave a
    value, the first repeat's outcome (its error), as a judgment without repeats; otherwise the
    first repeat with a value, each of its scores (its judged value, and any other float) replaced
    by the mean over the repeats with a value, its counts and reason kept, and beside each judged value the list of the
    repeats' values (`<key>_repeats`, None for a repeat that gave none). The cost is every
    repeat's."""
    groups: dict[tuple[str, int | None], list[_Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.metric, outcome.step), []).append(outcome)
    combined = []
    for group in groups.values():
        if len(group) == 1:
            combined.append(group[0])
            continue
        group.sort(key=lambda o: o.repeat)
        valued = [o for o in group if not o.error]
        first = valued[0] if valued else group[0]
        updates = dict(first.updates)
        for key, value in first.updates.items():
            if key.endswith("_cost"):
                costs = [o.updates.get(key) for o in group]
                updates[key] = None if any(c is None for c in costs) else sum(costs)
            elif valued and _number(value) and (isinstance(value, float) or key in REPEATED_VALUES):
                values: list[Any] = [o.updates.get(key) for o in valued]
                numbers = [float(v) for v in values if _number(v)]
                if len(numbers) == len(values):
                    updates[key] = fmean(numbers)
                    if key in REPEATED_VALUES:
                        updates[key + REPEATS_SUFFIX] = [o.updates.get(key) if not o.error else None for o in group]
        combined.append(_Outcome(first.case, first.metric, first.step, first.ledger, updates=updates,
                                 error=first.error, not_judged=first.not_judged))
    return combined


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _complete_relevance(outcome: _Outcome, vectors: list[list[float]]) -> None:
    assert outcome.waiting is not None
    try:
        keys = answer_relevance.relevance_keys(outcome.waiting, vectors)
    except (MetricFailed, ArithmeticError, ValueError) as error:
        _fail_relevance(outcome, f"embeddings: {error}")
        return
    outcome.updates = {**keys, COST_KEYS[answer_relevance.METRIC]: outcome.ledger.cost_usd}
    outcome.waiting = None


def _fail_relevance(outcome: _Outcome, message: str, *, not_judged: bool = False) -> None:
    outcome.updates = {
        answer_relevance.ERROR_KEY: message,
        COST_KEYS[answer_relevance.METRIC]: outcome.ledger.cost_usd,
    }
    outcome.error = True
    outcome.not_judged = not_judged
    outcome.waiting = None


def attempt_of(result: Mapping[str, Any]) -> int | None:
    """The attempt a result dict scores (`evaluation` marks those of a case answered several times),
    None for a case run once. Two attempts' identical answers are two judgments: the attempt is
    part of their cache keys; a case run once keeps the keys it always had."""
    attempt = result.get("attempt")
    return attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else None


def matched_retrieval_steps(result: Mapping[str, Any]) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(actual step number, reference step, actual step) of every reference retrieval step of any
    group that matched an actual step with an output (graphrag-eval 6.x's rule)."""
    steps = result.get("actual_steps") or []
    number_by_id = {step.get("id"): number for number, step in enumerate(steps)
                    if isinstance(step, dict) and step.get("id") is not None}
    found = []
    for group in result.get("reference_steps") or []:
        for reference_step in group if isinstance(group, list) else []:
            if not isinstance(reference_step, dict) or reference_step.get("name") != "retrieval":
                continue
            number = number_by_id.get(reference_step.get("matches"))
            if number is not None and "output" in steps[number]:
                found.append((number, reference_step, steps[number]))
    return found


def _judged_copy(result: Mapping[str, Any], outcomes: list[_Outcome], *, order: Sequence[str]) -> dict[str, Any]:
    """A new result dict with the keys of its outcomes, in graphrag-eval's key order (as its own
    judged results are); judged steps are new dicts too, with their F1 keys."""
    ordered = sorted(outcomes, key=lambda o: order.index(o.metric))
    judged = dict(result)
    step_updates: dict[int, dict[str, Any]] = {}
    for outcome in ordered:
        if outcome.step is None:
            judged.update(outcome.updates)
        else:
            step_updates.setdefault(outcome.step, {}).update(outcome.updates)
    if step_updates:
        steps = list(result["actual_steps"])
        for number, updates in step_updates.items():
            step = {**steps[number], **updates}
            step.update(retrieval_answer.f1_keys(step, "retrieval_answer"))
            if any(key.startswith("retrieval_context_") for key in updates):
                step.update(retrieval_answer.f1_keys(step, "retrieval_context"))
            steps[number] = step
        judged["actual_steps"] = steps
    return order_result_keys(judged)


def _take_batch(waiting: list[_Outcome]) -> tuple[list[_Outcome], list[_Outcome]]:
    batch: list[_Outcome] = []
    inputs = chars = 0
    for position, outcome in enumerate(waiting):
        assert outcome.waiting is not None
        size = len(outcome.waiting.inputs)
        length = sum(len(text) for text in outcome.waiting.inputs)
        if batch and (inputs + size > EMBEDDING_BATCH_INPUTS or chars + length > EMBEDDING_BATCH_CHARS):
            return batch, waiting[position:]
        batch.append(outcome)
        inputs += size
        chars += length
    return batch, []


def _metric_estimate(metric: str, judgments: int, cached: int, calls: Sequence[CallEstimate]) -> MetricEstimate:
    costs = [call.cost_usd for call in calls]
    return MetricEstimate(metric, judgments, cached, len(calls), sum(call.input_tokens for call in calls),
                          sum(call.output_tokens for call in calls),
                          None if None in costs else sum(cost or 0.0 for cost in costs))


def _embedding_batches(sizes: Sequence[tuple[int, int]]) -> int:
    """How many embeddings requests the runner sends for cases waiting with these (inputs,
    characters), in this order: a batch is taken as soon as EMBEDDING_BATCH_INPUTS inputs wait,
    the rest at the end (as `judge_results` and `_take_batch` do)."""
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
    """How many of the waiting cases `_take_batch` puts in one batch."""
    inputs = chars = 0
    for position, (size, length) in enumerate(waiting):
        if position and (inputs + size > EMBEDDING_BATCH_INPUTS or chars + length > EMBEDDING_BATCH_CHARS):
            return position
        inputs += size
        chars += length
    return len(waiting)
