"""What one judgment produced, and how a result's judgments make its judged copy.

A worker runs a `Task` (one metric of one result, one repeat of it) and fills in an `Outcome`;
`judgments_of` turns a result's outcomes into the judge's typed `Judgment`s, which a
`QuestionScores` takes by building a new record (`with_judgments`); that record's dict is the
judged result of the judge's library API (graphrag-eval's judged result dict).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qareport.judge import answer_correctness, answer_relevance, retrieval_answer
from qareport.judge.answer_relevance import GeneratedQuestions
from qareport.judge.settings import ALL_METRICS
from qareport.judge.usage import Ledger
from qareport.question_scores import Judgment

ERROR_KEYS = {
    answer_correctness.METRIC: answer_correctness.ERROR_KEY,
    answer_relevance.METRIC: answer_relevance.ERROR_KEY,
    **retrieval_answer.ERROR_KEYS,
}


COST_KEYS = {metric: f"{metric}_cost" for metric in ALL_METRICS}



@dataclass
class Outcome:
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
class Task:
    """One metric of one case (one repeat of it), to be run by a worker."""

    case: int
    metric: str
    run: Callable[[int], Outcome]
    repeat: int = 0

    def __call__(self) -> Outcome:
        return self.run(self.repeat)



def judgments_of(result: Mapping[str, Any], outcomes: list[Outcome], *,
                 order: Sequence[str]) -> tuple[Judgment, ...]:
    """A result's outcomes as the judge's `Judgment`s, in `order` (the metrics' order): one per
    metric of the question, and one per judged step with every metric's keys of that step and
    their F1 keys (computed from the step as judged)."""
    ordered = sorted(outcomes, key=lambda o: order.index(o.metric))
    judgments = [Judgment(None, dict(outcome.updates)) for outcome in ordered if outcome.step is None]
    step_updates: dict[int, dict[str, Any]] = {}
    for outcome in ordered:
        if outcome.step is not None:
            step_updates.setdefault(outcome.step, {}).update(outcome.updates)
    for number, updates in step_updates.items():
        step = {**result["actual_steps"][number], **updates}
        values = {**updates, **retrieval_answer.f1_keys(step, "retrieval_answer")}
        if any(key.startswith("retrieval_context_") for key in updates):
            values.update(retrieval_answer.f1_keys({**step, **values}, "retrieval_context"))
        judgments.append(Judgment(number, values))
    return tuple(judgments)
