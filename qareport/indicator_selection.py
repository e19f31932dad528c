"""The indicator-selection evaluator: per-dimension TP / FP / FN, precision, recall, macro averages.

Terms of all datasets of one turn are pooled per dimension. A term is identified by its id and
name together (the methodology's rule) or, with `match_by="id"`, by its id alone, in which case a
true positive keeps the system's label so the report can show where labels differ.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from qareport.records import DatasetSelection, DimensionScore, IndicatorScore, Term, TermVerdict
from qareport.set_metrics import score_sets

MatchBy = Literal["id_and_name", "id"]
MATCH_BY_CHOICES: tuple[MatchBy, ...] = ("id_and_name", "id")


def pool_dimensions(datasets: Iterable[DatasetSelection]) -> dict[str, list[Term]]:
    """Terms per dimension name over all datasets, in order of first appearance, without repeats."""
    pooled: dict[str, dict[Term, None]] = {}
    for dataset in datasets:
        for dimension in dataset.dimensions:
            pooled.setdefault(dimension.dimension_name, {}).update(dict.fromkeys(dimension.values))
    return {name: list(terms) for name, terms in pooled.items()}


def _term_key(term: Term, match_by: MatchBy) -> Term | str:
    return term.id if match_by == "id" else term


def score_dimension(
    dimension_name: str, target: list[Term], selected: list[Term], *, match_by: MatchBy
) -> DimensionScore:
    """Score one dimension. An empty target makes it a dimension not in target: all FP."""
    target_by_key = {_term_key(t, match_by): t for t in target}
    selected_by_key = {_term_key(t, match_by): t for t in selected}
    overlap = score_sets(target_by_key, selected_by_key)
    if not target_by_key:
        return DimensionScore(
            dimension_name,
            true_positives=(),
            false_positives=tuple(TermVerdict(selected_by_key[k], "not in target") for k in overlap.false_positives),
            false_negatives=(),
            precision=0.0,
            recall=0.0,
            in_target=False,
        )
    return DimensionScore(
        dimension_name,
        true_positives=tuple(
            TermVerdict(target_by_key[k], "TP", selected_name=selected_by_key[k].name)
            for k in overlap.true_positives
        ),
        false_positives=tuple(TermVerdict(selected_by_key[k], "FP") for k in overlap.false_positives),
        false_negatives=tuple(TermVerdict(target_by_key[k], "FN") for k in overlap.false_negatives),
        precision=overlap.precision,
        recall=overlap.recall,
    )


def score_indicator_selection(
    target: Iterable[DatasetSelection],
    selected: Iterable[DatasetSelection] | None,
    *,
    match_by: MatchBy = "id_and_name",
) -> IndicatorScore:
    """Score one turn (SPEC section 2).

    Macro precision and recall are the means over the target dimensions (those with at least one
    target term). A turn whose target has no dimension scores recall 1.0, and precision 1.0 if
    nothing was selected, else 0.0.
    """
    target = tuple(target)
    selected = tuple(selected or ())
    target_terms = {name: terms for name, terms in pool_dimensions(target).items() if terms}
    selected_terms = pool_dimensions(selected)
    dimensions = tuple(
        score_dimension(name, terms, selected_terms.get(name, []), match_by=match_by)
        for name, terms in target_terms.items()
    )
    not_in_target = tuple(
        score_dimension(name, [], terms, match_by=match_by)
        for name, terms in selected_terms.items()
        if name not in target_terms and terms
    )
    if dimensions:
        macro_precision = sum(d.precision for d in dimensions) / len(dimensions)
        macro_recall = sum(d.recall for d in dimensions) / len(dimensions)
    else:
        anything_selected = any(selected_terms.values())
        macro_recall = 1.0
        macro_precision = 0.0 if anything_selected else 1.0
    return IndicatorScore(
        dimensions=dimensions,
        not_in_target=not_in_target,
        macro_precision=macro_precision,
        macro_recall=macro_recall,
        target_datasets=tuple(dict.fromkeys(d.dataset_id for d in target if d.dataset_id)),
        selected_datasets=tuple(dict.fromkeys(d.dataset_id for d in selected if d.dataset_id)),
    )
