"""Retrieval: recall@k of the documents an actual `retrieval` step found, by document id.

Applies (graphrag-eval's rules):
  5.x  both steps are named `retrieval` and the reference output is neither a SPARQL JSON result
       nor application/json (those rules come first in 5.x);
  6.x  both steps are named `retrieval` and the reference step has a non-empty output.

The outputs are JSON lists of documents, each with an `id`; `k` comes from the actual step's
`args`. The score is `recall_at_k` (the reference ids found among the first k retrieved, over the
first k reference ids), so a partial retrieval is a partial match. Outputs that are not such lists,
and a missing or non-integer `k`, are steps errors (graphrag-eval raises there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.parsed_outputs import parsed_json
from qareport.kinds.steps.step_kind import (
    JSON,
    MATCH,
    NO_MATCH,
    SPARQL_RESULTS_JSON,
    Comparison,
    Step,
    StepPair,
    StepsError,
    actual_output,
)
from qareport.retrieval_metrics import recall_at_k

RETRIEVAL = "retrieval"
SHOWN_IDS = 3


class Retrieval:
    name = "retrieval"

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        if not reference["name"] == actual["name"] == RETRIEVAL:
            return False
        if semantics == 5:
            return reference.get("output_media_type") not in (SPARQL_RESULTS_JSON, JSON)
        return bool(reference.get("output"))

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        reference_ids = context_ids(pair.reference.get("output"), pair.reference_label, "reference")
        actual_ids = context_ids(actual_output(pair), pair.actual_label, "actual")
        args = pair.actual.get("args")
        if not isinstance(args, Mapping) or "k" not in args:
            raise StepsError(
                f"{pair.actual_label} has no 'k' in its 'args'; record how many documents the retrieval "
                "asked for."
            )
        k = args["k"]
        try:
            score = recall_at_k(reference_ids, actual_ids, k)
        except TypeError:
            raise StepsError(
                f"{pair.actual_label} has 'k' {k!r} in its 'args', or document ids that are not "
                "strings or numbers; 'k' must be an integer."
            ) from None
        if score == 1.0:
            return MATCH
        if not explain:
            return NO_MATCH if score == 0.0 else Comparison(score)
        return Comparison(score, describe_recall(reference_ids, actual_ids, k, score))


def context_ids(output: Any, label: str, side: str) -> list[Any]:
    """The `id` of each retrieved document of a retrieval step's JSON output."""
    try:
        documents = parsed_json(output)
    except (TypeError, ValueError, RecursionError) as error:
        raise StepsError(
            f"{label} has an 'output' that is not JSON ({error}); a retrieval step's output must be a "
            "JSON list of documents, each with an 'id'."
        ) from None
    # graphrag-eval iterates whatever the JSON is (so an empty object or string gives no ids)
    if isinstance(documents, (list, dict, str)):
        ids = []
        for document in documents:  # a loop rather than all() over a generator and a comprehension
            if not isinstance(document, dict) or "id" not in document:
                break
            ids.append(document["id"])
        else:
            return ids
    raise StepsError(
        f"{label} has an 'output' that is not a JSON list of documents, each with an 'id'; fix the "
        f"{side} retrieval output."
    )


def describe_recall(reference_ids: list[Any], actual_ids: list[Any], k: Any, score: float) -> str:
    """"recall@5 0.50: missed doc/17, doc/18" (the first few relevant ids not retrieved)."""
    retrieved = set(actual_ids[:k])
    missed = [doc for doc in dict.fromkeys(reference_ids[:k]) if doc not in retrieved]
    shown = ", ".join(short_id(doc) for doc in missed[:SHOWN_IDS])
    more = f" and {len(missed) - SHOWN_IDS} more" if len(missed) > SHOWN_IDS else ""
    recall = "recall" if k is None else f"recall@{k}"
    return f"{recall} {score:.2f}: missed {shown}{more}" if missed else f"{recall} {score:.2f}"


def short_id(document_id: Any) -> str:
    """A document id an analyst can read in a cell: a long path or URI keeps its last two parts
    ("…/doc/17"), other long ids their end."""
    text = str(document_id)
    if len(text) <= 30:
        return text
    parts = text.rstrip("/").split("/")
    tail = "/".join(parts[-2:]) if len(parts) > 2 else text[-29:]
    return "…" + ("/" if len(parts) > 2 else "") + tail[-40:]


RETRIEVAL_KIND = Retrieval()
