"""Answer relevance's embeddings: the generated questions of several cases in one request,
a failed batch split and asked again, the vectors cached and shared out.
"""

from __future__ import annotations

from qareport.errors import NOT_JUDGED, JudgeAborted, JudgeCallFailed, MetricFailed
from qareport.judge import answer_relevance
from qareport.judge.answer_relevance import decode_vectors, encode_vectors
from qareport.judge.checks import check_embeddings
from qareport.judge.cost import Budget, BudgetReached
from qareport.judge.outcomes import Outcome
from qareport.judge.planning import Planning
from qareport.judge.usage import Ledger
from qareport.judged_values import Cost, MetricJudgment

EMBEDDING_BATCH_INPUTS = 256


EMBEDDING_BATCH_CHARS = 400_000



class RelevanceEmbeddings(Planning):
    """The part of `runner.Judge` that asks for answer relevance's embeddings."""

    # -- answer relevance's embeddings

    def _embeddings_from_cache(self, outcome: Outcome) -> bool:
        assert outcome.waiting is not None
        vectors = decode_vectors(self._client.cached_value(outcome.waiting.key), len(outcome.waiting.inputs))
        if vectors is None:
            return False
        outcome.ledger.cached_calls += 1
        _complete_relevance(outcome, vectors)
        return True

    def _embed_batch(self, batch: list[Outcome], *, tries_left: int = 1) -> tuple[Ledger, list[Outcome]]:
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
            outcome.error, outcome.not_judged, outcome.judgment = False, False, None
            outcome.waiting = outcome.retry_waiting
        halves = [batch] if len(batch) == 1 else [batch[:len(batch) // 2], batch[len(batch) // 2:]]
        done: list[Outcome] = []
        for half in halves:
            half_ledger, half_finished = self._embed_batch(half, tries_left=tries_left - (len(batch) == 1))
            ledger.merge(half_ledger)
            done.extend(half_finished)
        return ledger, done

    def _embed_once(self, batch: list[Outcome]) -> tuple[Ledger, list[Outcome]]:
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
                fail_relevance(outcome, f"{NOT_JUDGED if called else ''}embeddings: {error}", not_judged=called)
            return ledger, batch
        except JudgeAborted:
            for outcome in batch:
                fail_relevance(outcome, self._stopped(), not_judged=True)
            return ledger, batch
        except BudgetReached as error:
            for outcome in batch:
                fail_relevance(outcome, self._over_budget(error), not_judged=True)
            return ledger, batch
        except (ArithmeticError, LookupError, TypeError, ValueError) as error:  # a malformed reply
            for outcome in batch:
                fail_relevance(outcome, f"embeddings: unusable reply ({type(error).__name__}: {error})")
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


def _complete_relevance(outcome: Outcome, vectors: list[list[float]]) -> None:
    assert outcome.waiting is not None
    try:
        relevance = answer_relevance.relevance_of(outcome.waiting, vectors)
    except (MetricFailed, ArithmeticError, ValueError) as error:
        fail_relevance(outcome, f"embeddings: {error}")
        return
    outcome.judgment = MetricJudgment(answer_relevance.METRIC, relevance, cost=Cost(outcome.ledger.cost_usd))
    outcome.waiting = None



def fail_relevance(outcome: Outcome, message: str, *, not_judged: bool = False) -> None:
    outcome.judgment = MetricJudgment(answer_relevance.METRIC, error=message, cost=Cost(outcome.ledger.cost_usd))
    outcome.error = True
    outcome.not_judged = not_judged
    outcome.waiting = None



def take_batch(waiting: list[Outcome]) -> tuple[list[Outcome], list[Outcome]]:
    batch: list[Outcome] = []
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
