"""The arithmetic behind the LLM-judged metrics, and the string-distance retrieval-context metrics.

Pure functions: no I/O, no openai. Every score, ratio and similarity here lies in [0, 1] and higher
is better. Each function's docstring says what it returns when a denominator is zero.

- Answer correctness (graphrag-eval): the judge counts claims in the reference answer, in the actual
  answer and the matching ones; recall = matching / reference, precision = matching / actual, F1 is
  their harmonic mean (0.0 when both are 0.0).
- Answer relevance (RAGAS response relevancy): questions generated from the answer are compared with
  the real question by cosine similarity of their embeddings; the mean similarity counts only if at
  least one generated question is committal, else the score is 0.0.
- Retrieval answer recall / precision (RAGAS LLM context recall / context precision): the fraction of
  reference-answer statements that the retrieved contexts support, and the average precision of the
  per-context "useful" verdicts.
- Retrieval context recall / precision (RAGAS non-LLM context recall / precision, as graphrag-eval
  5.x computes them through langevals): contexts are compared by Levenshtein similarity, no LLM.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONTEXT_SIMILARITY_THRESHOLD = 0.5
"""RAGAS's threshold for "this retrieved context is that reference context" (string similarity)."""


# --- answer correctness --------------------------------------------------------------------------


def claim_count_problem(reference: int, actual: int, matching: int) -> str | None:
    """Why three claim counts cannot all be true at once, or None when they can.

    graphrag-eval's checks: at least one claim on each side, and the matching claims are no more
    than the claims on either side.
    """
    if reference < 1:
        return f"the reference answer must have at least 1 claim (got {reference})"
    if actual < 1:
        return f"the actual answer must have at least 1 claim (got {actual})"
    if matching < 0:
        return f"matching claims cannot be negative (got {matching})"
    if matching > reference:
        return f"matching claims ({matching}) exceed the reference answer's claims ({reference})"
    if matching > actual:
        return f"matching claims ({matching}) exceed the actual answer's claims ({actual})"
    return None


def f1_score(recall: float | None, precision: float | None) -> float | None:
    """Harmonic mean of recall and precision; 0.0 when both are 0.0, None when either is None."""
    if recall is None or precision is None:
        return None
    if recall == 0.0 and precision == 0.0:
        return 0.0
    return 2 * recall * precision / (recall + precision)


def claim_scores(reference: int, actual: int, matching: int) -> tuple[float, float, float]:
    """(recall, precision, F1) of consistent claim counts (see `claim_count_problem`).

    recall = matching / reference and precision = matching / actual; both denominators are at least
    1 for consistent counts, so neither ratio is ever undefined here.
    """
    problem = claim_count_problem(reference, actual, matching)
    if problem:
        raise ValueError(problem)
    recall = matching / reference
    precision = matching / actual
    f1 = f1_score(recall, precision)
    assert f1 is not None
    return recall, precision, f1


# --- answer relevance ----------------------------------------------------------------------------


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between two vectors; 0.0 when either has zero length.

    Can be negative for unrelated embeddings; RAGAS does not clip it, and neither does qareport.
    """
    if len(a) != len(b):
        raise ValueError(f"vectors must have the same length (got {len(a)} and {len(b)})")
    dot = math.fsum(x * y for x, y in zip(a, b))
    norm_a = math.sqrt(math.fsum(x * x for x in a))
    norm_b = math.sqrt(math.fsum(y * y for y in b))
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    return dot / (norm_a * norm_b)


def relevance_score(
    question_vector: Sequence[float],
    generated_vectors: Sequence[Sequence[float]],
    noncommittal: Sequence[bool],
) -> float:
    """RAGAS response relevancy: mean cosine similarity of the real question with each question
    generated from the answer, times 0 when every generated question is flagged noncommittal.

    Needs at least one generated question (the mean of nothing is undefined).
    """
    if not generated_vectors:
        raise ValueError("at least one generated question is needed")
    if len(noncommittal) != len(generated_vectors):
        raise ValueError("one noncommittal flag per generated question is needed")
    similarities = [cosine_similarity(question_vector, vector) for vector in generated_vectors]
    mean = math.fsum(similarities) / len(similarities)
    return mean * int(not all(noncommittal))


# --- retrieval answer (LLM verdicts) -------------------------------------------------------------


def attributed_fraction(attributed: Sequence[bool]) -> float:
    """Share of reference-answer statements the contexts support (RAGAS LLM context recall).

    Needs at least one statement: a reference answer always has one, so zero means the judge's
    output is unusable.
    """
    if not attributed:
        raise ValueError("at least one statement is needed")
    return sum(1 for a in attributed if a) / len(attributed)


def average_precision(verdicts: Sequence[bool]) -> float:
    """Average precision of ranked relevance verdicts: the mean, over the relevant positions k, of
    precision@k. 0.0 when nothing is relevant (or nothing was ranked), as RAGAS gives.

    >>> round(average_precision([True, False, True]), 4)
    0.8333
    """
    relevant_so_far = 0
    total = 0.0
    for rank, verdict in enumerate(verdicts, start=1):
        if verdict:
            relevant_so_far += 1
            total += relevant_so_far / rank
    return total / relevant_so_far if relevant_so_far else 0.0


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
      context is >= `threshold` (RAGAS uses > for recall and >= for precision); 1.0 when nothing was
      expected nor retrieved, 0.0 when only one side is empty.
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
    similarity = [[string_similarity(ref, ret) for ret in retrieved_texts] for ref in reference_texts]
    found = tuple(max(row) > threshold for row in similarity)
    relevant = tuple(
        max(similarity[i][j] for i in range(n_ref)) >= threshold for j in range(n_ret)
    )
    recall = sum(found) / n_ref
    precision = average_precision(relevant)
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
            raise ValueError(f"retrieval output must be a JSON list of {{id, text}} (not JSON: {error})")
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


def matched_reference_retrieval_steps(result: Mapping[str, Any]) -> list[tuple[dict, dict]]:
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


def add_retrieval_context_scores(results: Iterable[dict[str, Any]]) -> None:
    """Set the `retrieval_context_*` keys on every matched actual retrieval step, in place.

    Needs no LLM, so it runs with or without a judge; `Judge.judge_results` calls it too. A step
    whose output is not a list of {id, text} gets `retrieval_context_recall_error` and
    `retrieval_context_precision_error` instead.
    """
    for result in results:
        if result.get("status") != "success":
            continue
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
                    actual_step.update(retrieval_context_scores(reference_contexts, actual_contexts))
                    continue
            actual_step["retrieval_context_recall_error"] = message
            actual_step["retrieval_context_precision_error"] = message


def f1_keys(values: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """`{prefix}_f1` and `{prefix}_f1_cost` from the recall and precision keys, when both exist
    (graphrag-eval's rule); the cost only when both costs are known."""
    f1 = f1_score(values.get(f"{prefix}_recall"), values.get(f"{prefix}_precision"))
    if f1 is None:
        return {}
    keys = {f"{prefix}_f1": f1}
    recall_cost = values.get(f"{prefix}_recall_cost")
    precision_cost = values.get(f"{prefix}_precision_cost")
    if recall_cost is not None and precision_cost is not None:
        keys[f"{prefix}_f1_cost"] = recall_cost + precision_cost
    return keys
