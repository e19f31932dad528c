"""What one judgment produced, and how a result's judgments make its judged copy.

A worker runs a `Task` (one metric of one result, one repeat of it) and fills in an `Outcome`;
`judgments_of` turns a result's outcomes (each a typed `MetricJudgment`) into the judge's `Judgment`s, which a
`QuestionScores` takes by building a new record (`with_judgments`); that record's dict is the
judged result of the judge's library API (graphrag-eval's judged result dict).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from qareport.judge.answer_relevance import GeneratedQuestions
from qareport.judge.usage import Ledger
from qareport.judged_values import MetricJudgment
from qareport.question_scores import Judgment


@dataclass
class Outcome:
    """What one metric of one case produced (filled in by one worker, then read by the runner):
    its typed judgment, of the result (`step` None) or of its actual step number `step`, and what
    it used. `judgment` is None only while the work is not done (answer relevance waiting for its
    embeddings)."""

    case: int
    metric: str
    step: int | None
    ledger: Ledger = field(default_factory=Ledger)
    repeat: int = 0  # which repeat of the judgment (--judge-repeats)
    judgment: MetricJudgment | None = None
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



def judgments_of(outcomes: list[Outcome], *, order: Sequence[str]) -> tuple[Judgment, ...]:
    """A result's outcomes as the judge's `Judgment`s, in `order` (the metrics' order): one per
    metric of the question, and one per judged step with every metric judged on that step (the
    step's F1 keys are computed from the step as judged when the record takes them)."""
    ordered = sorted(outcomes, key=lambda o: order.index(o.metric))
    judgments = [Judgment(None, (outcome.judgment,)) for outcome in ordered
                 if outcome.step is None and outcome.judgment is not None]
    on_steps: dict[int, list[MetricJudgment]] = {}
    for outcome in ordered:
        if outcome.step is not None and outcome.judgment is not None:
            on_steps.setdefault(outcome.step, []).append(outcome.judgment)
    judgments += [Judgment(number, tuple(found)) for number, found in on_steps.items()]
    return tuple(judgments)
