"""The LLM judge: answer correctness, answer relevance and retrieval-answer metrics.

The only module that imports `openai`. It enriches graphrag-eval-shaped result dicts in place
(see `Judge.judge_results`) with the seed's keys:

    answer correctness     answer_reference_claims_count, answer_actual_claims_count,
    (reference + actual)   answer_matching_claims_count, answer_correctness_reason, answer_recall,
                           answer_precision, answer_f1, answer_correctness_cost | answer_eval_error
    answer relevance       answer_relevance, answer_relevance_questions, answer_relevance_cost
    (actual answer)        | answer_relevance_error
    on each successful     retrieval_answer_recall (+ _reason, _cost | _error),
    actual `retrieval`     retrieval_answer_precision (+ _reason, _cost | _error),
    step                   retrieval_answer_f1, retrieval_answer_f1_cost,
                           retrieval_context_recall / _precision / _f1 (+ _reason | _error) when a
                           reference retrieval step of the last group matched it (no LLM: see
                           `judge_metrics.add_retrieval_context_scores`)

Modules: `judge_settings` (settings and their resolution), `judge_checks` (what a reply must
be), `judge_metrics` (the arithmetic, no I/O), `judge_prices`, `judge_cache`; this one makes the
calls. Prompts are Jinja2 templates in `templates/judge/`, overridable with a templates folder.

How the judge behaves:

- Any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM, ...): settings come
  from options, then the `judge:` mapping of the configuration, then the environment, then defaults
  (`resolve_judge_settings`). A base URL without a key is enough for a local server.
- Structured output: every prompt asks for one JSON object (`response_format` json_schema by
  default, json_object as an option). A reply that is not that object, or whose claim counts
  contradict each other, is sent back once with what is wrong; a second bad reply becomes the
  metric's error key, never a number.
- Calls run in a pool of `concurrency` threads (at most that many requests in flight), retried with
  exponential backoff on 408, 409, 429, 5xx, connection errors and timeouts, honouring
  Retry-After and retry-after-ms. The client is built with `max_retries=0`: the retrying is ours.
- Replies are cached in SQLite (`judge_cache`); a rerun of the same inputs makes no API call and
  costs nothing. Costs come from the reported token usage and `judge_prices`.
- A per-case failure becomes that metric's `*_error` key. Only an unusable configuration (bad
  settings, a rejected key, an unknown model or deployment, a server that cannot be reached at all)
  raises `JudgeError`.
"""

from __future__ import annotations

import concurrent.futures as futures
import math
import random
import sqlite3
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, TextIO, TypeVar

import jinja2
import openai

from qareport.errors import JudgeError
from qareport.judge_cache import JudgeCache, cache_key
from qareport.judge_checks import (
    SCHEMAS,
    ClaimCounts,
    JudgeOutputError,
    check_answer_correctness,
    check_generated_questions,
    check_statements,
    check_verdicts,
)
from qareport.judge_checks import preview as _preview
from qareport.judge_metrics import (
    add_retrieval_context_scores,
    attributed_fraction,
    average_precision,
    claim_scores,
    f1_keys,
    parse_contexts,
    relevance_score,
)
from qareport.judge_prices import PRICES_CHECKED, PriceTable
from qareport.judge_settings import (
    DEFAULT_AZURE_API_VERSION,
    DEFAULT_OPENAI_BASE_URL,
    METRICS,
    PLACEHOLDER_API_KEY,
    JudgeSettings,
    default_cache_path,
    resolve_judge_settings,
)
from qareport.templating import template_environment

__all__ = [
    "METRICS",
    "Judge",
    "JudgeSettings",
    "JudgeUsage",
    "MetricUsage",
    "default_cache_path",
    "resolve_judge_settings",
]

ERROR_KEYS = {
    "answer_correctness": "answer_eval_error",
    "answer_relevance": "answer_relevance_error",
    "retrieval_answer_recall": "retrieval_answer_recall_error",
    "retrieval_answer_precision": "retrieval_answer_precision_error",
}
COST_KEYS = {metric: f"{metric}_cost" for metric in METRICS}

MAX_RETRY_AFTER = 120.0  # seconds; a server asking for longer is not waited for
MAX_BACKOFF = 30.0
EMBEDDING_BATCH_INPUTS = 256
EMBEDDING_BATCH_CHARS = 400_000


# --- usage ---------------------------------------------------------------------------------------


