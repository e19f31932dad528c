"""Retrieval context recall and precision: retrieved contexts against reference contexts by string
similarity, with no LLM (RAGAS non-LLM context recall / precision, as graphrag-eval 5.x computes them
through langevals). Also what a retrieval step's contexts are (`parse_contexts`) and the ranking
arithmetic the LLM judge's retrieval-answer metrics share.

Pure functions: no I/O. Every score, ratio and similarity here lies in [0, 1] and higher is better.
Each function's docstring says what it returns when a denominator is zero.
`with_retrieval_context_scores` returns new result dicts and leaves its input untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.aggregates import sum_as_python312
from qareport.retrieval_metrics import average_precision
from qareport.retrieval_metrics import f1_score as f1_score  # its home: retrieval_metrics (no imports)

CONTEXT_SIMILARITY_THRESHOLD = 0.5
"""RAGAS's threshold for "this retrieved context is that reference context" (string similarity)."""


# --- ranking -------------------------------------------------------------------------------------


def average_precision_of_verdicts(verdicts: Sequence[bool]) -> float:
    """Average precision of ranked relevance verdicts, by the one formula of
    `retrieval_metrics.average_precision`: the relevant items are the positions judged relevant, so
    it is the mean of precision@k over those positions. 0.0 when nothing is relevant (or nothing was
    ranked), as RAGAS gives.

    >>> round(average_precision_of_verdicts([True, False, True]), 4)
    0.8333
    """
    return average_precision({rank for rank, verdict in enumerate(verdicts) if verdict}, range(len(verdicts)))


RAGAS_EPSILON = 1e-10
"""What RAGAS adds to the number of relevant contexts before dividing by it (its guard against
dividing by zero), so that graphrag-eval 5.x's context precision of a perfect ranking is
0.9999999999, not 1.0."""


def ragas_average_precision(verdicts: Sequence[bool]) -> float:
    """Average precision of ranked relevance verdicts with RAGAS's arithmetic, to the last bit:
    the sum of precision@k over the relevant ranks, divided by (number of relevant ranks + 1e-10),
    the sum taken as Python 3.12 takes it (graphrag-eval 5.x runs on 3.12). 0.0 when nothing is
    relevant (or nothing was ranked).

    >>> ragas_average_precision([True])
    0.9999999999
    """
    flags = [1 if verdict else 0 for verdict in verdicts]
    hits = 0
    terms = []
    for rank, flag in enumerate(flags, start=1):
        hits += flag
        terms.append(hits / rank * flag)
    return sum_as_python312(terms) / (sum(flags) + RAGAS_EPSILON)


# --- retrieval context (string distance, no LLM) -------------------------------------------------


