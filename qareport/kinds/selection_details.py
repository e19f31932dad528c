"""How an indicator selection is shown: the details cell (rendered from its template), the Overview's
datasets and per-dimension columns, the Details sheet's rows and the one-line reason a turn lost
points."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from statistics import fmean
from typing import Any

from qareport.id_text import visible
from qareport.kinds.kind_records import Column, DetailRow
from qareport.kinds.selection_parts import indicator_score, target_selection
from qareport.records import (
    CaseResult,
    DatasetSelection,
    DimensionScore,
    IndicatorScore,
    Term,
    TermVerdict,
    TurnResult,
)
from qareport.templating import template_environment

DETAILS_TEMPLATE = "indicator_selection_details.txt"


def _term(verdict: TermVerdict) -> dict[str, Any]:
    return {  # characters that cannot be seen are written as their code points (see `id_text`)
        "id": visible(verdict.term.id),
        "name": visible(verdict.term.name),
        "selected_name": None if verdict.selected_name is None else visible(verdict.selected_name),
        "label_differs": verdict.label_differs,
        "matched_by": verdict.matched_by,
        "verdict": verdict.verdict,
    }


def _dimension(score: DimensionScore) -> dict[str, Any]:
    return {
        "name": visible(score.dimension_name),
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
    turns = [_turn(t, score) for t in result.turns if (score := indicator_score(t)) is not None]
    if not turns:
        return ""
    template = template_environment(templates_dir).get_template(DETAILS_TEMPLATE)
    return template.render(turns=turns, multi_turn=len(result.case.turns) > 1).strip("\n")


# --- the Overview's other columns and the Details rows ---------------------------------------------


def datasets_cell(result: CaseResult) -> str | None:
    lines = []
    for turn in result.turns:
        score = indicator_score(turn)
        if score is None:
            continue
        target = ", ".join(score.target_datasets) or "-"
        selected = ", ".join(score.selected_datasets) or "-"
        flag = "  ⚠ mismatch" if score.dataset_mismatch else ""
        prefix = f"Turn {turn.number}: " if len(result.case.turns) > 1 else ""
        lines.append(f"{prefix}target {target}; selected {selected}{flag}")
    return "\n".join(lines) or None


def dimension_rows(dimension: DimensionScore) -> Iterator[tuple[Any, ...]]:
    for verdicts in (dimension.true_positives, dimension.false_negatives, dimension.false_positives):
        for verdict in verdicts:
            selected = visible(verdict.selected_name) if verdict.label_differs and verdict.selected_name else None
            yield (visible(dimension.dimension_name), verdict.verdict, visible(verdict.term.id) or None,
                   visible(verdict.term.name) or None, selected, None, None,  # no score, no reason: the verdict says it
                   verdict.matched_by)
    if dimension.in_target and not (dimension.true_positives or dimension.false_negatives):
        yield (visible(dimension.dimension_name), None, None, None, None)


def styles_short(label: str, limit: int = 30) -> str:
    """A term's label cut to fit a one-line reason, its invisible characters shown (see `id_text`)."""
    label = visible(label)
    return label if len(label) <= limit else label[: limit - 1].rstrip() + "\u2026"


def term_label(term: Term) -> str:
    """How a reason names a term: its id, or its name in quotes when it gives only a name."""
    return term.id or f"'{term.name}'"


def explain_turn(indicator: IndicatorScore) -> list[str]:
    parts = []
    selected_any = any(d.true_positives or d.false_positives for d in indicator.dimensions) or any(
        d.false_positives for d in indicator.not_in_target
    )
    if indicator.dimensions and not selected_any:
        return ["selected nothing"]
    for dimension in indicator.dimensions:
        said = []
        missed = {term_label(v.term): v for v in dimension.false_negatives}
        extra = {term_label(v.term): v for v in dimension.false_positives}
        relabelled = [term_id for term_id in missed  # same id, another label
                      if term_id in extra and missed[term_id].term.id and missed[term_id].term.name
                      and extra[term_id].term.name]
        for term_id in relabelled:
            said.append(f"{visible(term_id)} labelled '{styles_short(extra[term_id].term.name)}', "
                        f"target '{styles_short(missed[term_id].term.name)}'")
        if len(missed) > len(relabelled):
            said.append("missed " + ", ".join(visible(i) for i in missed if i not in relabelled))
        if len(extra) > len(relabelled):
            said.append("extra " + ", ".join(visible(i) for i in extra if i not in relabelled))
        if said:
            parts.append(f"{visible(dimension.dimension_name)}: {', '.join(said)}")
    for dimension in indicator.not_in_target:
        parts.append(f"{visible(dimension.dimension_name)} (not in target): "
                     + ", ".join(visible(term_label(v.term)) for v in dimension.false_positives))
    if indicator.dataset_mismatch:
        selected = ", ".join(indicator.selected_datasets) or "none"
        parts.append(f"dataset {selected}, expected {', '.join(indicator.target_datasets) or 'none'}")
    return parts


