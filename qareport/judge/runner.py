"""Running the judge over a run's results: a thread pool and its progress.

The Judge is made of parts by concept: planning (`planning`), the estimate (`estimate`), the batch
route (`batch_route`) and answer relevance's embeddings (`relevance_embeddings`); this module runs
the planned tasks and collects their outcomes (`outcomes`, `repeats`).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from qareport.errors import NOT_JUDGED, JudgeError
from qareport.judge import answer_relevance
from qareport.judge.batch import batch_problem
from qareport.judge.batch_route import BatchRoute
from qareport.judge.client import JudgeClient
from qareport.judge.cost import BUDGET_WORDS, Budget
from qareport.judge.estimate import Estimating
from qareport.judge.identity import JudgeIdentity, judge_identity
from qareport.judge.outcomes import Outcome, judgments_of
from qareport.judge.prompts import Prompts
from qareport.judge.relevance_embeddings import (
    EMBEDDING_BATCH_INPUTS,
    RelevanceEmbeddings,
    fail_relevance,
    take_batch,
)
from qareport.judge.repeats import combine_repeats
from qareport.judge.settings import JudgeSettings
from qareport.judge.usage import JudgeUsage, Ledger, summarize_usage
from qareport.judge.workers import DaemonPool
from qareport.progress import OnProgress, ProgressEvent, no_progress
from qareport.question_scores import Judgment, QuestionScores


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
    judgments: list[tuple[Judgment, ...]] = field(default_factory=list)
    """Per result, in their order, the judge's typed judgments (`QuestionScores.with_judgments`
    builds the judged record from them; `results` holds the same as graphrag-eval's dicts); empty
    for a result not judged."""



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



class Judge(Estimating, BatchRoute, RelevanceEmbeddings):
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

    def identity(self) -> JudgeIdentity:
        """This judge as a run records it: its settings, its prompts' hash and the models the
        replies so far named (`identity.judge_identity`)."""
        return judge_identity(self.settings, template_sources=self._prompts.sources,
                              served_models=self._client.served_models)

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
        judgments: list[tuple[Judgment, ...]] = [() for _ in results]

        ready: list[Outcome] = []
        tasks: list[Callable[[], Outcome]] = []
        pending_by_case: dict[int, int] = {}
        for index, result in enumerate(results):
            if result.get("status") != "success":
                continue
            for item in self._repeated(self._plan(index, result, chosen)):
                if isinstance(item, Outcome):
                    ready.append(item)
                else:
                    tasks.append(item)
                pending_by_case[index] = pending_by_case.get(index, 0) + 1

        progress_bar = _Progress(on_progress, len(tasks) + len(ready))
        ledgers: list[tuple[str, Ledger]] = []
        errors: dict[str, int] = {}
        outcomes_by_case: dict[int, list[Outcome]] = {}
        not_judged: list[str] = []  # the error of each judgment not obtained

        def settle(outcome: Outcome) -> None:
            """A metric (a repeat of it) of a case is complete: count it, and finish the case if it
            was the last."""
            progress_bar.advance(outcome.ledger)
            ledgers.append((outcome.metric, outcome.ledger))
            outcomes_by_case.setdefault(outcome.case, []).append(outcome)
            pending_by_case[outcome.case] -= 1
            if pending_by_case[outcome.case] == 0:
                complete = combine_repeats(outcomes_by_case.pop(outcome.case))
                for done in complete:
                    if done.error:
                        errors[done.metric] = errors.get(done.metric, 0) + 1
                    if done.not_judged:
                        error = done.judgment.error if done.judgment is not None else None
                        not_judged.append(error if error is not None and error.startswith(NOT_JUDGED)
                                          else NOT_JUDGED)
                found = judgments_of(complete, order=chosen)
                judgments[outcome.case] = found
                judged[outcome.case] = QuestionScores.from_graphrag_eval(
                    results[outcome.case]).with_judgments(found).as_graphrag_eval()
                if on_result is not None:
                    on_result(judged[outcome.case])

        # under a budget, one call at a time in the cases' order: the cases judged before it is reached
        # are then the same on every rerun (the first ones, in the test cases' order), never whichever
        # calls happened to reach the budget first
        executor = DaemonPool(1 if budget is not None else self.settings.concurrency, name="qareport-judge")
        stopped = True  # until the loop below ends: a stop (SIGTERM, Ctrl-C) does not wait for calls in flight
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
            waiting: list[Outcome] = []
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
                        fail_relevance(outcome, self._stopped(), not_judged=True)
                        settle(outcome)
                    waiting = []
                    continue
                while waiting and (waiting_inputs >= EMBEDDING_BATCH_INPUTS or tasks_left == 0):
                    # in a batch run, one request per case: the request its batch answered
                    batch, waiting = (waiting[:1], waiting[1:]) if batches is not None else take_batch(waiting)
                    waiting_inputs -= sum(len(o.waiting.inputs) for o in batch if o.waiting)
                    tries = 1 if batches is None else 0  # a batch's reply is the same when asked again
                    submit(partial(self._embed_batch, batch, tries_left=tries), "embeddings")
            stopped = False
        finally:
            executor.shutdown(wait=not stopped)
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
            elapsed_sec=round(time.monotonic() - started, 3), adapted_parameters=self._client.adapted_parameters,
        )
        if batches is not None:
            usage = replace(usage, batch=True, batches=len(batches.batch_ids))
        progress_bar.finish(usage)
        return JudgeRun(judged, usage, failure, len(not_judged), budget_reached, judgments)
