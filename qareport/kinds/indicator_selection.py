"""Indicator selection as a kind of target: per-dimension TP / FP / FN, precision, recall, macro
averages, the details cell, the Details rows and the reason a case lost points.

Terms of all datasets of one turn are pooled per dimension. A term is identified by its id and
name together (the methodology's rule) or, with `match_by="id"`, by its id alone, in which case a
true positive keeps the system's label so the report can show where labels differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from qareport.kinds import Column, DetailRow, Kind, Metric
from qareport.records import (
    CaseResult,
    DatasetSelection,
    DimensionScore,
    IndicatorScore,
    Term,
    TermVerdict,
    TestCase,
    TurnOutput,
    TurnResult,
)
from qareport.set_metrics import score_sets
from qareport.templating import template_environment

MatchBy = Literal["id_and_name", "id"]
DETAILS_TEMPLATE = "indicator_selection_details.txt"


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


# --- the details cell ----------------------------------------------------------------------------


def _term(verdict: TermVerdict) -> dict[str, Any]:
    return {
        "id": verdict.term.id,
        "name": verdict.term.name,
        "selected_name": verdict.selected_name,
        "label_differs": verdict.label_differs,
        "verdict": verdict.verdict,
    }


def _dimension(score: DimensionScore) -> dict[str, Any]:
    return {
        "name": score.dimension_name,
        "recall": score.recall,
        "precision": score.precision,
        "true_positives": [_term(t) for t in score.true_positives],
        "false_negatives": [_term(t) for t in score.false_negatives],
        "false_positives": [_term(t) for t in score.false_positives],
    }


def _turn(turn: TurnResult, indicator: IndicatorScore) -> dict[str, Any]:
    return {
        "number": turn.number,
        "user_message": turn.user_message,
        "dimensions": [_dimension(d) for d in indicator.dimensions],
        "not_in_target": [_dimension(d) for d in indicator.not_in_target],
        "no_target_dimensions": not indicator.dimensions,
        "recall": indicator.macro_recall,
        "precision": indicator.macro_precision,
    }


def render_indicator_details(result: CaseResult, *, templates_dir: str | None = None) -> str:
    """The "indicator selection details" cell of one case ('' when it has no such target)."""
    turns = [_turn(t, t.indicator) for t in result.turns if t.indicator is not None]
    if not turns:
        return ""
    template = template_environment(templates_dir).get_template(DETAILS_TEMPLATE)
    return template.render(turns=turns, multi_turn=len(result.case.turns) > 1).strip("\n")


# --- the Overview's other columns and the Details rows ---------------------------------------------


def _datasets(result: CaseResult) -> str | None:
    lines = []
    for turn in result.turns:
        if turn.indicator is None:
            continue
        target = ", ".join(turn.indicator.target_datasets) or "-"
        selected = ", ".join(turn.indicator.selected_datasets) or "-"
        flag = "  ⚠ mismatch" if turn.indicator.dataset_mismatch else ""
        prefix = f"Turn {turn.number}: " if len(result.case.turns) > 1 else ""
        lines.append(f"{prefix}target {target}; selected {selected}{flag}")
    return "\n".join(lines) or None


def _dimension_rows(dimension: DimensionScore) -> Iterator[tuple[Any, ...]]:
    for verdicts in (dimension.true_positives, dimension.false_negatives, dimension.false_positives):
        for verdict in verdicts:
            selected = verdict.selected_name if verdict.label_differs else None
            yield (dimension.dimension_name, verdict.verdict, verdict.term.id, verdict.term.name, selected)
    if dimension.in_target and not (dimension.true_positives or dimension.false_negatives):
        yield (dimension.dimension_name, None, None, None, None)


def _explain_turn(indicator: IndicatorScore) -> list[str]:
    parts = []
    selected_any = any(d.true_positives or d.false_positives for d in indicator.dimensions) or any(
        d.false_positives for d in indicator.not_in_target
    )
    if indicator.dimensions and not selected_any:
        return ["selected nothing"]
    for dimension in indicator.dimensions:
        said = []
        if dimension.false_negatives:
            said.append("missed " + ", ".join(v.term.id for v in dimension.false_negatives))
        if dimension.false_positives:
            said.append("extra " + ", ".join(v.term.id for v in dimension.false_positives))
        if said:
            parts.append(f"{dimension.dimension_name}: {', '.join(said)}")
    for dimension in indicator.not_in_target:
        parts.append(f"{dimension.dimension_name} (not in target): "
                     + ", ".join(v.term.id for v in dimension.false_positives))
    if indicator.dataset_mismatch:
        selected = ", ".join(indicator.selected_datasets) or "none"
        parts.append(f"dataset {selected}, expected {', '.join(indicator.target_datasets) or 'none'}")
    return parts


class IndicatorSelection(Kind):
    """Dimension terms a system selects for a data query, scored per dimension (SPEC section 2)."""

    builtin = True
    name = "indicator_selection"
    label = "indicator selection"
    metrics = (
        Metric("macro_precision", "macro precision", headline=True),
        Metric("macro_recall", "macro recall", headline=True),
    )

    def target_of(self, case: TestCase, turn_index: int) -> Any:
        return case.turns[turn_index].target.indicator_selection

    def output_of(self, output: TurnOutput | None) -> Any:
        return None if output is None else output.indicator_selection

    def score_of(self, result: CaseResult, turn_index: int) -> Any:
        return result.turns[turn_index].indicator if turn_index < len(result.turns) else None

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
        return {"macro_precision": result.macro_precision, "macro_recall": result.macro_recall}

    def explain(self, result: CaseResult) -> str | None:
        scored = [t for t in result.turns if t.indicator is not None]
        several = len(result.case.turns) > 1
        lines = []
        for turn in scored:
            assert turn.indicator is not None
            parts = _explain_turn(turn.indicator)
            if parts:
                lines.append((f"turn {turn.number}: " if several else "") + "; ".join(parts))
        return "; ".join(lines) or None

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        return [
            Column("macro recall", lambda r: r.macro_recall, 10, "score", score=True),
            Column("macro precision", lambda r: r.macro_precision, 10, "score", score=True),
            Column("indicator selection details",
                   lambda r: render_indicator_details(r, templates_dir=templates_dir), 60, wrap=True),
            Column("datasets", _datasets, 30, wrap=True),
        ]

    def details_rows(self, result: CaseResult) -> Iterator[DetailRow]:
        produced = False
        for turn in result.turns:
            if turn.indicator is None:
                continue
            for dimension in (*turn.indicator.dimensions, *turn.indicator.not_in_target):
                for row in _dimension_rows(dimension):
                    produced = True
                    yield (turn.number, *row)
        if not produced and self.has_target(result.case):
            why = result.error or ("no response" if result.status == "missing" else "nothing to score")
            yield (None, None, f"not scored ({result.status})", None, why, None)


INDICATOR_SELECTION = IndicatorSelection()