@dataclass
class MetricUsage:
    """Calls and cost of one metric over a run. `errors` counts cases whose metric ended in error;
    `cost_usd` is None when a call used a model without a known price."""

    calls: int = 0
    cached_calls: int = 0
    errors: int = 0
    cost_usd: float | None = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "errors": self.errors,
            "cost_usd": self.cost_usd,
        }


@dataclass
class JudgeUsage:
    """What a `judge_results` run used.

    `calls`: requests the API answered (each is billed); `cached_calls`: requests answered from the
    cache (free); `failed_calls`: requests that failed after all retries; `retries`: extra attempts.
    `cost_usd` is None when some call used a model without a known price (`unpriced_models`).
    """

    model: str
    embedding_model: str
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    by_metric: dict[str, MetricUsage] = field(default_factory=dict)
    cases: int = 0
    elapsed_sec: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)
    prices_checked: str = PRICES_CHECKED

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
            "cases": self.cases,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "retries": self.retries,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cost_note": self.cost_note,
            "prices_checked": self.prices_checked,
            "elapsed_sec": self.elapsed_sec,
            "by_metric": {name: usage.to_dict() for name, usage in self.by_metric.items()},
        }

    def summary(self) -> str:
        """One line for stderr."""
        if self.cost_usd is None:
            cost = self.cost_note or "cost unknown"
        else:
            cost = f"${self.cost_usd:.4f}"
        return (
            f"judge {self.model}: {self.cases} cases, {self.calls} API calls "
            f"({self.cached_calls} cached, {self.failed_calls} failed, {self.retries} retried), "
            f"{self.input_tokens:,} input + {self.output_tokens:,} output tokens, {cost}, "
            f"{self.elapsed_sec:.1f} s"
        )


class _Ledger:
    """Counters of one unit of work (a metric of a case, or an embedding batch)."""

    __slots__ = ("calls", "cached_calls", "failed_calls", "retries", "input_tokens", "output_tokens",
                 "cost", "unpriced", "share", "share_unpriced")

    def __init__(self) -> None:
        self.calls = self.cached_calls = self.failed_calls = self.retries = 0
        self.input_tokens = self.output_tokens = 0
        self.cost = 0.0  # of the calls this ledger made
        self.unpriced: set[str] = set()
        self.share = 0.0  # of calls made for several cases (embedding batches), counted elsewhere
        self.share_unpriced = False

    def add_call(self, input_tokens: int, output_tokens: int, cost: float | None, model: str) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost is None:
            self.unpriced.add(model)
        else:
            self.cost += cost

    @property
    def cost_usd(self) -> float | None:
        """This unit's cost, its share of shared calls included; None when a price is unknown."""
        return None if self.unpriced or self.share_unpriced else self.cost + self.share


class _MetricFailed(Exception):
    """A metric of one case could not be computed; the message goes into its error key."""


class _Aborted(Exception):
    """The run stops: a fatal configuration problem was found by another call."""


TEMPLATES = ("answer_correctness", "answer_relevance", "retrieval_answer_recall",
             "retrieval_answer_precision", "retry")
_SAMPLE_VARIABLES = {
    "answer_correctness": {"question": "q", "reference_answer": "r", "actual_answer": "a"},
    "answer_relevance": {"answer": "a", "count": 3},
    "retrieval_answer_recall": {"question": "q", "reference_answer": "r", "contexts": ["c"]},
    "retrieval_answer_precision": {"question": "q", "answer": "a", "answer_kind": "answer",
                                   "answer_tag": "answer", "contexts": ["c"]},
    "retry": {"problem": "p"},
}


# --- the work ------------------------------------------------------------------------------------

T = TypeVar("T")


@dataclass
class _Outcome:
    """What one metric of one case produced: keys for its target dict, and what it used."""

    case: int
    metric: str
    target: dict[str, Any]
    updates: dict[str, Any]
    ledger: _Ledger
    error: bool = False
    embed: _EmbedJob | None = None  # answer relevance waiting for its embeddings


@dataclass
class _EmbedJob:
    outcome: _Outcome
    inputs: list[str]
    questions: list[tuple[str, bool]]
    key: str


