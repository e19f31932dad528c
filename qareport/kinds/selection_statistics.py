"""Indicator selection's suite figures (`DataQueryFigures`): Data Query Metrics over all cases, per tag
and per dimension, computed from the frames `group_frames` builds, with the cases that
could not be evaluated counted beside every mean; and their tables and results-file entry.

Every case with an indicator-selection target counts, whatever became of it: an invalid case (its
test case or its response could not be read or scored) is counted as invalid, as an error or a
missing response is counted, and is never in a mean.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from qareport.group_frames import GroupFrames, group_frames, mean_of
from qareport.kinds.kind_records import CellFormat, Chart, SuiteFigures, Table
from qareport.kinds.selection_parts import (
    has_indicator_target,
    indicator_score,
    macro_precision,
    macro_recall,
    target_selection,
)
from qareport.records import CaseResult

if TYPE_CHECKING:
    import pandas as pd

NO_TAG = "(no tag)"


@dataclass(frozen=True, slots=True)
class GroupScores:
    """Macro precision and recall of one group (or of the whole suite), with its case counts."""

    group: str
    cases: int
    evaluated: int
    errors: int
    missing: int
    invalid: int
    macro_precision: float | None
    macro_recall: float | None


@dataclass(frozen=True, slots=True)
class DimensionScores:
    """One dimension name over the cases whose target has it."""

    dimension: str
    cases: int  # evaluated cases whose target has the dimension (those the means are over)
    macro_precision: float | None
    macro_recall: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    not_scored: int = 0  # cases whose target has the dimension, not evaluated (error, missing, invalid)


_SCORE: CellFormat = "score"
_INTEGER: CellFormat = "integer"
GROUP_HEADERS = ("", "test cases", "evaluated", "errors", "missing", "invalid", "macro precision", "macro recall")
GROUP_FORMATS: tuple[CellFormat | None, ...] = (None, *(_INTEGER,) * 5, _SCORE, _SCORE)


@dataclass(frozen=True, slots=True)
class DataQueryFigures(SuiteFigures):
    """Data Query Metrics: over all cases with an indicator-selection target, per tag (a case counts
    in every tag it has) and per dimension name; and the kind's further tables (its grades)."""

    overall: GroupScores
    per_group: tuple[GroupScores, ...]
    per_dimension: tuple[DimensionScores, ...]
    further: tuple[Table, ...] = ()
    name: str = "indicator_selection"

    def tables(self) -> tuple[Table, ...]:
        tables = [Table(
            "Data Query Metrics", GROUP_HEADERS, (_group_row(self.overall),), GROUP_FORMATS,
            note="Macro precision and recall of indicator selection: means over the evaluated test cases. "
                 "Error, missing and invalid cases are not in the means; they are counted beside them.",
            leading=True,
        )]
        if self.per_group:
            tables.append(Table(
                "Data Query Metrics per tag", ("tag", *GROUP_HEADERS[1:]),
                tuple(_group_row(group) for group in self.per_group), GROUP_FORMATS,
                note="A case counts in every tag it has.",
                chart=Chart("Macro precision and recall per tag", "tag", (7, 8)),
                leading=True,
            ))
        if self.per_dimension:
            tables.append(Table(
                "Data Query Metrics per dimension",
                ("dimension", "test cases", "macro precision", "macro recall",
                 "true positives", "false positives", "false negatives", "not scored"),
                tuple((d.dimension, d.cases, d.macro_precision, d.macro_recall, d.true_positives,
                       d.false_positives, d.false_negatives, d.not_scored) for d in self.per_dimension),
                (None, _INTEGER, _SCORE, _SCORE, _INTEGER, _INTEGER, _INTEGER, _INTEGER),
                note="Means over the evaluated cases whose target has the dimension (test cases); TP / FP / FN "
                     "are term counts; not scored: the cases whose target has it that failed, had no response "
                     "or could not be evaluated.",
                leading=True,
            ))
        return (*tables, *self.further)

    def results_entries(self) -> Mapping[str, Any]:
        return {"data_query_metrics": {
            "all": asdict(self.overall),
            "per_group": [asdict(group) for group in self.per_group],
            "per_dimension": [asdict(dimension) for dimension in self.per_dimension],
        }}


def _group_row(scores: GroupScores) -> tuple[Any, ...]:
    return (scores.group, scores.cases, scores.evaluated, scores.errors, scores.missing,
            scores.invalid, scores.macro_precision, scores.macro_recall)


