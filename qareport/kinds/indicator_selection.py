"""Indicator selection as a kind of target: per-dimension TP / FP / FN, precision, recall, macro
averages, the details cell, the Details rows and the reason a case lost points.

Terms of all datasets of one turn are pooled per dimension. A term is identified by its id and
name together (the methodology's rule) or, with `match_terms_by=TermMatching.ID`, by its id alone, in which case a
true positive keeps the system's label so the report can show where labels differ.

Each turn also gets statgpt's grade (`grade_turn`), a case the worst grade of its turns, and each
case its dataset precision and recall (`dataset_counts`): the dataset choice scored in its own right,
beside and never inside the macro averages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from statistics import fmean
from typing import Any

from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.id_text import visible
from qareport.input_shapes import ShapeErrors, keys_as_written, require_str
from qareport.kinds import NOT_GRADED, CellFormat, Column, DetailRow, Facts, Kind, Metric, PassRules, Table, TurnInput
from qareport.records import (
    DEFAULT_TERM_MATCHING,
    CaseResult,
    DatasetSelection,
    DimensionScore,
    DimensionTerms,
    IndicatorScore,
    Term,
    TermMatching,
    TermVerdict,
    TurnResult,
)
from qareport.set_metrics import SetScore, ratio
from qareport.templating import template_environment
from qareport.yaml_values import LineDict, line_of

DETAILS_TEMPLATE = "indicator_selection_details.txt"

GRADES = ("ideal", "acceptable", "problematic", "failure")
"""statgpt's grades of a turn, best first (a case gets the worst grade of its turns):

- failure: the target names datasets and the system selected none of them (a wrong dataset);
- problematic: a target term missed, or more extra terms than `acceptable_extras`;
- acceptable: every target term found, with at most `acceptable_extras` extra terms (false positives
  and terms of dimensions not in the target), or the datasets not exactly the target's;
