"""Planning a result's judgments: which metrics each result gets, each a task asked once per repeat.

`Planning` is a part of `runner.Judge`: it declares the judge's state it reads (set by
`Judge.__init__`); the estimate, the batch route and the embeddings build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import jinja2

from qareport.errors import NOT_JUDGED, JudgeAborted, JudgeCallFailed, JudgeError, MetricFailed
from qareport.judge import answer_correctness, answer_relevance, custom_metric, retrieval_answer
from qareport.judge.answer_relevance import GeneratedQuestions
from qareport.judge.client import JudgeClient, asking_repeat
from qareport.judge.cost import BUDGET_WORDS, BudgetReached
from qareport.judge.outcomes import Outcome, Task
from qareport.judge.prompts import Prompts
from qareport.judge.settings import ALL_METRICS, JudgeSettings
from qareport.judge.usage import Ledger
from qareport.judged_values import Cost, Figures, MetricJudgment
from qareport.question_scores import answer_text
from qareport.retrieval_context import parse_contexts


class Planning:
    """Turns a result into its judgments: tasks for the workers, or outcomes known without asking."""

    settings: JudgeSettings
    _client: JudgeClient
    _prompts: Prompts
    _custom: dict[str, Any]

    def _chosen(self, metrics: Iterable[str] | None) -> tuple[str, ...]:
        """The metrics to judge (the settings' by default), custom evaluations last."""
        chosen = tuple(self.settings.metrics if metrics is None else metrics)
        unknown = [m for m in chosen if m not in ALL_METRICS]
        if unknown:
            raise JudgeError(f"unknown judge metric {unknown[0]!r}; known: {', '.join(ALL_METRICS)}")
        customs = self.settings.custom_evaluations if metrics is None else ()
        self._custom = {custom_metric.metric_name(evaluation): evaluation for evaluation in customs}
        return (*chosen, *self._custom)

    def _over_budget(self, error: BudgetReached) -> str:
        """The error text of a judgment the budget stopped."""
        return f"{NOT_JUDGED}{BUDGET_WORDS} ({error})"

    def _stopped(self) -> str:
        """The error text of a judgment not asked because the judge was stopped."""
        return f"{NOT_JUDGED}the judge was stopped: {self._client.fatal}"

    # -- planning: which metrics each case gets

    def _plan(self, index: int, result: Mapping[str, Any],
              metrics: Sequence[str]) -> Iterator[Outcome | Callable[[], Outcome]]:
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
                        yield Outcome(index, metric, number, judgment=MetricJudgment(metric, error=str(error)),
                                      error=True)
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
                       metrics: Sequence[str]) -> Iterator[Outcome | Callable[[], Outcome]]:
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
                    yield Outcome(index, metric, number, judgment=MetricJudgment(metric, error=str(error)),
                                  error=True)
                continue
            judges = {retrieval_answer.CONTEXT_RECALL: retrieval_answer.judge_context_recall,
                      retrieval_answer.CONTEXT_PRECISION: retrieval_answer.judge_context_precision}
            for metric in wanted:
                yield self._task(attempt, index, metric, number, partial(
                    judges[metric], self._client, self._prompts, question=question,
                    reference_contexts=reference_texts, contexts=contexts))

    def _failed(self, metric: str, message: str) -> MetricJudgment:
        """A metric's failed judgment (a custom evaluation's outputs each None beside the error)."""
        evaluation = self._custom.get(metric)
        figures = custom_metric.failed_outputs(evaluation) if evaluation is not None else None
        return MetricJudgment(metric, figures, error=message)

    def _tasks(self, results: Sequence[Mapping[str, Any]],
               chosen: Sequence[str]) -> Iterator[tuple[Mapping[str, Any], Task]]:
        """Each task that judging the successful results asks for (each repeat its own), with its
        result: what a batch run and an estimate walk through without judging."""
        for index, result in enumerate(results):
            if result.get("status") != "success":
                continue
            for item in self._repeated(self._plan(index, result, chosen)):
                if isinstance(item, Task):
                    yield result, item

    def _repeated(self, planned: Iterable[Outcome | Callable[[], Outcome]],
                  ) -> Iterator[Outcome | Callable[[], Outcome]]:
        """The planned work with each task asked `settings.repeats` times (repeat 0 as planned)."""
        for item in planned:
            yield item
            if isinstance(item, Task):
                for number in range(1, self.settings.repeats):
                    yield replace(item, repeat=number)

    def _task(self, attempt: int | None, index: int, metric: str, step: int | None,
              compute: Callable[[Ledger], Figures | GeneratedQuestions]) -> Task:
        """One metric of one result; its chat requests are cached under the result's `attempt` too
        (see `attempt_of`) and, asked again (`settings.repeats`), under each repeat's number."""
        def work(repeat: int) -> Outcome:
            outcome = Outcome(index, metric, step, repeat=repeat)
            outcome.ledger.attempt = attempt
            try:
                with asking_repeat(repeat):
                    produced = compute(outcome.ledger)
            except JudgeCallFailed as error:
                judgment = self._failed(metric, NOT_JUDGED + str(error))
                outcome.error = outcome.not_judged = True
            except MetricFailed as error:
                judgment = self._failed(metric, str(error))
                outcome.error = True
            except (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError) as error:
                # a per-case failure must not stop the run; say what it was so it can be reported
                judgment = self._failed(metric, f"judge failed: {type(error).__name__}: {error}")
                outcome.error = True
            except JudgeAborted:
                judgment = self._failed(metric, self._stopped())
                outcome.error = outcome.not_judged = True
            except BudgetReached as error:
                judgment = self._failed(metric, self._over_budget(error))
                outcome.error = outcome.not_judged = True
            else:
                if isinstance(produced, GeneratedQuestions):
                    outcome.waiting = produced
                    return outcome
                judgment = MetricJudgment(metric, produced)
            outcome.judgment = replace(judgment, cost=Cost(outcome.ledger.cost_usd))
            return outcome

        return Task(index, metric, work)


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