def selection_frames(results: Sequence[CaseResult]) -> GroupFrames | None:
    """The frames of the cases with an indicator-selection target (`group_frames.group_frames`); None,
    and pandas not imported, when no case has one."""
    return group_frames(_group_rows(results), _dimension_rows(results))


def data_query_figures(results: Sequence[CaseResult], further: Sequence[Table] = ()) -> DataQueryFigures | None:
    """Data Query Metrics of the run (None: no case has an indicator-selection target)."""
    frames = selection_frames(results)
    if frames is None:
        return None
    frame = frames.groups
    return DataQueryFigures(
        overall=_scores("all test cases", frame.drop_duplicates("case")),
        per_group=tuple(_scores(str(group), part) for group, part in frame.groupby("group", sort=True)),
        per_dimension=_dimension_scores(results, frames.dimensions),
        further=tuple(further),
    )


def _group_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """One row per (case, group) for the cases with an indicator target."""
    rows = []
    for result in results:
        if not has_indicator_target(result):
            continue
        for group in result.case.groups or (NO_TAG,):
            rows.append({
                "case": result.case.id,
                "group": group,
                "status": result.status,
                "precision": macro_precision(result),
                "recall": macro_recall(result),
            })
    return rows


def _scores(name: str, frame: pd.DataFrame) -> GroupScores:
    counts = Counter(frame["status"])
    evaluated = frame[(frame["status"] == "success") & frame["recall"].notna()]
    return GroupScores(
        group=name,
        cases=len(frame),
        evaluated=len(evaluated),
        errors=counts["error"],
        missing=counts["missing"],
        invalid=counts["invalid"],
        macro_precision=mean_of(evaluated["precision"]),
        macro_recall=mean_of(evaluated["recall"]),
    )


def _dimension_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """One row per (evaluated case, turn, dimension of its target)."""
    rows = []
    for result in results:
        if result.status != "success":
            continue
        # a case answered several times: its value per dimension is the mean over its attempts' turns
        # (the counts are summed over them)
        turns = [turn for attempt in (result.attempts or (result,)) if attempt.status == "success"
                 for turn in attempt.turns]
        for turn in turns:
            score = indicator_score(turn)
            if score is None:
                continue
            for dimension in score.dimensions:
                rows.append({
                    "case": result.case.id,
                    "dimension": dimension.dimension_name,
                    "precision": dimension.precision,
                    "recall": dimension.recall,
                    "tp": len(dimension.true_positives),
                    "fp": len(dimension.false_positives),
                    "fn": len(dimension.false_negatives),
                })
    return rows


def _dimension_scores(results: Sequence[CaseResult], frame: pd.DataFrame) -> tuple[DimensionScores, ...]:
    """Per dimension name: the per-case value is the mean over the case's turns that target it;
    beside it, the cases whose target has the dimension that were not evaluated."""
    not_scored: Counter[str] = Counter()
    for result in results:
        if result.status != "success":
            not_scored.update(_target_dimensions(result))
    if not len(frame):
        return tuple(DimensionScores(str(name), 0, None, None, 0, 0, 0, count) for name, count in not_scored.items())
    per_case = frame.groupby(["dimension", "case"], sort=False).agg(
        precision=("precision", "mean"), recall=("recall", "mean"),
        tp=("tp", "sum"), fp=("fp", "sum"), fn=("fn", "sum"),
    )
    per_dimension = per_case.groupby(level="dimension", sort=False).agg(
        cases=("precision", "size"), precision=("precision", "mean"), recall=("recall", "mean"),
        tp=("tp", "sum"), fp=("fp", "sum"), fn=("fn", "sum"),
    )
    return tuple(
        DimensionScores(
            dimension=str(name),
            cases=int(row.cases),
            macro_precision=float(row.precision),
            macro_recall=float(row.recall),
            true_positives=int(row.tp),
            false_positives=int(row.fp),
            false_negatives=int(row.fn),
            not_scored=not_scored.pop(str(name), 0),
        )
        for name, row in per_dimension.iterrows()
    ) + tuple(DimensionScores(str(name), 0, None, None, 0, 0, 0, count) for name, count in not_scored.items())


def _target_dimensions(result: CaseResult) -> list[str]:
    """The dimension names a case's target has (each once), whatever became of its response."""
    names: dict[str, None] = {}
    for turn in result.case.turns:
        for dataset in target_selection(turn.target) or ():
            names.update((dimension.dimension_name, None) for dimension in dataset.dimensions if dimension.values)
    return list(names)