- ideal: every target term found, nothing extra, and exactly the target's datasets.
"""
DEFAULT_ACCEPTABLE_EXTRAS = 2


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


# --- statgpt's grades and the dataset choice ---------------------------------------------------------


def extra_terms(indicator: IndicatorScore) -> int:
    """The terms a turn selected beyond its target: false positives, and the terms of dimensions
    not in the target."""
    return sum(len(d.false_positives) for d in (*indicator.dimensions, *indicator.not_in_target))


def missed_terms(indicator: IndicatorScore) -> int:
    return sum(len(d.false_negatives) for d in indicator.dimensions)


def grade_turn(indicator: IndicatorScore, *, acceptable_extras: int = DEFAULT_ACCEPTABLE_EXTRAS) -> str:
    """statgpt's grade of one turn (see `GRADES`). A target that names no dataset cannot be failed on
    the dataset, and does not hold a selection that names one back from `ideal`."""
    target, selected = set(indicator.target_datasets), set(indicator.selected_datasets)
    if target and not target & selected:
        return "failure"
    extras = extra_terms(indicator)
    if missed_terms(indicator) or extras > acceptable_extras:
        return "problematic"
    if extras or (target and selected != target):
        return "acceptable"
    return "ideal"


def worst_grade(grades: Iterable[str | None]) -> str | None:
    """The worst of some grades (None among them ignored); None without any."""
    known = [grade for grade in grades if grade in GRADES]
    return max(known, key=GRADES.index) if known else None


def case_grade(result: CaseResult) -> str | None:
    """A case's grade: the worst of its scored turns' grades; None when it was not evaluated or has
    no indicator-selection target."""
    if result.status != "success":
        return None
    return worst_grade(turn.indicator.grade for turn in result.turns if turn.indicator is not None)


def grade_why(indicator: IndicatorScore) -> str | None:
    """Why a turn is not ideal, in a few words ("wrong dataset: IFS, expected WEO", "2 target terms
    missed", "3 extra terms"); None when it is."""
    parts = []
    target, selected = set(indicator.target_datasets), set(indicator.selected_datasets)
    chosen = ", ".join(visible(d) for d in indicator.selected_datasets) or "none"
    expected = ", ".join(visible(d) for d in indicator.target_datasets)
    if target and not target & selected:
        parts.append(f"wrong dataset: {chosen}, expected {expected}")
    elif target and selected != target:
        parts.append(f"datasets {chosen}, expected {expected}")
    if (missed := missed_terms(indicator)):
        parts.append(f"{missed} target term{'s' if missed > 1 else ''} missed")
    if (extras := extra_terms(indicator)):
        parts.append(f"{extras} extra term{'s' if extras > 1 else ''}")
    return "; ".join(parts) or None


def dataset_counts(result: CaseResult) -> SetScore | None:
    """The case's dataset choice as counts pooled over its turns: each scored turn's selected
    dataset ids against its own target's (turns whose target names no dataset left out); None when
    no scored turn's target names a dataset."""
    true_positives: list[tuple[int, str]] = []
    false_positives: list[tuple[int, str]] = []
    false_negatives: list[tuple[int, str]] = []
    scored = False
    for turn in result.turns:
        if turn.indicator is None or not turn.indicator.target_datasets:
            continue
        scored = True
        target, selected = turn.indicator.target_datasets, turn.indicator.selected_datasets
        true_positives += [(turn.number, d) for d in selected if d in target]
        false_positives += [(turn.number, d) for d in selected if d not in target]
        false_negatives += [(turn.number, d) for d in target if d not in selected]
    if not scored:
        return None
    return SetScore(tuple(true_positives), tuple(false_positives), tuple(false_negatives))


def dataset_scores(result: CaseResult) -> tuple[float | None, float | None]:
    """(dataset precision, dataset recall) of a case: from `dataset_counts`; precision 0.0 when no
    dataset was selected (as for a dimension, SPEC section 2); (None, None) when the case was not
    evaluated or no target of it names a dataset."""
    counts = dataset_counts(result) if result.status == "success" else None
    if counts is None:
        return None, None
    found = len(counts.true_positives)
    return (ratio(found, found + len(counts.false_positives), zero_division=0.0),
            ratio(found, found + len(counts.false_negatives), zero_division=0.0))


# --- the details cell ----------------------------------------------------------------------------


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


def _label(term: Term) -> str:
    """How a reason names a term: its id, or its name in quotes when it gives only a name."""
    return term.id or f"'{term.name}'"


def _explain_turn(indicator: IndicatorScore) -> list[str]:
    parts = []
    selected_any = any(d.true_positives or d.false_positives for d in indicator.dimensions) or any(
        d.false_positives for d in indicator.not_in_target
    )
    if indicator.dimensions and not selected_any:
        return ["selected nothing"]
    for dimension in indicator.dimensions:
        said = []
        missed = {_label(v.term): v for v in dimension.false_negatives}
        extra = {_label(v.term): v for v in dimension.false_positives}
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
                     + ", ".join(visible(_label(v.term)) for v in dimension.false_positives))
    if indicator.dataset_mismatch:
        selected = ", ".join(indicator.selected_datasets) or "none"
        parts.append(f"dataset {selected}, expected {', '.join(indicator.target_datasets) or 'none'}")
    return parts


def dimension_scores(result: CaseResult) -> dict[str, tuple[float, float]]:
    """Per target dimension of a case: (recall, precision), each the mean over the turns whose
    target has the dimension (as Statistics averages a dimension over the cases that have it)."""
    found: dict[str, list[tuple[float, float]]] = {}
    for turn in result.turns:
        for dimension in turn.indicator.dimensions if turn.indicator is not None else ():
            found.setdefault(dimension.dimension_name, []).append((dimension.recall, dimension.precision))
    return {name: (fmean(r for r, _ in pairs), fmean(p for _, p in pairs)) for name, pairs in found.items()}


def suite_dimensions(results: Sequence[CaseResult]) -> list[str]:
    """The target dimensions of a run, in order of first appearance."""
    names: dict[str, None] = {}
    for result in results:
        for turn in result.case.turns:
            for dataset in turn.target.indicator_selection or ():
                names.update((dimension.dimension_name, None) for dimension in dataset.dimensions if dimension.values)
    return list(names)


def _dimension_column(name: str, which: int) -> Column:
    header = f"{name} {('recall', 'precision')[which]}"

    def value(result: CaseResult) -> float | None:
        scores = dimension_scores(result).get(name)
        return None if scores is None else scores[which]

    return Column(header, value, 9, "score", score=True, place="number")


# --- what a later run compares: the terms found, missed and extra ---------------------------------


def _item(turn: TurnResult, several: bool, dimension: str, term: Term) -> str:
    return (f"turn {turn.number} " if several else "") + f"{dimension} {_label(term)}"


