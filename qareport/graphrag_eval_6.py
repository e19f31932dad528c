"""graphrag-eval 6.x's entry points, so that code written for it moves over by changing the import:

    from qareport.graphrag_eval_6 import run_evaluation, compute_aggregates

    results = await run_evaluation(qa_dataset, responses_dict, "config.yaml")   # or asyncio.run(...)
    aggregates = compute_aggregates(results, "config.yaml")

The steps are scored by 6.6's rules (every reference group, error responses too, the time-series
and IRI-discovery steps); the result dicts have 6.6's keys in its order (`answer_correctness_error`,
no `*_cost` keys); `compute_aggregates` aggregates by 6.6's rules, the custom metrics' outputs
included. With a configuration that has an `llm` section, qareport's judge (cached, concurrent,
retried) computes answer correctness (with the file's prompt, if any), answer relevance, the
retrieval answer and context metrics and the custom metrics; without one, no LLM is called, as in
graphrag-eval. `from qareport import run_evaluation` keeps graphrag-eval 5.x's behaviour.

Unlike graphrag-eval, the inputs are not changed: the results carry copies of the reference steps
with `matches`; pass `write_matches=True` to have `matches` written into `qa_dataset` as well.
Notes (options of the configuration that are ignored, LLM metrics skipped) go to the "qareport"
logger; nothing is printed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from qareport import qa
from qareport.aggregates import compute_aggregates as aggregate
from qareport.ge6_config import Ge6Config, read_ge6_config
from qareport.ge6_results import shaped_as_6

__all__ = ["compute_aggregates", "run_evaluation"]

_logger = logging.getLogger("qareport")



async def run_evaluation(
    qa_dataset: list[dict[str, Any]],
    responses_dict: dict[str, Any],
    config_file_path: str | Path | None = None,
    *,
    write_matches: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate every question of every template, by graphrag-eval 6.6's rules; one result dict per
    question, in dataset order. The work runs in a thread, so the event loop stays free."""
    config = read_ge6_config(config_file_path)
    return await asyncio.to_thread(_evaluate, qa_dataset, responses_dict, config, write_matches)


def compute_aggregates(samples: list[dict[str, Any]], config_file_path: str | Path | None = None) -> dict[str, Any]:
    """Per-template, micro and macro aggregates by graphrag-eval 6.6's rules, the outputs of the
    configuration's custom metrics among the aggregated metrics."""
    config = read_ge6_config(config_file_path)
    return aggregate(samples, semantics=6, custom_metrics=config.custom_metric_keys)


def _evaluate(qa_dataset: list[dict[str, Any]], responses: dict[str, Any], config: Ge6Config,
              write_matches: bool) -> list[dict[str, Any]]:
    results = qa.run_evaluation(qa_dataset, responses, semantics=6, write_matches=write_matches)
    for line in config.ignored:
        _logger.warning("%s", line)
    if config.generation is not None:
        results = _judged(results, config)
    return [shaped_as_6(result, config) for result in results]


def _judged(results: list[dict[str, Any]], config: Ge6Config) -> list[dict[str, Any]]:
    from qareport.judge.runner import Judge
    from qareport.settings import resolve_ge6_judge_settings

    settings, reason = resolve_ge6_judge_settings(config, options={}, config={}, environ=os.environ, semantics=6)
    if settings is None:
        _logger.warning("LLM metrics skipped: %s", reason)
        return results
    with Judge(settings) as judge:
        judged: list[dict[str, Any]] = judge.judge_results(results).results
        return judged
