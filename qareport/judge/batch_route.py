"""The batch route (`judge.batch`): every reply the judgments need asked from the Batch API first,
then the judging runs as usual with the client taking the replies from the batches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from functools import partial
from typing import Any

from qareport.errors import JudgeAborted, MetricFailed
from qareport.judge.answer_relevance import decode_vectors
from qareport.judge.batch import BatchJudging
from qareport.judge.planning import Planning
from qareport.judge.usage import Ledger
from qareport.progress import OnProgress


class BatchRoute(Planning):
    """The part of `runner.Judge` that judges in batches."""

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
        (`batch_replies.Deferred`); the outcomes are thrown away. Answer relevance's embeddings are
        one request per case in a batch run."""
        for _, item in self._tasks(results, chosen):
            outcome = item()
            generated = outcome.waiting
            if generated is not None and decode_vectors(self._client.cached_value(generated.key),
                                                        len(generated.inputs)) is None:
                with suppress(JudgeAborted, MetricFailed):
                    self._client.embed(list(generated.inputs), Ledger())