class _Progress:
    def __init__(self, stream: TextIO | None, total: int):
        self.stream = stream
        self.total = total
        self.done = 0
        self.calls = 0
        self.cached = 0
        self.cost: float | None = 0.0
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._last = 0.0

    def advance(self, ledger: _Ledger, *, finished: int = 1) -> None:
        self.done += finished
        self.calls += ledger.calls
        self.cached += ledger.cached_calls
        if self.cost is not None:
            self.cost = None if ledger.unpriced else self.cost + ledger.cost
        now = time.monotonic()
        if self._tty and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            self._draw()

    def _draw(self) -> None:
        assert self.stream is not None
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        cost = "cost ?" if self.cost is None else f"${self.cost:.4f}"
        line = (
            f"\rjudge [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"· {self.calls} calls · {self.cached} cached · {cost}"
        )
        self.stream.write(line)
        self.stream.flush()

    def finish(self, usage: JudgeUsage) -> None:
        if self.stream is None:
            return
        if self._tty:
            self._draw()
            self.stream.write("\n")
        self.stream.write(usage.summary() + "\n")
        self.stream.flush()


class Judge:
    """Judges result dicts with an OpenAI-compatible model. Use as a context manager, or call
    `close()`."""

    def __init__(self, settings: JudgeSettings, *, templates_dir: str | None = None):
        self.settings = settings
        self._prices = PriceTable(settings.prices)
        environment = template_environment(templates_dir)
        self._templates: dict[str, jinja2.Template] = {}
        for name in TEMPLATES:
            path = f"judge/{name}.txt"
            try:
                template = environment.get_template(path)
                template.render(**_SAMPLE_VARIABLES[name])
            except jinja2.TemplateError as error:
                raise JudgeError(f"prompt template {path}: {error}") from None
            self._templates[name] = template
        self._client = _make_client(settings)
        self._cache: JudgeCache | None = None
        if settings.use_cache and settings.cache_path:
            try:
                self._cache = JudgeCache(settings.cache_path)
            except (sqlite3.Error, OSError) as error:
                self._client.close()
                raise JudgeError(
                    f"cannot open the judge cache {settings.cache_path}: {error}; "
                    "choose another cache path or turn the cache off (--no-cache)"
                ) from None
        self._lock = threading.Lock()
        self._fatal: JudgeError | None = None
        self._answered = 0

    # -- lifecycle

    def close(self) -> None:
        self._client.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def chat_model(self) -> str:
        """The model name sent with chat requests (the deployment, on Azure)."""
        return self.settings.azure_deployment or self.settings.model

    @property
    def embedding_request_model(self) -> str:
        return self.settings.azure_embedding_deployment or self.settings.embedding_model

    # -- the run

    def judge_results(
        self,
        results: list[dict[str, Any]],
        *,
        progress: TextIO | None = None,
        metrics: Iterable[str] | None = None,
        on_result: Callable[[dict[str, Any]], None] | None = None,
    ) -> JudgeUsage:
        """Add the judged keys to every result with status "success", in place; return the usage.

        `progress`: a stream for a progress bar (when it is a TTY) and a summary line at the end;
        None prints nothing. `metrics`: a subset of METRICS (default: the settings'). `on_result`
        is called, in this thread, with each result as soon as all of its metrics are done.
        A case's failure becomes its `*_error` key; JudgeError is raised only for a configuration
        that cannot work (then the results may be partly enriched).
        """
        started = time.monotonic()
        self._fatal = None
        chosen = tuple(self.settings.metrics if metrics is None else metrics)
        unknown = [m for m in chosen if m not in METRICS]
        if unknown:
            raise JudgeError(f"unknown judge metric {unknown[0]!r}; known: {', '.join(METRICS)}")
        add_retrieval_context_scores(results)

        tasks: list[tuple[int, str, dict[str, Any], Callable[[_Ledger], _Outcome]]] = []
        pending_by_case: dict[int, int] = {}
        ready_now: list[_Outcome] = []
        for index, result in enumerate(results):
            if result.get("status") != "success":
                continue
            for outcome_or_task in self._plan(index, result, chosen):
                if isinstance(outcome_or_task, _Outcome):
                    ready_now.append(outcome_or_task)
                else:
                    tasks.append(outcome_or_task)
                pending_by_case[index] = pending_by_case.get(index, 0) + 1

        usage = JudgeUsage(model=self.settings.model, embedding_model=self.settings.embedding_model)
        usage.by_metric = {m: MetricUsage() for m in chosen}
        usage.cases = len(pending_by_case)
        outcomes_by_case: dict[int, list[_Outcome]] = {}
        progress_bar = _Progress(progress, len(tasks) + len(ready_now))
        run_ledgers: list[tuple[str, _Ledger]] = []

        def settle(outcome: _Outcome) -> None:
            """A metric of a case is complete: count it, and finish the case if it was the last."""
            run_ledgers.append((outcome.metric, outcome.ledger))
            metric_usage = usage.by_metric[outcome.metric]
            if outcome.error:
                metric_usage.errors += 1
            outcomes_by_case.setdefault(outcome.case, []).append(outcome)
            pending_by_case[outcome.case] -= 1
            if pending_by_case[outcome.case] == 0:
                self._finish_case(results[outcome.case], outcomes_by_case.pop(outcome.case))
                if on_result is not None:
                    on_result(results[outcome.case])

        executor = futures.ThreadPoolExecutor(
            max_workers=self.settings.concurrency, thread_name_prefix="qareport-judge"
        )
        try:
            for outcome in ready_now:
                progress_bar.advance(outcome.ledger)
                settle(outcome)
            running: dict[futures.Future, str] = {}
            for _, _, _, work in tasks:
                running[executor.submit(work)] = "task"
            waiting: list[_EmbedJob] = []
            waiting_inputs = 0
            tasks_left = len(tasks)
            while running:
                done, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
                for future in done:
                    kind = running.pop(future)
                    if kind == "task":
                        tasks_left -= 1
                        outcome = future.result()
                        if outcome.embed is None:
                            progress_bar.advance(outcome.ledger)
                            settle(outcome)
                            continue
                        job = outcome.embed
                        if self._embeddings_from_cache(job):
                            progress_bar.advance(outcome.ledger)
                            settle(outcome)
                        else:
                            waiting.append(job)
                            waiting_inputs += len(job.inputs)
                    else:
                        batch_ledger, finished = future.result()
                        run_ledgers.append(("answer_relevance", batch_ledger))
                        progress_bar.advance(batch_ledger, finished=0)
                        for outcome in finished:
                            progress_bar.advance(outcome.ledger)
                            settle(outcome)
                if self._fatal is not None:
                    for future in running:
                        future.cancel()
                    running = {f: k for f, k in running.items() if not f.cancelled()}
                    waiting = []
                    continue
                while waiting and (waiting_inputs >= EMBEDDING_BATCH_INPUTS or tasks_left == 0):
                    batch, waiting = _take_batch(waiting)
                    waiting_inputs -= sum(len(job.inputs) for job in batch)
                    running[executor.submit(self._embed_batch, batch)] = "embeddings"
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        if self._fatal is not None:
            raise self._fatal

        cost: float | None = 0.0
        unpriced: set[str] = set()
        for metric, ledger in run_ledgers:
            usage.calls += ledger.calls
            usage.cached_calls += ledger.cached_calls
            usage.failed_calls += ledger.failed_calls
            usage.retries += ledger.retries
            usage.input_tokens += ledger.input_tokens
            usage.output_tokens += ledger.output_tokens
            metric_usage = usage.by_metric[metric]
            metric_usage.calls += ledger.calls
            metric_usage.cached_calls += ledger.cached_calls
            if ledger.unpriced:
                unpriced |= ledger.unpriced
                metric_usage.cost_usd = None
            elif metric_usage.cost_usd is not None:
                metric_usage.cost_usd += ledger.cost
            if cost is not None:
                cost = None if ledger.unpriced else cost + ledger.cost
        usage.cost_usd = cost
        usage.unpriced_models = sorted(unpriced)
        usage.elapsed_sec = round(time.monotonic() - started, 3)
        progress_bar.finish(usage)
        return usage

    # -- planning: which metrics each case gets

    def _plan(self, index: int, result: dict[str, Any], metrics: Sequence[str]):
        question = result.get("question_text") or ""
        reference = result.get("reference_answer")
        actual = result.get("actual_answer")
        if "answer_correctness" in metrics and reference is not None and actual is not None:
            yield self._task(index, "answer_correctness", result,
                             lambda ledger: self._answer_correctness(question, reference, actual, ledger))
        if "answer_relevance" in metrics and actual is not None:
            yield self._task(index, "answer_relevance", result,
                             lambda ledger: self._answer_relevance(question, actual, ledger))
        wants_recall = "retrieval_answer_recall" in metrics
        wants_precision = "retrieval_answer_precision" in metrics
        if not (wants_recall or wants_precision) or (not reference and not actual):
            return
        for step in result.get("actual_steps") or []:
            if not isinstance(step, dict) or step.get("name") != "retrieval" or step.get("status") != "success":
                continue
            try:
                contexts = [c["text"] for c in parse_contexts(step.get("output"))]
            except ValueError as error:
                for metric, wanted in (("retrieval_answer_recall", wants_recall),
                                       ("retrieval_answer_precision", wants_precision)):
                    if wanted and (metric != "retrieval_answer_recall" or reference):
                        yield _Outcome(index, metric, step, {ERROR_KEYS[metric]: str(error)}, _Ledger(), True)
                continue
            if wants_recall and reference:
                yield self._task(index, "retrieval_answer_recall", step,
                                 lambda ledger, c=contexts: self._retrieval_recall(question, reference, c, ledger))
            if wants_precision:
                yield self._task(index, "retrieval_answer_precision", step,
                                 lambda ledger, c=contexts: self._retrieval_precision(
                                     question, reference, actual, c, ledger))

    def _task(self, index: int, metric: str, target: dict[str, Any],
              compute: Callable[[_Ledger], dict[str, Any] | _EmbedJob]):
        def work() -> _Outcome:
            ledger = _Ledger()
            outcome = _Outcome(index, metric, target, {}, ledger)
            try:
                produced = compute(ledger)
            except _MetricFailed as error:
                outcome.updates = {ERROR_KEYS[metric]: str(error)}
                outcome.error = True
            except (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError) as error:
                # a per-case failure must not stop the run; say what it was so it can be reported
                outcome.updates = {ERROR_KEYS[metric]: f"judge failed: {type(error).__name__}: {error}"}
                outcome.error = True
            except _Aborted:
                outcome.updates = {}
                outcome.error = True
                return outcome
            else:
                if isinstance(produced, _EmbedJob):
                    produced.outcome = outcome
                    outcome.embed = produced
                    return outcome
                outcome.updates = produced
            outcome.updates[COST_KEYS[metric]] = ledger.cost_usd
            return outcome

        return (index, metric, target, work)

    def _finish_case(self, result: dict[str, Any], outcomes: list[_Outcome]) -> None:
        steps = []
        for outcome in outcomes:
            outcome.target.update(outcome.updates)
            if outcome.target is not result and outcome.target not in steps:
                steps.append(outcome.target)
        for step in steps:
            step.update(f1_keys(step, "retrieval_answer"))

    # -- the metrics

    def _render(self, name: str, **variables: Any) -> str:
        return self._templates[name].render(**variables)

    def _answer_correctness(self, question: str, reference: Any, actual: Any, ledger: _Ledger) -> dict[str, Any]:
        if not str(reference).strip():
            raise _MetricFailed("the reference answer is empty")
        if not str(actual).strip():
            raise _MetricFailed("the actual answer is empty")
        prompt = self._render("answer_correctness", question=question, reference_answer=reference,
                              actual_answer=actual)
        counts: ClaimCounts = self._chat_checked(
            "answer_correctness", prompt, check_answer_correctness, ledger)
        recall, precision, f1 = claim_scores(counts.reference, counts.actual, counts.matching)
        return {
            "answer_reference_claims_count": counts.reference,
            "answer_actual_claims_count": counts.actual,
            "answer_matching_claims_count": counts.matching,
            "answer_correctness_reason": counts.reason,
            "answer_recall": recall,
            "answer_precision": precision,
            "answer_f1": f1,
        }

    def _answer_relevance(self, question: str, actual: Any, ledger: _Ledger) -> _EmbedJob:
        if not str(question).strip():
            raise _MetricFailed("the question is empty")
        if not str(actual).strip():
            raise _MetricFailed("the actual answer is empty")
        count = self.settings.relevance_questions
        prompt = self._render("answer_relevance", answer=actual, count=count)
        questions = self._chat_checked(
            "answer_relevance", prompt, lambda c: check_generated_questions(c, count=count), ledger)
        inputs = [str(question)] + [q for q, _ in questions]
        key = cache_key("embeddings", {"model": self.embedding_request_model, "input": inputs,
                                       "encoding_format": "float"})
        return _EmbedJob(outcome=None, inputs=inputs, questions=questions, key=key)  # type: ignore[arg-type]

    def _complete_relevance(self, job: _EmbedJob, vectors: list[list[float]]) -> None:
        outcome = job.outcome
        score = relevance_score(vectors[0], vectors[1:], [flag for _, flag in job.questions])
        outcome.updates = {
            "answer_relevance": score,
            "answer_relevance_questions": [
                {"question": q, "noncommittal": flag} for q, flag in job.questions
            ],
            COST_KEYS["answer_relevance"]: outcome.ledger.cost_usd,
        }
        outcome.embed = None

    def _fail_relevance(self, job: _EmbedJob, message: str) -> None:
        outcome = job.outcome
        outcome.updates = {
            ERROR_KEYS["answer_relevance"]: message,
            COST_KEYS["answer_relevance"]: outcome.ledger.cost_usd,
        }
        outcome.error = True
        outcome.embed = None

    def _embeddings_from_cache(self, job: _EmbedJob) -> bool:
        if self._cache is None:
            return False
        value = self._cache.get(job.key)
        vectors = _decode_vectors(value, len(job.inputs)) if isinstance(value, dict) else None
        if vectors is None:
            return False
        job.outcome.ledger.cached_calls += 1
        self._complete_relevance(job, vectors)
        return True

    def _embed_batch(self, batch: list[_EmbedJob]) -> tuple[_Ledger, list[_Outcome]]:
        """One embeddings request for the inputs of several cases (each case's inputs together)."""
        ledger = _Ledger()
        inputs = [text for job in batch for text in job.inputs]
        request = {"model": self.embedding_request_model, "input": inputs, "encoding_format": "float"}
        try:
            response = self._send(lambda: self._client.embeddings.create(**request), ledger)
            tokens = response.usage.prompt_tokens if response.usage is not None else None
            total_cost = None if tokens is None else self._prices.cost(
                (self.settings.embedding_model, response.model), tokens)
            ledger.add_call(tokens or 0, 0, total_cost, self.settings.embedding_model)
            data = sorted(response.data or [], key=lambda item: item.index)
            vectors = [_float32(item.embedding) for item in data]
            if len(vectors) != len(inputs) or len({len(v) for v in vectors}) != 1 or not vectors[0]:
                raise _MetricFailed(
                    f"the embeddings reply has {len(vectors)} vectors of sizes "
                    f"{sorted({len(v) for v in vectors})} for {len(inputs)} inputs")
        except _MetricFailed as error:
            for job in batch:
                if ledger.calls:  # the failed reply was billed: share it like a good one
                    self._share_cost(job, ledger.cost_usd, 1 / len(batch))
                self._fail_relevance(job, f"embeddings: {error}")
            return ledger, [job.outcome for job in batch]
        except _Aborted:
            return ledger, []
        except (ArithmeticError, LookupError, TypeError, ValueError) as error:  # a malformed reply
            for job in batch:
                self._fail_relevance(job, f"embeddings: unusable reply ({type(error).__name__}: {error})")
            return ledger, [job.outcome for job in batch]
        total_chars = sum(len(text) for text in inputs) or 1
        position = 0
        for job in batch:
            job_vectors = vectors[position: position + len(job.inputs)]
            position += len(job.inputs)
            self._share_cost(job, total_cost, sum(len(text) for text in job.inputs) / total_chars)
            if self._cache is not None:
                self._cache.put(job.key, kind="embeddings", model=self.embedding_request_model,
                                value={"vectors": [_encode_vector(v) for v in job_vectors]})
            self._complete_relevance(job, job_vectors)
        return ledger, [job.outcome for job in batch]

    def _share_cost(self, job: _EmbedJob, cost: float | None, share: float) -> None:
        """A case's part of a batch's cost, in proportion to the length of its inputs."""
        if cost is None:
            job.outcome.ledger.share_unpriced = True
        else:
            job.outcome.ledger.share += cost * share

    def _retrieval_recall(self, question: str, reference: Any, contexts: list[str], ledger: _Ledger) -> dict[str, Any]:
        if not contexts:
            return {"retrieval_answer_recall": 0.0,
                    "retrieval_answer_recall_reason": "no contexts were retrieved"}
        prompt = self._render("retrieval_answer_recall", question=question, reference_answer=reference,
                              contexts=contexts)
        statements = self._chat_checked("retrieval_answer_recall", prompt, check_statements, ledger)
        reason = "\n".join(
            f"{'attributed' if attributed else 'not attributed'}: {statement} ({why})"
            for statement, why, attributed in statements
        )
        return {
            "retrieval_answer_recall": attributed_fraction([a for _, _, a in statements]),
            "retrieval_answer_recall_reason": reason,
        }

    def _retrieval_precision(self, question: str, reference: Any, actual: Any, contexts: list[str],
                             ledger: _Ledger) -> dict[str, Any]:
        if not contexts:
            return {"retrieval_answer_precision": 0.0,
                    "retrieval_answer_precision_reason": "no contexts were retrieved"}
        if reference:
            answer, kind, tag = reference, "reference answer", "reference_answer"
        else:
            answer, kind, tag = actual, "answer", "answer"
        prompt = self._render("retrieval_answer_precision", question=question, answer=answer,
                              answer_kind=kind, answer_tag=tag, contexts=contexts)
        verdicts = self._chat_checked(
            "retrieval_answer_precision", prompt, lambda c: check_verdicts(c, contexts=len(contexts)), ledger)
        reason = "\n".join(
            f"context {number}: {'useful' if useful else 'not useful'} ({why})"
            for number, (why, useful) in enumerate(verdicts, start=1)
        )
        return {
            "retrieval_answer_precision": average_precision([useful for _, useful in verdicts]),
            "retrieval_answer_precision_reason": reason,
        }

    # -- calls

    def _chat_checked(self, metric: str, prompt: str, check: Callable[[str | None], T], ledger: _Ledger) -> T:
        """Ask, check the reply; on a bad reply ask once more saying what was wrong."""
        messages = [{"role": "user", "content": prompt}]
        try:
            return self._chat(metric, messages, check, ledger)
        except JudgeOutputError as first:
            retry = messages + [
                {"role": "assistant", "content": first.content or ""},
                {"role": "user", "content": self._render("retry", problem=first.problem)},
            ]
            try:
                return self._chat(metric, retry, check, ledger)
            except JudgeOutputError as second:
                raise _MetricFailed(
                    f"the judge's reply could not be used, also after one retry: {second.problem}"
                ) from None

    def _chat(self, metric: str, messages: list[dict[str, str]], check: Callable[[str | None], T],
              ledger: _Ledger) -> T:
        if self.settings.response_format == "json_schema":
            response_format: dict[str, Any] = SCHEMAS[metric]
        else:
            response_format = {"type": "json_object"}
        request = {
            "model": self.chat_model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "response_format": response_format,
        }
        key = cache_key("chat", request)
        if self._cache is not None:
            hit = self._cache.get(key)
            if isinstance(hit, dict) and isinstance(hit.get("content"), str):
                try:
                    checked = check(hit["content"])
                except JudgeOutputError:
                    pass  # a template's checks changed: ask again
                else:
                    ledger.cached_calls += 1
                    return checked
        completion = self._send(lambda: self._client.chat.completions.create(**request), ledger)
        usage = completion.usage
        if usage is None:
            cost = None
            input_tokens = output_tokens = 0
        else:
            input_tokens = usage.prompt_tokens or 0
            output_tokens = usage.completion_tokens or 0
            cost = self._prices.cost((self.settings.model, completion.model), input_tokens, output_tokens)
        ledger.add_call(input_tokens, output_tokens, cost, self.settings.model)
        choice = completion.choices[0] if completion.choices else None
        content = choice.message.content if choice is not None else None
        refusal = getattr(choice.message, "refusal", None) if choice is not None else None
        if refusal and not content:
            raise JudgeOutputError(f"the judge refused: {_preview(refusal)}", None)
        if choice is not None and choice.finish_reason == "length":
            raise JudgeOutputError("the reply was cut off at the token limit", content)
        checked = check(content)
        if self._cache is not None:
            self._cache.put(key, kind="chat", model=self.chat_model, value={
                "content": content,
                "model": completion.model,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            })
        return checked

    def _send(self, call: Callable[[], T], ledger: _Ledger) -> T:
        """One request, retried on transient failures. Raises _MetricFailed or _Aborted."""
        attempt = 0
        while True:
            if self._fatal is not None:
                raise _Aborted()
            try:
                response = call()
            except openai.APIStatusError as error:
                status = error.status_code
                if status in (401, 403, 404):
                    raise self._abort(_fatal_status_message(self.settings, error))
                retryable = status in (408, 409, 429) or status >= 500
                delay = self._retry_delay(attempt, error.response.headers) if retryable else None
                if delay is None or attempt >= self.settings.max_retries:
                    ledger.failed_calls += 1
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise _MetricFailed(f"judge call failed{tries}: {self._describe(error)}") from None
            except openai.APIConnectionError as error:
                if attempt >= self.settings.max_retries:
                    ledger.failed_calls += 1
                    timeout = isinstance(error, openai.APITimeoutError)
                    if not timeout and self._answered == 0:
                        raise self._abort(
                            f"cannot reach the judge at {self.settings.endpoint} "
                            f"({self._describe(error)}); check the base URL and the network"
                        )
                    what = f"timed out after {self.settings.timeout:g} s" if timeout else self._describe(error)
                    raise _MetricFailed(f"judge call failed after {attempt + 1} attempts: {what}") from None
                delay = self._retry_delay(attempt, None)
            except openai.OpenAIError as error:
                ledger.failed_calls += 1
                raise _MetricFailed(f"judge call failed: {self._describe(error)}") from None
            else:
                with self._lock:
                    self._answered += 1
                return response
            ledger.retries += 1
            time.sleep(delay)
            attempt += 1

    def _retry_delay(self, attempt: int, headers: Mapping[str, str] | None) -> float | None:
        """Seconds to wait before the next attempt: the server's Retry-After when it gives one (None
        when it asks for more than MAX_RETRY_AFTER), else exponential backoff with jitter."""
        asked = _retry_after(headers) if headers is not None else None
        if asked is not None:
            return asked if asked <= MAX_RETRY_AFTER else None
        delay = min(self.settings.retry_base_delay * (2 ** attempt), MAX_BACKOFF)
        return delay * (1 - 0.25 * random.random())

    def _abort(self, message: str) -> _Aborted:
        with self._lock:
            if self._fatal is None:
                self._fatal = JudgeError(self._scrub(message))
        return _Aborted()

    def _describe(self, error: Exception) -> str:
        if isinstance(error, openai.APIStatusError):
            text = f"HTTP {error.status_code}: {error.message}"
        else:
            text = str(error) or type(error).__name__
        return self._scrub(" ".join(text.split()))

    def _scrub(self, text: str) -> str:
        key = self.settings.api_key
        if key and key != PLACEHOLDER_API_KEY:
            text = text.replace(key, "***")
        return text


