"""Indicator selection as a kind of target: per-dimension TP / FP / FN, precision, recall, macro
averages, the details cell, the Details rows and the reason a case lost points.

Terms of all datasets of one turn are pooled per dimension. A term is identified by its id and
name together (the methodology's rule) or, with `match_terms_by=TermMatching.ID`, by its id alone, in which case a
true positive keeps the system's label so the report can show where labels differ.

Each turn also gets statgpt's grade (`grade_turn`), a case the worst grade of its turns, and each
case its dataset precision and recall (`dataset_counts`): the dataset choice scored in its own right,
beside and never inside the macro averages.

The kind (`IndicatorSelection`) and its grades table are here; its parts are in `selection_reading`
(the selection read), `selection_scoring`, `selection_grades`, `selection_details` (details cell,
columns, rows, reason) and `selection_changes` (what a later run compares); import their names
from them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from statistics import fmean
from typing import Any

from qareport.evaluation_options import DEFAULT_ACCEPTABLE_EXTRAS, PassRules
from qareport.kinds.kind_base import Kind
from qareport.kinds.kind_records import (
    CellFormat,
    Column,
    DetailRow,
    Facts,
    KindFigures,
    Metric,
    OutputText,
    SuiteFigures,
    SuiteOptions,
    Table,
    TurnInput,
)
from qareport.kinds.registry import NOT_GRADED
from qareport.kinds.selection_changes import explain_indicator_change, indicator_facts
from qareport.kinds.selection_details import (
    GRADE_ROW,
    dataset_rows,
    datasets_cell,
    dimension_breakdown,
    dimension_column,
    dimension_rows,
    explain_turn,
    render_indicator_details,
    selection_text,
    suite_dimensions,
)
from qareport.kinds.selection_grades import (
    GRADES,
    case_grade,
    dataset_scores,
    grade_why,
)
from qareport.kinds.selection_parts import (
    as_selection,
    has_indicator_target,
    indicator_score,
    macro_precision,
    macro_recall,
    output_selection,
)
from qareport.kinds.selection_reading import parse_indicator_selection, selection_as_written
from qareport.kinds.selection_scoring import score_indicator_selection
from qareport.kinds.selection_statistics import data_query_figures
from qareport.records import DEFAULT_TERM_MATCHING, CaseResult, DatasetSelection, IndicatorScore
from qareport.yaml_values import line_of


class IndicatorSelection(Kind):
    """Dimension terms a system selects for a data query, scored per dimension (SPEC section 2)."""

    definition_facts = ("target",)

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
    output_text = OutputText("selection", "indicator selection", lambda out: selection_text(output_selection(out)))

    def read_target(self, target: Mapping[str, Any], *, line: int | None) -> tuple[DatasetSelection, ...] | None:
        """The selection; a key written without a value is an empty selection (nothing expected)."""
        if self.name not in target:
            return None
        raw = target[self.name]
        return () if raw is None else parse_indicator_selection(raw, line=line_of(target, self.name))

    def declared_in(self, target: Mapping[str, Any]) -> bool:
        return self.name in target  # a key without a value is a target too (an empty selection)

    def parse_output(self, turn: Mapping[str, Any], *, line: int | None) -> tuple[DatasetSelection, ...] | None:
        raw = turn.get(self.name)
        return None if raw is None else parse_indicator_selection(raw, line=line)

    def output_as_written(self, turn: Mapping[str, Any]) -> None:
        selection_as_written(turn.get(self.name))

    def evaluate_turn(self, turn: TurnInput) -> IndicatorScore:
        options = turn.options
        return score_indicator_selection(
            as_selection(turn.target) or (), as_selection(turn.output),  # scored only where the target has one
            match_terms_by=options.match_terms_by if options else DEFAULT_TERM_MATCHING,
            acceptable_extras=options.acceptable_extras if options else DEFAULT_ACCEPTABLE_EXTRAS,
        )

    def attempt_metrics(self, result: CaseResult) -> dict[str, float | None]:
        dataset_precision, dataset_recall = dataset_scores(result)
        return {"macro_precision": macro_precision(result), "macro_recall": macro_recall(result),
                "dataset_precision": dataset_precision, "dataset_recall": dataset_recall}

    def attempt_grade(self, result: CaseResult) -> str | None:
        return case_grade(result)

    main_metric = "macro_recall"
    def pass_rule(self, rules: PassRules) -> str:
        return "macro recall and macro precision 1"

    def passes(self, result: CaseResult, rules: PassRules) -> bool | None:
        recall = macro_recall(result)
        if recall is None:
            return None
        return recall == 1 and macro_precision(result) == 1

    def breakdown(self, result: CaseResult) -> dict[str, dict[str, float]]:
        return dimension_breakdown(result)

    def explain(self, result: CaseResult) -> str | None:
        scored = [t for t in result.turns if indicator_score(t) is not None]
        several = len(result.case.turns) > 1
        lines = []
        for turn in scored:
            score = indicator_score(turn)
            assert score is not None
            parts = explain_turn(score)
            if parts:
                lines.append((f"turn {turn.number}: " if several else "") + "; ".join(parts))
        return "; ".join(lines) or None

    def case_facts(self, result: CaseResult) -> dict[str, list[str]]:
        return indicator_facts(result)

    def explain_change(self, old: Facts, new: Facts) -> str | None:
        return explain_indicator_change(old, new)

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        last: list[Any] = []  # the case whose dimension scores the columns worked out last
        per_dimension = [dimension_column(name, which, last) for name in suite_dimensions(results) for which in (0, 1)]
        return [
            Column("macro recall", macro_recall, 9, "score", score=True, place="score"),
            Column("macro precision", macro_precision, 9, "score", score=True, place="score"),
            # the first column after the review: the scanning part (id to review note) must fit a
            # 1600-pixel window with a baseline and a judge too
            Column("grade", self.case_grade, 11, place="number"),  # over its attempts, when it has some
            Column("dataset precision", lambda r: dataset_scores(r)[0], 9, "score", score=True, place="number"),
            Column("dataset recall", lambda r: dataset_scores(r)[1], 9, "score", score=True, place="number"),
            *per_dimension,
            Column("indicator selection details",
                   lambda r: render_indicator_details(r, templates_dir=templates_dir), 60, wrap=True),
            Column("datasets", datasets_cell, 30, wrap=True),
        ]

    def details_rows(self, result: CaseResult) -> Iterator[DetailRow]:
        produced = False
        for turn in result.turns:
            score = indicator_score(turn)
            if score is None:
                continue
            for dimension in (*score.dimensions, *score.not_in_target):
                for row in dimension_rows(dimension):
                    produced = True
                    yield (turn.number, *row)
            yield from dataset_rows(turn.number, score)
            yield (turn.number, GRADE_ROW, score.grade, None, None, None, None, grade_why(score))
        if not produced and self.has_target(result.case):
            why = result.error or ("no response" if result.status == "missing" else "nothing to score")
            yield (None, None, f"not scored ({result.status})", None, why, None)

    def statistics_tables(self, results: Sequence[CaseResult]) -> list[Table]:
        figures = self.suite_figures(results, SuiteOptions())
        return [] if figures is None else list(figures.tables())

    def suite_figures(self, results: Sequence[CaseResult], options: SuiteOptions) -> SuiteFigures | None:
        """Data Query Metrics (overall, per tag, per dimension), then the grades table."""
        if not self.present(results):
            return None
        grades = (grades_table(results),)
        return data_query_figures(results, grades) or KindFigures(self.name, grades)



def grades_table(results: Sequence[CaseResult]) -> Table:
    """statgpt's grades and the dataset choice, over all cases and per tag (a case counts in every
    tag it has): cases per grade, those not graded, and the mean dataset precision and recall over
    the graded cases whose target names a dataset."""
    groups: dict[str, list[CaseResult]] = {"all cases": []}
    for result in results:
        if not has_indicator_target(result):
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
