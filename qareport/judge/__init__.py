"""The LLM judge: answer correctness, answer relevance and the retrieval-answer metrics.

    settings.py            JudgeSettings and how they are resolved; METRICS
    client.py              JudgeClient: cache, costs, chat replies checked, embeddings, batches
    json_depth.py          JSON from the judge parsed with its nesting bounded first
    transport.py           the openai SDK clients: the SDK's retries, retry counting, fatal errors, the key
                           scrubbed; with batch.py, the only modules that import openai
    replies.py             what the judge reads of a chat reply
    cache.py  prices.py    the SQLite reply cache; prices per model
    usage.py               calls, tokens, retries and costs (Ledger per unit, JudgeUsage per run)
    cost.py                tokens counted before sending (characters / 4), the budget, the estimate
    checks.py  prompts.py  what a reply must be; the Jinja2 prompt templates
    runner.py              Judge: the thread pool and its progress, the run's failure and usage
    workers.py             the pool's daemon threads: a stopped run does not wait for calls in flight
    deadline.py            each attempt of a request bounded as a whole, its reply's reading included
    planning.py            which judgments a result gets, each task asked once per repeat
    outcomes.py  repeats.py  what a judgment produced (typed), a result's Judgments; repeats combined
    relevance_embeddings.py  answer relevance's embeddings batched over cases
    estimate.py            what judging will take (`--estimate`), without a request
    batch_route.py         judging through the Batch API (`judge.batch`)
    batch.py               the rounds of a batch run: batches submitted, waited for, collected
    batch_replies.py       the replies a batch run's batches gave, which the client takes
    answer_correctness.py  answer_relevance.py  retrieval_answer.py   one module per metric

`Judge(settings).judge_results(results)` returns a `JudgeRun`: judged copies of graphrag-eval-shaped
result dicts (the inputs are not changed), the same as typed `Judgment`s per result, and the
usage. Each metric's judgment is typed (`qareport.judged_values.MetricJudgment`) from the reply's
check on; the keys it adds to the dicts are graphrag-eval's, named in `judged_values` only:

    answer correctness     answer_reference_claims_count, answer_actual_claims_count,
    (reference + actual)   answer_matching_claims_count, answer_correctness_reason, answer_recall,
                           answer_precision, answer_f1, answer_correctness_cost | answer_eval_error
    answer relevance       answer_relevance, answer_relevance_questions, answer_relevance_cost
    (actual answer)        | answer_relevance_error
    on each successful     retrieval_answer_recall (+ _reason, _cost | _error),
    actual `retrieval`     retrieval_answer_precision (+ _reason, _cost | _error),
    step                   retrieval_answer_f1, retrieval_answer_f1_cost

The retrieval-context metrics use no LLM and live in `qareport.retrieval_context`.
"""

from typing import TYPE_CHECKING, Any

from qareport.judge.settings import METRICS, JudgeSettings, default_cache_path
from qareport.judge.usage import JudgeUsage, MetricUsage

__all__ = [
    "METRICS",
    "Judge",
    "JudgeRun",
    "JudgeSettings",
    "JudgeUsage",
    "MetricUsage",
    "default_cache_path",
]


if TYPE_CHECKING:  # their real types for type checkers; at run time they load on first use
    from qareport.judge.runner import Judge as Judge
    from qareport.judge.runner import JudgeRun as JudgeRun
else:

    def __getattr__(name: str) -> Any:
        # the runner imports openai (slow); only a command that judges pays for it
        if name in ("Judge", "JudgeRun"):
            from qareport.judge import runner

            return getattr(runner, name)
        raise AttributeError(f"module 'qareport.judge' has no attribute {name!r}")