def indicator_facts(result: CaseResult) -> dict[str, list[str]]:
    """The case's target terms, the ones found and the extra ones, as "DIMENSION ID" items."""
    several = len(result.case.turns) > 1
    facts: dict[str, list[str]] = {"target": [], "found": [], "extra": []}
    for turn in result.turns:
        if turn.indicator is None:
            continue
        for dimension in (*turn.indicator.dimensions, *turn.indicator.not_in_target):
            name = dimension.dimension_name
            facts["found"] += [_item(turn, several, name, v.term) for v in dimension.true_positives]
            facts["target"] += [_item(turn, several, name, v.term)
                                for v in (*dimension.true_positives, *dimension.false_negatives)]
            facts["extra"] += [_item(turn, several, name, v.term) for v in dimension.false_positives]
    return {key: items for key, items in facts.items() if items}


def _split_item(item: str) -> tuple[str, str]:
    """("turn 2 COUNTRY", "MEX") of an item; a name-only term's quoted name stays whole."""
    if item.endswith("'") and " '" in item:
        prefix, _, name = item.rpartition(" '")
        return prefix, "'" + name
    prefix, _, last = item.rpartition(" ")
    return prefix, last


def _by_dimension(items: Iterable[str], sign: str = "") -> str:
    """"COUNTRY MEX, KEN; INDICATOR LP": items grouped by what precedes their last word."""
    grouped: dict[str, list[str]] = {}
    for item in items:
        prefix, last = _split_item(item)
        grouped.setdefault(prefix, []).append(sign + last)
    return "; ".join(f"{prefix} {', '.join(ids)}" if prefix else ", ".join(ids) for prefix, ids in grouped.items())


def _new(old: Facts, new: Facts, key: str) -> list[str]:
    before = set(old.get(key) or ())
    return [item for item in new.get(key) or () if item not in before]


def explain_indicator_change(old: Facts, new: Facts) -> str | None:
    """"target edited: COUNTRY +KEN -MEX", "lost COUNTRY MEX", "extra INDICATOR GDP_CONST", "found
    COUNTRY KEN", "no longer extra ...": bad news first."""
    said = []
    added, removed = _new(old, new, "target"), _new(new, old, "target")
    if added or removed:
        changes: dict[str, list[str]] = {}
        for item in added:
            prefix, last = _split_item(item)
            changes.setdefault(prefix, []).append("+" + last)
        for item in removed:
            prefix, last = _split_item(item)
            changes.setdefault(prefix, []).append("\u2212" + last)
        said.append("target edited: " + "; ".join(f"{prefix} {' '.join(ids)}" for prefix, ids in changes.items()))
    target = set(new.get("target") or ())
    lost = [item for item in _new(new, old, "found") if item in target]
    for words, items in (("lost", lost), ("extra", _new(old, new, "extra")), ("found", _new(old, new, "found")),
                         ("no longer extra", _new(new, old, "extra"))):
        if items:
            said.append(f"{words} {_by_dimension(items)}")
    return "; ".join(said) or None


# --- reading ---------------------------------------------------------------------------------------


def parse_indicator_selection(value: Any, *, line: int | None) -> tuple[DatasetSelection, ...]:
    """`[{dataset_id, dimensions: [{dimension_name, values: [{id, name}]}]}]` into records."""
    if isinstance(value, dict):  # one dataset given without the list around it
        value = [value]
    if not isinstance(value, list):
        raise ShapeError(
            "'indicator_selection' must be a list of {dataset_id, dimensions} "
            f"(got {describe_value(value)})",
            line,
        )
    empty: list[tuple[str, int | None]] = []  # (dimension, line) of each value without id and name
    datasets = []
    for index, dataset in enumerate(value):
        if not isinstance(dataset, dict):
            raise ShapeError(
                "each 'indicator_selection' entry must be a mapping {dataset_id, dimensions} "
                f"(got {describe_value(dataset)})",
                line_of(value, index) or line,
            )
        dataset_id = require_str(dataset, "dataset_id", "dataset", optional=True) or ""
        raw_dimensions = dataset.get("dimensions") or []
        if not isinstance(raw_dimensions, list):
            raise ShapeError(
                "'dimensions' must be a list of {dimension_name, values} "
                f"(got {describe_value(raw_dimensions)})",
                line_of(dataset, "dimensions"),
            )
        dimensions = []
        for d_index, dimension in enumerate(raw_dimensions):
            if not isinstance(dimension, dict):
                raise ShapeError(
                    "each dimension must be a mapping {dimension_name, values} "
                    f"(got {describe_value(dimension)})",
                    line_of(raw_dimensions, d_index),
                )
            name = require_str(dimension, "dimension_name", "dimension") or ""
            raw_values = dimension.get("values")
            if raw_values is None:
                raw_values = []
            if not isinstance(raw_values, list):
                raise ShapeError(
                    f"dimension '{name}': 'values' must be a list of {{id, name}} "
                    f"(got {describe_value(raw_values)})",
                    line_of(dimension, "values"),
                )
            terms = []
            for v_index, term in enumerate(raw_values):
                if not isinstance(term, dict):
                    raise ShapeError(
                        f"dimension '{name}': each value must be a mapping {{id, name}} "
                        f"(got {describe_value(term)})",
                        line_of(raw_values, v_index),
                    )
                term_id = require_str(term, "id", f"a value of dimension '{name}'", optional=True) or ""
                term_name = require_str(term, "name", f"value '{term_id}'", optional=True) or ""
                if not term_id and not term_name:
                    empty.append((name, line_of(raw_values, v_index) or line_of(term)))
                    continue
                terms.append(Term(term_id, term_name))
            dimensions.append(DimensionTerms(name, tuple(terms)))
        datasets.append(DatasetSelection(dataset_id, tuple(dimensions)))
    if empty:
        raise _ValuesWithoutIdOrName(empty, line)
    return tuple(datasets)


