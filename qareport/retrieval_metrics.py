"""Ranking metrics over document ids: how well a retrieval step found the relevant documents.

Every score in this module lies in [0, 1], and higher is better. When there is no relevant
document at all, a score is 0.0 (nothing can be recalled, and the step gets no credit).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence


def recall_at_k(
    relevant_ids: Sequence[Hashable], retrieved_ids: Sequence[Hashable], k: int | None = 10
) -> float:
    """Share of the first `k` relevant ids that appear among the first `k` retrieved ids.

    Both lists are cut at `k` (Python slicing, so `k=None` keeps them whole), as graphrag-eval 5.x
    does: the denominator is `len(relevant_ids[:k])`, duplicates included, and the numerator counts
    distinct ids found in both cuts. With no relevant id the recall is 0.0.

    >>> recall_at_k([1, 3, 5, 6], [1, 4, 3, 5, 7], k=5)
    0.75
    """
    relevant_cut = relevant_ids[:k]
    retrieved_cut = retrieved_ids[:k]
    if not relevant_cut:
        return 0.0
    found = set(relevant_cut) & set(retrieved_cut)
    return len(found) / len(relevant_cut)


def average_precision(relevant_ids: Iterable[Hashable], retrieved_ids: Iterable[Hashable]) -> float:
    """Average precision of one ranked list: the sum of the precision at the rank of each relevant
    retrieved id, divided by the number of relevant ids.

    A relevant id retrieved twice counts once (at its first rank), so the score stays within
    [0, 1]. graphrag-eval's code counts it again; its README example (0.8056) divides by the number
    of hits instead and contradicts its own formula, which this function follows:

    >>> round(average_precision({1, 3, 5, 6}, [1, 4, 3, 5, 7]), 6)
    0.604167
    """
    relevant = set(relevant_ids)
    if not relevant:
        return 0.0
    seen: set[Hashable] = set()
    precision_sum = 0.0
    for rank, doc_id in enumerate(retrieved_ids, start=1):
        if doc_id in relevant and doc_id not in seen:
            seen.add(doc_id)
            precision_sum += len(seen) / rank
    return precision_sum / len(relevant)


def f1_score(recall: float | None, precision: float | None) -> float | None:
    """Harmonic mean of recall and precision; 0.0 when both are 0.0, None when either is None."""
    if recall is None or precision is None:
        return None
    if recall == 0.0 and precision == 0.0:
        return 0.0
    return 2 * recall * precision / (recall + precision)
