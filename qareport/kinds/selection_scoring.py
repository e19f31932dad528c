"""Scoring an indicator selection: terms pooled per dimension over a turn's datasets, matched by id
and name (or by id alone), and each dimension's TP / FP / FN with its precision and recall."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from qareport.evaluation_options import DEFAULT_ACCEPTABLE_EXTRAS
from qareport.kinds.selection_grades import grade_turn
from qareport.records import (
    DEFAULT_TERM_MATCHING,
    DatasetSelection,
    DimensionScore,
    IndicatorScore,
    Term,
    TermMatching,
    TermVerdict,
)
from qareport.set_metrics import SetScore


def pool_dimensions(datasets: Iterable[DatasetSelection]) -> dict[str, list[Term]]:
    """Terms per dimension name over all datasets, in order of first appearance, without repeats."""
    pooled: dict[str, dict[Term, None]] = {}
    for dataset in datasets:
        for dimension in dataset.dimensions:
            pooled.setdefault(dimension.dimension_name, {}).update(dict.fromkeys(dimension.values))
    return {name: list(terms) for name, terms in pooled.items()}


NAME_ONLY, ID_ONLY = "name only", "id only"


def _term_key(term: Term, match_terms_by: TermMatching) -> Term | str | tuple[str, str]:
    """What makes two terms the same term in one dimension's list (for removing repeats)."""
    if match_terms_by == TermMatching.ID and term.id:
        return term.id
    return term if term.id else ("name", term.name)


def _partial_match(target: Term, selected: Term) -> str | None:
    """How two terms that are not equal still match when one of them gives only a name or only an
    id: by what that one gives (`NAME_ONLY`, `ID_ONLY`); None when they do not."""
    if (not target.id or not selected.id) and target.name and target.name == selected.name:
        return NAME_ONLY
    if (not target.name or not selected.name) and target.id and target.id == selected.id:
        return ID_ONLY
    return None


def match_terms(
    target: Iterable[Term], selected: Iterable[Term], *, match_terms_by: TermMatching
) -> tuple[list[tuple[Term, Term, str | None]], list[Term], list[Term]]:
    """(target, selected, how) pairs, then the target terms and the selected terms left unmatched.

    A term is matched by id and name (or by id alone with `match_terms_by=TermMatching.ID`); a term that gives only a
    name equals the term with that name, one that gives only an id the term with that id (`how`
    says which; None for the ordinary rule). Equal terms are paired first, then the partial ones, in
    the order given, each term at most once."""
    targets = list({_term_key(t, match_terms_by): t for t in target}.values())
    remaining = {_term_key(s, match_terms_by): s for s in selected}
    order = {id(term): index for index, term in enumerate(remaining.values())}
    pairs: list[tuple[Term, Term, str | None]] = []
    later: list[Term] = []
    for term in targets:
        key = _term_key(term, match_terms_by)
        found = remaining.pop(key, None)
        if found is None:
            later.append(term)
        else:
            pairs.append((term, found, None if term.id and term.name else (ID_ONLY if term.id else NAME_ONLY)))
    missed = []
    for term in later:
        for key, candidate in remaining.items():
            how = _partial_match(term, candidate)
            if how is not None:
                del remaining[key]
                pairs.append((term, candidate, how))
                break
        else:
            missed.append(term)
    pairs.sort(key=lambda pair: order[id(pair[1])])  # true positives in the system's order, as always
    return pairs, missed, list(remaining.values())


def score_dimension(
    dimension_name: str, target: list[Term], selected: list[Term], *, match_terms_by: TermMatching
) -> DimensionScore:
    """Score one dimension. An empty target makes it a dimension not in target: all FP."""
    pairs, missed, extra = match_terms(target, selected, match_terms_by=match_terms_by)
    overlap = SetScore(tuple(pairs), tuple(extra), tuple(missed))
    if not target:
        return DimensionScore(
            dimension_name,
            true_positives=(),
            false_positives=tuple(TermVerdict(term, "not in target") for term in extra),
            false_negatives=(),
            precision=0.0,
            recall=0.0,
            in_target=False,
        )
    return DimensionScore(
        dimension_name,
        true_positives=tuple(_true_positive(t, s, how) for t, s, how in pairs),
        false_positives=tuple(TermVerdict(term, "FP") for term in extra),
        false_negatives=tuple(TermVerdict(term, "FN") for term in missed),
        precision=overlap.precision,
        recall=overlap.recall,
    )


def _true_positive(target: Term, selected: Term, how: str | None) -> TermVerdict:
    """A matched pair: the target's term, completed with what only the system gave (the id of a
    name-only target, the name of an id-only one), and how it was matched."""
    if how is None:
        return TermVerdict(target, "TP", selected_name=selected.name)
    shown = Term(target.id or selected.id, target.name or selected.name)
    label = selected.name if target.name and selected.name and selected.name != target.name else None
    return TermVerdict(shown, "TP", selected_name=label, matched_by=how)


def score_indicator_selection(
    target: Iterable[DatasetSelection],
    selected: Iterable[DatasetSelection] | None,
    *,
    match_terms_by: TermMatching = DEFAULT_TERM_MATCHING,
    acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS,
) -> IndicatorScore:
    """Score one turn (SPEC section 2) and grade it (`grade_turn`).

    Macro precision and recall are the means over the target dimensions (those with at least one
    target term). A turn whose target has no dimension scores recall 1.0, and precision 1.0 if
    nothing was selected, else 0.0.
    """
    target = tuple(target)
    selected = tuple(selected or ())
    target_terms = {name: terms for name, terms in pool_dimensions(target).items() if terms}
    selected_terms = pool_dimensions(selected)
    dimensions = tuple(
        score_dimension(name, terms, selected_terms.get(name, []), match_terms_by=match_terms_by)
        for name, terms in target_terms.items()
    )
    not_in_target = tuple(
        score_dimension(name, [], terms, match_terms_by=match_terms_by)
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
    score = IndicatorScore(
        dimensions=dimensions,
        not_in_target=not_in_target,
        macro_precision=macro_precision,
        macro_recall=macro_recall,
        target_datasets=tuple(dict.fromkeys(d.dataset_id for d in target if d.dataset_id)),
        selected_datasets=tuple(dict.fromkeys(d.dataset_id for d in selected if d.dataset_id)),
    )
    return replace(score, grade=grade_turn(score, acceptable_extras=acceptable_extras))
