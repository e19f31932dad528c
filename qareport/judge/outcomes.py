"""What one judgment produced, and how a result's judgments make its judged copy.

A worker runs a `Task` (one metric of one result, one repeat of it) and fills in an `Outcome`;
`judged_copy` puts a result's outcomes, in graphrag-eval's key order, into a new result dict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qareport.judge import answer_correctness, answer_relevance, retrieval_answer
from qareport.judge.answer_relevance import GeneratedQuestions
from qareport.judge.settings import ALL_METRICS
from qareport.judge.usage import Ledger
from qareport.qa import order_result_keys

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



def judged_copy(result: Mapping[str, Any], outcomes: list[Outcome], *, order: Sequence[str]) -> dict[str, Any]:
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