def _fatal_status_message(settings: JudgeSettings, error: openai.APIStatusError) -> str:
    where = settings.endpoint
    if error.status_code == 401:
        env = "AZURE_OPENAI_API_KEY" if settings.is_azure else "OPENAI_API_KEY"
        return f"the judge at {where} rejected the API key (HTTP 401: {error.message}); check {env}"
    if error.status_code == 403:
        return f"the judge at {where} refused access (HTTP 403: {error.message})"
    what = "deployment" if settings.is_azure else "model or endpoint"
    return (
        f"the judge at {where} does not know this {what} (HTTP 404: {error.message}); "
        f"check the model ({settings.model}, embeddings {settings.embedding_model}) and the base URL"
    )


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            seconds = float(value) / 1000
            if math.isfinite(seconds) and seconds >= 0:
                return seconds
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def _take_batch(waiting: list[_EmbedJob]) -> tuple[list[_EmbedJob], list[_EmbedJob]]:
    batch: list[_EmbedJob] = []
    inputs = chars = 0
    for position, job in enumerate(waiting):
        size = len(job.inputs)
        length = sum(len(text) for text in job.inputs)
        if batch and (inputs + size > EMBEDDING_BATCH_INPUTS or chars + length > EMBEDDING_BATCH_CHARS):
            return batch, waiting[position:]
        batch.append(job)
        inputs += size
        chars += length
    return batch, []