def dimension_scores(result: CaseResult) -> dict[str, tuple[float, float]]:
    """Per target dimension of a case: (recall, precision), each the mean over the turns whose
    target has the dimension (as Statistics averages a dimension over the cases that have it)."""
    found: dict[str, list[tuple[float, float]]] = {}
    for turn in result.turns:
        for dimension in score.dimensions if (score := indicator_score(turn)) is not None else ():
            found.setdefault(dimension.dimension_name, []).append((dimension.recall, dimension.precision))
    return {name: (fmean(r for r, _ in pairs), fmean(p for _, p in pairs)) for name, pairs in found.items()}


def dimension_breakdown(result: CaseResult) -> dict[str, dict[str, float]]:
    """Each target dimension's precision and recall in one case, as a stored run keeps them: the
    means over the case's turns whose target has it (as the Statistics sheet's per-dimension means take them)."""
    per_turn: dict[str, list[tuple[float, float]]] = {}
    for turn in result.turns:
        for dimension in score.dimensions if (score := indicator_score(turn)) is not None else ():
            per_turn.setdefault(dimension.dimension_name, []).append((dimension.precision, dimension.recall))
    return {name: {"precision": sum(p for p, _ in pairs) / len(pairs), "recall": sum(r for _, r in pairs) / len(pairs)}
            for name, pairs in per_turn.items()}


def suite_dimensions(results: Sequence[CaseResult]) -> list[str]:
    """The target dimensions of a run, in order of first appearance."""
    names: dict[str, None] = {}
    for result in results:
        for turn in result.case.turns:
            for dataset in target_selection(turn.target) or ():
                names.update((dimension.dimension_name, None) for dimension in dataset.dimensions if dimension.values)
    return list(names)


def dimension_column(name: str, which: int, last: list[tuple[CaseResult, dict[str, tuple[float, float]]]]) -> Column:
    """A dimension's recall (`which` 0) or precision (1) column; the columns of one run share `last`,
    the case whose scores were worked out last, so that a case's are worked out once, not per column."""
    header = f"{name} {('recall', 'precision')[which]}"

    def value(result: CaseResult) -> float | None:
        if not last or last[0][0] is not result:
            last[:] = [(result, dimension_scores(result))]
        scores = last[0][1].get(name)
        return None if scores is None else scores[which]

    return Column(header, value, 9, "score", score=True, place="number")



DATASET_ROW, GRADE_ROW = "(dataset)", "(grade)"  # the Details sheet's "dimension" of these rows (never a
# dimension's name: in parentheses, as the "(case)" row of a case without rows)


def dataset_rows(turn_number: int, indicator: IndicatorScore) -> Iterator[DetailRow]:
    """A turn's datasets in the Details sheet: TP selected and in the target, FP selected only, FN
    in the target only (a target that names no dataset gives no row)."""
    if not indicator.target_datasets:
        return
    target, selected = indicator.target_datasets, indicator.selected_datasets
    for dataset_id in selected:
        yield (turn_number, DATASET_ROW, "TP" if dataset_id in target else "FP", visible(dataset_id))
    for dataset_id in target:
        if dataset_id not in selected:
            yield (turn_number, DATASET_ROW, "FN", visible(dataset_id))


def selection_text(selection: Sequence[DatasetSelection] | None) -> str | None:
    """"IMF.WEO\nINDICATOR: NGDP_RPCH (real GDP growth), NGDPD\nCOUNTRY: IND (India)"."""
    if selection is None:
        return None
    lines = []
    for dataset in selection:
        lines.append(f"dataset {dataset.dataset_id}")
        for dimension in dataset.dimensions:
            terms = ", ".join(_term_text(term.id, term.name) for term in dimension.values)
            lines.append(f"{dimension.dimension_name}: {terms or '(nothing)'}")
    return "\n".join(lines) or "(nothing selected)"


def _term_text(term_id: Any, name: Any) -> str:
    shown_id, shown_name = str(term_id or ""), str(name or "")
    if shown_id and shown_name and shown_name != shown_id:
        return f"{shown_id} ({shown_name})"
    return shown_id or shown_name