class _ValuesWithoutIdOrName(ShapeErrors):
    """Values of an indicator selection that give neither an id nor a name (the only invalid
    values: one may give a name alone or an id alone): every one of them, each with its line."""

    def __init__(self, found: list[tuple[str, int | None]], line: int | None) -> None:
        each = [(where, f"a value of dimension '{dimension}' has neither 'id' nor 'name'; "
                        "give it an id, a name or both")
                for dimension, where in found]
        lines = [str(where) for _, where in found if where is not None]
        where_all = f" (lines {', '.join(lines)})" if len(found) > 1 and lines else ""
        super().__init__(f"{len(found)} value(s) with neither 'id' nor 'name'{where_all}: "
                         + "; ".join(message for _, message in each[:1]),
                         found[0][1] if found[0][1] is not None else line, each)



def selection_as_written(value: Any) -> None:
    """Put back, in a YAML indicator selection, the ids and names YAML 1.1 read as something else."""
    for dataset in value if isinstance(value, list) else [value]:
        if not isinstance(dataset, LineDict):
            continue
        keys_as_written(dataset, ("dataset_id",))
        for dimension in dataset.get("dimensions") or ():
            if isinstance(dimension, LineDict):
                keys_as_written(dimension, ("dimension_name",))
                for term in dimension.get("values") or ():
                    if isinstance(term, LineDict):
                        keys_as_written(term, ("id", "name"))