def _float32(values: Sequence[float]) -> list[float]:
    """Embeddings rounded to float32, as the API computes them, so a cached vector and a fresh one
    give the same score."""
    return list(array("f", values))


def _encode_vector(vector: Sequence[float]) -> str:
    import base64

    return base64.b64encode(array("f", vector).tobytes()).decode("ascii")


def _decode_vectors(value: Mapping[str, Any], count: int) -> list[list[float]] | None:
    import base64
    import binascii

    encoded = value.get("vectors")
    if not isinstance(encoded, list) or len(encoded) != count:
        return None
    vectors = []
    try:
        for item in encoded:
            vector = array("f")
            vector.frombytes(base64.b64decode(item))
            vectors.append(list(vector))
    except (TypeError, ValueError, binascii.Error):
        return None
    return vectors


def _make_client(settings: JudgeSettings) -> openai.OpenAI:
    try:
        if settings.azure_endpoint:
            return openai.AzureOpenAI(
                api_key=settings.api_key,
                azure_endpoint=settings.azure_endpoint,
                api_version=settings.api_version or DEFAULT_AZURE_API_VERSION,
                timeout=settings.timeout,
                max_retries=0,
            )
        return openai.OpenAI(
            api_key=settings.api_key or PLACEHOLDER_API_KEY,
            base_url=settings.base_url or DEFAULT_OPENAI_BASE_URL,
            timeout=settings.timeout,
            max_retries=0,
        )
    except (openai.OpenAIError, ValueError) as error:
        message = str(error)
        if settings.api_key:
            message = message.replace(settings.api_key, "***")
        raise JudgeError(f"cannot set up the judge's OpenAI client: {message}") from None