def levenshtein_distance(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, each costing 1).

    Myers' / Hyyrö's bit-parallel algorithm over Python integers: one pass over the longer string
    with a bit vector as long as the shorter one, fast enough for contexts of thousands of characters.
    """
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    match_masks: dict[str, int] = {}
    for i, char in enumerate(b):
        match_masks[char] = match_masks.get(char, 0) | (1 << i)
    full = (1 << m) - 1
    high_bit = 1 << (m - 1)
    vp, vn, score = full, 0, m
    for char in a:
        eq = match_masks.get(char, 0)
        xv = eq | vn
        xh = (((eq & vp) + vp) ^ vp) | eq
        hp = vn | (~(xh | vp) & full)
        hn = vp & xh
        if hp & high_bit:
            score += 1
        elif hn & high_bit:
            score -= 1
        hp = ((hp << 1) | 1) & full
        hn = (hn << 1) & full
        vp = hn | (~(xv | hp) & full)
        vn = hp & xv
    return score


def string_similarity(a: str, b: str) -> float:
    """1 - Levenshtein distance / length of the longer string; 1.0 for two empty strings
    (rapidfuzz's `Levenshtein.normalized_similarity`, which RAGAS uses)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - levenshtein_distance(a, b) / longest


def _similarity_near(a: str, b: str, threshold: float) -> float | None:
    """`string_similarity(a, b)`, or None when it is surely below `threshold`: the edit distance
    is at least the difference in length, so the similarity is at most shorter / longer (with a
    margin far above rounding error)."""
    if a == b:
        return 1.0
    shorter, longer = sorted((len(a), len(b)))
    if shorter < (threshold - 1e-9) * longer:
        return None
    return string_similarity(a, b)


@dataclass(frozen=True, slots=True)
class ContextOverlap:
    """Retrieved contexts against reference contexts, by string similarity.

    `found` says for each reference context whether some retrieved context is similar enough;
    `relevant` says for each retrieved context (in rank order) whether it is similar enough to some
    reference context.
    """

    found: tuple[bool, ...]
    relevant: tuple[bool, ...]
    recall: float
    precision: float
    recall_reason: str
    precision_reason: str


def context_overlap(
    reference_texts: Sequence[str],
    retrieved_texts: Sequence[str],
    *,
    threshold: float = CONTEXT_SIMILARITY_THRESHOLD,
) -> ContextOverlap:
    """RAGAS non-LLM context recall and precision, with langevals' rules for empty lists.

    - recall: share of reference contexts whose best similarity to a retrieved context is
      > `threshold`; 1.0 when no context is expected, 0.0 when some are expected and none retrieved.
    - precision: average precision of the retrieved contexts whose best similarity to a reference
      context is >= `threshold` (RAGAS uses > for recall and >= for precision), with RAGAS's
      arithmetic (`ragas_average_precision`: a perfect ranking gives 0.9999999999, as in
      graphrag-eval 5.x); 1.0 when nothing was expected nor retrieved, 0.0 when only one side is empty.
    """
    n_ref, n_ret = len(reference_texts), len(retrieved_texts)
    if n_ref == 0 or n_ret == 0:
        recall = 1.0 if n_ref == 0 else 0.0
        precision = 1.0 if n_ref == 0 and n_ret == 0 else 0.0
        if n_ref == 0 and n_ret == 0:
            why = "no contexts expected and none retrieved"
        elif n_ref == 0:
            why = f"no contexts expected, {n_ret} retrieved"
        else:
            why = f"{n_ref} contexts expected, none retrieved"
        return ContextOverlap((False,) * n_ref, (False,) * n_ret, recall, precision, why, why)
    # found[i]: some similarity of reference i is > threshold; relevant[j]: some similarity of
    # retrieved j is >= threshold. Only these verdicts count, so a pair that cannot change one is
    # not measured: both already true, or lengths too far apart to reach the threshold.
    found_list, relevant_list = [False] * n_ref, [False] * n_ret
    for i, reference in enumerate(reference_texts):
        for j, retrieved in enumerate(retrieved_texts):
            if found_list[i] and relevant_list[j]:
                continue
            similarity = _similarity_near(reference, retrieved, threshold)
            if similarity is not None:
                found_list[i] = found_list[i] or similarity > threshold
                relevant_list[j] = relevant_list[j] or similarity >= threshold
    found, relevant = tuple(found_list), tuple(relevant_list)
    recall = sum(found) / n_ref
    precision = ragas_average_precision(relevant)
    recall_reason = (
        f"{sum(found)} of {n_ref} reference contexts found among the {n_ret} retrieved "
        f"(string similarity > {threshold:g})"
    )
    ranks = ", ".join(str(j + 1) for j, r in enumerate(relevant) if r) or "none"
    precision_reason = (
        f"{sum(relevant)} of {n_ret} retrieved contexts match a reference context "
        f"(string similarity >= {threshold:g}); relevant ranks: {ranks}"
    )
    return ContextOverlap(found, relevant, recall, precision, recall_reason, precision_reason)


# --- retrieval step outputs ----------------------------------------------------------------------


def parse_contexts(output: Any) -> list[dict[str, Any]]:
    """The contexts of a retrieval step's output: a JSON list of objects with a string `text`.

    Raises ValueError saying what was found otherwise.
    """
    if isinstance(output, str):
        try:
            value = json.loads(output)
        except ValueError as error:
            raise ValueError(f"retrieval output must be a JSON list of {{id, text}} (not JSON: {error})") from None
    else:
        value = output
    if not isinstance(value, list):
        raise ValueError(f"retrieval output must be a JSON list of {{id, text}} (got {type(value).__name__})")
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
            raise ValueError(
                f"retrieval output item {index} must be an object with a string 'text' (got {item!r:.80})"
            )
    return [dict(item) for item in value]


def retrieval_context_scores(
    reference_contexts: Sequence[Mapping[str, Any]], actual_contexts: Sequence[Mapping[str, Any]]
) -> dict[str, float | str]:
    """The `retrieval_context_*` keys for one matched retrieval step."""
    overlap = context_overlap(
        [c["text"] for c in reference_contexts], [c["text"] for c in actual_contexts]
    )
    f1 = f1_score(overlap.recall, overlap.precision)
    return {
        "retrieval_context_recall": overlap.recall,
        "retrieval_context_recall_reason": overlap.recall_reason,
        "retrieval_context_precision": overlap.precision,
        "retrieval_context_precision_reason": overlap.precision_reason,
        "retrieval_context_f1": f1 if f1 is not None else 0.0,
    }


def matched_reference_retrieval_steps(result: Mapping[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(reference step, actual step) pairs of matched retrieval steps of the last reference group.

    A reference step is matched when step matching set its `matches` to an actual step's id.
    """
    groups = result.get("reference_steps") or []
    if not groups or not isinstance(groups[-1], (list, tuple)):
        return []
    actual_by_id = {
        step.get("id"): step
        for step in result.get("actual_steps") or []
        if isinstance(step, dict) and step.get("id") is not None
    }
    pairs = []
    for reference_step in groups[-1]:
        if not isinstance(reference_step, dict) or reference_step.get("name") != "retrieval":
            continue
        actual = actual_by_id.get(reference_step.get("matches"))
        if actual is not None and actual.get("name") == "retrieval":
            pairs.append((reference_step, actual))
    return pairs


def with_retrieval_context_scores(results: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of `results` whose matched actual retrieval steps carry the `retrieval_context_*` keys.

    Needs no LLM, so it runs with or without a judge. A step whose output is not a list of
    {id, text} gets `retrieval_context_recall_error` and `retrieval_context_precision_error` instead.
    A result with nothing to score is returned as a plain copy.
    """
    return [with_context_scores(result) for result in results]


def with_context_scores(result: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of one result (see `with_retrieval_context_scores`)."""
    scored = dict(result)
    if result.get("status") != "success":
        return scored
    keys_by_step: dict[int, dict[str, Any]] = {}
    notes: list[str] = []
    for reference_step, actual_step in matched_reference_retrieval_steps(result):
        try:
            reference_contexts = parse_contexts(reference_step.get("output"))
        except ValueError as error:
            message = f"reference step: {error}"
        else:
            try:
                actual_contexts = parse_contexts(actual_step.get("output"))
            except ValueError as error:
                message = f"actual step: {error}"
            else:
                keys_by_step[id(actual_step)] = retrieval_context_scores(reference_contexts, actual_contexts)
                continue
        keys_by_step[id(actual_step)] = {
            "retrieval_context_recall_error": message,
            "retrieval_context_precision_error": message,
        }
        # graphrag-eval 5.2 reads every context's text here, and stops: say so, as for its other stops
        notes.append(f"the retrieval call {actual_step.get('id')!r}: {message}, on which graphrag-eval 5.2 "
                     "stops; its steps score counts the ids, and its retrieval context metrics are not evaluated")
    if notes:
        from qareport.qa import order_result_keys

        scored["steps_note"] = "; ".join([*filter(None, [result.get("steps_note")]), *notes])
        scored = order_result_keys(scored)
    if keys_by_step:
        scored["actual_steps"] = [
            {**step, **keys_by_step[id(step)]} if id(step) in keys_by_step else step
            for step in result["actual_steps"]
        ]
    return scored