class IndicatorSelection(Kind):
    """Dimension terms a system selects for a data query, scored per dimension (SPEC section 2)."""

    name = "indicator_selection"
    label = "indicator selection"
    metrics = (
        Metric("macro_precision", "macro precision", headline=True),
        Metric("macro_recall", "macro recall", headline=True),
        Metric("dataset_precision", "dataset precision"),  # beside the macro averages, never inside
        Metric("dataset_recall", "dataset recall"),
    )
    rank_metrics = ("macro_recall", "macro_precision")  # missing terms weigh more than extra ones
    grades = GRADES

    def read_target(self, target: Mapping[str, Any], *, line: int | None) -> Any:
        """The selection; a key written without a value is an empty selection (nothing expected)."""
        if self.name not in target:
            return None
        raw = target[self.name]
        return () if raw is None else parse_indicator_selection(raw, line=line_of(target, self.name))

    def declared_in(self, target: Mapping[str, Any]) -> bool:
        return self.name in target  # a key without a value is a target too (an empty selection)

    def parse_output(self, turn: Mapping[str, Any], *, line: int | None) -> Any:
        raw = turn.get(self.name)
        return None if raw is None else parse_indicator_selection(raw, line=line)

    def output_as_written(self, turn: Mapping[str, Any]) -> None:
        selection_as_written(turn.get(self.name))

    def encode_part(self, part: Any) -> Any:
        return [[dataset.dataset_id, [[dimension.dimension_name, [[term.id, term.name] for term in dimension.values]]
                                      for dimension in dataset.dimensions]]
                for dataset in part]

    def decode_part(self, data: Any) -> Any:
        return tuple(
            DatasetSelection(dataset_id, tuple(
                DimensionTerms(dimension_name, tuple(Term(term_id, term_name) for term_id, term_name in terms))
                for dimension_name, terms in dimensions))
            for dataset_id, dimensions in data)

    def evaluate_turn(self, turn: TurnInput) -> IndicatorScore:
        options = turn.options
        return score_indicator_selection(
            turn.target, turn.output,
            match_terms_by=options.match_terms_by if options else DEFAULT_TERM_MATCHING,
            acceptable_extras=options.acceptable_extras if options else DEFAULT_ACCEPTABLE_EXTRAS,
        )

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
        dataset_precision, dataset_recall = dataset_scores(result)
        return {"macro_precision": result.macro_precision, "macro_recall": result.macro_recall,
                "dataset_precision": dataset_precision, "dataset_recall": dataset_recall}

    def case_grade(self, result: CaseResult) -> str | None:
        return case_grade(result)

    main_metric = "macro_recall"
    pass_rule = "macro recall and macro precision 1"

    def passes(self, result: CaseResult, rules: PassRules) -> bool | None:
        if result.macro_recall is None:
            return None
        return result.macro_recall == 1 and result.macro_precision == 1

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

    def case_facts(self, result: CaseResult) -> dict[str, list[str]]:
        return indicator_facts(result)

    def explain_change(self, old: Facts, new: Facts) -> str | None:
        return explain_indicator_change(old, new)

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        per_dimension = [_dimension_column(name, which) for name in suite_dimensions(results) for which in (0, 1)]
        return [
            Column("macro recall", lambda r: r.macro_recall, 9, "score", score=True, place="score"),
            Column("macro precision", lambda r: r.macro_precision, 9, "score", score=True, place="score"),
            # the first column after the review: the scanning part (id to review note) must fit a
            # 1600-pixel window with a baseline and a judge too
            Column("grade", self.case_grade, 11, place="number"),  # over its attempts, when it has some
            Column("dataset precision", lambda r: dataset_scores(r)[0], 9, "score", score=True, place="number"),
            Column("dataset recall", lambda r: dataset_scores(r)[1], 9, "score", score=True, place="number"),
            *per_dimension,
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
            yield from _dataset_rows(turn.number, turn.indicator)
            yield (turn.number, GRADE_ROW, turn.indicator.grade, None, None, None, None, grade_why(turn.indicator))
        if not produced and self.has_target(result.case):
            why = result.error or ("no response" if result.status == "missing" else "nothing to score")
            yield (None, None, f"not scored ({result.status})", None, why, None)

    def statistics_tables(self, results: Sequence[CaseResult]) -> list[Table]:
        return [grades_table(results)]


DATASET_ROW, GRADE_ROW = "(dataset)", "(grade)"  # the Details sheet's "dimension" of these rows (never a
# dimension's name: in parentheses, as the "(case)" row of a case without rows)


def _dataset_rows(turn_number: int, indicator: IndicatorScore) -> Iterator[DetailRow]:
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


def grades_table(results: Sequence[CaseResult]) -> Table:
    """statgpt's grades and the dataset choice, over all cases and per tag (a case counts in every
    tag it has): cases per grade, those not graded, and the mean dataset precision and recall over
    the graded cases whose target names a dataset."""
    groups: dict[str, list[CaseResult]] = {"all cases": []}
    for result in results:
        if not result.has_indicator_target:
            continue
        groups["all cases"].append(result)
        for group in result.case.groups or ("(no tag)",):
            groups.setdefault(group, []).append(result)
    rows = []
    for group, members in groups.items():
        grades = [INDICATOR_SELECTION.case_grade(result) or NOT_GRADED for result in members]  # over attempts too
        scores = [INDICATOR_SELECTION.case_metrics(result) for result in members]
        precisions = [p for s in scores if (p := s["dataset_precision"]) is not None]
        recalls = [r for s in scores if (r := s["dataset_recall"]) is not None]
        rows.append((group, len(members), *(grades.count(grade) for grade in (*GRADES, NOT_GRADED)),
                     fmean(precisions) if precisions else None, fmean(recalls) if recalls else None,
                     len(precisions)))
    return Table(
        "Indicator selection grades and dataset choice per tag",
        ("tag", "cases", *GRADES, NOT_GRADED, "dataset precision", "dataset recall", "cases with a dataset target"),
        tuple(rows),
        (None, *_COUNTS, "score", "score", "integer"),
    )


_INTEGER: CellFormat = "integer"
_COUNTS: tuple[CellFormat, ...] = (_INTEGER,) * (len(GRADES) + 2)  # cases, each grade, not graded


INDICATOR_SELECTION = IndicatorSelection()
